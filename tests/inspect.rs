//! Arrays a person can look at: `Display` and `Debug` print the values NumPy style (aligned,
//! summarised past 1000 elements), `describe()` the shape only, a failed read prints its error,
//! `Error`'s `Debug` is its message; `get`, `allclose` and `assert_allclose!` against values
//! written out by hand.

use arrayflow::{Array, ErrorKind, Runtime, allclose, assert_allclose};

#[test]
fn display_prints_values_numpy_style() {
    let a = Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
    assert_eq!(format!("{a}"), "[[1.0, 2.0],\n [3.0, 4.0]]");
    let b = Array::from_vec(vec![1.0f32, 20.0, 3.0, 4.0], &[2, 2]);
    assert_eq!(format!("{b}"), "[[ 1.0, 20.0],\n [ 3.0,  4.0]]");
    assert_eq!(
        format!("{}", Array::from_vec(vec![1i32, -2, 3], &[3])),
        "[ 1, -2,  3]"
    );
    assert_eq!(format!("{}", Array::scalar(2.5f64)), "2.5");
    assert_eq!(
        format!("{}", Array::from_vec(vec![true, false], &[2])),
        "[ true, false]"
    );
    let c = Array::from_vec((0..8).collect::<Vec<i32>>(), &[2, 2, 2]);
    assert_eq!(
        format!("{c}"),
        "[[[0, 1],\n  [2, 3]],\n\n [[4, 5],\n  [6, 7]]]"
    );
    assert_eq!(
        format!("{:.2}", Array::from_vec(vec![1.0f64, 2.5], &[2])),
        "[1.00, 2.50]"
    );
    assert_eq!(format!("{}", Array::<f32>::zeros(&[0])), "[]");
    assert_eq!(format!("{}", Array::<u32>::zeros(&[2, 0])), "[[],\n []]");
    // A pending expression is computed for the print.
    assert_eq!(format!("{}", &a * 2.0 + 0.5), "[[2.5, 4.5],\n [6.5, 8.5]]");
    // NaN and infinities.
    let s = Array::from_vec(vec![f32::NAN, f32::INFINITY, -1.5], &[3]);
    assert_eq!(format!("{s}"), "[ NaN,  inf, -1.5]");
}

#[test]
fn large_arrays_print_summarised() {
    let a = Array::from_vec((0..2000u32).collect(), &[2000]);
    assert_eq!(format!("{a}"), "[   0,    1,    2, ..., 1997, 1998, 1999]");
    let b = Array::from_vec((0..2000i32).collect(), &[100, 20]);
    let s = format!("{b}");
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines,
        vec![
            "[[   0,    1,    2, ...,   17,   18,   19],",
            " [  20,   21,   22, ...,   37,   38,   39],",
            " [  40,   41,   42, ...,   57,   58,   59],",
            " ...,",
            " [1940, 1941, 1942, ..., 1957, 1958, 1959],",
            " [1960, 1961, 1962, ..., 1977, 1978, 1979],",
            " [1980, 1981, 1982, ..., 1997, 1998, 1999]]",
        ]
    );
    // 1000 elements exactly: printed in full.
    let c = Array::<f32>::zeros(&[1000]);
    assert_eq!(format!("{c}").matches("0.0").count(), 1000);
}

#[test]
fn debug_shows_values_shape_and_type_and_describe_the_shape_only() {
    let a = Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
    assert_eq!(
        format!("{a:?}"),
        "array([[1.0, 2.0],\n       [3.0, 4.0]], shape=[2, 2], dtype=f32)"
    );
    assert_eq!(a.describe(), "Array<f32>[2, 2]");
    assert_eq!(
        format!("{:?}", Array::from_vec(vec![7u32], &[1])),
        "array([7], shape=[1], dtype=u32)"
    );
}

#[test]
fn a_failed_read_prints_its_error() {
    let a = Array::from_vec(vec![1i32, 2], &[2]);
    let z = Array::from_vec(vec![1i32, 0], &[2]);
    let q = &a / &z;
    let shown = format!("{q}");
    let err = q.to_vec().unwrap_err();
    assert!(
        shown.starts_with("<error: ") && shown.contains("division"),
        "{shown}"
    );
    assert_eq!(err.kind(), ErrorKind::InvalidResult);
}

#[test]
fn printing_inside_a_code_reuse_section_does_not_read() {
    let x = Array::from_vec(vec![1.0f64, 2.0, 3.0], &[3]);
    let mut seen = String::new();
    let out = Runtime::reuse_named("print-inside", &[&x], &[], |ins| {
        seen = format!("{}", ins[0]);
        vec![&ins[0] + 1.0]
    })
    .unwrap();
    assert_eq!(
        seen,
        "Array<f64>[3] (values are not read inside a code reuse section)"
    );
    assert_eq!(out[0].to_vec().unwrap(), vec![2.0, 3.0, 4.0]);
}

#[test]
fn error_debug_is_the_readable_message() {
    let a = Array::from_vec(vec![1.0f32; 4], &[4]);
    let e = a.try_reshape(&[3]).unwrap_err();
    assert_eq!(format!("{e:?}"), e.to_string());
    assert!(e.to_string().starts_with("tests/inspect.rs:"), "{e}");
    let full = format!("{e:#?}");
    assert!(
        full.contains("kind: Shape") && full.contains("message:"),
        "{full}"
    );
}

#[test]
fn get_reads_one_element_and_checks_the_index() {
    let v: Vec<f64> = (0..12).map(|i| i as f64 * 0.5).collect();
    let a = Array::from_vec(v.clone(), &[3, 4]);
    for i in 0..3 {
        for j in 0..4 {
            assert_eq!(a.get(&[i, j]).unwrap(), v[i * 4 + j]);
        }
    }
    let b = (&a * 2.0).transpose();
    assert_eq!(b.get(&[3, 2]).unwrap(), v[2 * 4 + 3] * 2.0);
    assert_eq!(Array::scalar(7i32).get(&[]).unwrap(), 7);
    let line = line!() + 1;
    let e = a.get(&[3, 0]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Argument);
    assert!(
        e.to_string()
            .starts_with(&format!("tests/inspect.rs:{line}:"))
            && e.message.contains("out of range for shape [3, 4]"),
        "{e}"
    );
    assert!(a.get(&[1]).unwrap_err().message.contains("1 indices"));
}

#[test]
fn allclose_follows_numpy() {
    let a = Array::from_vec(vec![1.0f64, 2.0, 3.0], &[3]);
    let near = Array::from_vec(vec![1.0 + 1e-9, 2.0, 3.0 - 2e-5], &[3]);
    assert!(allclose(&a, &a, 0.0, 0.0).unwrap());
    assert!(allclose(&a, &near, 1e-5, 1e-8).unwrap());
    assert!(!allclose(&a, &near, 1e-6, 1e-8).unwrap());
    assert!(allclose(&a, &near, 0.0, 3e-5).unwrap());
    let nan = Array::from_vec(vec![f64::NAN], &[1]);
    assert!(!allclose(&nan, &nan, 1.0, 1.0).unwrap());
    let inf = Array::from_vec(vec![f64::INFINITY, -1.0], &[2]);
    assert!(allclose(&inf, &inf, 0.0, 0.0).unwrap());
    let other = Array::from_vec(vec![f64::NEG_INFINITY, -1.0], &[2]);
    assert!(!allclose(&inf, &other, 1.0, 1.0).unwrap());
    // Shapes broadcast: a row against a matrix of that row.
    let m = Array::from_vec(vec![1.0f64, 2.0, 3.0, 1.0, 2.0, 3.0], &[2, 3]);
    assert!(allclose(&m, &a, 0.0, 0.0).unwrap());
    let e = allclose(&a, &Array::<f64>::zeros(&[2]), 0.0, 0.0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Shape);
    // Integers compare exactly with zero tolerances.
    let i = Array::from_vec(vec![3i32, -4], &[2]);
    assert!(allclose(&(&i * 2), &Array::from_vec(vec![6, -8], &[2]), 0.0, 0.0).unwrap());
}

#[test]
fn assert_allclose_names_the_worst_element() {
    let a = Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
    assert_allclose!(&a * 2.0, Array::from_vec(vec![2.0, 4.0, 6.0, 8.0], &[2, 2]));
    assert_allclose!(a, a, 0.0, 0.0);
    let off = Array::from_vec(vec![1.0f32, 2.0001, 3.5, 4.0], &[2, 2]);
    let line = line!() + 1;
    let p = std::panic::catch_unwind(|| assert_allclose!(off, a)).unwrap_err();
    let msg = p.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.starts_with(&format!("tests/inspect.rs:{line}:")),
        "{msg}"
    );
    assert!(
        msg.contains("2 of 4 elements differ")
            && msg.contains("the worst at [1, 0]: actual 3.5, expected 3.0"),
        "{msg}"
    );
}
