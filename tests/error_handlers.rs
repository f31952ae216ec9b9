//! The error-handler stack: handlers are asked newest first; `Pass` hands the error to the next
//! older one; `Continue` makes the failing call return an invalid array whose reads (and reads of
//! anything computed from it) return the error with the failing call's line; with no handler
//! left, the default panics. One test: the stack is process-wide.

use arrayflow::{Array, ErrorHandling, ErrorKind, Runtime};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn handlers_run_newest_first_and_continuing_gives_an_invalid_result() {
    let a = Array::<f32>::ones(&[3, 4]);
    let b = Array::<f32>::ones(&[5]);
    let (older, newer) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (o, n) = (older.clone(), newer.clone());
    Runtime::push_error_handler(move |e| {
        assert_eq!(e.kind(), ErrorKind::Shape);
        o.fetch_add(1, Ordering::SeqCst);
        ErrorHandling::Continue
    });
    Runtime::push_error_handler(move |_| {
        n.fetch_add(1, Ordering::SeqCst);
        ErrorHandling::Pass
    });
    let l0 = line!();
    let bad = &a + &b;
    let l1 = line!();
    assert_eq!(
        (newer.load(Ordering::SeqCst), older.load(Ordering::SeqCst)),
        (1, 1),
        "newest first, then older"
    );
    // Computing from the invalid result works; every read names the failing call.
    let derived = (&bad * 2.0).sqrt();
    for err in [bad.to_vec().unwrap_err(), derived.to_vec().unwrap_err()] {
        let msg = err.to_string();
        let lines: Vec<u32> = msg
            .split("tests/error_handlers.rs:")
            .skip(1)
            .filter_map(|r| r.split(':').next()?.parse().ok())
            .collect();
        assert!(
            lines.iter().any(|&l| l0 < l && l < l1),
            "names the failing call: {msg}"
        );
        assert!(msg.contains("[3, 4]") && msg.contains("[5]"), "{msg}");
    }
    // Valid work is unaffected.
    assert_eq!((&a * 3.0).sum().item().unwrap(), 36.0);
    // Popping both restores the default: a panic at the operator's line.
    assert!(Runtime::pop_error_handler());
    assert!(Runtime::pop_error_handler());
    assert!(!Runtime::pop_error_handler());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| &a + &b));
    assert!(r.is_err());
}
