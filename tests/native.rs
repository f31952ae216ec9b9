//! The CPU's native tier: fused kernels compiled to C agree with the tile VM bit for bit, compiled
//! kernels are reused from the disk cache, and a corrupt cache entry is rebuilt, not trusted.
//! The tier mode and the statistics are process-wide, so these tests run one at a time.

use arrayflow::{Array, NativeMode, Pad, Rng, Runtime, Slice};
use parking_lot::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn data(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0
        })
        .collect()
}

/// A kernel touching many op kinds: arithmetic, transcendental functions, comparisons, select,
/// casts, broadcasting, a random draw, and a reduction.
fn mixed(a: &Array<f64>, b: &Array<f64>, seed: u64) -> (Vec<f64>, Vec<f32>, Vec<i32>, f64) {
    let mut rng = Rng::new(seed);
    let noise = rng.normal::<f64>(a.shape());
    let t = (a * b + 1.0).abs().sqrt() * a.sin() - b.exp() / (a.cos() + 3.0);
    let u = a.gt(b).select(&t, &noise) + a.atan2(b).tanh();
    let f = (&u * 0.5).cast::<f32>().erf() + (b.cast::<f32>() * 3.0).round();
    let i = (&u * 1000.0).cast::<i32>() % 7 - (b * 10.0).cast::<i32>().abs();
    let s = u.sum();
    (
        u.to_vec().unwrap(),
        f.to_vec().unwrap(),
        i.to_vec().unwrap(),
        s.item().unwrap(),
    )
}

/// A new, empty disk cache (`ARRAYFLOW_CACHE_DIR`) for kernels compiled from now on; call under
/// `SERIAL`, and [`drop_cache`] after.
fn fresh_cache(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("arrayflow-native-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // SAFETY: tests in this file run one at a time; nothing else reads the environment meanwhile.
    unsafe { std::env::set_var("ARRAYFLOW_CACHE_DIR", &dir) };
    dir
}

/// Back to the default disk cache; `dir` is removed.
fn drop_cache(dir: &std::path::Path) {
    // SAFETY: as in `fresh_cache`.
    unsafe { std::env::remove_var("ARRAYFLOW_CACHE_DIR") };
    let _ = std::fs::remove_dir_all(dir);
}

/// These tests exercise the CPU executor's native tier; on a device executor kernels run on the
/// device, so they print a skip there.
fn native_tier_runs() -> bool {
    let cpu = arrayflow::Runtime::backend() == arrayflow::Backend::Cpu;
    if !cpu {
        println!(
            "skipped on a device executor: kernels run on the device, not the CPU's native tier"
        );
    }
    cpu
}

#[test]
fn native_and_tile_vm_agree_bit_for_bit() {
    if !native_tier_runs() {
        return;
    }
    let _g = SERIAL.lock();
    let n = 50_000;
    let a = Array::from_slice(&data(n, 1), &[n]);
    let b = Array::from_slice(&data(n, 2), &[n]);
    let mode_before = Runtime::native();
    Runtime::set_native(NativeMode::Off);
    let vm = mixed(&a, &b, 9);
    Runtime::set_native(NativeMode::Require);
    let before = Runtime::stats();
    let native = mixed(&a, &b, 9);
    let s = Runtime::stats().since(&before);
    Runtime::set_native(mode_before);
    assert!(s.kernels_launched >= 3, "{s:?}");
    assert_eq!(
        s.native_launches, s.kernels_launched,
        "every kernel ran natively: {s:?}"
    );
    for i in 0..n {
        assert_eq!(
            vm.0[i].to_bits(),
            native.0[i].to_bits(),
            "u[{i}]: {} vs {}",
            vm.0[i],
            native.0[i]
        );
        assert_eq!(
            vm.1[i].to_bits(),
            native.1[i].to_bits(),
            "f[{i}]: {} vs {}",
            vm.1[i],
            native.1[i]
        );
        assert_eq!(vm.2[i], native.2[i], "i[{i}]");
    }
    assert_eq!(vm.3.to_bits(), native.3.to_bits());
    // And both against an f64 oracle for the first output (the select picks t or the noise).
    let (av, bv) = (data(n, 1), data(n, 2));
    for i in (0..n).step_by(97) {
        let (x, y) = (av[i], bv[i]);
        if x > y {
            let t = (x * y + 1.0).abs().sqrt() * x.sin() - y.exp() / (x.cos() + 3.0);
            let want = t + x.atan2(y).tanh();
            assert!((vm.0[i] - want).abs() <= 1e-12 * want.abs().max(1.0), "{i}");
        }
    }
}

#[test]
fn the_disk_cache_is_reused_and_a_corrupt_entry_rebuilt() {
    if !native_tier_runs() {
        return;
    }
    let _g = SERIAL.lock();
    let dir = fresh_cache("test");
    let mode_before = Runtime::native();
    Runtime::set_native(NativeMode::Require);
    let n = 4096;
    let v = data(n, 3);
    let a = Array::from_slice(&v, &[n]);
    let run = || {
        let y = (&a * 1.25 + 0.75).exp2().ln();
        y.to_vec().unwrap()
    };
    let first = Runtime::stats();
    let y1 = run();
    assert_eq!(Runtime::stats().since(&first).native_compiles, 1);
    let libs: Vec<_> = std::fs::read_dir(Runtime::cache_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    let so = libs
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "so"))
        .expect("a compiled kernel on disk")
        .clone();
    assert!(so.with_extension("c").exists());

    // A new process (simulated by forgetting loaded kernels) finds it on disk: no compile.
    arrayflow::exec::cpu::native::forget_loaded();
    let second = Runtime::stats();
    let y2 = run();
    let st = Runtime::stats().since(&second);
    assert_eq!(st.native_compiles, 0);
    assert_eq!(
        st.programs.insertions, 1,
        "loaded from the disk cache: {:?}",
        st.programs
    );
    // Loaded now: the next launch finds it in memory.
    let third = Runtime::stats();
    let _ = run();
    assert_eq!(Runtime::stats().since(&third).programs.hits, 1);

    // A corrupt library is not trusted: it is rebuilt. (Replaced by rename, as any writer of a
    // shared library must: overwriting a mapped file in place would crash the process using it.)
    let junk = so.with_extension("junk");
    std::fs::write(&junk, b"not a shared library").unwrap();
    std::fs::rename(&junk, &so).unwrap();
    arrayflow::exec::cpu::native::forget_loaded();
    let third = Runtime::stats();
    let y3 = run();
    assert_eq!(Runtime::stats().since(&third).native_compiles, 1);
    Runtime::set_native(mode_before);
    drop_cache(&dir);
    for i in 0..n {
        let want = (v[i] * 1.25 + 0.75).exp2().ln();
        assert!((y1[i] - want).abs() <= 1e-14 * want.abs().max(1.0));
        assert_eq!(y1[i].to_bits(), y2[i].to_bits());
        assert_eq!(y1[i].to_bits(), y3[i].to_bits());
    }
}

/// A kernel whose compilation `auto` started in the background is waited for, not reported
/// unavailable, when the mode becomes `require` meanwhile (another test of a binary run with
/// `ARRAYFLOW_NATIVE=require` may switch modes like this), and its native result agrees with the
/// tile VM's bit for bit.
#[test]
fn a_kernel_compiling_in_the_background_is_awaited_when_native_code_is_required() {
    if !native_tier_runs() {
        return;
    }
    let _g = SERIAL.lock();
    // A fresh disk cache and nothing loaded: the compilation is real (tens of milliseconds).
    let dir = fresh_cache("wait");
    arrayflow::exec::cpu::native::forget_loaded();
    let mode_before = Runtime::native();
    let n = 100_000; // above `auto`'s threshold, so `auto` compiles it in the background
    let v = data(n, 11);
    let a = Array::from_slice(&v, &[n]);
    let run = || ((&a * 0.5 - 0.25).sinh() + a.cos().abs().sqrt()).to_vec();
    Runtime::set_native(NativeMode::Off);
    let vm = run();
    Runtime::set_native(NativeMode::Auto);
    let auto = run();
    Runtime::set_native(NativeMode::Require);
    let native = run();
    Runtime::set_native(mode_before);
    drop_cache(&dir);
    let (vm, auto, native) = (vm.unwrap(), auto.unwrap(), native.unwrap());
    for i in 0..n {
        let want = (v[i] * 0.5 - 0.25).sinh() + v[i].cos().abs().sqrt();
        assert!((vm[i] - want).abs() <= 1e-14 * want.abs().max(1.0), "{i}");
        assert_eq!(vm[i].to_bits(), auto[i].to_bits(), "{i}");
        assert_eq!(vm[i].to_bits(), native[i].to_bits(), "{i}");
    }
}

/// Random draws (uniform and normal, f32 and f64, lengths and counters not multiples of a Philox
/// block, read contiguously, through a transposed view, and summed): the native tier's batched
/// generator and the tile VM give the same bits, and both give the stream's values element by
/// element (`primitives::cpu`, which the OpenCL test also checks the device against).
#[test]
fn random_draws_agree_bit_for_bit() {
    if !native_tier_runs() {
        return;
    }
    use arrayflow::primitives::cpu as prim;
    let _g = SERIAL.lock();
    type Draws = (Vec<f32>, Vec<f64>, Vec<f32>, Vec<f64>, Vec<f32>, f64);
    let draw = || -> Draws {
        let mut rng = Rng::new(0xfeed_beef_0123);
        let _skip = rng.uniform::<f32>(&[3]);
        let a = rng.uniform::<f32>(&[70_001]).to_vec().unwrap();
        let b = rng.uniform::<f64>(&[70_003]).to_vec().unwrap();
        let c = rng.normal::<f32>(&[70_005]).to_vec().unwrap();
        let d = rng.normal::<f64>(&[70_007]).to_vec().unwrap();
        let e = rng.normal::<f32>(&[301, 233]).transpose().to_vec().unwrap();
        let f = rng.normal::<f64>(&[100_003]).sum().item().unwrap();
        (a, b, c, d, e, f)
    };
    let mode_before = Runtime::native();
    Runtime::set_native(NativeMode::Off);
    let vm = draw();
    Runtime::set_native(NativeMode::Require);
    let native = draw();
    Runtime::set_native(mode_before);
    let bits32 = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let bits64 = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits32(&vm.0), bits32(&native.0), "uniform f32");
    assert_eq!(bits64(&vm.1), bits64(&native.1), "uniform f64");
    assert_eq!(bits32(&vm.2), bits32(&native.2), "normal f32");
    assert_eq!(bits64(&vm.3), bits64(&native.3), "normal f64");
    assert_eq!(bits32(&vm.4), bits32(&native.4), "normal f32 transposed");
    assert_eq!(vm.5.to_bits(), native.5.to_bits(), "sum of normals");
    // The stream element by element.
    let key = [0xbeef_0123u32, 0xfeed];
    let words = |g: u64, w: usize| prim::stream_words(key, g, w, &mut (u64::MAX, [0; 4]));
    let mut g = 3u64;
    for (i, x) in vm.0.iter().enumerate() {
        assert_eq!(
            *x,
            prim::uniform_f32(words(g + i as u64, 1)[0]),
            "uniform f32 [{i}]"
        );
    }
    g += 70_001;
    for (i, x) in vm.1.iter().enumerate() {
        let r = words(g + i as u64, 2);
        assert_eq!(*x, prim::uniform_f64(r[0], r[1]), "uniform f64 [{i}]");
    }
    g += 70_003;
    for (i, x) in vm.2.iter().enumerate() {
        let r = words(g + i as u64, 2);
        assert_eq!(
            x.to_bits(),
            prim::normal_f32(r[0], r[1]).to_bits(),
            "normal f32 [{i}]"
        );
    }
    g += 70_005;
    for (i, x) in vm.3.iter().enumerate() {
        let r = words(g + i as u64, 4);
        assert_eq!(
            x.to_bits(),
            prim::normal_f64(r).to_bits(),
            "normal f64 [{i}]"
        );
    }
    g += 70_007;
    for (i, x) in vm.4.iter().enumerate() {
        // Element (j, k) of the transposed [233, 301] view is stream element k * 233 + j.
        let (j, k) = (i / 301, i % 301);
        let r = words(g + (k * 233 + j) as u64, 2);
        assert_eq!(
            x.to_bits(),
            prim::normal_f32(r[0], r[1]).to_bits(),
            "transposed [{i}]"
        );
    }
}

/// An f64 result's bits, to compare two tiers exactly.
fn bits(v: Vec<f64>) -> Vec<u64> {
    v.into_iter().map(f64::to_bits).collect()
}

/// An f32 result's bits, widened to sit in one list with f64 results.
fn bits32(v: Vec<f32>) -> Vec<u64> {
    v.into_iter().map(|x| x.to_bits() as u64).collect()
}

/// Reductions over outer and middle axes (walked in the input's row order on the CPU) of fused
/// expressions, a random draw and a one-hot cast: the same bits on both tiers.
#[test]
fn outer_axis_reductions_agree_bit_for_bit() {
    if !native_tier_runs() {
        return;
    }
    let _g = SERIAL.lock();
    let run = |shape: &[usize], axis: usize| -> Vec<Vec<u64>> {
        let n: usize = shape.iter().product();
        let a = Array::from_slice(&data(n, 3), shape);
        let b = Array::from_slice(&data(n, 4), shape);
        let mut rng = Rng::new(17);
        let noise = rng.normal::<f64>(shape);
        let e = (&a * &b + 1.0).sin() + &noise;
        let f = e.cast::<f32>();
        vec![
            bits(e.sum_axis(axis).to_vec().unwrap()),
            bits(e.prod_axis(axis).to_vec().unwrap()),
            bits(e.mean_axis(axis).to_vec().unwrap()),
            bits(e.max_axis(axis).to_vec().unwrap()),
            bits32(f.sum_axis(axis).to_vec().unwrap()),
            bits32(f.min_axis(axis).to_vec().unwrap()),
            e.argmax_axis(axis)
                .to_vec()
                .unwrap()
                .into_iter()
                .map(u64::from)
                .collect(),
            bits32(a.gt(0.0).cast::<f32>().sum_axis(axis).to_vec().unwrap()),
        ]
    };
    for (shape, axis) in [
        (&[20_001usize, 16][..], 0),
        (&[3, 5][..], 0),
        (&[1025, 7][..], 0),
        (&[50, 3000, 7][..], 1),
        (&[4, 9, 3][..], 1),
    ] {
        let mode_before = Runtime::native();
        Runtime::set_native(NativeMode::Off);
        let vm = run(shape, axis);
        Runtime::set_native(NativeMode::Require);
        let before = Runtime::stats();
        let native = run(shape, axis);
        let s = Runtime::stats().since(&before);
        Runtime::set_native(mode_before);
        assert!(s.native_launches > 0, "{s:?}");
        assert_eq!(vm, native, "{shape:?} axis {axis}");
    }
}

/// Asserts two lists of results are equal, naming the first result and element that differ.
#[track_caller]
fn same<T: PartialEq + std::fmt::Debug>(want: &[Vec<T>], got: &[Vec<T>], what: &str) {
    assert_eq!(want.len(), got.len(), "{what}");
    for (r, (w, g)) in want.iter().zip(got).enumerate() {
        assert_eq!(w.len(), g.len(), "{what}: result {r}");
        if let Some(i) = (0..w.len()).find(|&i| w[i] != g[i]) {
            panic!(
                "{what}: result {r} differs first at {i}: {:?} against {:?}",
                w[i], g[i]
            );
        }
    }
}

/// Reductions along the innermost axis whose length is a power of two up to 1024: the native
/// tier reduces each segment inside its C kernel (`codegen::c::segmented`) with the tile VM's
/// arithmetic, and hoists work that depends on the position within the segment only (a
/// broadcast row, as k-means' centroids). Every op and type, with NaNs planted at the start of
/// rows, in later chunks and filling whole rows, signed zeros and repeated values (ties), gives
/// the tile VM's bits; argmin, argmax and integer results also equal a plain loop's.
#[test]
fn segment_reductions_agree_bit_for_bit() {
    if !native_tier_runs() {
        return;
    }
    let _g = SERIAL.lock();
    /// Values with ties (a coarse grid), signed zeros, infinities and NaNs in chosen rows.
    fn values(rows: usize, l: usize, seed: u64) -> Vec<f64> {
        let mut v: Vec<f64> = data(rows * l, seed)
            .into_iter()
            .map(|x| (x * 4.0).round() / 4.0)
            .collect();
        for (r, row) in v.chunks_mut(l).enumerate() {
            match r % 11 {
                1 => row[0] = f64::NAN,
                2 => row[l - 1] = f64::NAN,
                3 if l > 8 => row[9] = -f64::NAN,
                4 => row.fill(f64::NAN),
                5 => row.fill(0.0),
                6 => row.iter_mut().step_by(2).for_each(|x| *x = -0.0),
                7 => row[l / 2] = f64::NEG_INFINITY,
                8 => row[0] = f64::INFINITY,
                _ => {}
            }
        }
        v
    }
    type Bits = Vec<Vec<u64>>;
    let run = |rows: usize, l: usize| -> (Bits, Vec<Vec<u32>>, Vec<Vec<i32>>) {
        let shape = [rows, l];
        let a = Array::from_slice(&values(rows, l, 5 + l as u64), &shape);
        // A row broadcast along the kept axis: work on it depends on the position in the row only.
        let c = Array::from_slice(&data(l, 9), &[1, l]);
        let e = (&a - (&c * 0.5).exp()) * (&a + 1.0);
        let f = e.cast::<f32>();
        let i = (&a * 4.0).cast::<i32>() - (&c * 8.0).cast::<i32>();
        let u = i.cast::<u32>();
        let flo = vec![
            bits(e.sum_axis(1).to_vec().unwrap()),
            bits(e.prod_axis(1).to_vec().unwrap()),
            bits(e.mean_axis(1).to_vec().unwrap()),
            bits(e.max_axis(1).to_vec().unwrap()),
            bits(e.min_axis(1).to_vec().unwrap()),
            bits32(f.sum_axis(1).to_vec().unwrap()),
            bits32(f.prod_axis(1).to_vec().unwrap()),
            bits32(f.max_axis(1).to_vec().unwrap()),
            bits32(f.min_axis(1).to_vec().unwrap()),
        ];
        let idx = vec![
            e.argmin_axis(1).to_vec().unwrap(),
            e.argmax_axis(1).to_vec().unwrap(),
            f.argmin_axis(1).to_vec().unwrap(),
            f.argmax_axis(1).to_vec().unwrap(),
            i.argmin_axis(1).to_vec().unwrap(),
            u.argmax_axis(1).to_vec().unwrap(),
            u.sum_axis(1).to_vec().unwrap(),
            u.max_axis(1).to_vec().unwrap(),
            a.gt(0.0).any_axis(1).cast::<u32>().to_vec().unwrap(),
            a.ge(-1.0).all_axis(1).cast::<u32>().to_vec().unwrap(),
        ];
        let ints = vec![
            i.sum_axis(1).to_vec().unwrap(),
            i.prod_axis(1).to_vec().unwrap(),
            i.min_axis(1).to_vec().unwrap(),
            i.max_axis(1).to_vec().unwrap(),
        ];
        (flo, idx, ints)
    };
    // The first NaN, else the first strictly best: a plain loop's argmin / argmax.
    let arg = |row: &[f64], max: bool| -> u32 {
        let mut b = 0;
        for (j, &x) in row.iter().enumerate().skip(1) {
            let better = if max { x > row[b] } else { x < row[b] };
            if !row[b].is_nan() && (x.is_nan() || better) {
                b = j;
            }
        }
        b as u32
    };
    for l in [1usize, 2, 4, 8, 16, 64, 1024] {
        let rows = (70_000 / l).max(3);
        let mode_before = Runtime::native();
        Runtime::set_native(NativeMode::Off);
        let vm = run(rows, l);
        Runtime::set_native(NativeMode::Require);
        let before = Runtime::stats();
        let native = run(rows, l);
        let s = Runtime::stats().since(&before);
        Runtime::set_native(mode_before);
        assert!(s.native_launches > 0, "{s:?}");
        same(&vm.0, &native.0, &format!("floats, rows of {l}"));
        same(
            &vm.1,
            &native.1,
            &format!("indices and unsigned, rows of {l}"),
        );
        same(&vm.2, &native.2, &format!("integers, rows of {l}"));
        // The oracle: the same expression in f64 with plain loops.
        let av = values(rows, l, 5 + l as u64);
        let cv = data(l, 9);
        let ev: Vec<f64> = av
            .iter()
            .enumerate()
            .map(|(k, &x)| (x - (cv[k % l] * 0.5).exp()) * (x + 1.0))
            .collect();
        let want_min: Vec<u32> = ev.chunks(l).map(|r| arg(r, false)).collect();
        let want_max: Vec<u32> = ev.chunks(l).map(|r| arg(r, true)).collect();
        same(&native.1[..1], &[want_min], &format!("argmin, rows of {l}"));
        same(
            &native.1[1..2],
            &[want_max],
            &format!("argmax, rows of {l}"),
        );
        let iv: Vec<i32> = av
            .iter()
            .enumerate()
            .map(|(k, &x)| ((x * 4.0) as i32).wrapping_sub((cv[k % l] * 8.0) as i32))
            .collect();
        let want_sum: Vec<i32> = iv
            .chunks(l)
            .map(|r| r.iter().fold(0i32, |s, &x| s.wrapping_add(x)))
            .collect();
        same(
            &native.2[..1],
            &[want_sum],
            &format!("i32 sum, rows of {l}"),
        );
        let want_imin: Vec<u32> = iv
            .chunks(l)
            .map(|r| arg(&r.iter().map(|&x| x as f64).collect::<Vec<_>>(), false))
            .collect();
        same(
            &native.1[4..5],
            &[want_imin],
            &format!("i32 argmin, rows of {l}"),
        );
    }
}

/// Short segments over several kept and reduced axes (the C loop across segments: kept positions
/// from the segment's index, reduced ones from the position in it), k-means' distance-argmin
/// kernel among them, against the tile VM's bits and plain loops.
#[test]
fn short_segments_over_several_axes_agree_bit_for_bit() {
    if !native_tier_runs() {
        return;
    }
    let _g = SERIAL.lock();
    // (shape, reduced axes): each reduced segment 1 to 16 long.
    let cases: [(&[usize], &[usize]); 5] = [
        (&[37, 5, 8], &[2]),
        (&[6, 7, 4, 4], &[2, 3]),
        (&[3, 4, 5, 2], &[3]),
        (&[16, 300], &[0]),
        (&[9, 2, 11, 16], &[1, 3]),
    ];
    for (case, &(shape, axes)) in cases.iter().enumerate() {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = data(n, 40 + case as u64)
            .into_iter()
            .enumerate()
            .map(|(k, x)| {
                if k % 97 == 5 {
                    f64::NAN
                } else {
                    (x * 8.0).round() / 8.0
                }
            })
            .collect();
        let run = || {
            let a = Array::from_slice(&v, shape);
            let e = (&a * 1.5 - 0.25).abs();
            let f = e.cast::<f32>();
            (
                bits(e.sum_axes(axes).to_vec().unwrap()),
                bits32(f.sum_axes(axes).to_vec().unwrap()),
                bits32(f.max_axes(axes).to_vec().unwrap()),
                bits(e.prod_axes(axes).to_vec().unwrap()),
                f.argmin_axes(axes).to_vec().unwrap(),
                e.argmax_axes(axes).to_vec().unwrap(),
            )
        };
        let mode_before = Runtime::native();
        Runtime::set_native(NativeMode::Off);
        let vm = run();
        Runtime::set_native(NativeMode::Require);
        let before = Runtime::stats();
        let native = run();
        let st = Runtime::stats().since(&before);
        Runtime::set_native(mode_before);
        assert!(st.native_launches > 0, "{st:?}");
        let what = format!("{shape:?} over {axes:?}");
        same(&[vm.0], std::slice::from_ref(&native.0), &what);
        same(&[vm.1], &[native.1], &what);
        same(&[vm.2], &[native.2], &what);
        same(&[vm.3], &[native.3], &what);
        same(&[vm.4], std::slice::from_ref(&native.4), &what);
        same(&[vm.5], std::slice::from_ref(&native.5), &what);
        // Oracle: every segment gathered by plain loops, its f64 sum within rounding, its argmin
        // the first NaN, else the first smallest.
        let strides: Vec<usize> = (0..shape.len())
            .map(|d| shape[d + 1..].iter().product())
            .collect();
        let kept: Vec<usize> = (0..shape.len()).filter(|d| !axes.contains(d)).collect();
        let segs: usize = kept.iter().map(|&d| shape[d]).product();
        let len = n / segs;
        for o in 0..segs {
            let mut base = 0;
            let mut rest = o;
            for &d in kept.iter().rev() {
                base += (rest % shape[d]) * strides[d];
                rest /= shape[d];
            }
            let seg: Vec<f64> = (0..len)
                .map(|c| {
                    let mut at = base;
                    let mut rest = c;
                    for &d in axes.iter().rev() {
                        at += (rest % shape[d]) * strides[d];
                        rest /= shape[d];
                    }
                    ((v[at] * 1.5 - 0.25).abs() as f32) as f64
                })
                .collect();
            let mut b = 0;
            for (j, &x) in seg.iter().enumerate().skip(1) {
                if !seg[b].is_nan() && (x.is_nan() || x < seg[b]) {
                    b = j;
                }
            }
            assert_eq!(native.4[o], b as u32, "{what}: argmin of segment {o}");
            let sum: f64 = seg.iter().sum();
            let got = f64::from_bits(native.0[o]);
            assert!(
                (got.is_nan() && sum.is_nan()) || (got - sum).abs() <= 1e-9 * (1.0 + sum.abs()),
                "{what}: sum of segment {o}: {got} against {sum}"
            );
        }
    }
}

fn s(r: std::ops::Range<usize>) -> Slice {
    Slice::from(r)
}

/// Positions folded into `0..n` NumPy's way (`roll` and `pad`'s wrap, reflect and symmetric).
fn wrap(i: isize, n: usize) -> usize {
    i.rem_euclid(n as isize) as usize
}
fn reflect(i: isize, n: usize) -> usize {
    let p = 2 * (n as isize - 1);
    let m = i.rem_euclid(p);
    (if m >= n as isize { p - m } else { m }) as usize
}
fn symmetric(i: isize, n: usize) -> usize {
    let p = 2 * n as isize;
    let m = i.rem_euclid(p);
    (if m >= n as isize { p - 1 - m } else { m }) as usize
}

/// Rolls, pads in every mode and a `concat` of pieces of one array, on rows long enough that
/// the native tier runs a fast, affine body in each row's interior and the general body at its
/// ends (`codegen/c.rs`, `render_rows`), split across threads mid-row: against index-walking
/// oracles, and bit for bit against the tile VM.
#[test]
fn folded_rows_run_a_fast_interior_and_agree_with_the_oracle() {
    if !native_tier_runs() {
        return;
    }
    let _g = SERIAL.lock();
    let (rows, cols) = (37usize, 301usize);
    let v: Vec<f32> = data(rows * cols, 5).iter().map(|&x| x as f32).collect();
    let at = |r: usize, c: usize| v[r * cols + c];
    let a = Array::from_slice(&v, &[rows, cols]);
    let programs = |a: &Array<f32>| -> Vec<Vec<f32>> {
        let stencil = a.roll(1, 0) + a.roll(-1, 0) + a.roll(3, 1) + a.roll(-302, 1) - a * 4.0;
        let padded = a.pad(&[(2, 1), (5, 7)], Pad::Reflect) * 2.0
            + a.pad(&[(1, 2), (7, 5)], Pad::Symmetric)
            + a.pad(&[(0, 3), (12, 0)], Pad::Wrap)
            - a.pad(&[(3, 0), (4, 8)], Pad::Edge)
            + a.pad(&[(2, 1), (6, 6)], Pad::Constant(0.5));
        let n = cols;
        let mid = Array::concat(
            &[
                &a.slice(&[s(0..rows), s(n - 2..n)]),
                &(a.slice(&[s(0..rows), s(1..n - 1)]) * 3.0),
                &a.slice(&[s(0..rows), s(0..2)]),
            ],
            1,
        );
        vec![
            stencil.to_vec().unwrap(),
            padded.to_vec().unwrap(),
            mid.to_vec().unwrap(),
        ]
    };
    let mode_before = Runtime::native();
    Runtime::set_native(NativeMode::Off);
    let vm = programs(&a);
    Runtime::set_native(NativeMode::Require);
    let before = Runtime::stats();
    let native = programs(&a);
    let st = Runtime::stats().since(&before);
    Runtime::set_native(mode_before);
    assert_eq!(st.native_launches, st.kernels_launched, "{st:?}");
    for (k, (x, y)) in vm.iter().zip(&native).enumerate() {
        assert_eq!(x.len(), y.len());
        for (i, (p, q)) in x.iter().zip(y).enumerate() {
            assert_eq!(p.to_bits(), q.to_bits(), "program {k}, element {i}");
        }
    }
    // The oracles, element by element.
    let ri = |r: usize, d: isize| wrap(r as isize + d, rows);
    let ci = |c: usize, d: isize| wrap(c as isize + d, cols);
    for r in 0..rows {
        for c in 0..cols {
            let want = at(ri(r, -1), c) + at(ri(r, 1), c) + at(r, ci(c, -3)) + at(r, ci(c, 302))
                - at(r, c) * 4.0;
            assert_eq!(native[0][r * cols + c], want, "stencil ({r}, {c})");
        }
    }
    let (pr, pc) = (rows + 3, cols + 12);
    for r in 0..pr {
        for c in 0..pc {
            let (r, c) = (r as isize, c as isize);
            let clamp = |i: isize, n: usize| i.clamp(0, n as isize - 1) as usize;
            let inside = (2..2 + rows as isize).contains(&r) && (6..6 + cols as isize).contains(&c);
            let constant = if inside {
                at((r - 2) as usize, (c - 6) as usize)
            } else {
                0.5
            };
            let want = at(reflect(r - 2, rows), reflect(c - 5, cols)) * 2.0
                + at(symmetric(r - 1, rows), symmetric(c - 7, cols))
                + at(wrap(r, rows), wrap(c - 12, cols))
                - at(clamp(r - 3, rows), clamp(c - 4, cols))
                + constant;
            let got = native[1][r as usize * pc + c as usize];
            assert_eq!(got, want, "pads ({r}, {c})");
        }
    }
    let w = cols + 2;
    for r in 0..rows {
        for c in 0..w {
            let want = if c < 2 {
                at(r, cols - 2 + c)
            } else if c < cols {
                at(r, c - 1) * 3.0
            } else {
                at(r, c - cols)
            };
            assert_eq!(native[2][r * w + c], want, "concat ({r}, {c})");
        }
    }
}
