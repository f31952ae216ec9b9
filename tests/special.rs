//! Special functions (erf, erfc) against published values and an independent series oracle, and
//! `count` on bool arrays.

use arrayflow::Array;

/// erf by its Maclaurin series in f64 (accurate to ~1e-12 for |x| <= 3).
fn erf_series(x: f64) -> f64 {
    let (mut term, mut sum) = (x, x);
    for n in 1..200 {
        term *= -x * x / n as f64;
        let t = term / (2 * n + 1) as f64;
        sum += t;
        if t.abs() < 1e-17 * sum.abs() {
            break;
        }
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn erf_matches_published_values() {
    // Abramowitz & Stegun table 7.1 / NIST DLMF values.
    let xs = [0.0f64, 0.5, 1.0, 2.0, -1.5];
    let want = [
        0.0,
        0.520_499_877_813_046_5,
        0.842_700_792_949_714_9,
        0.995_322_265_018_952_7,
        -0.966_105_146_475_310_7,
    ];
    let got = Array::from_slice(&xs, &[5]).erf().to_vec().unwrap();
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-15, "{g} vs {w}");
    }
    // erfc(3) = 2.209049699858544e-5: erfc keeps the relative precision erf would lose.
    let c = Array::from_slice(&[3.0f64], &[1]).erfc().item().unwrap();
    assert!((c - 2.209_049_699_858_544e-5).abs() <= 1e-19, "{c}");
}

#[test]
fn erf_and_erfc_match_the_series_on_random_inputs() {
    let mut s = 12345u64;
    let xs: Vec<f64> = (0..5000)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 6.0 - 3.0
        })
        .collect();
    let a64 = Array::from_slice(&xs, &[xs.len()]);
    let a32 = a64.cast::<f32>();
    let (e64, c64, e32) = (
        a64.erf().to_vec().unwrap(),
        a64.erfc().to_vec().unwrap(),
        a32.erf().to_vec().unwrap(),
    );
    let x32 = a32.to_vec().unwrap();
    for i in 0..xs.len() {
        let w = erf_series(xs[i]);
        assert!(
            (e64[i] - w).abs() <= 1e-12,
            "erf({}) = {} vs {w}",
            xs[i],
            e64[i]
        );
        assert!((c64[i] - (1.0 - w)).abs() <= 1e-12, "erfc({})", xs[i]);
        let w32 = erf_series(x32[i] as f64);
        assert!(
            (e32[i] as f64 - w32).abs() <= 2e-7,
            "erf32({}) = {} vs {w32}",
            x32[i],
            e32[i]
        );
    }
}

#[test]
fn count_counts_true_elements() {
    let v: Vec<f32> = (0..10_000).map(|i| ((i * 37) % 101) as f32).collect();
    let a = Array::from_slice(&v, &[100, 100]);
    let n = a.gt(50.0).count().item().unwrap();
    assert_eq!(n as usize, v.iter().filter(|&&x| x > 50.0).count());
}

#[test]
fn min_max_free_functions_and_axis_norms() {
    let v: Vec<f64> = (0..60)
        .map(|i| ((i * 37 % 23) as f64 - 11.0) * 0.25)
        .collect();
    let w: Vec<f64> = (0..60)
        .map(|i| ((i * 17 % 29) as f64 - 14.0) * 0.2)
        .collect();
    let a = Array::from_slice(&v, &[6, 10]);
    let b = Array::from_slice(&w, &[6, 10]);
    let lo = arrayflow::min(&a, &b).to_vec().unwrap();
    let hi = arrayflow::max(&a, 0.5).to_vec().unwrap();
    for i in 0..60 {
        assert_eq!(lo[i], v[i].min(w[i]));
        assert_eq!(hi[i], v[i].max(0.5));
    }
    let (l1, l2, li, d) = (
        a.norm_l1_axis(1).to_vec().unwrap(),
        a.norm_l2_axis(0).to_vec().unwrap(),
        a.norm_inf_axis(1).to_vec().unwrap(),
        a.dot_axis(&b, 1).to_vec().unwrap(),
    );
    for r in 0..6 {
        let row = &v[r * 10..r * 10 + 10];
        assert!((l1[r] - row.iter().map(|x| x.abs()).sum::<f64>()).abs() < 1e-12);
        assert_eq!(li[r], row.iter().fold(0.0f64, |m, x| m.max(x.abs())));
        let dd: f64 = (0..10).map(|c| v[r * 10 + c] * w[r * 10 + c]).sum();
        assert!((d[r] - dd).abs() < 1e-12);
    }
    for c in 0..10 {
        let n2: f64 = (0..6)
            .map(|r| v[r * 10 + c] * v[r * 10 + c])
            .sum::<f64>()
            .sqrt();
        assert!((l2[c] - n2).abs() < 1e-12);
    }
}

/// Relative difference in units of `eps`.
fn ulps(got: f64, want: f64, eps: f64) -> f64 {
    (got - want).abs() / (want.abs() * eps)
}

#[test]
fn inverse_hyperbolics_hold_at_the_edges_of_their_domains() {
    // Below the domain of acosh, however far: NaN (was -inf / +inf far below).
    let x = Array::from_slice(&[-1e8f64, -1e300, -2.0, 0.5, f64::NAN], &[5]);
    assert!(x.acosh().to_vec().unwrap().iter().all(|v| v.is_nan()));
    let x = Array::from_slice(&[-1e8f32, -3e38, 0.0], &[3]);
    assert!(x.acosh().to_vec().unwrap().iter().all(|v| v.is_nan()));

    // Near the type's maximum: ln(2|x|), computed here in f64 from f32 inputs (no overflow), and
    // from ln x + ln 2 for f64 inputs (exact to an ulp: the next term is 1/(4x^2)).
    let xs = [-3e38f32, 3.4e38, 1e10, 5000.0];
    let got_s = Array::from_slice(&xs, &[4]).asinh().to_vec().unwrap();
    let got_c = Array::from_slice(&xs[1..], &[3]).acosh().to_vec().unwrap();
    for (g, &x) in got_s.iter().zip(&xs) {
        let w = (x as f64).asinh();
        assert!(
            ulps(*g as f64, w, f32::EPSILON as f64) <= 2.0,
            "asinh({x}) = {g}, want {w}"
        );
    }
    for (g, &x) in got_c.iter().zip(&xs[1..]) {
        let w = (x as f64).acosh();
        assert!(
            ulps(*g as f64, w, f32::EPSILON as f64) <= 2.0,
            "acosh({x}) = {g}, want {w}"
        );
    }
    let big = 1.418_955_027_239_329_7e308f64;
    let want = big.ln() + std::f64::consts::LN_2; // 710.2392...
    let s = Array::from_slice(&[big, -big], &[2])
        .asinh()
        .to_vec()
        .unwrap();
    assert!(
        ulps(s[0], want, f64::EPSILON) <= 2.0 && s[1] == -s[0],
        "{s:?}"
    );
    let c = Array::from_slice(&[big], &[1]).acosh().item().unwrap();
    assert!(ulps(c, want, f64::EPSILON) <= 2.0, "{c}");

    // atanh near -1: 0.5 ln((1 + x) / (1 - x)), where 1 + x is exact (Sterbenz) and the rest
    // rounds a few times (was 6e5 ulp off); below 1/2 its series x + x^3/3 + x^5/5 + ...
    let series = |x: f64| {
        let (mut p, mut sum) = (x, 0.0f64);
        for k in 0..200 {
            sum += p / (2 * k + 1) as f64;
            p *= x * x;
        }
        sum
    };
    for x in [-0.9999999f64, 0.9999999, -0.75, -1e-3, 0.3] {
        let got = Array::from_slice(&[x], &[1]).atanh().item().unwrap();
        let want = if x.abs() < 0.5 {
            series(x)
        } else {
            0.5 * ((1.0 + x) / (1.0 - x)).ln()
        };
        assert!(
            ulps(got, want, f64::EPSILON) <= 8.0,
            "atanh({x}) = {got}, want {want}"
        );
    }

    // acsc near 1: pi/2 - sqrt(2d) (1 - 5d/12 + 43 d^2/160) for x = 1 + d, d = 1e-7 (a series
    // with an error of order d^3; was 80 ulp off through asin(1 / x)).
    let x = 1.0000001f64;
    let d = x - 1.0; // exact
    let want = std::f64::consts::FRAC_PI_2
        - (2.0 * d).sqrt() * (1.0 - 5.0 * d / 12.0 + 43.0 * d * d / 160.0);
    let got = Array::from_slice(&[x, -x], &[2]).acsc().to_vec().unwrap();
    assert!(
        ulps(got[0], want, f64::EPSILON) <= 4.0,
        "acsc({x}) = {}, want {want}",
        got[0]
    );
    assert_eq!(got[1], -got[0]);
}

#[test]
fn trigonometric_functions_reduce_large_arguments_exactly() {
    // Arguments from 8192 up to the largest f32s (the GPU's own sin/cos lose every digit there,
    // so the WGSL library reduces by 4/pi to 192 bits), against f64's functions.
    let mut xs = vec![
        1e8f32,
        1e9,
        3e38,
        -1e8,
        1.6e6,
        1.8e7,
        6.9e10,
        8193.0,
        f32::MAX,
    ];
    let mut s = 12345u64;
    for _ in 0..4000 {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let m = ((s >> 8) & 0xffff) as f32 / 65536.0 + 1.0;
        let sign = if s & 1 == 0 { 1.0 } else { -1.0 };
        xs.push(sign * m * 2f32.powi(((s >> 40) % 114) as i32 + 13));
    }
    let a = Array::from_slice(&xs, &[xs.len()]);
    type Case = (&'static str, Vec<f32>, fn(f64) -> f64);
    let cases: [Case; 3] = [
        ("sin", a.sin().to_vec().unwrap(), f64::sin),
        ("cos", a.cos().to_vec().unwrap(), f64::cos),
        ("tan", a.tan().to_vec().unwrap(), f64::tan),
    ];
    for (name, got, f) in cases {
        for (g, &x) in got.iter().zip(&xs) {
            let w = f(x as f64);
            let err = (*g as f64 - w).abs() / (w.abs().max(1e-30) * f32::EPSILON as f64);
            assert!(err <= 4.0, "{name}({x}) = {g}, want {w} ({err:.1} ulp)");
        }
    }
    // Infinities have no sine or cosine.
    let inf = Array::from_slice(&[f32::INFINITY, f32::NEG_INFINITY], &[2]);
    assert!(inf.sin().to_vec().unwrap().iter().all(|v| v.is_nan()));
    assert!(inf.cos().to_vec().unwrap().iter().all(|v| v.is_nan()));
}
