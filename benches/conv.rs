//! Convolution benchmark (`arrayflow::signal`, issue 22) on the executor `ARRAYFLOW_DEVICE`
//! picks. Every result is first checked against a hand-written single-threaded loop; each figure
//! is the median of `CONV_REPEATS` (default 5) timed runs after one untimed warm-up, arrayflow
//! timed as `convolve(..).eval()` (computed into the runtime's buffer, not copied out).
//!
//! - 1-D: a signal of 2^`CONV_LOG2` (default 22) f32 with a 31-tap filter, mode `same`, direct;
//! - 2-D: an image of `CONV_SIZE`² (default 2048) f32 with a 7 x 7 filter (direct) and a
//!   31 x 31 one (`Auto`: FFT), mode `same` (one channel, as `conv2d` with padding 3 / 15).
//!
//! Peers in the same run: on the CPU the plain loop (each output row as a sum of shifted input
//! rows scaled by one tap, the loop a Rust programmer writes; one thread); on a GPU a device copy
//! of the image (`&img + 0.0`, the memory bound of a pass) — PyTorch's `conv2d` on the same
//! shapes is `benches/peers/conv.py`. Ratio = peer time / arrayflow time.
//!
//! ```sh
//! cargo bench --bench conv                                   # CPU
//! ARRAYFLOW_DEVICE=opencl CONV_SIZE=4096 cargo bench --bench conv
//! ```

mod common;
use common::{PeerRow, cpu_model, env_usize, median_prepared, print_peer_rows, random_vec};

use arrayflow::signal::{self, Method, Mode};
use arrayflow::{Array, Backend, Runtime};

/// The plain loop, mode `same`: `out[i0, i1] = sum k[p0, p1] x[i0 + f0 - p0, i1 + f1 - p1]`.
fn plain_same(x: &[f32], n: [usize; 2], k: &[f32], m: [usize; 2], out: &mut [f32]) {
    let (f0, f1) = ((m[0] - 1) / 2, (m[1] - 1) / 2);
    out.fill(0.0);
    for i0 in 0..n[0] {
        let row = &mut out[i0 * n[1]..(i0 + 1) * n[1]];
        for p0 in 0..m[0] {
            let Some(s0) = (i0 + f0).checked_sub(p0).filter(|&s| s < n[0]) else {
                continue;
            };
            let xr = &x[s0 * n[1]..(s0 + 1) * n[1]];
            for p1 in 0..m[1] {
                let c = k[p0 * m[1] + p1];
                let shift = f1 as isize - p1 as isize;
                let lo = 0.max(-shift) as usize;
                let hi = (n[1] as isize).min(n[1] as isize - shift) as usize;
                for j in lo..hi {
                    row[j] += c * xr[(j as isize + shift) as usize];
                }
            }
        }
    }
}

/// arrayflow's result within `1e-4` of the plain loop's, relative to the largest output.
#[track_caller]
fn check(what: &str, got: &[f32], want: &[f32]) {
    let big = want.iter().fold(0.0f32, |a, v| a.max(v.abs()));
    let worst = got
        .iter()
        .zip(want)
        .fold(0.0f32, |a, (g, w)| a.max((g - w).abs()));
    assert!(
        worst <= 1e-4 * big,
        "{what}: differs by {worst} (largest {big})"
    );
}

fn main() {
    let repeats = env_usize("CONV_REPEATS", 5).max(1);
    let gpu = Runtime::backend() != Backend::Cpu;
    println!(
        "Convolution benchmark: executor {}, host {} ({} rayon threads)",
        Runtime::executor(),
        cpu_model(),
        rayon::current_num_threads()
    );
    let mut rows = Vec::new();
    let mut case = |name: &str, n: [usize; 2], m: [usize; 2], method: Method| {
        let x = random_vec(n[0] * n[1], 11, -1.0, 1.0);
        let k = random_vec(m[0] * m[1], 12, -1.0, 1.0);
        let one_d = n[0] == 1;
        let (xa, ka) = if one_d {
            (
                Array::from_slice(&x, &[n[1]]),
                Array::from_slice(&k, &[m[1]]),
            )
        } else {
            (Array::from_slice(&x, &n), Array::from_slice(&k, &m))
        };
        let run = || {
            if one_d {
                signal::convolve(&xa, &ka, Mode::Same, method)
            } else {
                signal::convolve2d(&xa, &ka, Mode::Same, method)
            }
        };
        let mut want = vec![0.0f32; x.len()];
        plain_same(&x, n, &k, m, &mut want);
        check(name, &run().to_vec().expect("convolve"), &want);
        let af = median_prepared(repeats, || (), |()| run().eval().expect("convolve"));
        let (peer, peer_name) = if gpu {
            let t = median_prepared(repeats, || (), |()| (&xa + 0.0).eval().expect("copy"));
            (t, "device copy of the input")
        } else {
            let t = median_prepared(
                repeats.min(3),
                || (),
                |()| plain_same(&x, n, &k, m, &mut want),
            );
            (t, "plain loop, 1 thread")
        };
        let size = if one_d {
            format!("[{}] * {}", n[1], m[1])
        } else {
            format!("{}² * {}x{}", n[0], m[0], m[1])
        };
        rows.push(PeerRow {
            name: name.into(),
            size,
            af,
            peer,
            peer_name,
        });
    };
    let n = 1usize << env_usize("CONV_LOG2", 22);
    case("conv1d direct", [1, n], [1, 31], Method::Direct);
    let s = env_usize("CONV_SIZE", 2048);
    case("conv2d direct", [s, s], [7, 7], Method::Auto);
    case("conv2d fft", [s, s], [31, 31], Method::Auto);
    print_peer_rows("conv", "", &rows);
}
