//! Roll, pad in every mode, fused concat and slice/masked assignment on every executor, against
//! index-walking oracles written here (a walk that bounces off the ends, as NumPy's docs describe
//! the modes), on random data of every element type; plus the fusion they promise: a periodic
//! stencil written with rolls is one kernel per step.

mod common;
use arrayflow::{Array, Element, Pad, Runtime, s};
use common::*;
use parking_lot::Mutex;

/// One test at a time: one of them counts kernels (stats are process-wide).
static SERIAL: Mutex<()> = Mutex::new(());

#[derive(Clone, Copy, Debug)]
enum Mode {
    Constant,
    Edge,
    Wrap,
    Reflect,
    Symmetric,
}

/// The source index of padded position `k` (relative to the first original element; may be
/// negative or past the end) in an axis of length `n`, by walking: `None` for a constant.
fn walk(k: isize, n: usize, mode: Mode) -> Option<usize> {
    let n = n as isize;
    if (0..n).contains(&k) {
        return Some(k as usize);
    }
    match mode {
        Mode::Constant => None,
        Mode::Edge => Some(if k < 0 { 0 } else { n as usize - 1 }),
        Mode::Wrap => {
            let mut i = k;
            while i < 0 {
                i += n;
            }
            while i >= n {
                i -= n;
            }
            Some(i as usize)
        }
        Mode::Reflect | Mode::Symmetric => {
            if n == 1 {
                return Some(0);
            }
            let (mut pos, mut dir, steps) = if k < 0 {
                (0isize, -1isize, -k)
            } else {
                (n - 1, 1, k - (n - 1))
            };
            for _ in 0..steps {
                if pos + dir < 0 || pos + dir >= n {
                    dir = -dir;
                    if let Mode::Reflect = mode {
                        pos += dir;
                    }
                } else {
                    pos += dir;
                }
            }
            Some(pos as usize)
        }
    }
}

fn pad_oracle<T: Copy>(x: &[T], shape: &[usize], w: &[(usize, usize)], mode: Mode, c: T) -> Vec<T> {
    let out_shape: Vec<usize> = shape
        .iter()
        .enumerate()
        .map(|(d, &n)| n + w.get(d).map_or(0, |p| p.0 + p.1))
        .collect();
    (0..numel(&out_shape))
        .map(|lin| {
            let idx = unravel(lin, &out_shape);
            let mut src = Vec::new();
            for (d, &i) in idx.iter().enumerate() {
                let lo = w.get(d).map_or(0, |p| p.0) as isize;
                match walk(i as isize - lo, shape[d], mode) {
                    Some(j) => src.push(j),
                    None => return c,
                }
            }
            x[ravel(&src, shape)]
        })
        .collect()
}

fn roll_oracle<T: Copy>(x: &[T], shape: &[usize], shift: isize, axis: usize) -> Vec<T> {
    (0..x.len())
        .map(|lin| {
            let mut idx = unravel(lin, shape);
            let n = shape[axis] as isize;
            let mut j = idx[axis] as isize - shift;
            while j < 0 {
                j += n;
            }
            idx[axis] = (j % n) as usize;
            x[ravel(&idx, shape)]
        })
        .collect()
}

fn modes<T: Element>(c: T) -> [(Mode, Pad<T>); 5] {
    [
        (Mode::Constant, Pad::Constant(c)),
        (Mode::Edge, Pad::Edge),
        (Mode::Wrap, Pad::Wrap),
        (Mode::Reflect, Pad::Reflect),
        (Mode::Symmetric, Pad::Symmetric),
    ]
}

/// Every mode on `x` (5 x 7); `all_modes` false tries two (each case compiles a kernel per
/// device, and the other types cover the rest).
fn check_type<T: Element + std::fmt::Debug>(x: Vec<T>, c: T, what: &str, all_modes: bool) {
    let shape = [5usize, 7];
    let a = Array::from_vec(x.clone(), &shape);
    for (k, (mode, pad)) in modes(c).into_iter().enumerate() {
        if !all_modes && k % 3 != 0 {
            continue;
        }
        for w in [
            vec![(2usize, 3usize), (1, 0)],
            vec![(0, 0), (9, 16)], // wider than the axis: the images repeat
        ] {
            let got = read(&a.pad(&w, pad));
            let want = pad_oracle(&x, &shape, &w, mode, c);
            assert_same(&got, &want, &format!("{what}: pad {mode:?} {w:?}"));
        }
    }
    for (shift, axis) in [(1isize, 0usize), (-2, 1), (12, 1), (-11, 0), (0, 1), (7, 1)] {
        let got = read(&a.roll(shift, axis));
        let want = roll_oracle(&x, &shape, shift, axis);
        assert_same(&got, &want, &format!("{what}: roll {shift} along {axis}"));
    }
}

#[test]
fn pad_and_roll_every_mode_and_type() {
    let _g = SERIAL.lock();
    let mut r = rng(11);
    let all = !any_device();
    check_type(rand_f32(&mut r, 35, -5.0, 5.0), -1.5f32, "f32", true);
    check_type(rand_f64(&mut r, 35, -5.0, 5.0), 2.25f64, "f64", all);
    check_type(rand_i32(&mut r, 35, -100, 100), 7i32, "i32", true);
    check_type(rand_u32(&mut r, 35, 0, 1000), 3u32, "u32", all);
    // One-element and empty axes.
    let one = Array::from_vec(vec![4.0f32, 5.0], &[1, 2]);
    assert_eq!(
        read(&one.pad(&[(2, 1)], Pad::Reflect)),
        [4., 5., 4., 5., 4., 5., 4., 5.]
    );
    let empty = Array::<f32>::zeros(&[0, 3]);
    assert_eq!(read(&empty.pad(&[(1, 1)], Pad::Constant(2.0))), [2.0; 6]);
    let err = empty.try_pad(&[(1, 0)], Pad::Edge).unwrap_err().to_string();
    assert!(
        err.contains("movement.rs") && err.contains("empty axis"),
        "{err}"
    );
    let err = one.try_roll(1, 2).unwrap_err().to_string();
    assert!(
        err.contains("movement.rs") && err.contains("axis 2"),
        "{err}"
    );
    let err = one
        .try_pad(&[(1, 1); 3], Pad::Edge)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("movement.rs") && err.contains("3 pad widths"),
        "{err}"
    );
}

/// Folds compose with every other view and with each other, on computed (unstored) values: a
/// roll of a slice of a product, a pad of a roll, a transpose of a pad, a slice of a pad.
#[test]
fn folds_compose_with_views_and_each_other() {
    let _g = SERIAL.lock();
    let mut r = rng(12);
    let shape = [6usize, 9];
    let x = rand_f64(&mut r, 54, -3.0, 3.0);
    let y = rand_f64(&mut r, 54, -3.0, 3.0);
    let (a, b) = (
        Array::from_vec(x.clone(), &shape),
        Array::from_vec(y.clone(), &shape),
    );
    let prod: Vec<f64> = x.iter().zip(&y).map(|(p, q)| p * q).collect();
    let lazy = &a * &b;

    // roll of a reversed, strided slice of a lazy product
    let sl = lazy.slice(s![1..5, ..;-2]); // [4, 5]
    let sl_o: Vec<f64> = (0..4)
        .flat_map(|i| (0..5).map(move |j| (i, j)))
        .map(|(i, j)| prod[(i + 1) * 9 + (8 - 2 * j)])
        .collect();
    let got = read(&sl.roll(-3, 1));
    assert_close(
        &got,
        &roll_oracle(&sl_o, &[4, 5], -3, 1),
        1e-15,
        0.0,
        "roll of slice",
    );

    // pad (reflect) of a roll, then a slice of that, then a transpose
    let rolled = roll_oracle(&prod, &shape, 2, 0);
    let padded = pad_oracle(&rolled, &shape, &[(3, 2), (10, 1)], Mode::Reflect, 0.0);
    let pshape = [11usize, 20];
    let got = read(&lazy.roll(2, 0).pad(&[(3, 2), (10, 1)], Pad::Reflect));
    assert_close(&got, &padded, 1e-15, 0.0, "pad of roll");
    let got = read(
        &lazy
            .roll(2, 0)
            .pad(&[(3, 2), (10, 1)], Pad::Reflect)
            .slice(s![2..9;3, ..;-1])
            .transpose(),
    );
    let mut want = Vec::new();
    for j in 0..20 {
        for i in [2usize, 5, 8] {
            want.push(padded[i * pshape[1] + (19 - j)]);
        }
    }
    assert_close(&got, &want, 1e-15, 0.0, "transpose of slice of pad of roll");

    // a roll of a roll along the same axis, and a wrap pad of a symmetric pad
    let got = read(&lazy.roll(4, 1).roll(-7, 1));
    assert_close(
        &got,
        &roll_oracle(&prod, &shape, -3, 1),
        1e-15,
        0.0,
        "roll of roll",
    );
    let inner = pad_oracle(&prod, &shape, &[(0, 0), (2, 2)], Mode::Symmetric, 0.0);
    let want = pad_oracle(&inner, &[6, 13], &[(1, 1), (5, 0)], Mode::Wrap, 0.0);
    let got = read(
        &lazy
            .pad(&[(0, 0), (2, 2)], Pad::Symmetric)
            .pad(&[(1, 1), (5, 0)], Pad::Wrap),
    );
    assert_close(&got, &want, 1e-15, 0.0, "wrap pad of symmetric pad");

    // a reduction over a padded, rolled value
    let got = read(&lazy.roll(1, 1).pad(&[(1, 1)], Pad::Edge).sum_axis(0));
    let padded = pad_oracle(
        &roll_oracle(&prod, &shape, 1, 1),
        &shape,
        &[(1, 1)],
        Mode::Edge,
        0.0,
    );
    let want: Vec<f64> = (0..9)
        .map(|j| (0..8).map(|i| padded[i * 9 + j]).sum())
        .collect();
    assert_close(&got, &want, 1e-14, 1e-14, "sum of pad of roll");
}

#[test]
fn concat_of_few_parts_fuses_and_matches() {
    let _g = SERIAL.lock();
    let mut r = rng(13);
    let x = rand_i32(&mut r, 4 * 6, -50, 50);
    let a = Array::from_vec(x.clone(), &[4, 6]);
    let lazy = &a * 3 - 1;
    let v: Vec<i32> = x.iter().map(|&e| e * 3 - 1).collect();
    // [4, 6] -> columns 4.. then ..4 (a roll by 2 written with slices), then an empty part
    let got = read(&Array::concat(
        &[
            &lazy.slice(s![.., 4..]),
            &lazy.slice(s![.., ..4]),
            &lazy.slice(s![.., 0..0]),
        ],
        1,
    ));
    assert_eq!(got, roll_oracle(&v, &[4, 6], 2, 1));
    // three parts of different lengths along axis 0, one of them a different array
    let b = Array::from_vec(vec![100, 101, 102, 103, 104, 105], &[1, 6]);
    let got = read(&Array::concat(&[&lazy.slice(s![2..]), &b, &lazy], 0));
    let mut want = v[12..].to_vec();
    want.extend(100..106);
    want.extend(&v);
    assert_eq!(got, want);
    // many parts still run the intrinsic, with the same result
    let parts: Vec<Array<i32>> = (0..6).map(|k| lazy.slice(s![.., k..k + 1])).collect();
    let refs: Vec<&Array<i32>> = parts.iter().collect();
    assert_eq!(read(&Array::concat(&refs, 1)), v);
    let err = Array::try_concat(&[&a, &b.slice(s![.., ..5])], 0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("movement.rs"), "{err}");
}

#[test]
fn slice_and_masked_assignment() {
    let _g = SERIAL.lock();
    let mut r = rng(14);
    let x = rand_f32(&mut r, 5 * 8, -1.0, 1.0);
    let base = Array::from_vec(x.clone(), &[5, 8]);
    let vals = rand_f32(&mut r, 3 * 4, 10.0, 20.0);
    let va = Array::from_vec(vals.clone(), &[3, 4]);

    let mut u = base.clone();
    u.assign_slice(s![1..4, 2..6], &va);
    let mut want = x.clone();
    for i in 0..3 {
        for j in 0..4 {
            want[(i + 1) * 8 + j + 2] = vals[i * 4 + j];
        }
    }
    assert_eq!(read(&u), want);
    assert_eq!(
        read(&base),
        x,
        "the clone taken before keeps the old values"
    );

    // a reversed region takes the values reversed; an indexed axis; a broadcast row; a scalar
    let w = base
        .with_slice(s![-2, 7..3;-1], va.slice(s![0]))
        .with_slice(s![.., 0], -1.0)
        .with_slice(s![0..2, ..], Array::from_vec(vals[..8].to_vec(), &[8]));
    let mut want = x.clone();
    for k in 0..4 {
        want[3 * 8 + 7 - k] = vals[k];
    }
    for i in 0..5 {
        want[i * 8] = -1.0;
    }
    for i in 0..2 {
        want[i * 8..i * 8 + 8].copy_from_slice(&vals[..8]);
    }
    assert_eq!(read(&w), want);

    let mut m = base.clone();
    m.assign_where(&base.gt(0.5), &(&base * 10.0));
    let want: Vec<f32> = x
        .iter()
        .map(|&e| if e > 0.5 { e * 10.0 } else { e })
        .collect();
    assert_eq!(read(&m), want);

    let e = base
        .try_with_slice(s![1..3, ..], &va)
        .unwrap_err()
        .to_string();
    assert!(e.contains("movement.rs") && e.contains("do not fit"), "{e}");
    let e = base.try_with_slice(s![6..], 0.0).unwrap_err().to_string();
    assert!(
        e.contains("movement.rs") && e.contains("out of range"),
        "{e}"
    );
}

/// Slice assignment with steps other than 1 and -1 (NumPy's `a[1:5:2, 7:1:-3] = v`), against
/// an index-walking oracle: forward and backward steps, a step longer than the axis, broadcast
/// values and scalars, on each axis and on both at once.
#[test]
fn stepped_slice_assignment() {
    let _g = SERIAL.lock();
    let mut r = rng(16);
    let (rows, cols) = (6usize, 9usize);
    let x = rand_f32(&mut r, rows * cols, -1.0, 1.0);
    let base = Array::from_vec(x.clone(), &[rows, cols]);
    // Python's range(start, stop, step).
    let walk = |start: isize, stop: isize, step: isize| -> Vec<usize> {
        let mut v = Vec::new();
        let mut i = start;
        while (step > 0 && i < stop) || (step < 0 && i > stop) {
            v.push(i as usize);
            i += step;
        }
        v
    };
    // (rows start, stop, step), (cols start, stop, step), and the region as an `s!`.
    type Case = (
        (isize, isize, isize),
        (isize, isize, isize),
        Vec<arrayflow::Slice>,
    );
    let cases: Vec<Case> = vec![
        ((1, 5, 2), (0, 8, 3), s![1..5;2, 0..8;3].to_vec()),
        ((4, 0, -2), (7, 1, -3), s![4..0;-2, 7..1;-3].to_vec()),
        ((0, 6, 2), (1, 2, 1), s![..;2, 1..2].to_vec()),
        ((0, 5, 7), (0, 9, 2), s![0..5;7, ..;2].to_vec()),
        ((5, -1, -1), (8, 0, -4), s![5..;-1, 8..0;-4].to_vec()),
    ];
    for (k, (ri, ci, spec)) in cases.iter().enumerate() {
        let (rs, cs) = (walk(ri.0, ri.1, ri.2), walk(ci.0, ci.1, ci.2));
        let vals = rand_f32(&mut r, rs.len() * cs.len(), 10.0, 20.0);
        let got =
            read(&base.with_slice(spec, Array::from_vec(vals.clone(), &[rs.len(), cs.len()])));
        let mut want = x.clone();
        for (a, &i) in rs.iter().enumerate() {
            for (b, &j) in cs.iter().enumerate() {
                want[i * cols + j] = vals[a * cs.len() + b];
            }
        }
        assert_eq!(got, want, "case {k}: rows {rs:?}, cols {cs:?}");
        // A scalar and a broadcast row into the same region.
        let got = read(&base.with_slice(spec, 7.5));
        let mut want = x.clone();
        for &i in &rs {
            for &j in &cs {
                want[i * cols + j] = 7.5;
            }
        }
        assert_eq!(got, want, "case {k}, a scalar");
        let row = rand_f32(&mut r, cs.len(), -5.0, -4.0);
        let got = read(&base.with_slice(spec, Array::from_vec(row.clone(), &[cs.len()])));
        let mut want = x.clone();
        for &i in &rs {
            for (b, &j) in cs.iter().enumerate() {
                want[i * cols + j] = row[b];
            }
        }
        assert_eq!(got, want, "case {k}, a broadcast row");
    }
}

/// The periodic heat equation with rolls: one kernel per step, no intrinsic, and the oracle's
/// numbers after 20 steps.
#[test]
fn roll_stencil_is_one_kernel_per_step() {
    let _g = SERIAL.lock();
    let n = 48;
    let mut r = rng(15);
    let x = rand_f32(&mut r, n * n, 0.0, 1.0);
    let mut u = Array::from_vec(x.clone(), &[n, n]);
    let mut want: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let alpha = 0.2f32;
    Runtime::execute();
    let before = Runtime::stats();
    for _ in 0..20 {
        let lap = u.roll(1, 0) + u.roll(-1, 0) + u.roll(1, 1) + u.roll(-1, 1) - &u * 4.0;
        u = &u + lap * alpha;
        u.eval().unwrap();
        let o = want.clone();
        for i in 0..n {
            for j in 0..n {
                let at = |a: usize, b: usize| o[(a % n) * n + (b % n)];
                let lap = at(i + 1, j) + at(i + n - 1, j) + at(i, j + 1) + at(i, j + n - 1)
                    - 4.0 * o[i * n + j];
                want[i * n + j] = o[i * n + j] + alpha as f64 * lap;
            }
        }
    }
    let got = read(&u);
    let st = Runtime::stats().since(&before);
    assert_close(&got, &want, 1e-5, 1e-5, "heat with rolls");
    assert_eq!(st.kernels_launched, 20, "{st:?}");
    assert_eq!(st.intrinsics_launched, 0, "{st:?}");
}
