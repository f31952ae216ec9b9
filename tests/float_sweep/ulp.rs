//! Distances in units in the last place and the per-function report: the float types' bit keys,
//! which elements a device executor may flush, and the table a failing sweep prints.

use std::fmt::Write as _;

/// The two float types the sweep covers, seen through their bits.
pub trait Bits: arrayflow::Float + Copy + PartialOrd + std::fmt::Debug + Send + Sync {
    /// `"f32"` or `"f64"`.
    const NAME: &'static str;
    /// Whether this is f32.
    const SINGLE: bool;
    /// The key of the largest finite value (the key of `-MAX` is its negation).
    fn max_key() -> i64;
    /// A position on the number line: adjacent floats have adjacent keys, `+0` and `-0` are 0.
    fn key(self) -> i64;
    /// The float at a key.
    fn from_key(k: i64) -> Self;
    /// The value rounded to this type.
    fn of(v: f64) -> Self;
    /// The value as f64 (exact).
    fn to(self) -> f64;
}

impl Bits for f32 {
    const NAME: &'static str = "f32";
    const SINGLE: bool = true;
    fn max_key() -> i64 {
        f32::MAX.to_bits() as i64
    }
    fn key(self) -> i64 {
        let i = self.to_bits() as i32 as i64;
        if i < 0 { i32::MIN as i64 - i } else { i }
    }
    fn from_key(k: i64) -> Self {
        let bits = if k < 0 {
            (i32::MIN as i64 - k) as i32
        } else {
            k as i32
        };
        f32::from_bits(bits as u32)
    }
    fn of(v: f64) -> Self {
        v as f32
    }
    fn to(self) -> f64 {
        self as f64
    }
}

impl Bits for f64 {
    const NAME: &'static str = "f64";
    const SINGLE: bool = false;
    fn max_key() -> i64 {
        f64::MAX.to_bits() as i64
    }
    fn key(self) -> i64 {
        let i = self.to_bits() as i64;
        if i < 0 { i64::MIN - i } else { i }
    }
    fn from_key(k: i64) -> Self {
        let bits = if k < 0 { i64::MIN - k } else { k };
        f64::from_bits(bits as u64)
    }
    fn of(v: f64) -> Self {
        v
    }
    fn to(self) -> f64 {
        self
    }
}

/// Units in the last place between a result and the reference (both of type `T`): 0 when both
/// are NaN, `u64::MAX` when only one is, and when either is infinite and the other is not the
/// same infinity; otherwise the number of floats between them (`+0` and `-0` are the same place).
pub fn ulps<T: Bits>(got: T, want: T) -> u64 {
    let (g, w) = (got.to(), want.to());
    if g.is_nan() || w.is_nan() {
        return if g.is_nan() && w.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    if g.is_infinite() || w.is_infinite() {
        return if g == w { 0 } else { u64::MAX };
    }
    got.key().abs_diff(want.key())
}

/// Whether an element is left uncompared because a device executor may flush f32 subnormals to
/// zero (README, "Accuracy on GPU executors"): an f32 input, result or reference that is
/// subnormal, on a device executor.
pub fn flushable<T: Bits>(on_device: bool, inputs: &[T], got: T, want: T) -> bool {
    let sub = |v: T| {
        let v = v.to();
        v != 0.0 && v.abs() < f32::MIN_POSITIVE as f64
    };
    T::SINGLE && on_device && (inputs.iter().any(|&x| sub(x)) || sub(got) || sub(want))
}

/// One function's result over a sweep.
#[derive(Debug, Clone)]
pub struct Stat {
    /// The function (`erfc`, `pow`).
    pub name: &'static str,
    /// `f32` or `f64`.
    pub ty: &'static str,
    /// Elements compared.
    pub n: u64,
    /// Elements a device may flush, not compared.
    pub skipped: u64,
    /// Elements over the limit.
    pub over: u64,
    /// The largest distance.
    pub max_ulp: u64,
    /// Where it occurs: the inputs, the result and the reference.
    pub worst: String,
}

impl Stat {
    /// An empty record for `name` of type `ty`.
    pub fn new(name: &'static str, ty: &'static str) -> Stat {
        Stat {
            name,
            ty,
            n: 0,
            skipped: 0,
            over: 0,
            max_ulp: 0,
            worst: String::new(),
        }
    }

    /// Adds the elements of one batch: `inputs[k]` holds each element's operands.
    pub fn add<T: Bits>(
        &mut self,
        on_device: bool,
        inputs: &[&[T]],
        got: &[T],
        want: &[T],
        limit: u64,
    ) {
        for i in 0..got.len() {
            // The operands without an allocation (the exhaustive sweep calls this 2^32 times).
            let mut buf = [got[i]; 2];
            for (k, a) in inputs.iter().enumerate() {
                buf[k] = a[i];
            }
            let xs = &buf[..inputs.len()];
            if flushable(on_device, xs, got[i], want[i]) {
                self.skipped += 1;
                continue;
            }
            self.n += 1;
            let d = ulps(got[i], want[i]);
            if d > limit {
                self.over += 1;
            }
            if d > self.max_ulp || (self.worst.is_empty() && d == self.max_ulp) {
                self.max_ulp = d;
                let args: Vec<String> = xs.iter().map(|v| format!("{:e}", v.to())).collect();
                self.worst = format!(
                    "x = ({}): got {:e}, want {:e}",
                    args.join(", "),
                    got[i].to(),
                    want[i].to()
                );
            }
        }
    }

    /// Folds another record of the same function into this one.
    pub fn merge(&mut self, o: &Stat) {
        self.n += o.n;
        self.skipped += o.skipped;
        self.over += o.over;
        if o.max_ulp > self.max_ulp || self.worst.is_empty() {
            self.max_ulp = o.max_ulp;
            self.worst = o.worst.clone();
        }
    }

    /// One line of the table.
    pub fn row(&self) -> String {
        let ulp = if self.max_ulp == u64::MAX {
            "NaN/inf".to_string()
        } else {
            self.max_ulp.to_string()
        };
        format!(
            "{:>6} {:>3} {:>10} {:>9} {:>9} {:>8}  {}",
            self.name, self.ty, ulp, self.over, self.n, self.skipped, self.worst
        )
    }
}

/// The table of `stats` with a heading naming the executor.
pub fn table(executor: &str, stats: &[Stat]) -> String {
    let mut s = format!(
        "executor {executor}\n{:>6} {:>3} {:>10} {:>9} {:>9} {:>8}  worst element\n",
        "fn", "ty", "max ulp", "over", "compared", "skipped"
    );
    for st in stats {
        let _ = writeln!(s, "{}", st.row());
    }
    s
}

/// Panics with the table of every function over `limit` ulp, if any.
#[track_caller]
pub fn assert_within(executor: &str, stats: &[Stat], limit: u64) {
    let bad: Vec<Stat> = stats.iter().filter(|s| s.over > 0).cloned().collect();
    assert!(
        bad.is_empty(),
        "{} of {} functions over {limit} ulp of the reference:\n{}",
        bad.len(),
        stats.len(),
        table(executor, &bad)
    );
}
