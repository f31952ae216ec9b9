//! Random number generator objects: two counter-based generators, Philox4x32-10 (long period)
//! and Hash32 (fast, short period), so element `i` of a draw depends only on the key and the
//! generator's position, and every executor produces the same bits. Distributions: uniform
//! (on [0, 1) or [lo, hi)), normal, exponential, integers in a range, Bernoulli, raw words
//! (permutations and shuffles: `permute.rs`). A generator is a handle to its state, so a
//! replayed code reuse section (whose closure is not called) still advances the generators it
//! draws from, exactly as a normal run would.

use super::array::{Array, ok, site};
use super::element::{Float, Index};
use crate::error::{Error, ErrorKind, Result};
use crate::frontend;
use crate::ir::{BinaryOp, DType, GenKind, RandomDist, Scalar, Shape, Site};
use parking_lot::Mutex;
use std::sync::Arc;

pub use crate::ir::{RngAlgorithm, RngState};

/// A seeded generator. Each draw takes as many counters as it has elements and advances.
/// `Clone` makes an independent generator at the same position.
///
/// Two algorithms: [`Rng::new`] is Philox4x32-10 (period 2^66 words per key, passes
/// BigCrush); [`Rng::fast`] is Hash32, two keyed rounds of a 32-bit integer hash (about 18
/// 32-bit operations per word, period 2^32 words: a draw more than 2^32 words into the stream
/// repeats it). Both are counter-based: [`Rng::position`], [`Rng::seek`] and [`Rng::skip`]
/// move in the stream at no cost, and [`Rng::from_key`] rebuilds a generator from
/// [`Rng::key`] and a position.
///
/// ```
/// use arrayflow::Rng;
///
/// let mut rng = Rng::new(42);
/// let u = rng.uniform::<f64>(&[100_000]); // [0, 1)
/// let n = rng.normal::<f32>(&[100_000]); // mean 0, standard deviation 1
/// assert_eq!(rng.position(), 200_000);
/// let (lo, hi) = (u.min().item()?, u.max().item()?);
/// assert!(lo >= 0.0 && hi < 1.0);
/// assert!((u.mean().item()? - 0.5).abs() < 0.01); // standard error 0.0009
/// assert!(n.mean().item()?.abs() < 0.02); // standard error 0.003
/// assert!((n.stddev().item()? - 1.0).abs() < 0.02);
///
/// // Counter-based: seeking replays a stream, and a draw depends only on seed and position.
/// rng.seek(0);
/// assert_eq!(rng.uniform::<f64>(&[100_000]).to_vec()?, u.to_vec()?);
///
/// // The fast generator and the other distributions.
/// let mut fast = Rng::fast(7);
/// let dice = fast.integers::<i32>(&[1000], 1, 7); // 1 ..= 6
/// assert!(dice.min().item()? >= 1 && dice.max().item()? <= 6);
/// let e = fast.exponential::<f64>(&[100_000], 2.0); // mean 1/2
/// assert!((e.mean().item()? - 0.5).abs() < 0.01);
/// let heads = fast.bernoulli(&[100_000], 0.25).cast::<f64>().mean().item()?;
/// assert!((heads - 0.25).abs() < 0.01);
/// let x = fast.uniform_in::<f32>(&[1000], -1.0, 1.0);
/// assert!(x.min().item()? >= -1.0 && x.max().item()? < 1.0);
/// // Reproduce a stream from its key and position.
/// let again = Rng::from_key(fast.algorithm(), fast.key(), 1000).exponential::<f64>(&[100_000], 2.0);
/// assert_eq!(again.to_vec()?, e.to_vec()?);
/// assert!(fast.try_exponential::<f64>(&[10], 0.0).is_err()); // rate must be positive
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[derive(Debug)]
pub struct Rng {
    pub(crate) state: Arc<Mutex<RngState>>,
}

impl Clone for Rng {
    fn clone(&self) -> Self {
        Rng {
            state: Arc::new(Mutex::new(self.state.lock().clone())),
        }
    }
}

impl PartialEq for Rng {
    fn eq(&self, other: &Self) -> bool {
        *self.state.lock() == *other.state.lock()
    }
}
impl Eq for Rng {}

/// An argument error of a draw, naming the user's call.
fn bad(site: Site, message: String) -> Error {
    Error::new(ErrorKind::Argument, message).at(site)
}

/// The largest value of `d` (f32 or f64) below `x` (finite).
fn below(x: f64, d: DType) -> f64 {
    match d {
        DType::F32 => (x as f32).next_down() as f64,
        _ => x.next_down(),
    }
}

impl Rng {
    /// A Philox4x32-10 generator at position 0 of the stream of `seed` (key: the seed's two
    /// 32-bit halves).
    pub fn new(seed: u64) -> Rng {
        Rng::with_algorithm(RngAlgorithm::Philox, seed)
    }
    /// A Hash32 generator (fast, period 2^32 words) at position 0 of the stream of `seed` (key:
    /// SplitMix64 of the seed, so nearby seeds give unrelated streams).
    pub fn fast(seed: u64) -> Rng {
        Rng::with_algorithm(RngAlgorithm::Hash32, seed)
    }
    /// A generator of `alg` at position 0 of the stream of `seed`.
    pub fn with_algorithm(alg: RngAlgorithm, seed: u64) -> Rng {
        let key = match alg {
            RngAlgorithm::Philox => seed,
            RngAlgorithm::Hash32 => crate::primitives::cpu::splitmix64(seed),
        };
        let r = Rng::from_key(alg, [key as u32, (key >> 32) as u32], 0);
        r.state.lock().seed = Some(seed);
        r
    }
    /// A generator of `alg` with `key` at `position`: the stream of any generator whose
    /// [`Rng::key`] this is.
    pub fn from_key(alg: RngAlgorithm, key: [u32; 2], position: u64) -> Rng {
        Rng {
            state: Arc::new(Mutex::new(RngState {
                alg,
                key,
                counter: position,
                seed: None,
            })),
        }
    }
    /// Which generator this is.
    pub fn algorithm(&self) -> RngAlgorithm {
        self.state.lock().alg
    }
    /// The seed it was made from (`None` for [`Rng::from_key`]).
    pub fn seed(&self) -> Option<u64> {
        self.state.lock().seed
    }
    /// The key its words are computed with.
    pub fn key(&self) -> [u32; 2] {
        self.state.lock().key
    }
    /// The generator's position (counters used so far).
    pub fn position(&self) -> u64 {
        self.state.lock().counter
    }
    /// Moves to a position, for example to replay a stream.
    pub fn seek(&mut self, counter: u64) {
        self.state.lock().counter = counter;
    }
    /// Moves `n` counters ahead (as a draw of `n` elements would), wrapping at 2^64.
    pub fn skip(&mut self, n: u64) {
        let mut s = self.state.lock();
        s.counter = s.counter.wrapping_add(n);
    }

    /// Records a draw of `dist` as `dtype` and advances by its element count.
    #[track_caller]
    fn draw_handle(
        &mut self,
        shape: &[usize],
        dist: RandomDist,
        dtype: DType,
        range: u32,
    ) -> frontend::Handle {
        let site = site();
        let n = shape.iter().product::<usize>() as u64;
        let (alg, key, counter) = {
            let mut s = self.state.lock();
            let c = s.counter;
            s.counter = c.wrapping_add(n);
            (s.alg, s.key, c)
        };
        let kind = GenKind::Random {
            alg,
            key,
            counter,
            dist,
            range,
        };
        frontend::generate_random(kind, Shape::from_slice(shape), dtype, site, &self.state)
    }
    #[track_caller]
    fn draw<T: Float>(&mut self, shape: &[usize], dist: RandomDist) -> Array<T> {
        Array::wrap(self.draw_handle(shape, dist, T::DTYPE, 0))
    }

    /// Uniform values in [0, 1): 24 random bits for f32 (one word), 53 for f64 (two words).
    #[track_caller]
    pub fn uniform<T: Float>(&mut self, shape: &[usize]) -> Array<T> {
        self.draw(shape, RandomDist::Uniform)
    }
    /// Standard normal values (Box-Muller: two words per f32, four per f64).
    #[track_caller]
    pub fn normal<T: Float>(&mut self, shape: &[usize]) -> Array<T> {
        self.draw(shape, RandomDist::Normal)
    }
    /// Uniform values in [lo, hi): `lo + (hi - lo) * u`, limited to the largest value below
    /// `hi` (rounding could otherwise reach `hi`). Panics (through the error-handler stack)
    /// where [`Rng::try_uniform_in`] returns an error.
    #[track_caller]
    pub fn uniform_in<T: Float>(&mut self, shape: &[usize], lo: T, hi: T) -> Array<T> {
        ok(self.try_uniform_in(shape, lo, hi))
    }
    /// Like [`Rng::uniform_in`], returning an error (naming your call) unless
    /// `lo < hi`, both finite and `hi - lo` finite. The generator does not move on an error.
    #[track_caller]
    pub fn try_uniform_in<T: Float>(&mut self, shape: &[usize], lo: T, hi: T) -> Result<Array<T>> {
        let s = site();
        let (l, h) = (lo.scalar().as_f64(), hi.scalar().as_f64());
        let span = Scalar::F64(h - l).cast(T::DTYPE).as_f64();
        if !(l < h && l.is_finite() && h.is_finite() && span.is_finite()) {
            return Err(bad(
                s,
                format!(
                    "uniform_in: need finite lo < hi with a finite hi - lo, got lo = {l}, hi = {h}"
                ),
            ));
        }
        let u = self.uniform::<T>(shape);
        let x = &(&u * T::from_f64(span)) + lo;
        Ok(x.minimum(T::from_f64(below(h, T::DTYPE))))
    }
    /// Normal values with mean `mean` and standard deviation `std`: `mean + std * z`.
    #[track_caller]
    pub fn normal_with<T: Float>(&mut self, shape: &[usize], mean: T, std: T) -> Array<T> {
        ok(self.try_normal_with(shape, mean, std))
    }
    /// Like [`Rng::normal_with`], returning an error unless `mean` is finite and `std` finite
    /// and not negative.
    #[track_caller]
    pub fn try_normal_with<T: Float>(
        &mut self,
        shape: &[usize],
        mean: T,
        std: T,
    ) -> Result<Array<T>> {
        let s = site();
        let (m, d) = (mean.scalar().as_f64(), std.scalar().as_f64());
        if !(m.is_finite() && d.is_finite() && d >= 0.0) {
            return Err(bad(
                s,
                format!(
                    "normal_with: need a finite mean and a finite std >= 0, got mean = {m}, std = {d}"
                ),
            ));
        }
        let z = self.normal::<T>(shape);
        Ok(&(&z * std) + mean)
    }
    /// Exponential values with rate `lambda` (mean `1 / lambda`): `-ln(1 - u) / lambda`, `u`
    /// uniform on [0, 1) (one word per f32, two per f64).
    #[track_caller]
    pub fn exponential<T: Float>(&mut self, shape: &[usize], lambda: T) -> Array<T> {
        ok(self.try_exponential(shape, lambda))
    }
    /// Like [`Rng::exponential`], returning an error unless `lambda` is finite and positive.
    #[track_caller]
    pub fn try_exponential<T: Float>(&mut self, shape: &[usize], lambda: T) -> Result<Array<T>> {
        let s = site();
        let l = lambda.scalar().as_f64();
        if !(l.is_finite() && l > 0.0) {
            return Err(bad(
                s,
                format!("exponential: the rate lambda must be finite and positive, got {l}"),
            ));
        }
        let e = self.draw::<T>(shape, RandomDist::Exponential);
        Ok(if l == 1.0 { e } else { &e / lambda })
    }
    /// Integers in [lo, hi) (`i32` or `u32`), one word each, by Lemire's multiply-shift
    /// `lo + (word * (hi - lo)) >> 32` without rejection: value `k` comes up
    /// `floor` or `ceil` of `2^32 / (hi - lo)` times in the 2^32 words, so the bias is below
    /// `(hi - lo) / 2^32` (none for powers of two).
    #[track_caller]
    pub fn integers<I: Index>(&mut self, shape: &[usize], lo: I, hi: I) -> Array<I> {
        ok(self.try_integers(shape, lo, hi))
    }
    /// Like [`Rng::integers`], returning an error unless `lo < hi`.
    #[track_caller]
    pub fn try_integers<I: Index>(&mut self, shape: &[usize], lo: I, hi: I) -> Result<Array<I>> {
        let s = site();
        let (l, h) = (int_of(lo.scalar()), int_of(hi.scalar()));
        if l >= h {
            return Err(bad(
                s,
                format!("integers: need lo < hi, got lo = {l}, hi = {h}"),
            ));
        }
        // hi - lo < 2^32 for both element types.
        let m = self.draw_handle(shape, RandomDist::Integers, DType::U32, (h - l) as u32);
        let m = match I::DTYPE {
            DType::U32 => m,
            _ => frontend::cast(&m, I::DTYPE, s),
        };
        if l == 0 {
            return Ok(Array::wrap(m));
        }
        let lo = frontend::constant(lo.scalar(), Shape::new(), s);
        Ok(Array::wrap(frontend::binary(BinaryOp::Add, &m, &lo, s)?))
    }
    /// Raw 32-bit words of the stream (one per element).
    #[track_caller]
    pub fn bits(&mut self, shape: &[usize]) -> Array<u32> {
        Array::wrap(self.draw_handle(shape, RandomDist::Integers, DType::U32, 0))
    }
    /// `true` with probability `p`: `word < round(p * 2^32)` on one word per element, so the
    /// probability is `p` to within 2^-33 and every executor gives the same mask.
    #[track_caller]
    pub fn bernoulli(&mut self, shape: &[usize], p: f64) -> Array<bool> {
        ok(self.try_bernoulli(shape, p))
    }
    /// Like [`Rng::bernoulli`], returning an error unless `0 <= p <= 1`.
    #[track_caller]
    pub fn try_bernoulli(&mut self, shape: &[usize], p: f64) -> Result<Array<bool>> {
        let s = site();
        if !(0.0..=1.0).contains(&p) {
            return Err(bad(s, format!("bernoulli: p must be in [0, 1], got {p}")));
        }
        let t = (p * 4_294_967_296.0).round() as u64;
        let w = self.bits(shape);
        Ok(if t == 0 {
            w.lt(0u32)
        } else {
            w.le((t - 1) as u32)
        })
    }
    // Permutations and shuffles (argsorts of `bits`) are in `permute.rs`.
}

/// An `i32` or `u32` scalar as `i64`.
fn int_of(s: Scalar) -> i64 {
    match s {
        Scalar::I32(v) => v as i64,
        Scalar::U32(v) => v as i64,
        other => other.as_f64() as i64,
    }
}
