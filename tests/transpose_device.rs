//! Materialised transposes on the executor `ARRAYFLOW_DEVICE` picks (CI runs this file once per
//! executor: `opencl` for PoCL, `wgpu` for lavapipe, `cpu`): `a.transpose()` and batched
//! `permute`s of random arrays of every element type, read back and compared bit for bit with a
//! plain-loop oracle. On a device executor the statistics must also show that each one ran as the
//! tiled transpose intrinsic (`DeviceStats::intrinsics`) — and that a transpose fused with other
//! work, or one with a unit extent (a plain copy), did not. On the CPU executor the values are
//! still checked and the intrinsic check prints a skip line.

mod common;

use arrayflow::{Array, Backend, Element, Runtime, Slice};
use common::*;
use rand::RngExt;
use rand::rngs::StdRng;

/// Tests that read the process-wide statistics run one at a time.
static SERIAL: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// An element type under test: random values (with special floats: signed zeros, infinities,
/// NaNs with payloads, subnormals) and the bits compared.
trait Case: Element {
    fn random(r: &mut StdRng, n: usize) -> Vec<Self>;
    fn bits(self) -> u64;
}

impl Case for f32 {
    fn random(r: &mut StdRng, n: usize) -> Vec<f32> {
        let special = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::from_bits(0x7fc0_1234),
            f32::from_bits(0xffa0_0001),
            f32::from_bits(0x0000_0003),
            -f32::MIN_POSITIVE / 4.0,
        ];
        (0..n)
            .map(|i| match i % 97 {
                5 => special[(i / 97) % special.len()],
                _ => r.random_range(-1e6f32..1e6),
            })
            .collect()
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl Case for f64 {
    fn random(r: &mut StdRng, n: usize) -> Vec<f64> {
        let special = [
            -0.0,
            f64::INFINITY,
            f64::from_bits(0x7ff8_0000_dead_beef),
            f64::from_bits(0x0000_0000_0000_0007),
        ];
        (0..n)
            .map(|i| match i % 89 {
                3 => special[(i / 89) % special.len()],
                _ => r.random_range(-1e12f64..1e12),
            })
            .collect()
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

impl Case for i32 {
    fn random(r: &mut StdRng, n: usize) -> Vec<i32> {
        rand_i32_any(r, n)
    }
    fn bits(self) -> u64 {
        self as u32 as u64
    }
}

impl Case for u32 {
    fn random(r: &mut StdRng, n: usize) -> Vec<u32> {
        rand_u32_any(r, n)
    }
    fn bits(self) -> u64 {
        self as u64
    }
}

impl Case for bool {
    fn random(r: &mut StdRng, n: usize) -> Vec<bool> {
        rand_bool(r, n, 0.5)
    }
    fn bits(self) -> u64 {
        self as u64
    }
}

/// The oracle: `batch` row-major `rows x cols` matrices (from element `offset` of `data`),
/// each transposed.
fn transposed<T: Copy>(
    data: &[T],
    offset: usize,
    batch: usize,
    rows: usize,
    cols: usize,
) -> Vec<T> {
    let mut out = Vec::with_capacity(batch * rows * cols);
    for b in 0..batch {
        for j in 0..cols {
            for i in 0..rows {
                out.push(data[offset + (b * rows + i) * cols + j]);
            }
        }
    }
    out
}

#[track_caller]
fn assert_bits<T: Case>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad: Vec<String> = got
        .iter()
        .zip(want)
        .enumerate()
        .filter(|(_, (g, w))| g.bits() != w.bits())
        .take(8)
        .map(|(i, (g, w))| format!("[{i}] got {g:?} want {w:?}"))
        .collect();
    assert!(bad.is_empty(), "{what}: mismatch:\n  {}", bad.join("\n  "));
}

/// How many programs of this case the device must run as the transpose intrinsic, or `None` on
/// the CPU executor (after a skip line).
fn expected_intrinsics<T: Case>(
    is_transpose: bool,
    st: &arrayflow::Stats,
    what: &str,
) -> Option<u64> {
    match common::the_device() {
        Backend::Cpu => {
            println!("skipping the intrinsic check of {what}: the CPU executor runs it");
            None
        }
        // WGSL has no f64: such programs run on the CPU.
        Backend::Wgpu if T::DTYPE == arrayflow::ir::DType::F64 => Some(0),
        // A device without f64 sends them to the CPU before planning.
        _ if st.device.f64_to_cpu > 0 => Some(0),
        _ => Some(is_transpose as u64),
    }
}

/// Permutes a random array of `shape` by `perm` (which swaps the last two axes), reads it, and
/// checks the values and, on a device, that the intrinsic ran exactly when `is_transpose`.
fn check<T: Case>(shape: &[usize], perm: &[usize], seed: u64, is_transpose: bool) {
    let nd = shape.len();
    let (rows, cols) = (shape[nd - 2], shape[nd - 1]);
    let batch: usize = shape[..nd - 2].iter().product();
    let data = T::random(&mut rng(seed), numel(shape));
    let what = format!("{:?} {shape:?} permuted {perm:?}", T::DTYPE);
    let before = Runtime::stats();
    let a = Array::from_vec(data.clone(), shape);
    let t = if nd == 2 {
        a.transpose()
    } else {
        a.permute(perm)
    };
    let got = read(&t);
    let st = Runtime::stats().since(&before);
    assert_eq!(
        t.shape(),
        perm.iter()
            .map(|&p| shape[p])
            .collect::<Vec<_>>()
            .as_slice(),
        "{what}"
    );
    assert_bits(&got, &transposed(&data, 0, batch, rows, cols), &what);
    if let Some(want) = expected_intrinsics::<T>(is_transpose, &st, &what) {
        assert_eq!(st.device.intrinsics, want, "{what}: {:?}", st.device);
    }
}

/// Every shape of the suite for one element type.
fn every_shape<T: Case>(seed: u64) {
    check::<T>(&[1, 1], &[1, 0], seed, false);
    check::<T>(&[31, 33], &[1, 0], seed + 1, true);
    check::<T>(&[32, 32], &[1, 0], seed + 2, true);
    check::<T>(&[100, 257], &[1, 0], seed + 3, true);
    check::<T>(&[3, 70, 45], &[0, 2, 1], seed + 4, true);
    check::<T>(&[2, 3, 33, 40], &[0, 1, 3, 2], seed + 5, true);
}

#[test]
fn f32_transposes() {
    let _one_at_a_time = SERIAL.lock();
    every_shape::<f32>(100);
}

#[test]
fn f64_transposes() {
    let _one_at_a_time = SERIAL.lock();
    every_shape::<f64>(200);
}

#[test]
fn i32_transposes() {
    let _one_at_a_time = SERIAL.lock();
    every_shape::<i32>(300);
}

#[test]
fn u32_transposes() {
    let _one_at_a_time = SERIAL.lock();
    every_shape::<u32>(400);
}

#[test]
fn bool_transposes() {
    let _one_at_a_time = SERIAL.lock();
    every_shape::<bool>(500);
}

#[test]
fn large_transpose() {
    let _one_at_a_time = SERIAL.lock();
    check::<f32>(&[1024, 2048], &[1, 0], 600, true);
}

/// A transpose of whole rows sliced out of a matrix reads from an offset in its buffer.
#[test]
fn transpose_of_a_row_slice() {
    let _one_at_a_time = SERIAL.lock();
    let (n, cols, lo, hi) = (90, 75, 7, 77);
    let data = <i32 as Case>::random(&mut rng(700), n * cols);
    let before = Runtime::stats();
    let a = Array::from_vec(data.clone(), &[n, cols]);
    let t = a
        .slice(&[Slice::new(Some(lo as isize), Some(hi as isize), 1)])
        .transpose();
    let got = read(&t);
    let st = Runtime::stats().since(&before);
    let what = "rows 7..77 of a 90 x 75 i32 matrix, transposed";
    assert_eq!(t.shape(), &[cols, hi - lo], "{what}");
    assert_bits(&got, &transposed(&data, lo * cols, 1, hi - lo, cols), what);
    if let Some(want) = expected_intrinsics::<i32>(true, &st, what) {
        assert_eq!(st.device.intrinsics, want, "{what}: {:?}", st.device);
    }
}

/// A transpose fused with other work (arithmetic, a cast) stays one fused kernel.
#[test]
fn fused_transposes_are_not_the_intrinsic() {
    let _one_at_a_time = SERIAL.lock();
    let (rows, cols) = (45, 70);
    let data = <i32 as Case>::random(&mut rng(800), rows * cols);
    let want = transposed(&data, 0, 1, rows, cols);
    let before = Runtime::stats();
    let a = Array::from_vec(data.clone(), &[rows, cols]);
    let plus = read(&(a.transpose() + 3));
    let cast = read(&a.transpose().cast::<u32>());
    let st = Runtime::stats().since(&before);
    let what = "a 45 x 70 i32 transpose fused with + 3 and with a cast";
    assert_bits(
        &plus,
        &want.iter().map(|x| x.wrapping_add(3)).collect::<Vec<_>>(),
        what,
    );
    assert_bits(
        &cast,
        &want.iter().map(|&x| x as u32).collect::<Vec<_>>(),
        what,
    );
    if let Some(want) = expected_intrinsics::<i32>(false, &st, what) {
        assert_eq!(st.device.intrinsics, want, "{what}: {:?}", st.device);
    }
}
