//! Random number generator objects: Philox4x32-10, counter-based, so element `i` of a draw depends
//! only on the seed and the generator's position. Every executor produces the same bits. A
//! generator is a handle to its state, so a replayed code reuse section (whose closure is not
//! called) still advances the generators it draws from, exactly as a normal run would.

use super::array::{Array, site};
use super::element::Float;
use crate::frontend;
use crate::ir::{GenKind, RandomDist, Shape};
use parking_lot::Mutex;
use std::sync::Arc;

pub use crate::ir::RngState;

/// A seeded generator. Each draw takes as many counters as it has elements and advances.
/// `Clone` makes an independent generator at the same position.
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

impl Rng {
    /// A generator at position 0 of the stream of `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng {
            state: Arc::new(Mutex::new(RngState {
                key: [seed as u32, (seed >> 32) as u32],
                counter: 0,
            })),
        }
    }
    /// The generator's position (counters used so far).
    pub fn position(&self) -> u64 {
        self.state.lock().counter
    }
    /// Moves to a position, for example to replay a stream.
    pub fn seek(&mut self, counter: u64) {
        self.state.lock().counter = counter;
    }
    #[track_caller]
    fn draw<T: Float>(&mut self, shape: &[usize], dist: RandomDist) -> Array<T> {
        let site = site();
        let n = shape.iter().product::<usize>() as u64;
        let (key, counter) = {
            let mut s = self.state.lock();
            let c = s.counter;
            s.counter += n;
            (s.key, c)
        };
        let kind = GenKind::Random { key, counter, dist };
        Array::wrap(frontend::generate_random(
            kind,
            Shape::from_slice(shape),
            T::DTYPE,
            site,
            &self.state,
        ))
    }
    /// Uniform values in [0, 1).
    #[track_caller]
    pub fn uniform<T: Float>(&mut self, shape: &[usize]) -> Array<T> {
        self.draw(shape, RandomDist::Uniform)
    }
    /// Standard normal values (Box-Muller).
    #[track_caller]
    pub fn normal<T: Float>(&mut self, shape: &[usize]) -> Array<T> {
        self.draw(shape, RandomDist::Normal)
    }
}
