//! The program cache (`arrayflow::exec::program_cache`): entries round-trip in both layouts; a
//! corrupted byte, a truncated file and another key's file are misses that are rebuilt (by a
//! stand-in compiler here, by the C compiler and the device drivers in the end-to-end tests);
//! the size limit evicts the least recently used entries first and keeps the total under it;
//! threads writing one key leave one valid file and readers never see half of one; and a second
//! process finds the device executor's programs on disk.

use arrayflow::exec::program_cache::{
    Found, Key, Layout, MAGIC, Miss, ProgramCache, RECORD_BYTES, Store, checksum,
};
use arrayflow::{Array, Backend, NativeMode, Runtime};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Tests that move `ARRAYFLOW_CACHE_DIR` or the native mode run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A fresh directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("arrayflow-pc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The stand-in compiler's output for `src` (the oracle: computed here, not by the cache).
fn compiled(src: &str) -> Vec<u8> {
    let mut out: Vec<u8> = src.bytes().rev().map(|b| b ^ 0x5a).collect();
    out.extend_from_slice(&(src.len() as u32).to_le_bytes());
    out
}

/// A cache over `store` whose artifacts are `compiled(src)`, counting builds.
struct Fake {
    cache: ProgramCache<Arc<Vec<u8>>>,
    builds: AtomicUsize,
}

impl Fake {
    fn new(store: Store) -> Fake {
        Fake {
            cache: ProgramCache::new(store),
            builds: AtomicUsize::new(0),
        }
    }
    fn get(&self, src: &str) -> (Arc<Vec<u8>>, Found) {
        let key = Key::of_str(&["fake-cc 1.0", src]);
        self.cache
            .get_or_build(
                key,
                |e| Ok(Arc::new(e.payload.clone())),
                || {
                    self.builds.fetch_add(1, Ordering::Relaxed);
                    let a = compiled(src);
                    Ok::<_, String>((Arc::new(a.clone()), Some(a)))
                },
            )
            .unwrap()
    }
}

fn key_of(src: &str) -> Key {
    Key::of_str(&["fake-cc 1.0", src])
}

/// Replaces `path` by `bytes` through a rename (as a writer of a loaded shared object must).
fn replace(path: &Path, bytes: &[u8]) {
    let junk = path.with_extension("junk");
    std::fs::write(&junk, bytes).unwrap();
    std::fs::rename(&junk, path).unwrap();
}

#[test]
fn keys_separate_parts_and_checksums_see_every_bit() {
    assert_ne!(Key::of_str(&["ab", "c"]), Key::of_str(&["a", "bc"]));
    assert_ne!(Key::of_str(&["a"]), Key::of_str(&["a", ""]));
    assert_eq!(Key::of_str(&["x", "y"]), Key::of(&[b"x", b"y"]));
    assert_eq!(Key(0xab).hex(), "00000000000000ab");
    // Every single-bit flip of a payload changes its checksum, as does dropping its last byte or
    // appending a zero.
    let payload: Vec<u8> = (0..100u32).map(|i| (i * 37 % 251) as u8).collect();
    let sum = checksum(&payload);
    for i in 0..payload.len() {
        for bit in 0..8 {
            let mut p = payload.clone();
            p[i] ^= 1 << bit;
            assert_ne!(checksum(&p), sum, "byte {i} bit {bit}");
        }
    }
    assert_ne!(checksum(&payload[..99]), sum);
    let mut longer = payload.clone();
    longer.push(0);
    assert_ne!(checksum(&longer), sum);
}

#[test]
fn entries_round_trip_in_both_layouts() {
    for layout in [Layout::Header, Layout::Trailer] {
        let dir = temp_dir(&format!("round-{layout:?}"));
        let store = Store::at(dir.clone(), "bin", layout, 1 << 20);
        let key = key_of("kernel a");
        assert_eq!(store.load(key).unwrap_err(), Miss::Absent);
        let payload = compiled("kernel a");
        let path = store.write(key, &payload).unwrap();
        assert_eq!(path, dir.join(format!("{:016x}.bin", key.0)));
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), payload.len() + RECORD_BYTES);
        match layout {
            // The record first, or the payload first (a shared object stays loadable).
            Layout::Header => {
                assert_eq!(bytes[..8], MAGIC);
                assert_eq!(bytes[RECORD_BYTES..], payload[..]);
            }
            Layout::Trailer => {
                assert_eq!(bytes[..payload.len()], payload[..]);
                assert_eq!(bytes[payload.len()..payload.len() + 8], MAGIC);
            }
        }
        let e = store.load(key).unwrap();
        assert_eq!(e.payload, payload);
        assert_eq!(e.path, path);

        // Through the cache: built once, then found in memory; a new cache (a new process) finds
        // it on disk.
        let fake = Fake::new(Store::at(dir.clone(), "bin", layout, 1 << 20));
        let (a, found) = fake.get("kernel b");
        assert_eq!((&a[..], found), (&compiled("kernel b")[..], Found::Built));
        assert_eq!(fake.get("kernel b").1, Found::Memory);
        let again = Fake::new(Store::at(dir.clone(), "bin", layout, 1 << 20));
        let (b, found) = again.get("kernel b");
        assert_eq!((&b[..], found), (&compiled("kernel b")[..], Found::Disk));
        assert_eq!(again.builds.load(Ordering::Relaxed), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn corrupt_truncated_and_foreign_files_are_rebuilt() {
    for layout in [Layout::Header, Layout::Trailer] {
        let dir = temp_dir(&format!("corrupt-{layout:?}"));
        let store = || Store::at(dir.clone(), "bin", layout, 1 << 20);
        let src = "kernel with a long enough body to corrupt in the middle";
        let other = "another kernel";
        let first = Fake::new(store());
        first.get(src);
        first.get(other);
        let path = store().path(key_of(src));
        let good = std::fs::read(&path).unwrap();
        let mut flipped = good.clone();
        flipped[good.len() / 2] ^= 0x10;
        let cases: [(&str, Vec<u8>, &str); 5] = [
            ("a corrupted byte", flipped, "checksum mismatch"),
            (
                "a truncated file",
                good[..good.len() - 7].to_vec(),
                match layout {
                    Layout::Header => "truncated or extended",
                    Layout::Trailer => "not a cache file (no magic)",
                },
            ),
            ("a stub", good[..10].to_vec(), "truncated"),
            (
                "another key's file",
                std::fs::read(store().path(key_of(other))).unwrap(),
                "another key",
            ),
            (
                "no record at all",
                compiled(src),
                "not a cache file (no magic)",
            ),
        ];
        for (what, bytes, why) in cases {
            replace(&path, &bytes);
            assert_eq!(
                store().load(key_of(src)).unwrap_err(),
                Miss::Invalid(why),
                "{layout:?}: {what}"
            );
            // A new process: the file is not trusted; the artifact is built again, correct, and
            // the file replaced by a valid one.
            let fake = Fake::new(store());
            let (a, found) = fake.get(src);
            assert_eq!(found, Found::Built, "{layout:?}: {what}");
            assert_eq!(fake.builds.load(Ordering::Relaxed), 1);
            assert_eq!(a[..], compiled(src)[..], "{layout:?}: {what}");
            assert_eq!(std::fs::read(&path).unwrap(), good, "{layout:?}: {what}");
            assert_eq!(Fake::new(store()).get(src).1, Found::Disk);
        }
        // A file the loader rejects (here: the stand-in's check of the payload) is rebuilt too.
        let fake = Fake::new(store());
        let (v, found) = fake
            .cache
            .get_or_build(
                key_of(src),
                |_| Err("the driver refused the binary".to_string()),
                || Ok::<_, String>((Arc::new(compiled(src)), Some(compiled(src)))),
            )
            .unwrap();
        assert_eq!((&v[..], found), (&compiled(src)[..], Found::Built));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Bytes of the entry files in `dir` (temporary files count too: none should be left).
fn total_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

fn exists(store: &Store, src: &str) -> bool {
    store.path(key_of(src)).exists()
}

#[test]
fn the_limit_evicts_least_recently_used_first() {
    let dir = temp_dir("lru");
    let entry = 1000;
    let size = (entry + RECORD_BYTES) as u64;
    // Room for four entries of `entry` bytes.
    let limit = 4 * size + 100;
    let store = Store::at(dir.clone(), "bin", Layout::Header, limit);
    let payload = |n: usize, c: u8| vec![c; n];
    let tick = || std::thread::sleep(std::time::Duration::from_millis(15));
    for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
        store.write(key_of(name), &payload(entry, i as u8)).unwrap();
        tick();
    }
    // A source file beside `b`, evicted with it.
    store
        .write_beside(key_of("b"), "src", b"b's source")
        .unwrap();
    let limit_with_beside = limit + 10;
    assert_eq!(total_bytes(&dir), 4 * size + 10);
    // Using `a` makes `b` the least recently used.
    assert!(store.load(key_of("a")).is_ok());
    tick();
    store.write(key_of("e"), &payload(entry, 4)).unwrap();
    assert!(!exists(&store, "b"), "b was least recently used");
    assert!(!dir.join(format!("{}.src", key_of("b").hex())).exists());
    for name in ["a", "c", "d", "e"] {
        assert!(exists(&store, name), "{name} stays");
    }
    assert_eq!(store.evictions(), 1);
    assert!(total_bytes(&dir) <= limit_with_beside);
    tick();
    // A double-size entry makes room for itself: c and d are the oldest now (a was used after).
    store.write(key_of("f"), &payload(2 * entry, 5)).unwrap();
    assert!(!exists(&store, "c") && !exists(&store, "d"));
    for name in ["a", "e", "f"] {
        assert!(exists(&store, name), "{name} stays");
    }
    assert_eq!(store.evictions(), 3);
    assert!(total_bytes(&dir) <= limit);
    // Rewriting an entry does not evict to make room for its old self.
    store.write(key_of("f"), &payload(2 * entry, 6)).unwrap();
    assert_eq!(store.evictions(), 3);
    assert_eq!(
        store.load(key_of("f")).unwrap().payload,
        payload(2 * entry, 6)
    );
    // An artifact over the limit is not stored, and nothing is evicted for it.
    assert!(store.write(key_of("g"), &payload(5 * entry, 7)).is_err());
    assert!(!exists(&store, "g"));
    assert_eq!(store.evictions(), 3);
    // Every survivor is whole.
    for (name, c, n) in [("a", 0, entry), ("e", 4, entry)] {
        assert_eq!(store.load(key_of(name)).unwrap().payload, payload(n, c));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn threads_writing_one_key_leave_one_valid_file() {
    for layout in [Layout::Header, Layout::Trailer] {
        let dir = temp_dir(&format!("race-{layout:?}"));
        let store = Arc::new(Store::at(dir.clone(), "bin", layout, 1 << 30));
        let key = key_of("shared");
        // Each writer's payload is distinct and large enough that a write takes a while.
        let payloads: Vec<Vec<u8>> = (0..6u8)
            .map(|t| (0..200_000u32).map(|i| (i as u8) ^ t).collect())
            .collect();
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let (store, done, payloads) = (store.clone(), done.clone(), payloads.clone());
            std::thread::spawn(move || {
                let mut seen = 0;
                while !done.load(Ordering::Relaxed) {
                    match store.load(key) {
                        Ok(e) => {
                            assert!(payloads.contains(&e.payload), "a mixed payload");
                            seen += 1;
                        }
                        Err(Miss::Absent) => {}
                        Err(Miss::Invalid(why)) => panic!("a reader saw a partial file: {why}"),
                    }
                }
                seen
            })
        };
        let writers: Vec<_> = payloads
            .iter()
            .cloned()
            .map(|p| {
                let store = store.clone();
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        store.write(key, &p).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        let seen = reader.join().unwrap();
        let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(files.len(), 1, "one file, no temporary left: {files:?}");
        let e = store.load(key).unwrap();
        assert!(payloads.contains(&e.payload));
        println!("{layout:?}: the reader saw {seen} whole files");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The native tier compiles on the CPU executor only.
fn native_tier_runs() -> bool {
    let cpu = Runtime::backend() == Backend::Cpu;
    if !cpu {
        println!("skipped on a device executor: kernels run on the device, not the native tier");
    }
    cpu
}

/// The compiled kernel files (`<key>.so`) in the native cache.
fn libraries() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(Runtime::cache_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "so"))
        .collect();
    v.sort();
    v
}

#[test]
fn native_kernels_with_bad_cache_files_are_recompiled() {
    if !native_tier_runs() {
        return;
    }
    let _g = SERIAL.lock();
    let dir = temp_dir("native");
    // SAFETY: tests that read the environment run under SERIAL or read none.
    unsafe { std::env::set_var("ARRAYFLOW_CACHE_DIR", &dir) };
    let mode_before = Runtime::native();
    Runtime::set_native(NativeMode::Require);
    let n = 5000;
    let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin() * 3.0).collect();
    let a = Array::from_slice(&x, &[n]);
    let first = |a: &Array<f64>| (a * 0.5 + 2.0).sqrt().to_vec().unwrap();
    let second = |a: &Array<f64>| ((a * a - 1.0).abs() + 1.0).ln().to_vec().unwrap();
    let want1: Vec<f64> = x.iter().map(|v| (v * 0.5 + 2.0).sqrt()).collect();
    let want2: Vec<f64> = x.iter().map(|v| ((v * v - 1.0).abs() + 1.0).ln()).collect();
    let check = |got: &[f64], want: &[f64], what: &str| {
        for i in 0..n {
            assert!(
                (got[i] - want[i]).abs() <= 1e-14 * want[i].abs().max(1.0),
                "{what}: element {i}: {} vs {}",
                got[i],
                want[i]
            );
        }
    };
    let s = Runtime::stats();
    check(&first(&a), &want1, "first compile");
    assert_eq!(Runtime::stats().since(&s).native_compiles, 1);
    let libs = libraries();
    assert_eq!(libs.len(), 1);
    let lib1 = libs[0].clone();
    let s = Runtime::stats();
    check(&second(&a), &want2, "second kernel");
    assert_eq!(Runtime::stats().since(&s).native_compiles, 1);
    let lib2 = libraries().into_iter().find(|p| *p != lib1).unwrap();
    let good = std::fs::read(&lib2).unwrap();
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x01;
    let cases = [
        ("a corrupted byte", flipped),
        ("a truncated file", good[..good.len() / 2].to_vec()),
        ("another kernel's file", std::fs::read(&lib1).unwrap()),
    ];
    for (what, bytes) in cases {
        replace(&lib2, &bytes);
        arrayflow::exec::cpu::native::forget_loaded();
        let s = Runtime::stats();
        check(&second(&a), &want2, what);
        let st = Runtime::stats().since(&s);
        assert_eq!(st.native_compiles, 1, "{what}: recompiled");
        assert_eq!(st.programs.insertions, 0, "{what}: not loaded from disk");
        // Replaced by a valid entry (not necessarily the same bytes: the compiler records the
        // temporary source file's name).
        let store = Store::at(Runtime::cache_dir(), "so", Layout::Trailer, 1 << 30);
        let key =
            Key(u64::from_str_radix(&lib2.file_stem().unwrap().to_string_lossy(), 16).unwrap());
        assert!(store.load(key).is_ok(), "{what}: replaced by a valid entry");
        // The rebuilt file is found by the next process.
        arrayflow::exec::cpu::native::forget_loaded();
        let s = Runtime::stats();
        check(&second(&a), &want2, what);
        let st = Runtime::stats().since(&s);
        assert_eq!(
            (st.native_compiles, st.programs.insertions),
            (0, 1),
            "{what}"
        );
    }
    Runtime::set_native(mode_before);
    unsafe { std::env::remove_var("ARRAYFLOW_CACHE_DIR") };
    let _ = std::fs::remove_dir_all(&dir);
}

/// A child process's work on the device executor: results checked here, counts printed.
fn device_child() {
    let n = 1 << 12;
    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.25 + 1.0).collect();
    let a = Array::from_slice(&x, &[n]);
    let y = (&a * 1.5 + 2.0).sqrt().to_vec().unwrap();
    let s = (&a * &a).sum().item().unwrap() as f64;
    for i in 0..n {
        let want = (x[i] * 1.5 + 2.0).sqrt();
        assert!(
            (y[i] - want).abs() <= 2e-7 * want,
            "{i}: {} vs {want}",
            y[i]
        );
    }
    let want: f64 = x.iter().map(|&v| (v as f64) * (v as f64)).sum();
    assert!((s - want).abs() <= 1e-5 * want, "{s} vs {want}");
    let d = Runtime::stats().device;
    println!("counts compiles={} disk_hits={}", d.compiles, d.disk_hits);
}

/// Runs [`device_child`] in a new process with the cache in `dir`; its compiles and disk hits.
fn run_child(dir: &Path) -> (u64, u64) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_second_process_finds_device_programs_on_disk",
            "--test-threads=1",
            "--nocapture",
        ])
        .env("ARRAYFLOW_TEST_CHILD", "1")
        .env("ARRAYFLOW_CACHE_DIR", dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("counts ").map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no counts from the child: {stdout}"));
    let num = |k: &str| -> u64 {
        line.split(' ')
            .find_map(|f| f.strip_prefix(k))
            .unwrap()
            .parse()
            .unwrap()
    };
    let counts = (num("compiles="), num("disk_hits="));
    println!("child: {counts:?} (compiles, disk hits)");
    counts
}

/// The files of kind `kind` in the cache `dir`.
fn files(dir: &Path, kind: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir.join(kind))
        .map(|r| r.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn a_second_process_finds_device_programs_on_disk() {
    if std::env::var("ARRAYFLOW_TEST_CHILD").is_ok() {
        return device_child();
    }
    let backend = Runtime::backend();
    if backend == Backend::Cpu {
        println!("skipped on the CPU executor (the native tier's test covers it)");
        return;
    }
    let dir = temp_dir("device");
    let (compiles, hits) = run_child(&dir);
    assert!(compiles > 0, "a cold cache compiles");
    assert_eq!(hits, 0);
    match backend {
        Backend::OpenCl => {
            // Every program comes from disk in the second process.
            let bins = files(&dir, "opencl");
            assert!(!bins.is_empty());
            for b in &bins {
                let key = Key(
                    u64::from_str_radix(&b.file_stem().unwrap().to_string_lossy(), 16).unwrap(),
                );
                let store = Store::at(dir.join("opencl"), "bin", Layout::Header, 1 << 30);
                assert!(store.load(key).is_ok(), "{} is a valid entry", b.display());
            }
            assert_eq!(
                run_child(&dir),
                (0, compiles),
                "the second process loads, never compiles"
            );
            // Corrupt binaries are not trusted: compiled again, correct (the child checks), and
            // replaced by valid ones that the next process loads.
            for b in &bins {
                let mut bytes = std::fs::read(b).unwrap();
                let mid = bytes.len() / 2;
                bytes[mid] ^= 0x40;
                replace(b, &bytes);
            }
            assert_eq!(
                run_child(&dir),
                (compiles, 0),
                "corrupt binaries are rebuilt"
            );
            assert_eq!(run_child(&dir), (0, compiles));
        }
        Backend::Wgpu => {
            // The driver's pipeline cache is one entry per adapter (where it offers one); wgpu
            // still counts each pipeline as compiled. The second process reads it and works.
            let blobs = files(&dir, "wgpu");
            println!("wgpu pipeline cache files: {blobs:?}");
            assert!(blobs.len() <= 1, "{blobs:?}");
            for b in &blobs {
                let key = Key(
                    u64::from_str_radix(&b.file_stem().unwrap().to_string_lossy(), 16).unwrap(),
                );
                let store = Store::at(dir.join("wgpu"), "pipelines", Layout::Header, 1 << 30);
                assert!(store.load(key).is_ok(), "{} is a valid entry", b.display());
            }
            assert_eq!(run_child(&dir).0, compiles);
            for b in &blobs {
                let bytes = std::fs::read(b).unwrap();
                replace(b, &bytes[..bytes.len() / 2]);
            }
            // A truncated pipeline cache is ignored (an empty one is used), then rewritten.
            assert_eq!(run_child(&dir).0, compiles);
            for b in &blobs {
                let key = Key(
                    u64::from_str_radix(&b.file_stem().unwrap().to_string_lossy(), 16).unwrap(),
                );
                let store = Store::at(dir.join("wgpu"), "pipelines", Layout::Header, 1 << 30);
                assert!(store.load(key).is_ok(), "{} rewritten whole", b.display());
            }
        }
        Backend::Cpu => unreachable!(),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
