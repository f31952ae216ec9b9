//! Several application threads recording and reading at once share one runtime and still get
//! correct results (checked against plain-Rust oracles).

use arrayflow::{Array, Backend, Rng, Runtime};

#[test]
fn four_threads_record_and_read_concurrently() {
    // A device executor compiles a kernel per length (PoCL takes about a second for each): there
    // the threads cycle through five lengths each, on the CPU every iteration has its own.
    let lengths = if Runtime::backend() == Backend::Cpu {
        40
    } else {
        5
    };
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            std::thread::spawn(move || {
                let mut rng = Rng::new(100 + t);
                for iter in 0..40 {
                    let n = 1000 + 37 * (iter % lengths) + t as usize;
                    let v: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37 + t as f64).sin()).collect();
                    let a = Array::from_slice(&v, &[n]);
                    let u = rng.uniform::<f64>(&[n]);
                    let y = (&a * 3.0 + 1.0).exp() / (a.cos() + 2.0);
                    let s = y.sum();
                    let uv = u.to_vec().unwrap();
                    let out = y.to_vec().unwrap();
                    let total = s.item().unwrap();
                    let mut want_total = 0.0;
                    for i in 0..n {
                        let want = (v[i] * 3.0 + 1.0).exp() / (v[i].cos() + 2.0);
                        assert!(
                            (out[i] - want).abs() <= 1e-12 * want.abs(),
                            "thread {t} iter {iter} elem {i}"
                        );
                        want_total += want;
                        assert!((0.0..1.0).contains(&uv[i]));
                    }
                    assert!((total - want_total).abs() <= 1e-9 * want_total.abs());
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("a recording thread failed");
    }
}

#[test]
fn arrays_cross_threads() {
    let a = Array::from_vec((0..5000).map(|i| i as f32).collect(), &[5000]);
    let b = &a * 2.0;
    let t = std::thread::spawn(move || (&b + 1.0).to_vec().unwrap());
    let out = t.join().unwrap();
    for (i, o) in out.iter().enumerate() {
        assert_eq!(*o, i as f32 * 2.0 + 1.0);
    }
    assert_eq!(
        a.sum().item().unwrap(),
        (0..5000).map(|i| i as f64).sum::<f64>() as f32
    );
}
