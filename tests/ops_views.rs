//! Views and data movement against index-walking oracles on seeded random data: reshape,
//! transpose/permute, slice (positive and negative steps, negative and out-of-range indices),
//! broadcast_to, tile, gather (i32 and u32 indices), concat along each axis, chains mixing views
//! with element-wise ops and reductions (matmul's tests are in `tests/matmul.rs`).
//!
//! Tolerances: views move data, so they are exact (bitwise for floats). Element-wise ops in the
//! chains are + - * (correctly rounded: exact oracle).

mod common;

use arrayflow::{Array, Element, ErrorKind, Slice};
use common::*;

fn arr_f32(r: &mut rand::rngs::StdRng, shape: &[usize]) -> (Vec<f32>, Array<f32>) {
    let x = rand_f32(r, numel(shape), -100.0, 100.0);
    let a = Array::from_slice(&x, shape);
    (x, a)
}

/// Runs `check` for data of every element type: the closure gets the data and the array.
macro_rules! for_all_types {
    ($r:expr, $shape:expr, |$x:ident, $a:ident| $body:block) => {{
        let shape: &[usize] = $shape;
        let n = numel(shape);
        {
            let $x = rand_f32($r, n, -100.0, 100.0);
            let $a = Array::from_slice(&$x, shape);
            $body
        }
        {
            let $x = rand_f64($r, n, -100.0, 100.0);
            let $a = Array::from_slice(&$x, shape);
            $body
        }
        {
            let $x = rand_i32_any($r, n);
            let $a = Array::from_slice(&$x, shape);
            $body
        }
        {
            let $x = rand_u32_any($r, n);
            let $a = Array::from_slice(&$x, shape);
            $body
        }
        {
            let $x = rand_bool($r, n, 0.5);
            let $a = Array::from_slice(&$x, shape);
            $body
        }
    }};
}

/// Exact comparison for any element type: f32/f64 compared bit for bit through `PartialEq` plus
/// NaN (view tests never produce NaN, so `PartialEq` suffices).
#[track_caller]
fn same<T: Element>(got: &Array<T>, want_shape: &[usize], want: &[T], ctx: &str) {
    assert_eq!(got.shape(), want_shape, "{ctx}: shape");
    assert_same(&read(got), want, ctx);
}

#[test]
fn reshape_all_types() {
    let mut r = rng(401);
    for_all_types!(&mut r, &[2, 3, 4], |x, a| {
        same(&a.reshape(&[24]), &[24], &x, "reshape to 1-D");
        same(&a.reshape(&[4, 6]), &[4, 6], &x, "reshape to [4, 6]");
        same(
            &a.reshape(&[4, 6]).reshape(&[2, 2, 1, 6]),
            &[2, 2, 1, 6],
            &x,
            "reshape twice",
        );
        same(&a.reshape(&[2, 3, 4]), &[2, 3, 4], &x, "reshape to itself");
        let e = a.try_reshape(&[5, 5]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Shape, "{e}");
    });
    // Reshape of a computed, non-contiguous source: the transpose's elements in row-major order.
    let (x, a) = arr_f32(&mut r, &[3, 4]);
    let (_, tv) = permute_oracle(&x, &[3, 4], &[1, 0]);
    same(
        &a.transpose().reshape(&[12]),
        &[12],
        &tv,
        "transpose then reshape",
    );
    let y: Vec<f32> = x.iter().map(|v| v * 2.0 + 1.0).collect();
    same(
        &(&a * 2.0 + 1.0).reshape(&[2, 6]),
        &[2, 6],
        &y,
        "expression then reshape",
    );
    let z: Vec<f32> = x.iter().map(|v| v - 3.0).collect();
    same(
        &(a.reshape(&[6, 2]) - 3.0),
        &[6, 2],
        &z,
        "reshape then expression",
    );
    // A 0-d array and [1, 1, 1] reshape into each other.
    let s = Array::from_slice(&[7i32], &[1, 1, 1]);
    same(&s.reshape(&[]), &[], &[7], "[1,1,1] -> 0-d");
    same(
        &Array::scalar(7u32).reshape(&[1, 1]),
        &[1, 1],
        &[7],
        "0-d -> [1,1]",
    );
}

#[test]
fn transpose_and_permute_all_types() {
    let mut r = rng(402);
    for_all_types!(&mut r, &[3, 4, 5], |x, a| {
        let perms: [[usize; 3]; 6] = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        for p in perms {
            let (s, v) = permute_oracle(&x, &[3, 4, 5], &p);
            same(&a.permute(&p), &s, &v, &format!("permute {p:?}"));
        }
        let (s, v) = permute_oracle(&x, &[3, 4, 5], &[2, 1, 0]);
        same(&a.transpose(), &s, &v, "3-D transpose reverses axes");
        same(
            &a.transpose().transpose(),
            &[3, 4, 5],
            &x,
            "transpose twice",
        );
        let (s, v) = permute_oracle(&x, &[3, 4, 5], &[1, 0, 2]);
        let (s2, v2) = permute_oracle(&v, &s, &[2, 0, 1]);
        same(
            &a.permute(&[1, 0, 2]).permute(&[2, 0, 1]),
            &s2,
            &v2,
            "permute of permute",
        );
    });
    for_all_types!(&mut r, &[7, 9], |x, a| {
        let (s, v) = permute_oracle(&x, &[7, 9], &[1, 0]);
        same(&a.transpose(), &s, &v, "2-D transpose");
    });
    let (x, a) = arr_f32(&mut r, &[2, 3, 4, 5]);
    for p in [[3, 2, 1, 0], [1, 3, 0, 2], [0, 2, 3, 1]] {
        let (s, v) = permute_oracle(&x, &[2, 3, 4, 5], &p);
        same(&a.permute(&p), &s, &v, &format!("4-D permute {p:?}"));
    }
    // A large transpose spanning several CPU tiles.
    let (x, a) = arr_f32(&mut r, &[123, 171]);
    let (s, v) = permute_oracle(&x, &[123, 171], &[1, 0]);
    same(&a.transpose(), &s, &v, "large transpose");
    assert!(
        std::panic::catch_unwind(|| a.permute(&[0, 0])).is_err(),
        "permute with a repeated axis is an error"
    );
}

/// Python-style slices on one axis: random starts/ends (negative, absent) and steps; indices out
/// of range are errors (they used to be clamped silently, GitHub issue 18).
#[test]
fn slice_1d_random_specs() {
    let mut r = rng(403);
    for n in [1usize, 2, 7, 20] {
        let x = rand_i32_any(&mut r, n);
        let a = Array::from_slice(&x, &[n]);
        let lim = n as i32 + 3;
        for _ in 0..60 {
            let pick = |r: &mut rand::rngs::StdRng| -> Option<isize> {
                let v = rand_i32(r, 1, -lim, lim)[0];
                if rand_bool(r, 1, 0.2)[0] {
                    None
                } else {
                    Some(v as isize)
                }
            };
            let (start, end) = (pick(&mut r), pick(&mut r));
            let step = [1, 2, 3, 5, -1, -2, -3, -5][rand_u32(&mut r, 1, 0, 7)[0] as usize];
            let ni = n as isize;
            let start_hi = if step > 0 { ni } else { ni - 1 };
            let in_range = start.is_none_or(|v| -ni <= v && v <= start_hi)
                && end.is_none_or(|v| -ni <= v && v <= ni);
            if !in_range {
                let e = a
                    .try_slice(&[Slice::new(start, end, step)])
                    .expect_err(&format!("n {n}: slice {start:?}..{end:?} step {step}"));
                assert_eq!(e.kind, ErrorKind::Argument, "{e}");
                assert!(e.to_string().contains("out of range"), "{e}");
                continue;
            }
            let idx = slice_indices(n, start, end, step);
            let want: Vec<i32> = idx.iter().map(|&i| x[i]).collect();
            let got = a.slice(&[Slice::new(start, end, step)]);
            same(
                &got,
                &[want.len()],
                &want,
                &format!("n {n}: slice {start:?}..{end:?} step {step}"),
            );
        }
    }
    let a = Array::from_slice(&[0.5f32, 1.5, 2.5], &[3]);
    let e = a.try_slice(&[Slice::new(None, None, 0)]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Argument, "step 0: {e}");
    assert!(
        a.try_slice(&[Slice::all(), Slice::all()]).is_err(),
        "more slices than axes"
    );
}

#[test]
fn slice_constructors_and_multi_axis() {
    let mut r = rng(404);
    let shape = [6usize, 7, 8];
    for_all_types!(&mut r, &shape, |x, a| {
        let cases: Vec<(Vec<Slice>, Vec<Vec<usize>>)> = vec![
            (vec![(1..4).into()], vec![vec![1, 2, 3]]),
            (
                vec![(2..=4).into(), (3..).into()],
                vec![vec![2, 3, 4], (3..7).collect()],
            ),
            (
                vec![(..2).into(), (..).into(), Slice::step(.., 3)],
                vec![vec![0, 1], (0..7).collect(), vec![0, 3, 6]],
            ),
            (
                vec![Slice::at(-1), Slice::at(0), Slice::at(5)],
                vec![vec![5], vec![0], vec![5]],
            ),
            (vec![Slice::at(2)], vec![vec![2]]),
            (
                vec![Slice::step(1..6, 2), Slice::new(None, None, -1)],
                vec![vec![1, 3, 5], (0..7).rev().collect()],
            ),
            (
                vec![
                    Slice::new(Some(-2), None, -2),
                    Slice::new(Some(5), Some(1), -2),
                    Slice::new(Some(-3), Some(-1), 1),
                ],
                vec![vec![4, 2, 0], vec![5, 3], vec![5, 6]],
            ),
            (vec![Slice::new(Some(4), Some(2), 1)], vec![vec![]]),
            (
                vec![Slice::all(), Slice::new(Some(-7), Some(7), 3)],
                vec![(0..6).collect(), vec![0, 3, 6]],
            ),
            (
                vec![
                    Slice::new(Some(6), Some(6), 1),
                    Slice::new(Some(1), Some(-7), -1),
                ],
                vec![vec![], vec![1]],
            ),
            (
                vec![
                    Slice::new(Some(5), Some(6), -1),
                    Slice::new(Some(-7), None, 2),
                ],
                vec![vec![], vec![0, 2, 4, 6]],
            ),
        ];
        for (spec, sel) in cases {
            let (s, v) = slice_oracle(&x, &shape, &sel);
            same(&a.slice(&spec), &s, &v, &format!("slice {spec:?}"));
        }
        // Slice of a slice.
        let first = a.slice(&[Slice::new(None, None, -1), Slice::step(1.., 2)]);
        let sel1 = vec![(0..6).rev().collect::<Vec<_>>(), vec![1, 3, 5]];
        let (s1, v1) = slice_oracle(&x, &shape, &sel1);
        let sel2 = vec![vec![1, 2, 3], vec![2, 1, 0], vec![7, 4, 1]];
        let (s2, v2) = slice_oracle(&v1, &s1, &sel2);
        let second = first.slice(&[
            (1..4).into(),
            Slice::new(None, None, -1),
            Slice::new(Some(-1), None, -3),
        ]);
        same(&second, &s2, &v2, "slice of a slice");
    });
}

/// An out-of-range slice is an error naming the caller's line, as `&v[2..10]` panics; open ends
/// and negative steps stay valid.
#[test]
fn out_of_range_slices_are_errors_naming_the_line() {
    let x = [1.0f32, 2.0, 3.0, 4.0, 5.0];
    let a = Array::from_slice(&x, &[5]);
    let line = line!() + 1;
    let e = a.try_slice(&[(2..10).into()]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Argument);
    assert_eq!(
        e.message, "slice 2..10 out of range for axis 0 of length 5",
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with(&format!("tests/ops_views.rs:{line}:")),
        "{e}"
    );
    // The panicking form names the caller's line too.
    let line = line!() + 1;
    let p = std::panic::catch_unwind(|| a.slice(&[(2..10).into()])).unwrap_err();
    let msg = p.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.starts_with(&format!("tests/ops_views.rs:{line}:"))
            && msg.contains("slice 2..10 out of range for axis 0 of length 5"),
        "{msg}"
    );
    let b = Array::from_slice(&x, &[1, 5]);
    let e = b
        .try_slice(&[Slice::all(), Slice::new(Some(5), None, -1)])
        .unwrap_err();
    assert_eq!(
        e.message, "slice 5.. step -1 out of range for axis 1 of length 5",
        "{e}"
    );
    for bad in [
        Slice::new(Some(-6), None, 1),
        Slice::new(None, Some(6), 1),
        Slice::new(None, Some(-6), -1),
        Slice::at(5),
        Slice::at(-6),
        Slice::from(3..=5),
    ] {
        assert!(a.try_slice(&[bad]).is_err(), "{bad:?}");
    }
    // Valid edges: open ends, len as an end, -len as a start, empty slices, negative steps.
    let cases: Vec<(Slice, Vec<f32>)> = vec![
        ((..).into(), x.to_vec()),
        ((2..).into(), vec![3.0, 4.0, 5.0]),
        ((..5).into(), x.to_vec()),
        ((5..5).into(), vec![]),
        (Slice::new(Some(4), Some(2), 1), vec![]),
        (Slice::new(Some(-5), Some(5), 2), vec![1.0, 3.0, 5.0]),
        (Slice::new(None, None, -1), vec![5.0, 4.0, 3.0, 2.0, 1.0]),
        (Slice::new(Some(4), Some(-5), -1), vec![5.0, 4.0, 3.0, 2.0]),
        (Slice::new(Some(-1), Some(0), -2), vec![5.0, 3.0]),
        (Slice::new(Some(0), Some(5), -1), vec![]),
        (Slice::at(-1), vec![5.0]),
        (Slice::at(-5), vec![1.0]),
        (Slice::at(4), vec![5.0]),
        (Slice::from(0..=4), x.to_vec()),
    ];
    for (s, want) in cases {
        let got = a.try_slice(&[s]).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        assert_eq!(got.to_vec().unwrap(), want, "{s:?}");
    }
    let empty = Array::<f32>::zeros(&[0]);
    assert_eq!(empty.try_slice(&[(0..0).into()]).unwrap().len(), 0);
    assert!(empty.try_slice(&[Slice::at(0)]).is_err());
}

#[test]
fn broadcast_to_all_types() {
    let mut r = rng(405);
    let cases: &[(&[usize], &[usize])] = &[
        (&[5], &[3, 5]),
        (&[3, 1], &[3, 4]),
        (&[1, 1, 4], &[2, 3, 4]),
        (&[], &[2, 2]),
        (&[2, 1, 3], &[4, 2, 5, 3]),
        (&[4], &[4]),
    ];
    for &(from, to) in cases {
        for_all_types!(&mut r, from, |x, a| {
            let want: Vec<_> = (0..numel(to))
                .map(|l| x[broadcast_src(&unravel(l, to), from)])
                .collect();
            same(
                &a.broadcast_to(to),
                to,
                &want,
                &format!("broadcast {from:?} -> {to:?}"),
            );
        });
    }
    let (x, a) = arr_f32(&mut r, &[4, 1]);
    let b = a.broadcast_to(&[4, 6]);
    let want: Vec<f32> = (0..24).map(|l| x[l / 6] * 3.0).collect();
    same(&(&b * 3.0), &[4, 6], &want, "broadcast then multiply");
    let (s, v) = permute_oracle(
        &(0..24).map(|l| x[l / 6]).collect::<Vec<_>>(),
        &[4, 6],
        &[1, 0],
    );
    same(&b.transpose(), &s, &v, "broadcast then transpose");
}

/// NumPy `tile` oracle: output index j reads input index j_d mod in_d (ranks padded with 1s).
fn tile_oracle<T: Copy>(x: &[T], shape: &[usize], reps: &[usize]) -> (Vec<usize>, Vec<T>) {
    let rank = shape.len().max(reps.len());
    let pad = |v: &[usize]| -> Vec<usize> {
        std::iter::repeat_n(1, rank - v.len())
            .chain(v.iter().copied())
            .collect()
    };
    let (s, rp) = (pad(shape), pad(reps));
    let out: Vec<usize> = s.iter().zip(&rp).map(|(a, b)| a * b).collect();
    let v = (0..numel(&out))
        .map(|l| {
            let oi = unravel(l, &out);
            let ii: Vec<usize> = oi.iter().zip(&s).map(|(i, d)| i % d).collect();
            x[ravel(&ii, &s)]
        })
        .collect();
    (out, v)
}

#[test]
fn tile_all_types() {
    let mut r = rng(406);
    let cases: &[(&[usize], &[usize])] = &[
        (&[2, 3], &[2, 2]),
        (&[2, 3], &[3]),
        (&[3], &[2, 1, 2]),
        (&[2, 1, 3], &[1, 4, 1]),
        (&[5], &[1]),
        (&[4, 5], &[1, 1]),
        (&[3, 4], &[30, 40]),
    ];
    for &(shape, reps) in cases {
        for_all_types!(&mut r, shape, |x, a| {
            let (s, v) = tile_oracle(&x, shape, reps);
            same(
                &a.tile(reps),
                &s,
                &v,
                &format!("tile {shape:?} by {reps:?}"),
            );
        });
    }
    // Tile of an expression and of a view; element-wise op after a tile.
    let (x, a) = arr_f32(&mut r, &[3, 4]);
    let y: Vec<f32> = x.iter().map(|v| v + 1.0).collect();
    let (s, v) = tile_oracle(&y, &[3, 4], &[2, 3]);
    same(&(&a + 1.0).tile(&[2, 3]), &s, &v, "tile of an expression");
    let (ts, tv) = permute_oracle(&x, &[3, 4], &[1, 0]);
    let (s, v) = tile_oracle(&tv, &ts, &[2, 1]);
    same(&a.transpose().tile(&[2, 1]), &s, &v, "tile of a transpose");
    let (s, v) = tile_oracle(&x, &[3, 4], &[2, 2]);
    let w: Vec<f32> = v.iter().map(|q| q * 2.0).collect();
    same(&(a.tile(&[2, 2]) * 2.0), &s, &w, "multiply after tile");
}

#[test]
fn gather_all_types_and_axes() {
    let mut r = rng(407);
    let shape = [4usize, 5, 6];
    for_all_types!(&mut r, &shape, |x, a| {
        for axis in 0..3 {
            let dim = shape[axis];
            let idx = rand_u32(&mut r, 7, 0, dim as u32 - 1);
            let idx_i: Vec<i32> = idx.iter().map(|&v| v as i32).collect();
            // Oracle: output (pre, j, post) reads (pre, idx[j], post).
            let mut out_shape = shape.to_vec();
            out_shape[axis] = idx.len();
            let mut sel: Vec<Vec<usize>> = shape.iter().map(|&d| (0..d).collect()).collect();
            sel[axis] = idx.iter().map(|&v| v as usize).collect();
            let (s, v) = slice_oracle(&x, &shape, &sel);
            assert_eq!(s, out_shape);
            same(
                &a.gather(&Array::from_slice(&idx, &[7]), axis),
                &s,
                &v,
                &format!("gather u32 axis {axis}"),
            );
            same(
                &a.gather(&Array::from_slice(&idx_i, &[7]), axis),
                &s,
                &v,
                &format!("gather i32 axis {axis}"),
            );
            // 2-D index arrays insert their shape at the axis.
            let idx2 = rand_i32(&mut r, 6, 0, dim as i32 - 1);
            let got = a.gather(&Array::from_slice(&idx2, &[2, 3]), axis);
            let mut want_shape: Vec<usize> = shape[..axis].to_vec();
            want_shape.extend([2, 3]);
            want_shape.extend(&shape[axis + 1..]);
            sel[axis] = idx2.iter().map(|&v| v as usize).collect();
            let (_, v) = slice_oracle(&x, &shape, &sel);
            same(
                &got,
                &want_shape,
                &v,
                &format!("gather [2,3] indices axis {axis}"),
            );
        }
    });
}

#[test]
fn gather_out_of_range_is_an_error() {
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    for (name, g) in [
        (
            "u32 index 3 on axis of 3",
            a.gather(&Array::from_slice(&[0u32, 3], &[2]), 1),
        ),
        (
            "i32 index -1",
            a.gather(&Array::from_slice(&[-1i32, 0], &[2]), 1),
        ),
        (
            "i32 index 2 on axis of 2",
            a.gather(&Array::from_slice(&[2i32], &[1]), 0),
        ),
    ] {
        let e = g.to_vec().expect_err(name);
        assert_eq!(e.kind, ErrorKind::InvalidResult, "{name}: {e}");
    }
    // In-range gathers still work afterwards, including from computed indices.
    let idx = (Array::from_slice(&[3u32, 2, 1], &[3]) - 1u32)
        .gather(&Array::from_slice(&[2u32, 0], &[2]), 0);
    assert_same(&read(&idx), &[0, 2], "gather of computed indices");
    same(
        &a.gather(&idx, 1),
        &[2, 2],
        &[1.0, 3.0, 4.0, 6.0],
        "gather with computed indices",
    );
}

#[test]
fn gather_of_expressions() {
    let mut r = rng(408);
    let (x, a) = arr_f32(&mut r, &[10, 8]);
    let idx = rand_i32(&mut r, 5, 0, 9);
    let g = (&a * 2.0).gather(&Array::from_slice(&idx, &[5]), 0) + 1.0;
    let want: Vec<f32> = idx
        .iter()
        .flat_map(|&i| {
            x[i as usize * 8..i as usize * 8 + 8]
                .iter()
                .map(|v| v * 2.0 + 1.0)
        })
        .collect();
    same(&g, &[5, 8], &want, "gather of an expression, then an op");
    let gt = a.transpose().gather(&Array::from_slice(&idx[..3], &[3]), 1);
    let (ts, tv) = permute_oracle(&x, &[10, 8], &[1, 0]);
    let (s, v) = slice_oracle(
        &tv,
        &ts,
        &[
            (0..8).collect(),
            idx[..3].iter().map(|&i| i as usize).collect(),
        ],
    );
    same(&gt, &s, &v, "gather of a transpose");
}

#[test]
fn concat_all_types_and_axes() {
    let mut r = rng(409);
    let base = [3usize, 4, 5];
    for axis in 0..3 {
        let sizes = [2usize, 1, 3];
        let shapes: Vec<Vec<usize>> = sizes
            .iter()
            .map(|&k| {
                let mut s = base.to_vec();
                s[axis] = k;
                s
            })
            .collect();
        let mut out = base.to_vec();
        out[axis] = sizes.iter().sum();
        macro_rules! check {
            ($gen:expr) => {{
                let parts: Vec<_> = shapes.iter().map(|s| $gen(&mut r, numel(s))).collect();
                let arrs: Vec<_> = parts
                    .iter()
                    .zip(&shapes)
                    .map(|(p, s)| Array::from_slice(p, s))
                    .collect();
                let refs: Vec<_> = arrs.iter().collect();
                // Oracle: output index along `axis` picks the part and the offset into it.
                let want: Vec<_> = (0..numel(&out))
                    .map(|l| {
                        let mut idx = unravel(l, &out);
                        let mut p = 0;
                        while idx[axis] >= sizes[p] {
                            idx[axis] -= sizes[p];
                            p += 1;
                        }
                        parts[p][ravel(&idx, &shapes[p])]
                    })
                    .collect();
                same(
                    &Array::concat(&refs, axis),
                    &out,
                    &want,
                    &format!("concat axis {axis}"),
                );
                same(
                    &Array::try_concat(&refs, axis).unwrap(),
                    &out,
                    &want,
                    &format!("try_concat axis {axis}"),
                );
            }};
        }
        check!(|r: &mut rand::rngs::StdRng, n| rand_f32(r, n, -9.0, 9.0));
        check!(|r: &mut rand::rngs::StdRng, n| rand_f64(r, n, -9.0, 9.0));
        check!(|r: &mut rand::rngs::StdRng, n| rand_i32_any(r, n));
        check!(|r: &mut rand::rngs::StdRng, n| rand_u32_any(r, n));
        check!(|r: &mut rand::rngs::StdRng, n| rand_bool(r, n, 0.5));
    }
    let a = Array::from_slice(&[1.0f32; 6], &[2, 3]);
    let b = Array::from_slice(&[1.0f32; 4], &[2, 2]);
    assert_eq!(
        Array::try_concat(&[&a, &b], 0).unwrap_err().kind,
        ErrorKind::Shape
    );
    same(
        &Array::concat(&[&a, &b], 1),
        &[2, 5],
        &[1.0; 10],
        "concat [2,3] and [2,2] on axis 1",
    );
}

#[test]
fn concat_of_expressions_and_views() {
    let mut r = rng(410);
    let (x, a) = arr_f32(&mut r, &[3, 4]);
    let (y, b) = arr_f32(&mut r, &[4, 3]);
    let c = Array::concat(
        &[
            &(&a + 1.0),
            &b.transpose(),
            &a.slice(&[Slice::new(None, None, -1)]),
        ],
        0,
    );
    let mut want: Vec<f32> = x.iter().map(|v| v + 1.0).collect();
    want.extend(permute_oracle(&y, &[4, 3], &[1, 0]).1);
    for row in (0..3).rev() {
        want.extend_from_slice(&x[row * 4..row * 4 + 4]);
    }
    same(
        &c,
        &[9, 4],
        &want,
        "concat of expression, transpose, reversed slice",
    );
    let s = read(&c.sum_axis(0));
    let ws: Vec<f32> = (0..4)
        .map(|j| (0..9).map(|i| want[i * 4 + j] as f64).sum::<f64>() as f32)
        .collect();
    assert_close(
        &s,
        &ws.iter().map(|&v| v as f64).collect::<Vec<_>>(),
        1e-6,
        1e-5,
        "sum after concat",
    );
}

/// Chains mixing views and element-wise ops.
#[test]
fn view_chains() {
    let mut r = rng(411);
    let (x, a) = arr_f32(&mut r, &[6, 8]);
    let (y, b) = arr_f32(&mut r, &[8, 6]);
    // (a^T + b).slice(1..7 step 2, reversed)
    let got = (a.transpose() + &b).slice(&[Slice::step(1..7, 2), Slice::new(None, None, -1)]);
    let (_, at) = permute_oracle(&x, &[6, 8], &[1, 0]);
    let sum: Vec<f32> = at.iter().zip(&y).map(|(p, q)| p + q).collect();
    let (s, v) = slice_oracle(&sum, &[8, 6], &[vec![1, 3, 5], (0..6).rev().collect()]);
    same(&got, &s, &v, "(a^T + b).slice");
    // Slice, then transpose, then multiply by a broadcast row.
    let row = rand_f32(&mut r, 3, -2.0, 2.0);
    let got =
        a.slice(&[(1..4).into(), Slice::step(.., 2)]).transpose() * Array::from_slice(&row, &[3]);
    let (ss, sv) = slice_oracle(&x, &[6, 8], &[vec![1, 2, 3], vec![0, 2, 4, 6]]);
    let (ts, tv) = permute_oracle(&sv, &ss, &[1, 0]);
    let want: Vec<f32> = tv.iter().enumerate().map(|(l, v)| v * row[l % 3]).collect();
    same(&got, &ts, &want, "slice -> transpose -> * row");
    // Reshape a slice (non-contiguous source), then permute and subtract.
    let got = a
        .slice(&[Slice::step(.., 2)])
        .reshape(&[4, 3, 2])
        .permute(&[2, 0, 1])
        - 1.0;
    let (ss, sv) = slice_oracle(&x, &[6, 8], &[vec![0, 2, 4]]);
    let _ = ss;
    let (ps, pv) = permute_oracle(&sv, &[4, 3, 2], &[2, 0, 1]);
    let want: Vec<f32> = pv.iter().map(|v| v - 1.0).collect();
    same(&got, &ps, &want, "slice -> reshape -> permute -> - 1");
    // Broadcast, slice with a negative step, then reduce.
    let col = rand_f64(&mut r, 5, -1.0, 1.0);
    let got = Array::from_slice(&col, &[5, 1])
        .broadcast_to(&[5, 7])
        .slice(&[Slice::new(None, None, -2)])
        .sum_axis(1);
    let want: Vec<f64> = [4, 2, 0].iter().map(|&i| col[i] * 7.0).collect();
    assert_close(&read(&got), &want, 1e-14, 0.0, "broadcast -> slice -> sum");
    // Transposed operands on both sides of a binary op, and the result transposed back.
    let got = (a.transpose() * b.clone()).transpose();
    let (_, bt) = permute_oracle(&y, &[8, 6], &[1, 0]);
    let want: Vec<f32> = x.iter().zip(&bt).map(|(p, q)| p * q).collect();
    same(&got, &[6, 8], &want, "(a^T * b)^T");
    // Reversing twice is the identity; reversing the same array and adding it gives a palindrome sum.
    let rev = a.slice(&[Slice::new(None, None, -1), Slice::new(None, None, -1)]);
    same(
        &rev.slice(&[Slice::new(None, None, -1), Slice::new(None, None, -1)]),
        &[6, 8],
        &x,
        "reverse twice",
    );
    let pal = read(&(&a + &rev));
    for l in 0..48 {
        assert_eq!(pal[l], x[l] + x[47 - l], "a + reversed(a) at {l}");
    }
    // Integer views with element-wise ops.
    let xi = rand_i32_any(&mut r, 24);
    let ai = Array::from_slice(&xi, &[2, 3, 4]);
    let got = ai.permute(&[1, 2, 0]).slice(&[Slice::at(-1)]) ^ 0x5555_5555;
    let (ps, pv) = permute_oracle(&xi, &[2, 3, 4], &[1, 2, 0]);
    let (s, v) = slice_oracle(&pv, &ps, &[vec![2]]);
    let want: Vec<i32> = v.iter().map(|q| q ^ 0x5555_5555).collect();
    same(&got, &s, &want, "i32 permute -> slice -> xor");
}

/// A named test case, run with its panics caught.
type Case = (&'static str, Box<dyn FnOnce() + std::panic::UnwindSafe>);

/// Evaluates each case, catching panics, and fails once with every failing case listed.
fn run_cases(cases: Vec<Case>) {
    let mut failures = Vec::new();
    for (name, case) in cases {
        if let Err(e) = std::panic::catch_unwind(case) {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!("{name}: {msg}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

/// Views that read a stored input (reshape, tile) and the intrinsics (gather, concat, matmul)
/// applied directly to lazy leaves: generators (iota, identity, linspace, random) and constants.
/// Each must give the same values as when the leaf is first turned into data.
#[test]
fn stored_input_ops_on_generators_and_constants() {
    let iota: Vec<f32> = (0..6).map(|l| (l % 3) as f32).collect(); // iota([2, 3], axis 1)
    let eye: Vec<f32> = (0..9)
        .map(|l| if l / 3 == l % 3 { 1.0 } else { 0.0 })
        .collect();
    let lin: Vec<f64> = vec![0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0];
    let u: Vec<f32> = read(&arrayflow::Rng::new(7).uniform::<f32>(&[4]));
    let data = Array::from_slice(&[10.0f32, 20.0, 30.0], &[3]);
    let data2 = data.clone();
    let m = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]);
    let (iota1, iota2, iota3, eye1, eye2) = (
        iota.clone(),
        iota.clone(),
        iota.clone(),
        eye.clone(),
        eye.clone(),
    );
    let cases: Vec<Case> = vec![
        (
            "iota.reshape",
            Box::new(move || {
                same(
                    &Array::<f32>::iota(&[2, 3], 1).reshape(&[6]),
                    &[6],
                    &iota1,
                    "iota.reshape",
                )
            }),
        ),
        (
            "identity.reshape",
            Box::new(move || {
                same(
                    &Array::<f32>::identity(3).reshape(&[9]),
                    &[9],
                    &eye1,
                    "identity.reshape",
                )
            }),
        ),
        (
            "linspace.reshape",
            Box::new(move || {
                same(
                    &Array::<f64>::linspace(0.0, 1.0, 4).reshape(&[2, 2]),
                    &[2, 2],
                    &lin,
                    "linspace.reshape",
                )
            }),
        ),
        (
            "uniform.reshape",
            Box::new(move || {
                same(
                    &arrayflow::Rng::new(7).uniform::<f32>(&[4]).reshape(&[2, 2]),
                    &[2, 2],
                    &u,
                    "uniform.reshape",
                )
            }),
        ),
        (
            "identity.tile",
            Box::new(move || {
                let (s, v) = tile_oracle(&eye2, &[3, 3], &[1, 2]);
                same(
                    &Array::<f32>::identity(3).tile(&[1, 2]),
                    &s,
                    &v,
                    "identity.tile",
                )
            }),
        ),
        (
            "iota.gather",
            Box::new(move || {
                same(
                    &Array::<f32>::iota(&[2, 3], 1).gather(&Array::from_slice(&[2u32, 0], &[2]), 1),
                    &[2, 2],
                    &[iota2[2], iota2[0], iota2[5], iota2[3]],
                    "iota.gather",
                )
            }),
        ),
        (
            "full.gather",
            Box::new(|| {
                same(
                    &Array::full(&[3], 2.5f32).gather(&Array::from_slice(&[1u32], &[1]), 0),
                    &[1],
                    &[2.5],
                    "full.gather",
                )
            }),
        ),
        (
            "gather with iota indices",
            Box::new(move || {
                same(
                    &data.gather(&Array::<u32>::iota(&[3], 0), 0),
                    &[3],
                    &[10.0, 20.0, 30.0],
                    "data.gather(iota)",
                )
            }),
        ),
        (
            "concat with full",
            Box::new(move || {
                same(
                    &Array::concat(&[&data2, &Array::full(&[2], 5.0f32)], 0),
                    &[5],
                    &[10.0, 20.0, 30.0, 5.0, 5.0],
                    "concat(data, full)",
                )
            }),
        ),
        (
            "concat of iotas",
            Box::new(move || {
                let want: Vec<f32> = iota3.iter().chain(&iota3).copied().collect();
                same(
                    &Array::concat(
                        &[
                            &Array::<f32>::iota(&[2, 3], 1),
                            &Array::<f32>::iota(&[2, 3], 1),
                        ],
                        0,
                    ),
                    &[4, 3],
                    &want,
                    "concat(iota, iota)",
                )
            }),
        ),
        (
            "matmul with ones",
            Box::new(move || {
                same(
                    &m.matmul(&Array::ones(&[2, 1])),
                    &[3, 1],
                    &[3.0, 7.0, 11.0],
                    "m.matmul(ones)",
                )
            }),
        ),
    ];
    run_cases(cases);
}

/// Deep chains (well past any fusion depth limit) mixing views, element-wise ops, reductions
/// broadcast back, and intrinsics, against an oracle that applies the same steps on host data.
#[test]
fn deep_mixed_chains() {
    let mut r = rng(415);
    let (n, m) = (6usize, 6usize);
    let x: Vec<f64> = rand_f64(&mut r, n * m, -1.0, 1.0);
    let mut a = Array::from_slice(&x, &[n, m]);
    let mut h = x.clone();
    for step in 0..60 {
        let c = (step % 5) as f64 * 0.25;
        match step % 6 {
            0 => {
                a = a.transpose() + c;
                let (_, t) = permute_oracle(&h, &[n, m], &[1, 0]);
                h = t.iter().map(|v| v + c).collect();
            }
            1 => {
                a = a.slice(&[Slice::new(None, None, -1)]) * 0.5;
                let (_, s) = slice_oracle(&h, &[n, m], &[(0..n).rev().collect()]);
                h = s.iter().map(|v| v * 0.5).collect();
            }
            2 => {
                // Subtract the row means (a reduction broadcast back).
                a = &a - &a.mean_axis(1).reshape(&[n, 1]);
                let means: Vec<f64> = (0..n)
                    .map(|i| h[i * m..(i + 1) * m].iter().sum::<f64>() / m as f64)
                    .collect();
                h = (0..n * m).map(|l| h[l] - means[l / m]).collect();
            }
            3 => {
                // Rotate the columns by one with a gather.
                let idx: Vec<u32> = (0..m as u32).map(|j| (j + 1) % m as u32).collect();
                a = a.gather(&Array::from_slice(&idx, &[m]), 1) + 1.0;
                h = (0..n * m)
                    .map(|l| h[(l / m) * m + (l % m + 1) % m] + 1.0)
                    .collect();
            }
            4 => {
                // Swap the halves of the rows with concat of two slices.
                let top = a.slice(&[(0..n / 2).into()]);
                let bottom = a.slice(&[(n / 2..).into()]);
                a = Array::concat(&[&bottom, &top], 0) - c;
                h = (0..n * m)
                    .map(|l| h[((l / m + n / 2) % n) * m + l % m] - c)
                    .collect();
            }
            _ => {
                a = a.reshape(&[n * m]).reshape(&[n, m]).tanh();
                h = h.iter().map(|v| v.tanh()).collect();
            }
        }
    }
    assert_close(&read(&a), &h, 1e-12, 1e-12, "60-step mixed chain");
}

/// The same array as several inputs of one operation.
#[test]
fn same_array_repeated_inputs() {
    let mut r = rng(416);
    let (x, a) = arr_f32(&mut r, &[4, 4]);
    let c = Array::concat(&[&a, &a, &a], 1);
    let want: Vec<f32> = (0..48).map(|l| x[(l / 12) * 4 + l % 4]).collect();
    same(&c, &[4, 12], &want, "concat(a, a, a)");
    let xf: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let (w, mag) = matmul_oracle(&xf, &xf, 4, 4, 4);
    let g = read(&a.matmul(&a));
    for (i, ((g, w), s)) in g.iter().zip(&w).zip(&mag).enumerate() {
        assert!(
            ((*g as f64) - w).abs() <= 4.0 * f32::EPSILON as f64 * s,
            "a a at {i}: {g} vs {w}"
        );
    }
    let t = read(&(&a * &a + &a - &a.transpose() * &a));
    let (_, xt) = permute_oracle(&x, &[4, 4], &[1, 0]);
    let want: Vec<f32> = (0..16).map(|l| x[l] * x[l] + x[l] - xt[l] * x[l]).collect();
    assert_exact_f(&t, &want, "a*a + a - a^T*a");
    // Indices computed from the data itself: argmax of each row, gathered back.
    let idx = a.argmax_axis(1);
    let g = a.gather(&idx, 1);
    // gather along axis 1 with 4 indices gives [4, 4]: column idx[j] of every row.
    let idxv = read(&idx);
    let want: Vec<f32> = (0..16)
        .map(|l| x[(l / 4) * 4 + idxv[l % 4] as usize])
        .collect();
    same(&g, &[4, 4], &want, "gather by argmax indices");
}
