//! The matrix product with NumPy's `@` rules against an independent triple loop on seeded random
//! data: every broadcasting form (1-D x 1-D, 1-D x 2-D, 2-D x 1-D, 2-D x 2-D, batches that
//! broadcast), transposed operands read without a copy (checked through `Runtime::stats()`),
//! sizes crossing the GPU kernels' tile edges and the split inner extent, empty extents, i32 and
//! u32 wrapping products (exact), `outer`, `inner`, `vdot`, and errors naming this file and both
//! shapes. Small results over a long inner extent, recorded as fused reductions instead of the
//! GEMM (`src/frontend/small_product.rs`), are checked the same way, and the GEMM still runs on
//! such shapes with the rewrite off. The same file runs on every executor (`ARRAYFLOW_DEVICE=opencl` / `wgpu`) and under
//! comparison mode.
//!
//! Tolerance for floats: |err| <= k eps_T sum_p |a_ip b_pj| (the gamma_k bound of a length-k dot
//! product, eps_T = machine epsilon); integers are exact. Stats are process-wide, so the tests
//! here run one at a time (`SERIAL`).

mod common;

use arrayflow::{Array, ErrorKind, Runtime};
use common::*;
use parking_lot::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

/// Small products recorded as reductions (`Runtime::set_small_matmul`) while this lives; the
/// GEMM for all products again when dropped (the default).
struct SmallProducts;
impl SmallProducts {
    fn on() -> SmallProducts {
        Runtime::set_small_matmul(arrayflow::SMALL_MATMUL_LIMIT);
        SmallProducts
    }
}
impl Drop for SmallProducts {
    fn drop(&mut self) {
        Runtime::set_small_matmul(0);
    }
}

/// NumPy's matmul of logical shapes `sa` and `sb` by a triple loop: the result's shape, and per
/// element the fold of `madd(acc, a_ip, b_pj)` from `zero` over `p` in order.
fn oracle<T: Copy, R: Copy>(
    a: &[T],
    sa: &[usize],
    b: &[T],
    sb: &[usize],
    zero: R,
    madd: impl Fn(R, T, T) -> R,
) -> (Vec<usize>, Vec<R>) {
    let la: Vec<usize> = if sa.len() == 1 {
        vec![1, sa[0]]
    } else {
        sa.to_vec()
    };
    let lb: Vec<usize> = if sb.len() == 1 {
        vec![sb[0], 1]
    } else {
        sb.to_vec()
    };
    let (m, k) = (la[la.len() - 2], la[la.len() - 1]);
    let n = lb[lb.len() - 1];
    assert_eq!(k, lb[lb.len() - 2], "oracle: inner extents");
    let (ba, bb) = (&la[..la.len() - 2], &lb[..lb.len() - 2]);
    let batch = broadcast_shape(ba, bb);
    let mut out = Vec::new();
    for t in 0..numel(&batch) {
        let idx = unravel(t, &batch);
        let (oa, ob) = (
            broadcast_src(&idx, ba) * m * k,
            broadcast_src(&idx, bb) * k * n,
        );
        for i in 0..m {
            for j in 0..n {
                let mut acc = zero;
                for p in 0..k {
                    acc = madd(acc, a[oa + i * k + p], b[ob + p * n + j]);
                }
                out.push(acc);
            }
        }
    }
    let mut shape = batch;
    if sa.len() >= 2 {
        shape.push(m);
    }
    if sb.len() >= 2 {
        shape.push(n);
    }
    (shape, out)
}

/// The float oracle: values and per-element `sum |a_ip b_pj|` in f64.
fn float_oracle(a: &[f64], sa: &[usize], b: &[f64], sb: &[usize]) -> (Vec<usize>, Vec<(f64, f64)>) {
    oracle(a, sa, b, sb, (0.0, 0.0), |(s, g), x, y| {
        (s + x * y, g + (x * y).abs())
    })
}

/// Checks a float product against the oracle within `k eps sum|ab|`.
#[track_caller]
fn check_float<T: TestFloat>(
    got: &Array<T>,
    want: &(Vec<usize>, Vec<(f64, f64)>),
    k: usize,
    ctx: &str,
) {
    assert_eq!(got.shape(), &want.0[..], "{ctx}: shape");
    let g = read(got);
    assert_eq!(g.len(), want.1.len(), "{ctx}: length");
    for (i, (g, &(w, mag))) in g.iter().zip(&want.1).enumerate() {
        let tol = (k.max(1) as f64) * T::EPS * mag;
        assert!(
            (g.to() - w).abs() <= tol,
            "{ctx}: [{i}] got {g:?} want {w:e} (tol {tol:e})"
        );
    }
}

/// Random data of type `T` (exactly representable: the oracle sees the same values).
fn data<T: TestFloat>(r: &mut rand::rngs::StdRng, n: usize) -> (Vec<f64>, Vec<T>) {
    let t: Vec<T> = conv(&rand_f64(r, n, -1.0, 1.0));
    (t.iter().map(|v| v.to()).collect(), t)
}

/// `a @ b` for logical shapes `sa`, `sb`, checked against the oracle, with `a` (and `b`) also
/// given as a transpose view of stored transposed data when they have two axes or more.
fn float_case<T: TestFloat>(r: &mut rand::rngs::StdRng, sa: &[usize], sb: &[usize]) {
    let (af, at) = data::<T>(r, numel(sa));
    let (bf, bt) = data::<T>(r, numel(sb));
    let k = sa[sa.len() - 1];
    let want = float_oracle(&af, sa, &bf, sb);
    let ctx = format!("{} {sa:?} @ {sb:?}", T::name());
    let (a, b) = (Array::from_slice(&at, sa), Array::from_slice(&bt, sb));
    check_float(&a.matmul(&b), &want, k, &ctx);
    // The same product with operands stored transposed and read through a transpose view.
    let swap = |s: &[usize]| -> Vec<usize> {
        let mut p: Vec<usize> = (0..s.len()).collect();
        let r = s.len();
        p.swap(r - 1, r - 2);
        p
    };
    let transposed = |x: &[T], s: &[usize]| -> Array<T> {
        let perm = swap(s);
        let (ps, pv) = permute_oracle(x, s, &perm);
        Array::from_slice(&pv, &ps).permute(&perm)
    };
    if sa.len() >= 2 {
        check_float(
            &transposed(&at, sa).matmul(&b),
            &want,
            k,
            &format!("{ctx}, a transposed"),
        );
    }
    if sb.len() >= 2 {
        check_float(
            &a.matmul(&transposed(&bt, sb)),
            &want,
            k,
            &format!("{ctx}, b transposed"),
        );
    }
    if sa.len() >= 2 && sb.len() >= 2 {
        check_float(
            &transposed(&at, sa).matmul(&transposed(&bt, sb)),
            &want,
            k,
            &format!("{ctx}, both transposed"),
        );
    }
}

/// Every broadcasting form, at sizes around the kernels' tile edges.
const FORMS: &[(&[usize], &[usize])] = &[
    (&[7], &[7]),
    (&[1], &[1]),
    (&[13], &[13, 5]),
    (&[9, 13], &[13]),
    (&[1, 1], &[1, 1]),
    (&[3, 5], &[5, 3]),
    (&[65, 7], &[7, 129]),
    (&[130, 33], &[33, 65]),
    (&[5, 257], &[257, 3]),
    (&[2, 1, 3, 6], &[3, 6, 4]),
    (&[4, 5, 7], &[7, 3]),
    (&[6, 4], &[2, 4, 9]),
    (&[3, 65, 9], &[1, 9, 66]),
    (&[2, 7], &[3, 7, 4]),
    (&[5], &[2, 5, 3]),
    (&[2, 3, 8], &[8]),
];

#[test]
fn every_form_f32() {
    let _g = SERIAL.lock();
    let mut r = rng(2101);
    let before = Runtime::stats();
    for &(sa, sb) in FORMS {
        float_case::<f32>(&mut r, sa, sb);
    }
    // Large enough for the GPUs' 128 x 128 tile, k a multiple of 8 (vector loads) and not.
    float_case::<f32>(&mut r, &[200, 40], &[40, 260]);
    float_case::<f32>(&mut r, &[257, 37], &[37, 130]);
    float_case::<f32>(&mut r, &[2, 130, 20], &[20, 129]);
    no_fallbacks(&before, "f32 forms");
}

/// On a device executor, every product ran there (none fell back to the CPU).
#[track_caller]
fn no_fallbacks(before: &arrayflow::Stats, what: &str) {
    let d = Runtime::stats().since(before);
    if on_device() {
        assert_eq!(
            d.device.fallbacks, 0,
            "{what}: products ran on the CPU: {d:?}"
        );
    }
}

#[test]
fn every_form_f64() {
    let _g = SERIAL.lock();
    let mut r = rng(2102);
    for &(sa, sb) in FORMS {
        float_case::<f64>(&mut r, sa, sb);
    }
    float_case::<f64>(&mut r, &[140, 24], &[24, 131]);
}

/// Few output tiles and a long inner extent: the GPU executors split `k` into ranges.
#[test]
fn long_inner_extents() {
    let _g = SERIAL.lock();
    let mut r = rng(2103);
    for (m, k, n) in [(8, 3000, 2), (3, 1030, 70), (65, 5003, 3)] {
        float_case::<f32>(&mut r, &[m, k], &[k, n]);
    }
    float_case::<f64>(&mut r, &[8, 3000], &[3000, 2]);
    float_case::<f32>(&mut r, &[2, 4, 2100], &[2100, 3]);
    // Sums of ones are exact in f32 below 2^24: every term must count (lavapipe once dropped
    // every term past 58,255 of one work-group's walk along k).
    for k in [58_255usize, 65_536, 150_001] {
        let c = Array::<f32>::ones(&[2, k]).matmul(&Array::<f32>::ones(&[k, 3]));
        assert_eq!(read(&c), vec![k as f32; 6], "k = {k}");
    }
    // The same shapes with the small-product rewrite on: fused reductions, no GEMM.
    let _on = SmallProducts::on();
    let before = Runtime::stats();
    float_case::<f32>(&mut r, &[8, 5000], &[5000, 2]);
    let c = Array::<f32>::ones(&[2, 65_536]).matmul(&Array::<f32>::ones(&[65_536, 3]));
    assert_eq!(read(&c), vec![65_536.0; 6], "fused, k = 65536");
    let d = Runtime::stats().since(&before);
    assert_eq!(d.intrinsics_launched, 0, "fused: {d:?}");
}

/// Small results (`m * n` up to 16 per batch item) over a long `k`, with the rewrite on, are
/// recorded as a broadcast multiply and a sum over `k`: every form (1-D operands, batches that
/// broadcast, transposed operands) against the triple loop, with no intrinsic run.
#[test]
fn small_results_over_long_k() {
    let _g = SERIAL.lock();
    let _on = SmallProducts::on();
    let mut r = rng(2108);
    let before = Runtime::stats();
    let forms: &[(&[usize], &[usize])] = &[
        (&[5000], &[5000]),
        (&[4096], &[4096, 5]),
        (&[6, 4100], &[4100]),
        (&[8, 5000], &[5000, 2]),
        (&[4, 4099], &[4099, 4]),
        (&[1, 4096], &[4096, 16]),
        (&[2, 3, 4100], &[4100, 2]),
        (&[2, 1, 2, 4096], &[3, 4096, 2]),
        (&[3, 1, 4097], &[3, 4097, 3]),
    ];
    for &(sa, sb) in forms {
        float_case::<f32>(&mut r, sa, sb);
        float_case::<f64>(&mut r, sa, sb);
    }
    let d = Runtime::stats().since(&before);
    assert_eq!(
        d.intrinsics_launched, 0,
        "small products ran the GEMM: {d:?}"
    );
    no_fallbacks(&before, "small products");
    // Just past the limit: the GEMM again.
    let before = Runtime::stats();
    float_case::<f32>(&mut r, &[3, 4100], &[4100, 6]);
    let d = Runtime::stats().since(&before);
    assert!(d.intrinsics_launched > 0, "3 x 6 is the GEMM's: {d:?}");
}

/// The same kind of products with the rewrite off, through the intrinsic: up to 64 results over
/// a long `k` (the CPU's dot-product pass, blocks of 8192 positions summed in f64; a device's
/// GEMM), just past it (the GEMM again), every form and operand layout, against the triple loop.
#[test]
fn short_results_over_long_k_through_the_intrinsic() {
    let _g = SERIAL.lock();
    let mut r = rng(2111);
    let forms: &[(&[usize], &[usize])] = &[
        (&[8, 9000], &[9000, 2]),
        (&[8, 4200], &[4200, 8]),
        (&[9, 4200], &[4200, 8]),
        (&[16, 4096], &[4096, 1]),
        (&[4100], &[4100, 3]),
        (&[2, 3, 8500], &[8500, 2]),
        (&[3, 1, 4097], &[3, 4097, 3]),
    ];
    let before = Runtime::stats();
    for &(sa, sb) in forms {
        float_case::<f32>(&mut r, sa, sb);
        float_case::<f64>(&mut r, sa, sb);
    }
    let d = Runtime::stats().since(&before);
    assert!(d.intrinsics_launched > 0, "the intrinsic ran: {d:?}");
    no_fallbacks(&before, "short products");
    // Sums of ones are exact: every position of every block counts once.
    for k in [4096usize, 8192, 8193, 65_537] {
        let c = Array::<f32>::ones(&[3, k]).matmul(&Array::<f32>::ones(&[k, 2]));
        assert_eq!(read(&c), vec![k as f32; 6], "k = {k}");
    }
}

/// k-means' product `onehotᵀ @ p`: the one-hot matrix (`eq` and `cast` of the assignments) fuses
/// into the reduction, one kernel and nothing of `n x k` stored.
#[test]
fn one_hot_product_fuses() {
    let _g = SERIAL.lock();
    let _on = SmallProducts::on();
    let mut r = rng(2109);
    let (n, k) = (5000, 8);
    let assign = rand_u32(&mut r, n, 0, k as u32 - 1);
    let (pf, p) = data::<f32>(&mut r, n * 2);
    let (a, pa) = (
        Array::from_slice(&assign, &[n]),
        Array::from_slice(&p, &[n, 2]),
    );
    Runtime::execute();
    let before = Runtime::stats();
    let onehot = a
        .reshape(&[n, 1])
        .eq(Array::<u32>::iota(&[1, k], 1))
        .cast::<f32>();
    let got = onehot.transpose().matmul(&pa);
    let g = read(&got);
    let d = Runtime::stats().since(&before);
    assert_eq!(d.intrinsics_launched, 0, "{d:?}");
    assert_eq!(
        d.kernels_launched, 1,
        "the one-hot matrix was stored: {d:?}"
    );
    assert!(
        d.bytes_allocated < (n * k * 4 / 4) as u64,
        "{} bytes allocated for a {k} x 2 result: {d:?}",
        d.bytes_allocated
    );
    let mut want = vec![(0.0f64, 0.0f64); k * 2];
    for (i, &c) in assign.iter().enumerate() {
        for j in 0..2 {
            let w = &mut want[c as usize * 2 + j];
            w.0 += pf[i * 2 + j];
            w.1 += pf[i * 2 + j].abs();
        }
    }
    check_float(
        &Array::from_slice(&g, &[k, 2]),
        &(vec![k, 2], want),
        n,
        "onehot^T p",
    );
}

/// Integer small products wrap exactly as the GEMM's (wrapping products, a wrapping sum).
#[test]
fn small_integer_results_wrap() {
    let _g = SERIAL.lock();
    let _on = SmallProducts::on();
    let mut r = rng(2110);
    let before = Runtime::stats();
    let shapes: &[(&[usize], &[usize])] = &[
        (&[4096], &[4096]),
        (&[4, 4100], &[4100, 3]),
        (&[4097], &[2, 4097, 5]),
        (&[2, 7, 4096], &[4096, 2]),
    ];
    for &(sa, sb) in shapes {
        let (x, y) = (
            rand_i32_any(&mut r, numel(sa)),
            rand_i32_any(&mut r, numel(sb)),
        );
        int_case(
            &x,
            sa,
            &y,
            sb,
            |s, a, b| s.wrapping_add(a.wrapping_mul(b)),
            0i32,
        );
        let (x, y) = (
            rand_u32_any(&mut r, numel(sa)),
            rand_u32_any(&mut r, numel(sb)),
        );
        int_case(
            &x,
            sa,
            &y,
            sb,
            |s, a, b| s.wrapping_add(a.wrapping_mul(b)),
            0u32,
        );
    }
    let d = Runtime::stats().since(&before);
    assert_eq!(d.intrinsics_launched, 0, "{d:?}");
    no_fallbacks(&before, "small integer products");
}

/// Integer products wrap modulo 2^32 exactly as a loop of wrapping operations.
fn int_case<T: arrayflow::Numeric>(
    x: &[T],
    sa: &[usize],
    y: &[T],
    sb: &[usize],
    madd: impl Fn(T, T, T) -> T,
    zero: T,
) {
    let ctx = format!("{:?} {sa:?} @ {sb:?}", T::DTYPE);
    let (shape, want) = oracle(x, sa, y, sb, zero, madd);
    let (a, b) = (Array::from_slice(x, sa), Array::from_slice(y, sb));
    let got = a.matmul(&b);
    assert_eq!(got.shape(), &shape[..], "{ctx}: shape");
    assert_same(&read(&got), &want, &ctx);
    if sa.len() >= 2 && sb.len() >= 2 {
        // b stored transposed, read through a view.
        let r = sb.len();
        let mut perm: Vec<usize> = (0..r).collect();
        perm.swap(r - 1, r - 2);
        let (ps, pv) = permute_oracle(y, sb, &perm);
        let bt = Array::from_slice(&pv, &ps).permute(&perm);
        assert_same(
            &read(&a.matmul(&bt)),
            &want,
            &format!("{ctx}, b transposed"),
        );
    }
}

#[test]
fn integers_wrap() {
    let _g = SERIAL.lock();
    let mut r = rng(2104);
    let before = Runtime::stats();
    let shapes: &[(&[usize], &[usize])] = &[
        (&[9], &[9]),
        (&[7, 13], &[13, 5]),
        (&[65, 9], &[9, 130]),
        (&[2, 1, 3, 6], &[3, 6, 4]),
        (&[11], &[2, 11, 3]),
        (&[130, 5], &[5]),
    ];
    for &(sa, sb) in shapes {
        let (x, y) = (
            rand_i32_any(&mut r, numel(sa)),
            rand_i32_any(&mut r, numel(sb)),
        );
        int_case(
            &x,
            sa,
            &y,
            sb,
            |s, a, b| s.wrapping_add(a.wrapping_mul(b)),
            0i32,
        );
        let (x, y) = (
            rand_u32_any(&mut r, numel(sa)),
            rand_u32_any(&mut r, numel(sb)),
        );
        int_case(
            &x,
            sa,
            &y,
            sb,
            |s, a, b| s.wrapping_add(a.wrapping_mul(b)),
            0u32,
        );
        // Small values: no wrapping, the exact product.
        let (x, y) = (
            rand_i32(&mut r, numel(sa), -9, 9),
            rand_i32(&mut r, numel(sb), -9, 9),
        );
        int_case(&x, sa, &y, sb, |s, a, b| s + a * b, 0i32);
    }
    no_fallbacks(&before, "integer products");
}

/// Empty extents: no elements, or (k = 0) zeros.
#[test]
fn empty_extents() {
    let _g = SERIAL.lock();
    let z = |s: &[usize]| Array::<f32>::from_slice(&[], s);
    let c = z(&[3, 0]).matmul(&z(&[0, 4]));
    assert_eq!((c.shape(), read(&c)), (&[3, 4][..], vec![0.0; 12]), "k = 0");
    let c = z(&[0, 5]).matmul(&Array::ones(&[5, 4]));
    assert_eq!((c.shape(), read(&c)), (&[0, 4][..], vec![]), "m = 0");
    let c = Array::<f32>::ones(&[2, 5]).matmul(&z(&[5, 0]));
    assert_eq!((c.shape(), read(&c)), (&[2, 0][..], vec![]), "n = 0");
    let c = z(&[0, 2, 5]).matmul(&Array::ones(&[5, 3]));
    assert_eq!((c.shape(), read(&c)), (&[0, 2, 3][..], vec![]), "batch 0");
    let c = z(&[0]).matmul(&z(&[0]));
    assert_eq!((c.shape(), read(&c)), (&[][..], vec![0.0]), "[0] @ [0]");
    let c = Array::<i32>::from_slice(&[], &[2, 0]).matmul(&Array::from_slice(&[], &[0, 2]));
    assert_eq!(read(&c), vec![0; 4], "i32 k = 0");
}

/// `x.t().matmul(&y)` and `x.matmul(&y.t())` read `x` and `y` in place: the flush that computes
/// the product runs one intrinsic and no kernel (no copy of a transpose, fused or tiled).
#[test]
fn transposed_operands_are_not_copied() {
    let _g = SERIAL.lock();
    let mut r = rng(2105);
    let (xf, x) = data::<f32>(&mut r, 24 * 16);
    let (yf, y) = data::<f32>(&mut r, 24 * 10);
    let (xa, ya) = (
        Array::from_slice(&x, &[24, 16]),
        Array::from_slice(&y, &[24, 10]),
    );
    Runtime::execute();
    let before = Runtime::stats();
    let c = xa.transpose().matmul(&ya);
    let got = read(&c);
    let d = Runtime::stats().since(&before);
    assert_eq!(d.kernels_launched, 0, "x^T y ran a kernel: {d:?}");
    assert_eq!(d.intrinsics_launched, 1, "x^T y: {d:?}");
    let (ps, pv) = permute_oracle(&xf, &[24, 16], &[1, 0]);
    let want = float_oracle(&pv, &ps, &yf, &[24, 10]);
    check_float(&Array::from_slice(&got, &[16, 10]), &want, 24, "x^T y");
    // A batched transpose of the last two axes, on both sides.
    let (pf, p) = data::<f32>(&mut r, 3 * 8 * 5);
    let (qf, q) = data::<f32>(&mut r, 3 * 4 * 8);
    let (pa, qa) = (
        Array::from_slice(&p, &[3, 8, 5]),
        Array::from_slice(&q, &[3, 4, 8]),
    );
    Runtime::execute();
    let before = Runtime::stats();
    let got = read(&pa.permute(&[0, 2, 1]).matmul(&qa.permute(&[0, 2, 1])));
    let d = Runtime::stats().since(&before);
    assert_eq!(d.kernels_launched, 0, "batched p^T q^T ran a kernel: {d:?}");
    assert_eq!(d.intrinsics_launched, 1, "batched p^T q^T: {d:?}");
    let (ps, pv) = permute_oracle(&pf, &[3, 8, 5], &[0, 2, 1]);
    let (qs, qv) = permute_oracle(&qf, &[3, 4, 8], &[0, 2, 1]);
    let want = float_oracle(&pv, &ps, &qv, &qs);
    check_float(
        &Array::from_slice(&got, &[3, 5, 4]),
        &want,
        8,
        "batched p^T q^T",
    );
    // A transpose of a computed value reads that value (stored once), not a copy of it.
    let want2 = float_oracle(
        &permute_oracle(
            &xf.iter().map(|v| 2.0 * v).collect::<Vec<_>>(),
            &[24, 16],
            &[1, 0],
        )
        .1,
        &[16, 24],
        &yf,
        &[24, 10],
    );
    check_float(&(&xa * 2.0).transpose().matmul(&ya), &want2, 24, "(2x)^T y");
}

#[test]
fn outer_inner_vdot() {
    let _g = SERIAL.lock();
    let mut r = rng(2106);
    let (af, a) = data::<f64>(&mut r, 6);
    let (bf, b) = data::<f64>(&mut r, 4);
    let (a, b) = (Array::from_slice(&a, &[6]), Array::from_slice(&b, &[4]));
    let want: Vec<f64> = af
        .iter()
        .flat_map(|x| bf.iter().map(move |y| x * y))
        .collect();
    let o = a.outer(&b);
    assert_eq!(o.shape(), &[6, 4]);
    assert_same(&read(&o), &want, "outer");
    let oi = Array::from_slice(&[3u32, 0xffff_ffff], &[2]).outer(&Array::from_slice(&[2u32], &[1]));
    assert_same(&read(&oi), &[6, 0xffff_fffe], "u32 outer wraps");
    // inner: contraction along both last axes.
    let (xf, x) = data::<f32>(&mut r, 2 * 3 * 7);
    let (yf, y) = data::<f32>(&mut r, 5 * 7);
    let got = Array::from_slice(&x, &[2, 3, 7]).inner(&Array::from_slice(&y, &[5, 7]));
    let (ys, yv) = permute_oracle(&yf, &[5, 7], &[1, 0]);
    let (_, w) = float_oracle(&xf, &[6, 7], &yv, &ys);
    check_float(&got, &(vec![2, 3, 5], w), 7, "inner [2,3,7] [5,7]");
    let v = Array::from_slice(&y[..7], &[7]);
    let (_, w) = float_oracle(&xf, &[6, 7], &yf[..7], &[7]);
    check_float(
        &Array::from_slice(&x, &[2, 3, 7]).inner(&v),
        &(vec![2, 3], w),
        7,
        "inner [2,3,7] [7]",
    );
    let (_, w) = float_oracle(&yf[..7], &[7], &yf[7..14], &[7]);
    let y2 = Array::from_slice(&y[7..14], &[7]);
    check_float(&v.inner(&y2), &(vec![], w.clone()), 7, "inner [7] [7]");
    check_float(&v.matmul(&y2), &(vec![], w), 7, "[7] @ [7]");
    // vdot: flattened products summed.
    let (pf, p) = data::<f64>(&mut r, 12);
    let (qf, q) = data::<f64>(&mut r, 12);
    let got = item(&Array::from_slice(&p, &[3, 4]).vdot(&Array::from_slice(&q, &[2, 6])));
    let want: f64 = pf.iter().zip(&qf).map(|(x, y)| x * y).sum();
    assert!(
        (got - want).abs() <= 12.0 * f64::EPSILON * 12.0,
        "vdot {got} vs {want}"
    );
}

/// Errors name the caller's line (this file) and both shapes as the user wrote them.
#[test]
fn errors_name_the_line_and_both_shapes() {
    let _g = SERIAL.lock();
    let a = Array::<f32>::zeros(&[2, 3]);
    let cases: Vec<(arrayflow::Error, u32, &str)> = vec![
        (
            a.try_matmul(&a).unwrap_err(),
            line!(),
            "matmul of shapes [2, 3] and [2, 3]",
        ),
        (
            Array::<f32>::zeros(&[4])
                .try_matmul(&Array::zeros(&[3, 2]))
                .unwrap_err(),
            line!(),
            "matmul of shapes [4] and [3, 2]",
        ),
        (
            Array::<f32>::zeros(&[2, 2, 3])
                .try_matmul(&Array::zeros(&[3, 3, 1]))
                .unwrap_err(),
            line!(),
            "matmul of shapes [2, 2, 3] and [3, 3, 1]",
        ),
        // The shapes as written, with the left operand a transpose view.
        (
            Array::<f32>::zeros(&[3, 2])
                .transpose()
                .try_matmul(&a)
                .unwrap_err(),
            line!(),
            "matmul of shapes [2, 3] and [2, 3]",
        ),
        (
            Array::<f32>::scalar(1.0).try_matmul(&a).unwrap_err(),
            line!(),
            "matmul of shapes [] and [2, 3]",
        ),
        (
            Array::<i32>::zeros(&[2, 3])
                .try_inner(&Array::zeros(&[3, 2]))
                .unwrap_err(),
            line!(),
            "inner of shapes [2, 3] and [3, 2]",
        ),
        (
            Array::<f64>::zeros(&[5])
                .try_vdot(&Array::zeros(&[2, 3]))
                .unwrap_err(),
            line!(),
            "vdot of shapes [5] and [2, 3]",
        ),
    ];
    for (e, line, what) in cases {
        let text = e.to_string();
        assert_eq!(e.kind(), ErrorKind::Shape, "{text}");
        assert!(text.contains(what), "`{text}` does not say `{what}`");
        let near =
            (line.saturating_sub(3)..=line).any(|l| text.contains(&format!("matmul.rs:{l}:")));
        assert!(
            near,
            "`{text}` does not name tests/matmul.rs near line {line}"
        );
    }
}

/// A generated identity operand: a I = I a = a; a known small product.
#[test]
fn identity_and_a_known_product() {
    let _g = SERIAL.lock();
    let mut r = rng(2107);
    let x = rand_f32(&mut r, 36, -100.0, 100.0);
    let a = Array::from_slice(&x, &[6, 6]);
    assert_same(&read(&a.matmul(&Array::identity(6))), &x, "a I = a");
    assert_same(&read(&Array::<f32>::identity(6).matmul(&a)), &x, "I a = a");
    let p = Array::from_slice(&[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let q = Array::from_slice(&[7.0f64, 8.0, 9.0, 10.0, 11.0, 12.0], &[3, 2]);
    assert_same(
        &read(&p.matmul(&q)),
        &[58.0, 64.0, 139.0, 154.0],
        "2x3 by 3x2",
    );
    // Expression inputs and an expression on the output.
    let e = (&p * 2.0).matmul(&(&q + 1.0)).exp().ln();
    let got = read(&e);
    let w: Vec<f64> = [(1.0, 2.0, 3.0), (4.0, 5.0, 6.0)]
        .iter()
        .flat_map(|&(u, v, s)| {
            [(8.0, 10.0, 12.0), (9.0, 11.0, 13.0)]
                .map(|(c0, c1, c2)| 2.0 * (u * c0 + v * c1 + s * c2))
        })
        .collect();
    assert_close(&got, &w, 1e-14, 0.0, "(2p)(q + 1)");
}
