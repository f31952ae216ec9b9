//! Conversions between `arrayflow::Array` and `ndarray` (the `ndarray` feature) on seeded random
//! data of ranks 0-4 (including empty axes): owned standard-layout arrays (taken without a copy),
//! owned arrays in other layouts (permuted, sliced in place), permuted/sliced/reversed views and
//! references, each compared element by element with an oracle that walks the source `Vec` by
//! explicit index arithmetic; and reads back into `ArrayD`, compared with a plain-Rust loop over
//! the same element-wise expression.

#![cfg(feature = "ndarray")]

mod common;

use arrayflow::Array;
use common::*;
use ndarray::{ArrayD, Axis, IxDyn};
use rand::RngExt;
use rand::rngs::StdRng;

fn random_shape(r: &mut StdRng, rank: usize) -> Vec<usize> {
    (0..rank)
        .map(|_| {
            if r.random_bool(0.1) {
                0
            } else {
                r.random_range(1..=5)
            }
        })
        .collect()
}

/// One axis of a view: the base axis it walks, its range and step, and whether it is reversed.
#[derive(Debug, Clone)]
struct ViewAxis {
    base: usize,
    start: usize,
    end: usize,
    step: usize,
    reversed: bool,
}

impl ViewAxis {
    /// The base-axis indices this view axis visits, in order.
    fn indices(&self) -> Vec<usize> {
        let mut v: Vec<usize> = (self.start..self.end).step_by(self.step).collect();
        if self.reversed {
            v.reverse();
        }
        v
    }
}

/// The oracle: the view's shape and its elements in row-major order, by index arithmetic on `x`.
fn view_oracle<T: Copy>(x: &[T], shape: &[usize], axes: &[ViewAxis]) -> (Vec<usize>, Vec<T>) {
    let st = strides(shape);
    let lists: Vec<Vec<usize>> = axes.iter().map(ViewAxis::indices).collect();
    let mut offs = vec![0usize];
    for (a, l) in axes.iter().zip(&lists) {
        let s = st[a.base];
        offs = offs
            .iter()
            .flat_map(|&o| l.iter().map(move |&i| o + i * s))
            .collect();
    }
    (
        lists.iter().map(Vec::len).collect(),
        offs.iter().map(|&o| x[o]).collect(),
    )
}

fn random_view(r: &mut StdRng, shape: &[usize]) -> Vec<ViewAxis> {
    let mut perm: Vec<usize> = (0..shape.len()).collect();
    for i in (1..perm.len()).rev() {
        perm.swap(i, r.random_range(0..=i));
    }
    perm.iter()
        .map(|&b| {
            let n = shape[b];
            let start = r.random_range(0..=n);
            let end = r.random_range(start..=n);
            ViewAxis {
                base: b,
                start,
                end,
                step: r.random_range(1..=3),
                reversed: r.random_bool(0.4),
            }
        })
        .collect()
}

/// The same view built with ndarray's own operations.
fn apply_view<'a, T>(
    v: ndarray::ArrayViewD<'a, T>,
    axes: &[ViewAxis],
) -> ndarray::ArrayViewD<'a, T> {
    let perm: Vec<usize> = axes.iter().map(|a| a.base).collect();
    let mut v = v.permuted_axes(IxDyn(&perm));
    for (k, a) in axes.iter().enumerate() {
        v.slice_axis_inplace(
            Axis(k),
            ndarray::Slice::new(a.start as isize, Some(a.end as isize), a.step as isize),
        );
        if a.reversed {
            v.invert_axis(Axis(k));
        }
    }
    v
}

#[track_caller]
fn check<T: arrayflow::Element>(got: &Array<T>, shape: &[usize], want: &[T], ctx: &str) {
    assert_eq!(got.shape(), shape, "{ctx}: shape");
    assert_eq!(read(got), want, "{ctx}");
}

/// ndarray -> Array: owned standard, owned permuted, owned sliced in place, views, references.
#[test]
fn from_ndarray_every_layout() {
    let mut r = rng(1901);
    for rank in 0..=4 {
        for _ in 0..3 {
            let shape = random_shape(&mut r, rank);
            let x = rand_f32(&mut r, numel(&shape), -100.0, 100.0);
            let nd = ArrayD::from_shape_vec(IxDyn(&shape), x.clone()).unwrap();
            let ctx = format!("shape {shape:?}");
            // Owned, standard layout: the Vec is taken.
            check(
                &Array::from(nd.clone()),
                &shape,
                &x,
                &format!("{ctx} owned"),
            );
            // A reference and a whole view: copied.
            check(&Array::from(&nd), &shape, &x, &format!("{ctx} &owned"));
            check(&Array::from(nd.view()), &shape, &x, &format!("{ctx} view"));
            // Views: permuted, sliced with steps, reversed.
            let axes = random_view(&mut r, &shape);
            let (vs, vx) = view_oracle(&x, &shape, &axes);
            let v = apply_view(nd.view(), &axes);
            let vctx = format!("{ctx} view {axes:?}");
            check(&Array::from(v.clone()), &vs, &vx, &vctx);
            check(&Array::from(&v), &vs, &vx, &format!("&{vctx}"));
            // The same layouts owned: a permuted owned array, and one sliced in place.
            check(
                &Array::from(v.to_owned()),
                &vs,
                &vx,
                &format!("{vctx} to_owned"),
            );
            let perm: Vec<usize> = axes.iter().map(|a| a.base).collect();
            let p = nd.clone().permuted_axes(IxDyn(&perm));
            let (ps, px) = view_oracle(
                &x,
                &shape,
                &perm
                    .iter()
                    .map(|&b| ViewAxis {
                        base: b,
                        start: 0,
                        end: shape[b],
                        step: 1,
                        reversed: false,
                    })
                    .collect::<Vec<_>>(),
            );
            check(
                &Array::from(p),
                &ps,
                &px,
                &format!("{ctx} owned permuted {perm:?}"),
            );
            if rank > 0 && shape[0] > 0 {
                let mut o = nd.clone();
                o.slice_axis_inplace(Axis(0), ndarray::Slice::from(1..));
                let axes0: Vec<ViewAxis> = (0..rank)
                    .map(|b| ViewAxis {
                        base: b,
                        start: usize::from(b == 0),
                        end: shape[b],
                        step: 1,
                        reversed: false,
                    })
                    .collect();
                let (os, ox) = view_oracle(&x, &shape, &axes0);
                check(
                    &Array::from(o),
                    &os,
                    &ox,
                    &format!("{ctx} owned sliced in place"),
                );
            }
        }
    }
    // Static dimensions and other element types.
    let x = rand_i32_any(&mut r, 12);
    let a2 = ndarray::Array2::from_shape_vec((3, 4), x.clone()).unwrap();
    check(&Array::from(a2.clone()), &[3, 4], &x, "Array2<i32>");
    let (ts, tx) = view_oracle(
        &x,
        &[3, 4],
        &[
            ViewAxis {
                base: 1,
                start: 0,
                end: 4,
                step: 1,
                reversed: false,
            },
            ViewAxis {
                base: 0,
                start: 0,
                end: 3,
                step: 1,
                reversed: false,
            },
        ],
    );
    check(&Array::from(a2.t()), &ts, &tx, "Array2<i32>.t()");
    let y = rand_f64(&mut r, 7, -1.0, 1.0);
    check(
        &Array::from(ndarray::Array1::from(y.clone())),
        &[7],
        &y,
        "Array1<f64>",
    );
}

/// Array -> ndarray: computed arrays of ranks 0-4 read into `ArrayD` (both spellings), against a
/// plain-Rust loop.
#[test]
fn to_ndarray_ranks_0_to_4() {
    let mut r = rng(1902);
    for rank in 0..=4 {
        let shape = random_shape(&mut r, rank);
        let x = rand_f64(&mut r, numel(&shape), -100.0, 100.0);
        let a = Array::from_slice(&x, &shape) * 3.0 - 1.0;
        let want: Vec<f64> = x.iter().map(|v| v * 3.0 - 1.0).collect();
        let nd = a.to_ndarray().unwrap();
        assert_eq!(nd.shape(), &shape[..], "rank {rank}");
        assert!(nd.is_standard_layout());
        for (lin, &w) in want.iter().enumerate() {
            let idx = unravel(lin, &shape);
            assert_eq!(nd[IxDyn(&idx)], w, "rank {rank} shape {shape:?} at {idx:?}");
        }
        let n2 = ArrayD::<f64>::try_from(&a).unwrap();
        assert_eq!(n2, nd, "TryFrom agrees with to_ndarray");
        let xi = rand_i32(&mut r, numel(&shape), -1000, 1000);
        let b = Array::from_slice(&xi, &shape).gt(0);
        let nb = b.to_ndarray().unwrap();
        let wb: Vec<bool> = xi.iter().map(|&v| v > 0).collect();
        assert_eq!(
            nb.iter().copied().collect::<Vec<_>>(),
            wb,
            "bool rank {rank}"
        );
    }
    // A round trip through both directions keeps every element.
    let x = rand_u32_any(&mut r, 60);
    let nd = ArrayD::from_shape_vec(IxDyn(&[3, 4, 5]), x.clone()).unwrap();
    let back = Array::from(nd.clone()).to_ndarray().unwrap();
    assert_eq!(back, nd);
}
