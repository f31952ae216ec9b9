//! Random orderings: [`Rng::permutation`], [`Rng::permutations`] (independent rows) and
//! [`Rng::shuffle`] (an array's rows along an axis in one random order). Each is a stable argsort
//! of random 64-bit keys made of two words of the generator (`bits`), through the sort
//! intrinsics (`src/api/sort.rs`), so every executor gives the same orderings bit for bit.

use super::array::{Array, ok, site};
use super::element::Element;
use super::random::Rng;
use crate::error::{Error, ErrorKind, Result};
use crate::frontend;

impl Rng {
    /// A uniformly random permutation of `0..n` (`u32`, shape `[n]`), NumPy's
    /// `rng.permutation(n)`.
    ///
    /// Element `i` gets a 64-bit key: the generator's next `n` words are the keys' high halves,
    /// the `n` after them the low halves (the generator moves `2 n`). The result is the
    /// positions that sort the keys, computed as two stable 32-bit argsorts (by the low halves,
    /// then stably by the high halves: an LSD radix sort of the 64-bit keys) and
    /// `take_along_axis`. Distinct keys give each of the `n!` orders the same probability; equal
    /// keys (stable: the smaller position first) happen with probability below
    /// `n² / 2^65`, which bounds the distance from the uniform distribution (below 2^-17 for
    /// `n = 2^24`; a single 32-bit key would give `n² / 2^33`, already 0.5 at `n = 2^16`).
    /// The same generator state gives the same permutation on every executor. Panics (through
    /// the error-handler stack) where [`Rng::try_permutation`] returns an error.
    ///
    /// ```
    /// use arrayflow::{Array, Rng};
    ///
    /// let mut rng = Rng::new(7);
    /// let p = rng.permutation(10);
    /// assert_eq!(rng.position(), 20); // two words per element
    /// let mut seen = p.to_vec()?;
    /// seen.sort();
    /// assert_eq!(seen, (0..10).collect::<Vec<u32>>()); // every value once
    /// rng.seek(0);
    /// assert_eq!(rng.permutation(10).to_vec()?, p.to_vec()?); // the same state, the same order
    ///
    /// // Rows of a matrix in one random order (the permutation `permutation` would draw).
    /// let m = Array::from_vec((0..12).collect::<Vec<i32>>(), &[4, 3]);
    /// let mut again = rng.clone();
    /// let rows = rng.shuffle(&m, 0);
    /// assert_eq!(rows.to_vec()?, m.gather(&again.permutation(4), 0).to_vec()?);
    /// assert!(rng.try_shuffle(&m, 2).is_err()); // axis out of range: an error naming this line
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn permutation(&mut self, n: usize) -> Array<u32> {
        ok(self.try_permutation(n))
    }

    /// Like [`Rng::permutation`], returning an error (naming your call) when `n` does not fit
    /// `u32` positions. The generator does not move on an error.
    #[track_caller]
    pub fn try_permutation(&mut self, n: usize) -> Result<Array<u32>> {
        self.try_permutations(1, n)?.try_reshape(&[n])
    }

    /// `count` independent uniformly random permutations of `0..n`, one per row (`u32`, shape
    /// `[count, n]`): the keys of [`Rng::permutation`] drawn for all rows at once (the next
    /// `count * n` words are the high halves in row-major order, the `count * n` after them the
    /// low halves), sorted along axis 1. `permutations(1, n)` is `permutation(n)` as one row.
    /// For resampling tests that need many orders: one sort for all of them.
    #[track_caller]
    pub fn permutations(&mut self, count: usize, n: usize) -> Array<u32> {
        ok(self.try_permutations(count, n))
    }

    /// Like [`Rng::permutations`], returning an error (naming your call) when `n` does not fit
    /// `u32` positions. The generator does not move on an error.
    #[track_caller]
    pub fn try_permutations(&mut self, count: usize, n: usize) -> Result<Array<u32>> {
        if n > u32::MAX as usize {
            return Err(Error::new(
                ErrorKind::Shape,
                format!(
                    "permutation of {n} elements: positions are u32 (at most {})",
                    u32::MAX
                ),
            )
            .at(site()));
        }
        if count == 0 || n == 0 {
            return Ok(Array::zeros(&[count, n])); // nothing to draw or sort
        }
        let high = self.bits(&[count, n]);
        let low = self.bits(&[count, n]);
        let by_low = low.try_argsort_axis(1)?;
        let by_key = high.try_take_along_axis(&by_low, 1)?.try_argsort_axis(1)?;
        by_low.try_take_along_axis(&by_key, 1)
    }

    /// `a` with its slices along `axis` in a uniformly random order: `a.gather(&p, axis)` for the
    /// permutation `p` that [`Rng::permutation`] of the axis' length would draw (the generator
    /// moves as that call). NumPy's `rng.permutation(a, axis)` (a new array; `a` is unchanged).
    #[track_caller]
    pub fn shuffle<T: Element>(&mut self, a: &Array<T>, axis: usize) -> Array<T> {
        ok(self.try_shuffle(a, axis))
    }

    /// Like [`Rng::shuffle`], returning an error (naming your call) when `axis` is out of range.
    /// The generator does not move on an error.
    #[track_caller]
    pub fn try_shuffle<T: Element>(&mut self, a: &Array<T>, axis: usize) -> Result<Array<T>> {
        let s = site();
        if axis >= a.ndim() {
            return Err(Error::new(
                ErrorKind::Argument,
                format!(
                    "shuffle: axis {axis} is out of range for shape {:?}",
                    a.shape()
                ),
            )
            .at(s));
        }
        let p = self.try_permutation(a.shape()[axis])?;
        Ok(Array::wrap(frontend::gather(&a.h, &p.h, axis, s)?))
    }
}
