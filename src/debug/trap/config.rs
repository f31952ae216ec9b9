//! Which traps are on ([`TrapConfig`]), process-wide: set by `Runtime::traps` or read once from
//! `ARRAYFLOW_TRAP`. The program generator reads it when it closes a kernel (one relaxed atomic
//! load when traps are off) and the flush folds its fingerprint into the trace-cache key, so
//! kernels change only while traps are on.

use parking_lot::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Which traps are on, and how long launches are cut into passes.
///
/// ```
/// use arrayflow::debug::trap::TrapConfig;
/// let cfg = TrapConfig::nan().inf().passes(1 << 12);
/// assert!(cfg.nan && cfg.inf && !cfg.index);
/// assert_eq!(TrapConfig::parse("nan,index,ops=div+log,pass=4096"),
///            Some(TrapConfig::nan().index().ops(&["div", "log"]).passes(4096)));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrapConfig {
    /// Trap on a NaN result of a checked op.
    pub nan: bool,
    /// Trap on an infinite result of a checked op.
    pub inf: bool,
    /// Trap on a gather/scatter/bincount index out of range (reported as a trap, with the
    /// first bad index, instead of an execution error).
    pub index: bool,
    /// The ops whose float results NaN/Inf traps check, by name (`div`, `log`, ...); `None`:
    /// every element-wise op.
    pub ops: Option<Vec<String>>,
    /// Cut launches of kernels with checks into passes of about this many elements (whole
    /// tiles); a pass with a trap stops the launch, which stays suspended on its executor until
    /// `Runtime::resume` (`None`: one pass, and a trap fails the launch). Kernels run in passes
    /// where they are computed: a device dispatches one range of elements per pass (for a kernel
    /// with reductions, one run of its work-group slots, then the final combining pass), the CPU
    /// tile VM runs whole tiles. While a launch is suspended, `Runtime::execute()`
    /// waits for all other work but not for it (nor for work that reads its results), and waits
    /// for its results return the trap's error.
    pub pass_elements: Option<usize>,
}

impl TrapConfig {
    /// No traps (user assertions still run).
    pub fn off() -> TrapConfig {
        TrapConfig::default()
    }
    /// NaN traps only.
    pub fn nan() -> TrapConfig {
        TrapConfig {
            nan: true,
            ..TrapConfig::default()
        }
    }
    /// Also trap on infinities.
    pub fn inf(mut self) -> TrapConfig {
        self.inf = true;
        self
    }
    /// Also trap on indices out of range.
    pub fn index(mut self) -> TrapConfig {
        self.index = true;
        self
    }
    /// Check only the results of these ops (by name).
    pub fn ops(mut self, names: &[&str]) -> TrapConfig {
        self.ops = Some(names.iter().map(|s| s.to_string()).collect());
        self
    }
    /// Cut launches of checked kernels into passes of about `elements` elements.
    pub fn passes(mut self, elements: usize) -> TrapConfig {
        self.pass_elements = Some(elements.max(1));
        self
    }
    /// Parses `ARRAYFLOW_TRAP`'s syntax: a comma-separated list of `nan`, `inf`, `index`,
    /// `ops=NAME+NAME`, `pass=ELEMENTS` (`off` or empty: no traps). `None` for a word it does
    /// not know.
    pub fn parse(s: &str) -> Option<TrapConfig> {
        let mut c = TrapConfig::default();
        for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match w {
                "off" | "none" => {}
                "nan" => c.nan = true,
                "inf" => c.inf = true,
                "index" => c.index = true,
                _ => match w.split_once('=') {
                    Some(("ops", names)) => {
                        c.ops = Some(names.split('+').map(str::to_string).collect())
                    }
                    Some(("pass", n)) => c.pass_elements = Some(n.parse::<usize>().ok()?.max(1)),
                    _ => return None,
                },
            }
        }
        Some(c)
    }
    /// Whether any trap is on.
    pub fn any(&self) -> bool {
        self.nan || self.inf || self.index
    }
    /// Whether NaN/Inf traps check the results of op `name`.
    pub fn checks_op(&self, name: &str) -> bool {
        (self.nan || self.inf)
            && self
                .ops
                .as_ref()
                .is_none_or(|o| o.iter().any(|n| n == name))
    }
    /// A word naming this configuration in the trace-cache key (0 when everything is off).
    pub fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        if *self == TrapConfig::default() {
            return 0;
        }
        let mut h = ahash::AHasher::default();
        (
            self.nan,
            self.inf,
            self.index,
            &self.ops,
            self.pass_elements,
        )
            .hash(&mut h);
        h.finish() | 1
    }
}

/// The configuration's fingerprint (0: off), the one word read when traps are off.
static FINGERPRINT: AtomicU64 = AtomicU64::new(u64::MAX);
static CONFIG: RwLock<Option<TrapConfig>> = RwLock::new(None);

fn init() {
    let c = std::env::var("ARRAYFLOW_TRAP")
        .ok()
        .and_then(|v| {
            let c = TrapConfig::parse(&v);
            if c.is_none() {
                tracing::warn!(target: "arrayflow::debug", "ARRAYFLOW_TRAP={v}: not understood (nan,inf,index,ops=a+b,pass=N)");
            }
            c
        })
        .unwrap_or_default();
    set(c);
}

/// Sets the process-wide configuration.
pub fn set(c: TrapConfig) {
    let mut g = CONFIG.write();
    FINGERPRINT.store(c.fingerprint(), Ordering::Relaxed);
    *g = Some(c);
}

/// The configuration's fingerprint: 0 while traps are off.
#[inline]
pub fn fingerprint() -> u64 {
    let f = FINGERPRINT.load(Ordering::Relaxed);
    if f != u64::MAX {
        return f;
    }
    init();
    FINGERPRINT.load(Ordering::Relaxed)
}

/// The current configuration (`None` while everything is off).
pub fn current() -> Option<TrapConfig> {
    if fingerprint() == 0 {
        return None;
    }
    CONFIG.read().clone()
}
