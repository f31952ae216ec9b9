//! Spare buffers of the CPU entries' calls that run on one thread (a long line): a transform of
//! 2^22 points needs tens of MB of buffer and scratch, and a fresh allocation of that size is
//! mapped anew by the system on every call (its page faults cost a tenth of the transform).
//! Buffers of at least [`MIN_BYTES`] are kept after a call, up to [`MAX_BYTES`] in all, and the
//! next call of that element type takes one that is large enough.

use parking_lot::Mutex;
use std::any::Any;

/// Smaller buffers come from the allocator's own free lists.
const MIN_BYTES: usize = 1 << 20;
/// The most kept at once.
const MAX_BYTES: usize = 256 << 20;

struct Spare {
    bufs: Vec<(usize, Box<dyn Any + Send>)>,
    bytes: usize,
}

static SPARE: Mutex<Spare> = Mutex::new(Spare {
    bufs: Vec::new(),
    bytes: 0,
});

/// A kept vector with room for `len` elements (holding what its last user left), else a new,
/// empty one.
fn take<X: Send + 'static>(len: usize) -> Vec<X> {
    if len * size_of::<X>() < MIN_BYTES {
        return Vec::new();
    }
    let mut s = SPARE.lock();
    let found = s.bufs.iter().position(|(_, b)| {
        b.downcast_ref::<Vec<X>>()
            .is_some_and(|v| v.capacity() >= len)
    });
    match found {
        Some(i) => {
            let (bytes, b) = s.bufs.swap_remove(i);
            s.bytes -= bytes;
            *b.downcast::<Vec<X>>().expect("the type just checked")
        }
        None => Vec::new(),
    }
}

/// Keeps `v` for a later call (if it is large and there is room), its values as they are.
pub fn give<X: Send + 'static>(v: Vec<X>) {
    let bytes = v.capacity() * size_of::<X>();
    if bytes < MIN_BYTES {
        return;
    }
    let mut s = SPARE.lock();
    if s.bytes + bytes <= MAX_BYTES {
        s.bytes += bytes;
        s.bufs.push((bytes, Box::new(v)));
    }
}

/// A vector of `len` elements for buffers and scratch, whose values are unspecified: a kept
/// one holds what its last user left (not written again: a memset of tens of MB costs a tenth
/// of the transform), elements past that are `x`.
pub fn buffer<X: Clone + Send + 'static>(len: usize, x: X) -> Vec<X> {
    let mut v = take(len);
    v.truncate(len);
    v.resize(len, x);
    v
}
