//! Comparison mode's hooks into the pipeline, in one place: at record time (each op's reference
//! value, `record.rs`), on reads (the data handed to the application, `read.rs`), at the hand-off
//! (checks after computation, `checks.rs`) and on a section replay (`replay.rs`).

mod checks;
mod read;
mod record;
mod replay;
