//! The `s!` slice notation against an independent oracle of NumPy's basic indexing (CPython's
//! `PySlice_AdjustIndices` written out as plain index arithmetic): random shapes of rank 1-4,
//! random entries (indices that drop their axis, ranges with absent, negative and positive bounds,
//! steps of either sign and larger than the axis), on the executor the environment picks. Where
//! NumPy would clamp a bound outside the axis the crate errors instead (GitHub issue 18, item 8):
//! the oracle says which bounds those are and the test expects the error, naming this file.
//! Views move data, so results are exact.

mod common;

use arrayflow::{Array, ErrorKind, Slice, s};
use common::*;
use rand::RngExt;
use rand::rngs::StdRng;

/// One NumPy index entry: `Index(i)` is `a[i]`, `Range` is `a[start:stop:step]`.
#[derive(Debug, Clone, Copy)]
enum Entry {
    Index(isize),
    Range(Option<isize>, Option<isize>, Option<isize>),
}

/// NumPy's `slice.indices(n)`: the element indices a slice selects, clamping bounds as CPython.
fn numpy_slice(n: isize, start: Option<isize>, stop: Option<isize>, step: isize) -> Vec<usize> {
    let adjust = |v: isize| -> isize {
        if v < 0 {
            let v = v + n;
            if v < 0 {
                if step < 0 { -1 } else { 0 }
            } else {
                v
            }
        } else if v >= n {
            if step < 0 { n - 1 } else { n }
        } else {
            v
        }
    };
    let (lo_default, hi_default) = if step < 0 { (n - 1, -1) } else { (0, n) };
    let b = start.map_or(lo_default, adjust);
    let e = stop.map_or(hi_default, adjust);
    let mut out = Vec::new();
    let mut i = b;
    while (step > 0 && i < e) || (step < 0 && i > e) {
        out.push(i as usize);
        i += step;
    }
    out
}

/// Whether the crate accepts an entry (it errors where NumPy clamps a bound outside the axis):
/// bounds in `-n..=n`; a reversed slice's start an element (`-n..n`); an index `-n..n`.
fn accepted(n: isize, e: Entry) -> bool {
    match e {
        Entry::Index(i) => -n <= i && i < n,
        Entry::Range(start, stop, step) => {
            let step = step.unwrap_or(1);
            let start_hi = if step > 0 { n } else { n - 1 };
            start.is_none_or(|v| -n <= v && v <= start_hi) && stop.is_none_or(|v| -n <= v && v <= n)
        }
    }
}

/// The oracle: result shape and the source element of each result element (row-major).
fn oracle(shape: &[usize], entries: &[Entry]) -> (Vec<usize>, Vec<usize>) {
    let mut per_axis: Vec<(Vec<usize>, bool)> = Vec::new();
    for (d, &n) in shape.iter().enumerate() {
        let n = n as isize;
        match entries.get(d) {
            Some(&Entry::Index(i)) => {
                per_axis.push((vec![(if i < 0 { i + n } else { i }) as usize], false))
            }
            Some(&Entry::Range(b, e, st)) => {
                per_axis.push((numpy_slice(n, b, e, st.unwrap_or(1)), true))
            }
            None => per_axis.push(((0..n as usize).collect(), true)),
        }
    }
    let out_shape: Vec<usize> = per_axis.iter().filter(|a| a.1).map(|a| a.0.len()).collect();
    let st = strides(shape);
    let mut offs = vec![0usize];
    for (d, (idx, _)) in per_axis.iter().enumerate() {
        let sd = st[d];
        offs = offs
            .iter()
            .flat_map(|&base| idx.iter().map(move |&i| base + i * sd))
            .collect();
    }
    (out_shape, offs)
}

/// The entry through the macro: each syntactic form of `s!` the entry needs.
fn via_macro(e: Entry) -> Slice {
    match e {
        Entry::Index(i) => s![i][0],
        Entry::Range(b, e, None) => match (b, e) {
            (Some(b), Some(e)) => s![b..e][0],
            (Some(b), None) => s![b..][0],
            (None, Some(e)) => s![..e][0],
            (None, None) => s![..][0],
        },
        Entry::Range(b, e, Some(k)) => match (b, e) {
            (Some(b), Some(e)) => s![b..e; k][0],
            (Some(b), None) => s![b..; k][0],
            (None, Some(e)) => s![..e; k][0],
            (None, None) => s![..; k][0],
        },
    }
}

fn random_entry(r: &mut StdRng, n: usize) -> Entry {
    let lim = n as i64 + 2;
    let bound = |r: &mut StdRng| -> Option<isize> {
        if r.random_bool(0.25) {
            None
        } else {
            Some(r.random_range(-lim..=lim) as isize)
        }
    };
    if r.random_bool(0.2) {
        return Entry::Index(r.random_range(-lim..=lim) as isize);
    }
    let (b, e) = (bound(r), bound(r));
    let step = if r.random_bool(0.3) {
        None
    } else {
        Some([1, 2, 3, 7, -1, -2, -3, -7][r.random_range(0..8)])
    };
    Entry::Range(b, e, step)
}

/// Random ranks 1-4 and random entries for some leading axes, against the oracle.
#[test]
fn random_slices_match_numpy() {
    let mut r = rng(1801);
    let (mut checked, mut errors) = (0, 0);
    while checked < 32 {
        let rank = r.random_range(1..=4);
        let shape: Vec<usize> = (0..rank).map(|_| r.random_range(0..=6)).collect();
        let k = r.random_range(1..=rank);
        let entries: Vec<Entry> = shape[..k]
            .iter()
            .map(|&n| random_entry(&mut r, n))
            .collect();
        let slices: Vec<Slice> = entries.iter().map(|&e| via_macro(e)).collect();
        let x = rand_i32_any(&mut r, numel(&shape));
        let a = Array::from_slice(&x, &shape);
        let ctx = format!("shape {shape:?} entries {entries:?}");
        if !shape
            .iter()
            .zip(&entries)
            .all(|(&n, &e)| accepted(n as isize, e))
        {
            let err = a.try_slice(&slices).expect_err(&ctx);
            assert_eq!(err.kind, ErrorKind::Argument, "{ctx}: {err}");
            assert!(err.to_string().contains("out of range"), "{ctx}: {err}");
            assert!(
                err.to_string().contains("slicing_macro.rs"),
                "{ctx}: names the caller: {err}"
            );
            errors += 1;
            continue;
        }
        let (want_shape, src) = oracle(&shape, &entries);
        let want: Vec<i32> = src.iter().map(|&i| x[i]).collect();
        let got = a.slice(&slices);
        assert_eq!(got.shape(), &want_shape[..], "{ctx}: shape");
        assert_eq!(read(&got), want, "{ctx}");
        checked += 1;
    }
    assert!(
        errors > 5,
        "the random entries include out-of-range ones ({errors})"
    );
}

/// The macro's multi-axis syntax, literal by literal, on f32 data (NumPy's results spelled out by
/// the oracle) and composed with arithmetic.
#[test]
fn literal_forms() {
    let mut r = rng(1802);
    let shape = [4usize, 5, 6, 3];
    let x = rand_f32(&mut r, numel(&shape), -10.0, 10.0);
    let a = Array::from_slice(&x, &shape);
    use Entry::{Index as I, Range as R};
    let check = |slices: &[Slice], entries: Vec<Entry>| {
        let ctx = format!("{entries:?}");
        let (want_shape, src) = oracle(&shape, &entries);
        let got = a.slice(slices) * 2.0;
        assert_eq!(got.shape(), &want_shape[..], "{ctx}: shape");
        let want: Vec<f32> = src.iter().map(|&i| x[i] * 2.0).collect();
        assert_eq!(read(&got), want, "{ctx}");
    };
    check(
        s![1..-1, .., ..;2, -1],
        vec![
            R(Some(1), Some(-1), None),
            R(None, None, None),
            R(None, None, Some(2)),
            I(-1),
        ],
    );
    check(s![..;-1], vec![R(None, None, Some(-1))]);
    check(s![3..;-1, 2], vec![R(Some(3), None, Some(-1)), I(2)]);
    check(s![-1, -2, -3], vec![I(-1), I(-2), I(-3)]);
    check(s![0, 0, 0, 0], vec![I(0), I(0), I(0), I(0)]);
    check(
        s![..;9, 4..0;-3, -6..;5,],
        vec![
            R(None, None, Some(9)),
            R(Some(4), Some(0), Some(-3)),
            R(Some(-6), None, Some(5)),
        ],
    );
    check(
        s![2..2, ..-4;-1],
        vec![R(Some(2), Some(2), None), R(None, Some(-4), Some(-1))],
    );
    check(s![], vec![]);
    // Variables of other integer types.
    let (i, j, k): (usize, u32, i64) = (1, 4, -1);
    let (want_shape, src) = oracle(&shape, &[I(1), R(Some(4), None, Some(-1))]);
    let got = a.slice(s![i, j..;k]);
    assert_eq!(got.shape(), &want_shape[..]);
    assert_eq!(read(&got), src.iter().map(|&i| x[i]).collect::<Vec<_>>());
    // Errors name the caller's line.
    let e = a.try_slice(s![4]).unwrap_err();
    assert!(
        e.to_string()
            .contains("index 4 out of range for axis 0 of length 4"),
        "{e}"
    );
    assert!(e.to_string().contains("slicing_macro.rs"), "{e}");
    let e = a.try_slice(s![.., ..;0]).unwrap_err();
    assert!(e.to_string().contains("step 0"), "{e}");
}
