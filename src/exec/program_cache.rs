//! The program cache, one mechanism for the three executors' compiled artifacts (native C shared
//! objects, OpenCL driver binaries, the wgpu pipeline cache): keys, the in-memory map of loaded
//! artifacts, and the disk store with its file format, atomic writes and size limit.
//!
//! - **Key**: a stable 64-bit hash ([`Key::of`]) of everything that decides the artifact (source,
//!   compiler or driver identity, flags). Stable across processes and platforms, unlike the hash
//!   maps' seeded hashers.
//! - **Disk layout**: `<cache_root>/<kind>/<16 hex digits of the key>.<ext>`, where
//!   [`cache_root`] is `ARRAYFLOW_CACHE_DIR`, else `$XDG_CACHE_HOME/arrayflow`, else
//!   `~/.cache/arrayflow`. Each file carries a 40-byte record: magic `AFPCACHE`, format version,
//!   key, payload length and payload checksum. [`Layout::Header`] puts it before the payload;
//!   [`Layout::Trailer`] after it, so a shared object stays loadable (`dlopen` maps the segments
//!   its ELF headers name and ignores bytes past them). A file whose record does not match (wrong
//!   magic or version, another key, a truncated or corrupt payload) is a miss: the artifact is
//!   rebuilt and the file replaced, never trusted. Other files of the same key
//!   (`<key>.<other ext>`, [`Store::write_beside`]) belong to the entry: evicted with it.
//! - **Writes** go to a temporary file in the same directory (`<key>.<ext>.<pid>-<n>.tmp`), then
//!   are renamed over the entry: two processes (or threads) writing one key leave one whole file,
//!   and a reader never sees half of one. Temporary files an interrupted write left are removed
//!   after an hour.
//! - **Size limit** per kind: `ARRAYFLOW_CACHE_LIMIT_MB` (default 1024 MB for each of `cpu`,
//!   `opencl` and `wgpu`), or [`crate::RuntimeBuilder::cache_limit_mb`]. A hit
//!   touches its file (modification time = now); a write that would take the kind's total over
//!   the limit first removes the least recently used entries until it fits (an artifact larger
//!   than the limit is not stored). The total is a running estimate, counted by scanning the
//!   directory at the first write, then at least every minute or when this process's own writes
//!   would pass the limit (so other processes' writes may take it over by a minute's worth).

use ahash::AHashMap;
use parking_lot::{Mutex, MutexGuard};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// Identifies a cached artifact: a stable hash of the parts that determine it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(pub u64);

impl Key {
    /// The key of `parts` (each part's length is hashed too, so `["ab", "c"]` and `["a", "bc"]`
    /// differ).
    pub fn of(parts: &[&[u8]]) -> Key {
        let mut h = Hasher::new(0x6166_7063_6b65_7931); // "afpckey1"
        for p in parts {
            h.write(p);
            h.write_u64(p.len() as u64);
        }
        Key(h.finish())
    }

    /// [`Key::of`] for text parts.
    pub fn of_str(parts: &[&str]) -> Key {
        let bytes: smallvec::SmallVec<[&[u8]; 8]> = parts.iter().map(|p| p.as_bytes()).collect();
        Key::of(&bytes)
    }

    /// The key as a file name stem: 16 lower-case hex digits.
    pub fn hex(self) -> String {
        format!("{:016x}", self.0)
    }
}

/// A stable 64-bit hash of `bytes` (the payload checksum).
pub fn checksum(bytes: &[u8]) -> u64 {
    let mut h = Hasher::new(0x6166_7063_7375_6d31); // "afpcsum1"
    h.write(bytes);
    h.write_u64(bytes.len() as u64);
    h.finish()
}

/// A word-at-a-time hash, stable across processes, versions and platforms (little-endian words).
/// Each step is a bijection of the state for a given word, so two inputs that differ in one
/// word always hash differently.
struct Hasher {
    h: u64,
}

impl Hasher {
    const M: u64 = 0x9e37_79b9_7f4a_7c15;

    fn new(seed: u64) -> Hasher {
        Hasher { h: seed }
    }

    fn write_u64(&mut self, w: u64) {
        self.h = (self.h ^ w).wrapping_mul(Self::M).rotate_left(29);
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    /// The state through a final mix (murmur3's), so every input bit reaches every output bit.
    fn finish(&self) -> u64 {
        let mut x = self.h;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^ (x >> 33)
    }
}

/// The root of the on-disk caches: `ARRAYFLOW_CACHE_DIR`, else `$XDG_CACHE_HOME/arrayflow`, else
/// `~/.cache/arrayflow` (read on every use, so a test may move it).
pub fn cache_root() -> PathBuf {
    if let Ok(d) = std::env::var("ARRAYFLOW_CACHE_DIR") {
        return PathBuf::from(d);
    }
    let base = std::env::var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|_| std::env::var("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|_| std::env::temp_dir());
    base.join("arrayflow")
}

/// The default size limit of each kind's disk cache, in MB.
pub const DEFAULT_LIMIT_MB: u64 = 1024;

/// The limit the runtime was configured with, in bytes (`u64::MAX`: not set).
static LIMIT: AtomicU64 = AtomicU64::new(u64::MAX);

/// `ARRAYFLOW_CACHE_LIMIT_MB`, else [`DEFAULT_LIMIT_MB`].
pub fn limit_mb_from_env() -> u64 {
    crate::settings::number("ARRAYFLOW_CACHE_LIMIT_MB").unwrap_or(DEFAULT_LIMIT_MB)
}

/// Sets the size limit of each kind's disk cache (the runtime does, from its configuration).
pub fn set_limit_mb(mb: u64) {
    LIMIT.store(mb.saturating_mul(1 << 20), Ordering::Relaxed);
}

/// The size limit of each kind's disk cache, in bytes.
pub fn limit_bytes() -> u64 {
    match LIMIT.load(Ordering::Relaxed) {
        u64::MAX => limit_mb_from_env().saturating_mul(1 << 20),
        v => v,
    }
}

/// Where a cache file keeps its record (magic, version, key, length, checksum).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Before the payload.
    Header,
    /// After the payload: the file up to the record is the artifact itself (a shared object to
    /// `dlopen`).
    Trailer,
}

/// The record's magic bytes.
pub const MAGIC: [u8; 8] = *b"AFPCACHE";
/// The file format's version; files of another version are misses.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes of the record.
pub const RECORD_BYTES: usize = 40;

/// The record: magic, version (u32), reserved (u32, 0), key, payload length, payload checksum,
/// integers little-endian.
fn record(key: Key, payload: &[u8]) -> [u8; RECORD_BYTES] {
    let mut r = [0u8; RECORD_BYTES];
    r[0..8].copy_from_slice(&MAGIC);
    r[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    r[16..24].copy_from_slice(&key.0.to_le_bytes());
    r[24..32].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    r[32..40].copy_from_slice(&checksum(payload).to_le_bytes());
    r
}

/// Checks `rec` against `key` and `payload`.
fn check_record(rec: &[u8], key: Key, payload: &[u8]) -> Result<(), Miss> {
    let u64_at = |i: usize| u64::from_le_bytes(rec[i..i + 8].try_into().expect("8 bytes"));
    if rec[0..8] != MAGIC {
        return Err(Miss::Invalid("not a cache file (no magic)"));
    }
    if u32::from_le_bytes(rec[8..12].try_into().expect("4 bytes")) != FORMAT_VERSION {
        return Err(Miss::Invalid("another format version"));
    }
    if u64_at(16) != key.0 {
        return Err(Miss::Invalid("another key"));
    }
    if u64_at(24) != payload.len() as u64 {
        return Err(Miss::Invalid("truncated or extended"));
    }
    if u64_at(32) != checksum(payload) {
        return Err(Miss::Invalid("checksum mismatch"));
    }
    Ok(())
}

/// Why a lookup found no usable artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// No file (or it could not be read).
    Absent,
    /// A file that is not a valid entry for the key; it is rebuilt, never trusted.
    Invalid(&'static str),
}

/// A valid entry read from disk.
#[derive(Debug)]
pub struct Entry {
    /// The file ([`Layout::Trailer`]: loadable as the artifact itself).
    pub path: PathBuf,
    /// The artifact's bytes.
    pub payload: Vec<u8>,
}

/// Where an artifact came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Already loaded in this process.
    Memory,
    /// Loaded from the disk cache.
    Disk,
    /// Built (compiled) now, and written to the disk cache.
    Built,
}

/// Temporary files of this process get distinct names (threads may write one key at once).
static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Temporary files older than this are left from an interrupted write and removed.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// One kind's files on disk: `<dir>/<key>.<ext>`.
#[derive(Debug)]
pub struct Store {
    /// The subdirectory of [`cache_root`] (`cpu`, `opencl`, `wgpu`), or a fixed directory.
    place: Place,
    ext: &'static str,
    layout: Layout,
    /// Bytes the kind may hold (`None`: [`limit_bytes`]).
    limit: Option<u64>,
    evictions: AtomicU64,
    /// The kind's bytes on disk as last counted plus this process's writes since, and when it was
    /// counted (`None`: not yet).
    estimate: Mutex<Option<(u64, Instant)>>,
}

/// How long a count of the directory's bytes is trusted (other processes write too).
const RECOUNT: Duration = Duration::from_secs(60);

#[derive(Debug)]
enum Place {
    Kind(&'static str),
    Dir(PathBuf),
}

impl Store {
    /// The store of `kind` under [`cache_root`], with files `<key>.<ext>` and the configured
    /// limit.
    pub const fn new(kind: &'static str, ext: &'static str, layout: Layout) -> Store {
        Store {
            place: Place::Kind(kind),
            ext,
            layout,
            limit: None,
            evictions: AtomicU64::new(0),
            estimate: Mutex::new(None),
        }
    }

    /// A store in a fixed directory with its own limit in bytes (for tests).
    pub fn at(dir: PathBuf, ext: &'static str, layout: Layout, limit_bytes: u64) -> Store {
        Store {
            place: Place::Dir(dir),
            ext,
            layout,
            limit: Some(limit_bytes),
            evictions: AtomicU64::new(0),
            estimate: Mutex::new(None),
        }
    }

    /// The directory of this kind's files.
    pub fn dir(&self) -> PathBuf {
        match &self.place {
            Place::Kind(k) => cache_root().join(k),
            Place::Dir(d) => d.clone(),
        }
    }

    /// The file of `key`.
    pub fn path(&self, key: Key) -> PathBuf {
        self.dir().join(format!("{}.{}", key.hex(), self.ext))
    }

    /// The limit in bytes.
    pub fn limit(&self) -> u64 {
        self.limit.unwrap_or_else(limit_bytes)
    }

    /// Entries this store removed to make room (in this process).
    pub fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    /// The valid entry of `key`, touched as recently used; a miss says why there is none.
    pub fn load(&self, key: Key) -> Result<Entry, Miss> {
        let path = self.path(key);
        let mut bytes = std::fs::read(&path).map_err(|_| Miss::Absent)?;
        if bytes.len() < RECORD_BYTES {
            return Err(Miss::Invalid("truncated"));
        }
        let payload = match self.layout {
            Layout::Header => {
                let rec: [u8; RECORD_BYTES] = bytes[..RECORD_BYTES].try_into().expect("40 bytes");
                check_record(&rec, key, &bytes[RECORD_BYTES..])?;
                bytes.drain(..RECORD_BYTES);
                bytes
            }
            Layout::Trailer => {
                let at = bytes.len() - RECORD_BYTES;
                let rec: [u8; RECORD_BYTES] = bytes[at..].try_into().expect("40 bytes");
                check_record(&rec, key, &bytes[..at])?;
                bytes.truncate(at);
                bytes
            }
        };
        touch(&path);
        Ok(Entry { path, payload })
    }

    /// Writes `payload` as the entry of `key` (through a temporary file and a rename), first
    /// evicting least recently used entries so the kind stays under its limit. Returns the
    /// entry's file. An error leaves the cache as it was (the next start rebuilds).
    pub fn write(&self, key: Key, payload: &[u8]) -> std::io::Result<PathBuf> {
        let bytes = (payload.len() + RECORD_BYTES) as u64;
        if bytes > self.limit() {
            return Err(std::io::Error::other(format!(
                "an artifact of {bytes} bytes is over the cache limit of {} bytes",
                self.limit()
            )));
        }
        let dir = self.dir();
        std::fs::create_dir_all(&dir)?;
        let counted = matches!(*self.estimate.lock(),
            Some((total, at)) if at.elapsed() < RECOUNT && total + bytes <= self.limit());
        if !counted {
            let total = self.make_room(&dir, key, bytes);
            *self.estimate.lock() = Some((total, Instant::now()));
        }
        let rec = record(key, payload);
        let path = self.path(key);
        self.write_atomic(&path, |f| match self.layout {
            Layout::Header => {
                f.write_all(&rec)?;
                f.write_all(payload)
            }
            Layout::Trailer => {
                f.write_all(payload)?;
                f.write_all(&rec)
            }
        })?;
        self.add_to_estimate(bytes);
        Ok(path)
    }

    /// Writes `bytes` as `<key>.<ext>` beside the entry (for example the source it was built
    /// from, for a person to read): part of the entry for eviction, never read back by the cache.
    pub fn write_beside(&self, key: Key, ext: &str, bytes: &[u8]) -> std::io::Result<()> {
        let dir = self.dir();
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{}.{ext}", key.hex()));
        self.write_atomic(&path, |f| f.write_all(bytes))?;
        self.add_to_estimate(bytes.len() as u64);
        Ok(())
    }

    fn add_to_estimate(&self, bytes: u64) {
        if let Some((total, _)) = &mut *self.estimate.lock() {
            *total += bytes;
        }
    }

    /// A fresh temporary path `<key>.<pid>-<n>.tmp.<ext>` in the store's directory (created),
    /// for a tool that writes the artifact itself or reads a file by its extension (the C
    /// compiler); the caller removes it.
    pub fn temp_path(&self, key: Key, ext: &str) -> std::io::Result<PathBuf> {
        let dir = self.dir();
        std::fs::create_dir_all(&dir)?;
        Ok(dir.join(format!(
            "{}.{}-{}.tmp.{ext}",
            key.hex(),
            std::process::id(),
            TEMP_SEQ.fetch_add(1, Ordering::Relaxed)
        )))
    }

    fn write_atomic(
        &self,
        path: &Path,
        fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
        let tmp = path.with_file_name(format!(
            "{name}.{}-{}.tmp",
            std::process::id(),
            TEMP_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let r = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            fill(&mut f)?;
            // Modification times order entries for eviction; set from the clock, not the file
            // system's coarser timestamps.
            let _ = f.set_modified(SystemTime::now());
            drop(f);
            std::fs::rename(&tmp, path)
        })();
        if r.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        r
    }

    /// Removes least recently used entries (other than `key`'s) until `incoming` more bytes fit
    /// under the limit, and stale temporary files; returns the bytes of the entries left (other
    /// than `key`'s).
    fn make_room(&self, dir: &Path, key: Key, incoming: u64) -> u64 {
        let Ok(read) = std::fs::read_dir(dir) else {
            return 0;
        };
        let now = SystemTime::now();
        // Per key: bytes, last use (the entry file's modification time; files beside it do not
        // count), files.
        let mut entries: AHashMap<u64, (u64, Option<SystemTime>, Vec<PathBuf>)> = AHashMap::new();
        for e in read.flatten() {
            let path = e.path();
            let Ok(meta) = e.metadata() else { continue };
            let modified = meta.modified().unwrap_or(now);
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.contains(".tmp") {
                if now
                    .duration_since(modified)
                    .is_ok_and(|age| age > STALE_TEMP)
                {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            }
            let Some((k, ext)) = name
                .split_once('.')
                .filter(|(stem, _)| stem.len() == 16)
                .and_then(|(stem, ext)| Some((u64::from_str_radix(stem, 16).ok()?, ext)))
            else {
                continue;
            };
            let entry = entries.entry(k).or_insert((0, None, Vec::new()));
            entry.0 += meta.len();
            if ext == self.ext {
                entry.1 = Some(modified);
            }
            entry.2.push(path);
        }
        // The entry being replaced does not count.
        entries.remove(&key.0);
        let mut total: u64 = entries.values().map(|e| e.0).sum();
        let limit = self.limit();
        if total + incoming <= limit {
            return total;
        }
        let mut by_age: Vec<_> = entries.into_iter().collect();
        // Files beside a missing entry file go first.
        by_age.sort_by_key(|(k, (_, used, _))| (*used, *k));
        for (_, (bytes, _, files)) in by_age {
            if total + incoming <= limit {
                break;
            }
            for f in &files {
                let _ = std::fs::remove_file(f);
            }
            total -= bytes;
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
        total
    }

    /// The artifact of `key` from disk (`load` makes it from a valid entry), else built (`build`
    /// returns it and the bytes to save, if any). A file `load` rejects is a miss like an invalid
    /// one: rebuilt and replaced.
    pub fn load_or_build<V, E>(
        &self,
        key: Key,
        load: impl FnOnce(&Entry) -> Result<V, String>,
        build: impl FnOnce() -> Result<(V, Option<Vec<u8>>), E>,
    ) -> Result<(V, Found), E> {
        match self.load(key) {
            Ok(entry) => match load(&entry) {
                Ok(v) => return Ok((v, Found::Disk)),
                Err(e) => {
                    tracing::debug!(target: "arrayflow::exec", "cache file {} does not load, rebuilding: {e}", entry.path.display())
                }
            },
            Err(Miss::Invalid(why)) => {
                tracing::debug!(target: "arrayflow::exec", "cache file {} is invalid ({why}), rebuilding", self.path(key).display())
            }
            Err(Miss::Absent) => {}
        }
        let (v, bytes) = build()?;
        if let Some(bytes) = bytes
            && let Err(e) = self.write(key, &bytes)
        {
            tracing::debug!(target: "arrayflow::exec", "cannot write {}: {e}", self.path(key).display());
        }
        Ok((v, Found::Built))
    }
}

/// Marks `path` as just used (its modification time, which orders eviction).
fn touch(path: &Path) {
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.set_modified(SystemTime::now());
    }
}

/// A program cache: artifacts loaded in this process by key (`V`: a loaded program, or an
/// executor's state for one), over a disk [`Store`].
pub struct ProgramCache<V> {
    store: Store,
    loaded: Mutex<AHashMap<Key, V>>,
}

impl<V: Clone> ProgramCache<V> {
    /// An empty cache over `store`.
    pub fn new(store: Store) -> ProgramCache<V> {
        ProgramCache {
            store,
            loaded: Mutex::new(AHashMap::new()),
        }
    }

    /// The disk store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The loaded artifacts (for an executor that keeps states such as "compiling" in them).
    pub fn loaded(&self) -> MutexGuard<'_, AHashMap<Key, V>> {
        self.loaded.lock()
    }

    /// The artifact of `key` if loaded.
    pub fn get(&self, key: Key) -> Option<V> {
        self.loaded.lock().get(&key).cloned()
    }

    /// Keeps `v` as the loaded artifact of `key`.
    pub fn insert(&self, key: Key, v: V) {
        self.loaded.lock().insert(key, v);
    }

    /// Forgets every loaded artifact (the disk keeps them).
    pub fn forget_loaded(&self) {
        self.loaded.lock().clear();
    }

    /// The artifact of `key`: loaded, else from disk, else built (see [`Store::load_or_build`]);
    /// kept loaded after. The lock is not held while loading or building.
    pub fn get_or_build<E>(
        &self,
        key: Key,
        load: impl FnOnce(&Entry) -> Result<V, String>,
        build: impl FnOnce() -> Result<(V, Option<Vec<u8>>), E>,
    ) -> Result<(V, Found), E> {
        if let Some(v) = self.get(key) {
            return Ok((v, Found::Memory));
        }
        let (v, found) = self.store.load_or_build(key, load, build)?;
        self.insert(key, v.clone());
        Ok((v, found))
    }
}
