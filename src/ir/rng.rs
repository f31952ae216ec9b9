//! A random generator's state (Philox key and counter): held by the API's `Rng`, advanced on code
//! reuse section replays, read by the reference interpreter.

/// The state behind an `Rng` (the API's generator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RngState {
    /// The Philox key: the seed's low and high 32 bits.
    pub key: [u32; 2],
    /// The position: the counter the next draw's first element uses.
    pub counter: u64,
}
