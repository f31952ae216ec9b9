//! A low-pass filter in the frequency domain: a noisy signal (two tones plus white noise) is
//! transformed with `rfft`, the bins above a cutoff frequency (`rfftfreq`) are zeroed, and
//! `irfft` brings the signal back. Checked against a direct f64 computation (the kept Fourier
//! components summed in plain loops) before it prints.
//!
//! `cargo run --release --example fft_filter` (uses a GPU when `ARRAYFLOW_DEVICE` names one; the
//! transforms run on its CPU fallback for now).

use arrayflow::fft::{self, Norm};
use arrayflow::{Array, Complex, Runtime};
use std::f64::consts::PI;

fn main() -> arrayflow::Result<()> {
    // 4 seconds at 256 Hz: a 5 Hz and a 12 Hz tone under noise of standard deviation 0.8.
    let (fs, n, cutoff) = (256.0f64, 1024usize, 15.0f64);
    let clean: Vec<f64> = (0..n)
        .map(|j| {
            let t = j as f64 / fs;
            (2.0 * PI * 5.0 * t).sin() + 0.5 * (2.0 * PI * 12.0 * t).cos()
        })
        .collect();
    let noisy: Vec<f32> = clean
        .iter()
        .zip(gaussian(n, 0x5eed))
        .map(|(&c, e)| (c + 0.8 * e) as f32)
        .collect();

    // The filter: rfft, zero the bins above the cutoff, irfft back to n samples.
    let x = Array::from_vec(noisy.clone(), &[n]);
    let spectrum = fft::rfft(&x, None, 0, Norm::Backward);
    let freqs = fft::rfftfreq::<f32>(n, 1.0 / fs);
    let kept = freqs
        .le(cutoff as f32)
        .select(&spectrum, Complex::new(0.0f32, 0.0));
    let filtered = fft::irfft(&kept, Some(n), 0, Norm::Backward).to_vec()?;

    // The oracle in f64: bins k = 0 ..= K (k fs / n <= cutoff) by direct sums, and the filtered
    // signal y_j = (X_0 + 2 sum_{k=1..K} Re(X_k exp(2 pi i jk / n))) / n.
    let big_k = (0..=n / 2)
        .take_while(|&k| k as f64 * fs / n as f64 <= cutoff)
        .last()
        .unwrap_or(0);
    assert!(big_k < n / 2, "the cutoff keeps the Nyquist bin");
    let bins: Vec<(f64, f64)> = (0..=big_k)
        .map(|k| {
            noisy
                .iter()
                .enumerate()
                .fold((0.0, 0.0), |(re, im), (j, &v)| {
                    let a = -2.0 * PI * ((j * k) % n) as f64 / n as f64;
                    (re + v as f64 * a.cos(), im + v as f64 * a.sin())
                })
        })
        .collect();
    let want: Vec<f64> = (0..n)
        .map(|j| {
            let mut y = bins[0].0;
            for (k, &(re, im)) in bins.iter().enumerate().skip(1) {
                let a = 2.0 * PI * ((j * k) % n) as f64 / n as f64;
                y += 2.0 * (re * a.cos() - im * a.sin());
            }
            y / n as f64
        })
        .collect();
    let err = filtered
        .iter()
        .zip(&want)
        .map(|(&a, &b)| (a as f64 - b).abs())
        .fold(0.0, f64::max);
    assert!(
        err < 1e-5,
        "largest difference from the f64 computation: {err:e}"
    );

    // The filter removes most of the noise: compare both signals with the clean one.
    let rms = |v: &mut dyn Iterator<Item = f64>| {
        let (s, c) = v.fold((0.0, 0), |(s, c), d| (s + d * d, c + 1));
        (s / c as f64).sqrt()
    };
    let before = rms(&mut noisy.iter().zip(&clean).map(|(&a, &b)| a as f64 - b));
    let after = rms(&mut filtered.iter().zip(&clean).map(|(&a, &b)| a as f64 - b));
    // White noise is spread evenly over the 513 bins: keeping 61 of them keeps about a third
    // of its amplitude (sqrt(61 / 513)).
    assert!(after < before / 2.0, "noise {before:.3} -> {after:.3}");
    println!(
        "low-pass at {cutoff} Hz of {n} samples on {}: {} of {} bins kept, rms noise \
         {before:.3} -> {after:.3}, largest difference from the f64 computation {err:.1e}",
        Runtime::executor(),
        big_k + 1,
        n / 2 + 1,
    );
    Ok(())
}

/// `n` standard normal values (Box-Muller over a 64-bit xorshift), the same on every run.
fn gaussian(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    let mut uniform = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        ((s >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let (u, v) = (uniform(), uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * PI * v).cos()
        })
        .collect()
}
