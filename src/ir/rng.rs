//! A random generator's state (algorithm, key and counter): held by the API's `Rng`, advanced on
//! code reuse section replays, read by the reference interpreter.

use super::RngAlgorithm;

/// The state behind an `Rng` (the API's generator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RngState {
    /// Which counter-based generator draws.
    pub alg: RngAlgorithm,
    /// The key: for Philox the seed's low and high 32 bits; for Hash32 the two halves of
    /// SplitMix64 of the seed (so that nearby seeds give unrelated streams).
    pub key: [u32; 2],
    /// The position: the counter the next draw's first element uses.
    pub counter: u64,
    /// The seed the key came from, when the generator was made from a seed.
    pub seed: Option<u64>,
}
