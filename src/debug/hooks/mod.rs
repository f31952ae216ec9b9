//! Comparison mode's hooks in the front end and on reads: each op's reference value as it is
//! recorded (`record.rs`) and the check of the data handed to the application (`read.rs`). The
//! checks after computation are attached at the hand-off (`compile/checks.rs`) and a replayed
//! section's reference values are computed with its replay (`compile/replay.rs`).

mod read;
mod record;
