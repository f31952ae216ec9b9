//! Bad input and failed computations: every error names the caller's file and line, says what was
//! wrong, and the runtime keeps working afterwards.

use arrayflow::{Array, ErrorKind};

/// The `file:line` of the line calling this macro, as error messages print it.
macro_rules! here {
    () => {
        format!("{}:{}:", file!(), line!())
    };
}

#[test]
fn mismatched_shapes_name_the_callers_line_and_both_shapes() {
    let a = Array::<f32>::zeros(&[3, 4]);
    let b = Array::<f32>::zeros(&[5]);
    let (err, line) = (a.try_add(&b).unwrap_err(), here!());
    assert_eq!(err.kind(), ErrorKind::Shape);
    let msg = err.to_string();
    assert!(msg.starts_with(&line), "{msg} should start with {line}");
    assert!(msg.contains("[3, 4]") && msg.contains("[5]"), "{msg}");

    let (err, line) = (a.try_reshape(&[5, 5]).unwrap_err(), here!());
    assert!(err.to_string().starts_with(&line), "{err}");
    let (err, line) = (a.try_matmul(&a).unwrap_err(), here!());
    assert!(err.to_string().starts_with(&line), "{err}");
    let (err, line) = (Array::try_from_vec(vec![1.0f32; 7], &[2, 4]).unwrap_err(), here!());
    assert!(err.to_string().starts_with(&line) && err.to_string().contains('7'), "{err}");
}

#[test]
fn operator_panics_point_at_the_operator_line() {
    let a = Array::<f64>::ones(&[2, 3]);
    let b = Array::<f64>::ones(&[4]);
    let line = line!() + 1;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| &a + &b));
    let payload = r.unwrap_err();
    let msg = payload.downcast_ref::<String>().unwrap();
    assert!(msg.starts_with(&format!("{}:{line}:", file!())), "{msg}");
    assert!(msg.contains("[2, 3]") && msg.contains("[4]"), "{msg}");
}

#[test]
fn wrong_dtypes_name_the_callers_line() {
    let f = Array::<f32>::ones(&[4]).into_dyn();
    let i = Array::<i32>::ones(&[4]).into_dyn();
    let (err, line) = (f.try_add(&i).unwrap_err(), here!());
    assert_eq!(err.kind(), ErrorKind::DType);
    assert!(err.to_string().starts_with(&line), "{err}");
    assert!(err.to_string().contains("f32") && err.to_string().contains("i32"), "{err}");
    let (err, line) = (i.clone().downcast::<f64>().unwrap_err(), here!());
    assert!(err.to_string().starts_with(&line), "{err}");
    // The right type works.
    let back = i.downcast::<i32>().unwrap();
    assert_eq!(back.to_vec().unwrap(), vec![1; 4]);
}

#[test]
fn reading_a_failed_computation_names_the_read_and_the_failing_op() {
    let a = Array::from_vec(vec![10i32, 20, 30, 40], &[4]);
    let b = Array::from_vec(vec![2i32, 5, 0, 8], &[4]);
    let (q, op_line) = (&a / &b, here!());
    let y = &q + 1;
    let (err, read_line) = (y.to_vec().unwrap_err(), here!());
    assert_eq!(err.kind(), ErrorKind::InvalidResult);
    let msg = err.to_string();
    assert!(msg.starts_with(&read_line), "{msg}");
    assert!(msg.contains("division by zero"), "{msg}");
    assert!(msg.contains(op_line.trim_end_matches(':')), "{msg} should name the division at {op_line}");
    // Dependent results are invalid too, with the same origin; independent work is unaffected.
    let z = y.sum();
    assert!(z.item().unwrap_err().to_string().contains(op_line.trim_end_matches(':')));
    let ok = (&a * 2).to_vec().unwrap();
    assert_eq!(ok, vec![20, 40, 60, 80]);
}

#[test]
fn out_of_range_gather_is_an_error_on_read() {
    let data = Array::from_vec(vec![1.0f32, 2.0, 3.0], &[3]);
    let idx = Array::from_vec(vec![0u32, 7], &[2]);
    let (g, op_line) = (data.gather(&idx, 0), here!());
    let err = g.to_vec().unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("out of bounds") && msg.contains('7'), "{msg}");
    assert!(msg.contains(op_line.trim_end_matches(':')), "{msg}");
}

#[test]
fn item_and_read_into_check_sizes() {
    let a = Array::<f32>::ones(&[3]);
    let (err, line) = (a.item().unwrap_err(), here!());
    assert!(err.to_string().starts_with(&line), "{err}");
    let mut small = [0.0f32; 2];
    let (err, line) = (a.read_into(&mut small).unwrap_err(), here!());
    assert!(err.to_string().starts_with(&line), "{err}");
}

#[test]
fn reductions_with_no_identity_reject_empty_input() {
    let e = Array::<f32>::zeros(&[0, 3]);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| e.max()));
    let msg = r.unwrap_err().downcast_ref::<String>().cloned().unwrap();
    assert!(msg.contains("tests/errors.rs") && msg.contains("zero elements"), "{msg}");
    // Sums of nothing are zero.
    assert_eq!(e.sum().item().unwrap(), 0.0);
    assert_eq!(e.sum_axis(0).to_vec().unwrap(), vec![0.0; 3]);
}
