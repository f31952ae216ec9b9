//! Random number generator objects: Philox4x32-10, counter-based, so element `i` of a draw depends
//! only on the seed and the generator's position. Every executor produces the same bits.

use super::array::{Array, site};
use super::element::Float;
use crate::frontend;
use crate::ir::{GenKind, RandomDist, Shape};

/// A seeded generator. Each draw takes as many counters as it has elements and advances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rng {
    key: [u32; 2],
    counter: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng {
            key: [seed as u32, (seed >> 32) as u32],
            counter: 0,
        }
    }
    /// The generator's position (counters used so far).
    pub fn position(&self) -> u64 {
        self.counter
    }
    /// Moves to a position, for example to replay a stream.
    pub fn seek(&mut self, counter: u64) {
        self.counter = counter;
    }
    #[track_caller]
    fn draw<T: Float>(&mut self, shape: &[usize], dist: RandomDist) -> Array<T> {
        let kind = GenKind::Random {
            key: self.key,
            counter: self.counter,
            dist,
        };
        self.counter += shape.iter().product::<usize>() as u64;
        Array::wrap(frontend::generate(
            kind,
            Shape::from_slice(shape),
            T::DTYPE,
            site(),
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
