//! Bad input and failed computations: every error names the caller's file and line, says what was
//! wrong, and the runtime keeps working afterwards.

use arrayflow::{Array, ErrorKind};

/// Checks that `msg` names `tests/errors.rs` at a line strictly between `after` and `before`
/// (the lines around the call; robust to rustfmt moving the call onto several lines). With
/// `first`, the site must start the message (the caller's own site); otherwise it may appear
/// anywhere (the site of the operation that failed).
fn names_site(msg: &str, after: u32, before: u32, first: bool) {
    let file = file!();
    let found = msg.match_indices(file).any(|(at, _)| {
        let rest = &msg[at + file.len() + 1..];
        let line: u32 = rest
            .split(':')
            .next()
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        (!first || at == 0) && after < line && line < before
    });
    assert!(
        found,
        "`{msg}` should name {file} between lines {after} and {before}"
    );
}

#[test]
fn mismatched_shapes_name_the_callers_line_and_both_shapes() {
    let a = Array::<f32>::zeros(&[3, 4]);
    let b = Array::<f32>::zeros(&[5]);
    let l0 = line!();
    let err = a.try_add(&b).unwrap_err();
    let l1 = line!();
    assert_eq!(err.kind(), ErrorKind::Shape);
    let msg = err.to_string();
    names_site(&msg, l0, l1, true);
    assert!(msg.contains("[3, 4]") && msg.contains("[5]"), "{msg}");

    let l0 = line!();
    let e1 = a.try_reshape(&[5, 5]).unwrap_err();
    let e2 = a.try_matmul(&a).unwrap_err();
    let e3 = Array::try_from_vec(vec![1.0f32; 7], &[2, 4]).unwrap_err();
    let l1 = line!();
    for e in [&e1, &e2, &e3] {
        names_site(&e.to_string(), l0, l1, true);
    }
    assert!(e3.to_string().contains('7'), "{e3}");
}

#[test]
fn operator_panics_point_at_the_operator_line() {
    let a = Array::<f64>::ones(&[2, 3]);
    let b = Array::<f64>::ones(&[4]);
    let l0 = line!();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| &a + &b));
    let l1 = line!();
    let payload = r.unwrap_err();
    let msg = payload.downcast_ref::<String>().unwrap();
    names_site(msg, l0, l1, true);
    assert!(msg.contains("[2, 3]") && msg.contains("[4]"), "{msg}");
}

#[test]
fn wrong_dtypes_name_the_callers_line() {
    let f = Array::<f32>::ones(&[4]).into_dyn();
    let i = Array::<i32>::ones(&[4]).into_dyn();
    let l0 = line!();
    let err = f.try_add(&i).unwrap_err();
    let l1 = line!();
    assert_eq!(err.kind(), ErrorKind::DType);
    names_site(&err.to_string(), l0, l1, true);
    assert!(
        err.to_string().contains("f32") && err.to_string().contains("i32"),
        "{err}"
    );
    let l0 = line!();
    let err = i.clone().downcast::<f64>().unwrap_err();
    let l1 = line!();
    names_site(&err.to_string(), l0, l1, true);
    // The right type works.
    let back = i.downcast::<i32>().unwrap();
    assert_eq!(back.to_vec().unwrap(), vec![1; 4]);
}

#[test]
fn reading_a_failed_computation_names_the_read_and_the_failing_op() {
    let a = Array::from_vec(vec![10i32, 20, 30, 40], &[4]);
    let b = Array::from_vec(vec![2i32, 5, 0, 8], &[4]);
    let op0 = line!();
    let q = &a / &b;
    let op1 = line!();
    let y = &q + 1;
    let r0 = line!();
    let err = y.to_vec().unwrap_err();
    let r1 = line!();
    assert_eq!(err.kind(), ErrorKind::InvalidResult);
    let msg = err.to_string();
    names_site(&msg, r0, r1, true);
    names_site(&msg, op0, op1, false);
    assert!(msg.contains("division by zero"), "{msg}");
    // Dependent results are invalid too, with the same origin; independent work is unaffected.
    let z = y.sum();
    names_site(&z.item().unwrap_err().to_string(), op0, op1, false);
    let ok = (&a * 2).to_vec().unwrap();
    assert_eq!(ok, vec![20, 40, 60, 80]);
}

#[test]
fn out_of_range_gather_is_an_error_on_read() {
    let data = Array::from_vec(vec![1.0f32, 2.0, 3.0], &[3]);
    let idx = Array::from_vec(vec![0u32, 7], &[2]);
    let op0 = line!();
    let g = data.gather(&idx, 0);
    let op1 = line!();
    let msg = g.to_vec().unwrap_err().to_string();
    assert!(msg.contains("out of bounds") && msg.contains('7'), "{msg}");
    names_site(&msg, op0, op1, false);
}

/// A result computed from a faulty one in the same flush is invalid too, on every executor: a
/// device finds the fault after the kernels queued behind it ran, so their completion waits for
/// the faulting task's rerun on the CPU. The consumers here are not stored on their own (the
/// gather's result is a temporary), and one consumer is itself consumed.
#[test]
fn results_computed_from_a_faulty_gather_are_invalid_too() {
    let data = Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4]);
    let idx = Array::from_vec(vec![0u32, 9, 2, 1], &[4]);
    let op0 = line!();
    let twice = {
        let g = data.gather(&idx, 0);
        &g + &g
    };
    let op1 = line!();
    let sum = (&twice * 3.0).sum();
    for msg in [
        twice.to_vec().unwrap_err().to_string(),
        sum.item().unwrap_err().to_string(),
    ] {
        assert!(msg.contains("out of bounds") && msg.contains('9'), "{msg}");
        names_site(&msg, op0, op1, false);
    }
    // Independent work in the same flush is unaffected.
    assert_eq!((&data * 2.0).to_vec().unwrap(), vec![2.0, 4.0, 6.0, 8.0]);
}

#[test]
fn item_and_read_into_check_sizes() {
    let a = Array::<f32>::ones(&[3]);
    let l0 = line!();
    let e1 = a.item().unwrap_err();
    let mut small = [0.0f32; 2];
    let e2 = a.read_into(&mut small).unwrap_err();
    let l1 = line!();
    names_site(&e1.to_string(), l0, l1, true);
    names_site(&e2.to_string(), l0, l1, true);
}

#[test]
fn reductions_with_no_identity_reject_empty_input() {
    let e = Array::<f32>::zeros(&[0, 3]);
    let l0 = line!();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| e.max()));
    let l1 = line!();
    let msg = r.unwrap_err().downcast_ref::<String>().cloned().unwrap();
    names_site(&msg, l0, l1, true);
    assert!(msg.contains("zero elements"), "{msg}");
    // Sums of nothing are zero.
    assert_eq!(e.sum().item().unwrap(), 0.0);
    assert_eq!(e.sum_axis(0).to_vec().unwrap(), vec![0.0; 3]);
}
