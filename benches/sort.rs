//! Sorting benchmark (`intrinsics/sort/`), on the executor `ARRAYFLOW_DEVICE` selects (one
//! executor per process; unset or `cpu`: the CPU executor). Random f32 (uniform in [-1e6, 1e6),
//! no zeros or NaNs, so every order agrees with `total_cmp`). Every result is checked against a
//! plain-Rust oracle before it is timed; each figure is the median of `SORT_REPEATS` (default 7)
//! timed runs after one untimed warm-up.
//!
//! - **CPU** (`ARRAYFLOW_DEVICE` unset or `cpu`), n = 2^24 (`SORT_LOG2`): `a.sort_axis(0).eval()`
//!   against a hand-written rayon `par_sort_unstable_by(f32::total_cmp)` of a copy (the copy
//!   made before the clock starts), and `a.argsort_axis(0).eval()` against rayon's stable
//!   `par_sort_by` of the positions by `total_cmp` of their values. Ratio = peer time /
//!   arrayflow time (above 1: arrayflow is faster; the target is at least 0.9). Also `topk(100,
//!   0)` of 2^24 (`SORT_TOPK_LOG2`; the `topk` intrinsic's selection) against
//!   `select_nth_unstable_by` and a sort of the 100.
//! - **Device** (`ARRAYFLOW_DEVICE=opencl[:N]` or `wgpu[:N]`): sort and argsort of 2^26 f32
//!   (`SORT_GPU_LOG2`) and `topk(100, 0)` of 2^24 (`SORT_TOPK_LOG2`), each `eval()`ed (computed
//!   on the device and waited for, no copy back), with the same rayon peers on this host's CPU
//!   for scale. `benches/peers/` has no torch script for this yet: the lead measures
//!   `torch.sort`/`torch.topk` on the same GPU and compares with the `JSON` lines.
//!
//! ```sh
//! cargo bench --bench sort                                  # CPU
//! ARRAYFLOW_DEVICE=opencl:1 cargo bench --bench sort        # a GPU through OpenCL
//! ```

mod common;
use common::{PeerRow, cpu_model, env_usize, median_prepared, print_peer_rows, random_vec};

use arrayflow::{Array, Backend, Runtime};
use rayon::prelude::*;

fn rayon_sort(x: &[f32]) -> Vec<f32> {
    let mut v = x.to_vec();
    v.par_sort_unstable_by(f32::total_cmp);
    v
}

fn rayon_argsort(x: &[f32]) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..x.len() as u32).collect();
    idx.par_sort_by(|&a, &b| x[a as usize].total_cmp(&x[b as usize]));
    idx
}

#[track_caller]
fn check<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!("{what}: element {i}: got {:?} want {:?}", got[i], want[i]);
    }
}

/// On a device executor, every timed run ran there (no CPU fallback).
fn on_device(what: &str, before: &arrayflow::Stats) {
    common::print_kernel_times(what);
    let d = Runtime::stats().since(before).device;
    if Runtime::backend() != Backend::Cpu {
        assert_eq!(d.fallbacks, 0, "{what} fell back to the CPU: {d:?}");
        assert!(d.tasks > 0, "{what} ran no device task: {d:?}");
    }
}

fn main() {
    let repeats = env_usize("SORT_REPEATS", 7).max(1);
    let backend = Runtime::backend();
    println!(
        "sorting benchmark: executor {}, host {} ({} rayon threads)",
        Runtime::executor(),
        cpu_model(),
        rayon::current_num_threads()
    );
    let mut rows = Vec::new();
    {
        let n = 1usize
            << if backend == Backend::Cpu {
                env_usize("SORT_LOG2", 24)
            } else {
                env_usize("SORT_GPU_LOG2", 26)
            };
        let x = random_vec(n, 7, -1e6, 1e6);
        let a = Array::from_slice(&x, &[n]);
        // Checked first: arrayflow against the peer (the same order on this data).
        let want = rayon_sort(&x);
        check("sort", &a.sort_axis(0).to_vec().expect("sort"), &want);
        let want_idx = rayon_argsort(&x);
        check(
            "argsort",
            &a.argsort_axis(0).to_vec().expect("argsort"),
            &want_idx,
        );
        drop((want, want_idx));
        let before = Runtime::stats();
        let _ = Runtime::take_kernel_times();
        let af = median_prepared(repeats, || (), |_| a.sort_axis(0).eval().expect("sort"));
        on_device("sort", &before);
        let peer = median_prepared(
            repeats,
            || x.clone(),
            |mut v| v.par_sort_unstable_by(f32::total_cmp),
        );
        rows.push(PeerRow {
            name: "sort f32".into(),
            size: n.to_string(),
            af,
            peer,
            peer_name: "rayon par_sort_unstable_by(total_cmp)",
        });
        let before = Runtime::stats();
        let _ = Runtime::take_kernel_times();
        let af = median_prepared(
            repeats,
            || (),
            |_| a.argsort_axis(0).eval().expect("argsort"),
        );
        on_device("argsort", &before);
        let peer = median_prepared(
            repeats,
            || (0..n as u32).collect::<Vec<u32>>(),
            |mut idx| idx.par_sort_by(|&p, &q| x[p as usize].total_cmp(&x[q as usize])),
        );
        rows.push(PeerRow {
            name: "argsort f32".into(),
            size: n.to_string(),
            af,
            peer,
            peer_name: "rayon par_sort_by(total_cmp) of positions",
        });
    }
    {
        let k = 100;
        let n = 1usize << env_usize("SORT_TOPK_LOG2", 24);
        let x = random_vec(n, 11, -1e6, 1e6);
        let a = Array::from_slice(&x, &[n]);
        let (v, i) = a.topk(k, 0);
        let order = {
            let mut idx: Vec<u32> = (0..n as u32).collect();
            idx.par_sort_by(|&p, &q| x[q as usize].total_cmp(&x[p as usize]));
            idx.truncate(k);
            idx
        };
        check("topk positions", &i.to_vec().expect("topk"), &order);
        let vals: Vec<f32> = order.iter().map(|&p| x[p as usize]).collect();
        check("topk values", &v.to_vec().expect("topk"), &vals);
        let before = Runtime::stats();
        let _ = Runtime::take_kernel_times();
        let af = median_prepared(
            repeats,
            || (),
            |_| {
                let (v, i) = a.topk(k, 0);
                v.eval().and_then(|_| i.eval()).expect("topk")
            },
        );
        on_device("topk", &before);
        let peer = median_prepared(
            repeats,
            || (),
            |_| {
                // A partial selection: the k largest, then sorted.
                let mut idx: Vec<u32> = (0..n as u32).collect();
                let cmp = |p: &u32, q: &u32| x[*q as usize].total_cmp(&x[*p as usize]);
                idx.select_nth_unstable_by(k, cmp);
                idx.truncate(k);
                idx.sort_by(cmp);
                idx
            },
        );
        rows.push(PeerRow {
            name: format!("topk({k}) f32"),
            size: n.to_string(),
            af,
            peer,
            peer_name: "select_nth_unstable_by + sort (1 thread)",
        });
    }
    print_peer_rows("sort", &format!("\"executor\":\"{backend:?}\","), &rows);
}
