//! The device's own first failing element: beside the fault word, a kernel with trap checks (and
//! gather's, bincount's and scatter's index checks) keeps a second word, raised by an atomic max to
//! `u32::MAX - key`, where `key = element * checks + check` (the lowest failing linear element,
//! ties going to the lowest check number, as on the tile VM). Both words start at zero (0:
//! nothing failed), so the fault buffer is zeroed as before, and the executor reads both after
//! the launch.
//!
//! The key must fit below `u32::MAX`: a kernel whose `elements * checks` does not (more than 4 G
//! element-checks; on WGSL, domains stop at 2^31 elements anyway) keeps only the fault word, and
//! its first failing element is found by the CPU re-running the task, as before.

/// Index of the first-failing word in a plan's fault buffer (after the fault code).
pub const FIRST_WORD: usize = 1;

/// Whether a kernel of `elements` elements with `checks` checks keeps the first-failing word.
pub fn fits(elements: usize, checks: usize) -> bool {
    (elements as u128) * (checks.max(1) as u128) < u32::MAX as u128
}

/// The word's value for a failing `key` (what the kernel's atomic max raises it to).
pub fn word(key: u32) -> u32 {
    u32::MAX - key
}

/// OpenCL C that raises a kernel's private `af_first` to the word of position `pos` (a `uint`
/// expression: the intrinsics' index checks, one check per position), for [`OPENCL_RAISE`] to
/// publish at the kernel's end.
pub fn opencl_keep(pos: &str) -> String {
    format!("af_first = max(af_first, 0xffffffffu - (uint)({pos}));")
}

/// OpenCL C that raises the fault buffer `af_fault`'s first-failing word to the kernel's
/// `af_first` (see [`opencl_keep`]).
pub const OPENCL_RAISE: &str = "if (af_first != 0u) atomic_max(&af_fault[1], af_first);";

/// WGSL that raises the first-failing word of the atomic fault buffer `fault` to position
/// `pos`'s word (a `u32` expression).
pub fn wgsl_raise(fault: &str, pos: &str) -> String {
    format!("atomicMax(&{fault}[1], 0xffffffffu - {pos});")
}

/// The first failing `(element, check)` a kernel's word holds (`None`: nothing failed).
pub fn decode(word: u32, checks: usize) -> Option<(usize, usize)> {
    if word == 0 {
        return None;
    }
    let key = (u32::MAX - word) as usize;
    let checks = checks.max(1);
    Some((key / checks, key % checks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_by_element_then_check() {
        let checks = 3;
        let key = |e: u32, c: u32| e * checks + c;
        // The greatest word is the lowest key.
        let words = [
            word(key(7, 2)),
            word(key(5, 1)),
            word(key(5, 0)),
            word(key(9, 0)),
        ];
        let top = *words.iter().max().unwrap();
        assert_eq!(decode(top, checks as usize), Some((5, 0)));
        assert_eq!(decode(0, 3), None);
        assert!(fits(1 << 20, 3) && !fits(1 << 31, 2));
    }
}
