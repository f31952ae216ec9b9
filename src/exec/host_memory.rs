//! Large host allocations (uploads copied from the application's slices, results read into new
//! `Vec`s, the CPU executor's output buffers): backed by transparent huge pages where the system
//! offers them on request (Linux with THP in `madvise` mode, the common default). A fresh 64 MiB
//! buffer otherwise takes 16,384 page faults on first touch, which cost more than the copy itself
//! (measured: 48 ms against about 10 ms to copy 64 MiB on a 2-core machine).

/// Allocations at least this large ask for huge pages.
const HUGE_MIN: usize = 4 << 20;
const HUGE_PAGE: usize = 2 << 20;

/// An empty `Vec` with room for `n` elements, its memory advised to use huge pages if large.
pub fn with_capacity<T>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    advise_huge(v.as_mut_ptr() as *mut u8, n * std::mem::size_of::<T>());
    v
}

/// `n` copies of `value` in huge-page-backed memory when large (the advice comes before the first
/// touch, which is what makes it count).
pub fn filled<T: Clone>(n: usize, value: T) -> Vec<T> {
    if n * std::mem::size_of::<T>() < HUGE_MIN {
        return vec![value; n];
    }
    let mut v = with_capacity(n);
    v.resize(n, value);
    v
}

/// A copy of `src` in huge-page-backed memory when large.
pub fn copied<T: Copy>(src: &[T]) -> Vec<T> {
    let mut v = with_capacity(src.len());
    v.extend_from_slice(src);
    v
}

#[cfg(target_os = "linux")]
fn advise_huge(p: *mut u8, len: usize) {
    if len < HUGE_MIN {
        return;
    }
    let start = (p as usize).next_multiple_of(HUGE_PAGE);
    let end = (p as usize + len) & !(HUGE_PAGE - 1);
    if end > start {
        // SAFETY: the range lies inside the allocation just made and is only advised, not accessed;
        // a kernel without THP support returns an error, which changes nothing.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_p: *mut u8, _len: usize) {}

#[cfg(test)]
mod tests {
    #[test]
    fn large_and_small_vectors_hold_what_was_asked() {
        for n in [0usize, 3, 1 << 10, (8 << 20) / 4 + 5] {
            let v = super::filled(n, 7.5f32);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|&x| x == 7.5));
            let src: Vec<u32> = (0..n as u32).collect();
            assert_eq!(super::copied(&src), src);
        }
    }
}

/// The application's memory a result is written into directly (a read without a copy): its
/// element type and address, with room for every element of the result. Executors convert it to
/// their own form (the CPU VM's `OutPtr`, a device download's destination).
#[derive(Debug, Clone, Copy)]
pub struct HostDest {
    pub dtype: crate::ir::DType,
    pub ptr: *mut u8,
}
// SAFETY: the application's read waits while the runtime's threads write the memory, and nothing
// else touches it meanwhile.
unsafe impl Send for HostDest {}
unsafe impl Sync for HostDest {}
