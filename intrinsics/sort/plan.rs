//! What the OpenCL and WGSL plans of the sorts share: where rows go in the bitonic path
//! ([`Bitonic`]), the radix path's tiles and histograms ([`Radix`]), its passes and scratch
//! buffers ([`radix_passes`]), the limits of both, and the templates' filling ([`fill`]).

use super::{Rows, SMALL};
use crate::proggen::codegen::gpu::{BufArg, Pass, Unsupported};

/// Threads of every work-group of the sorting kernels.
pub const LOCAL: u32 = 256;
/// Entries per block of the scans (256 threads, 8 each).
pub const BLOCK: usize = 2048;
/// Histograms of at most this many entries are scanned by one work-group (`af_scan_top` over
/// them: one pass per digit); longer ones in blocks (`af_scan_reduce`, `af_scan_top` over the
/// block sums, `af_scan_down`).
pub const ONE_SCAN: usize = 65536;

/// Replaces each `@NAME@` of `template` by its value.
pub fn fill(template: &str, vars: &[(&str, String)]) -> String {
    let mut s = template.to_string();
    for (k, v) in vars {
        s = s.replace(&format!("@{k}@"), v);
    }
    debug_assert!(
        !s.as_bytes()
            .windows(2)
            .any(|w| w[0] == b'@' && w[1].is_ascii_uppercase()),
        "unfilled template:\n{s}"
    );
    s
}

/// Why a sort of `r` cannot run on a GPU (empty, too large for 32-bit positions).
pub fn sort_limits(r: Rows) -> Result<(), Unsupported> {
    if r.numel() == 0 {
        return Err(Unsupported("an empty sort runs on the CPU".into()));
    }
    if r.numel() >= 1 << 32 {
        return Err(Unsupported(
            "a GPU sort of 2^32 elements or more needs 64-bit histograms".into(),
        ));
    }
    Ok(())
}

/// Where the bitonic path puts rows: rows padded to `seg` (a power of two), `ls` elements per
/// work-group (a power of two, `seg` to [`SMALL`]), `ng` groups of rows.
pub struct Bitonic {
    pub seg: usize,
    pub ls: usize,
    pub ng: usize,
}

impl Bitonic {
    pub fn of(r: Rows) -> Bitonic {
        let seg = r.dim.next_power_of_two();
        let ls = (seg * r.count().next_power_of_two()).clamp(seg, SMALL.max(seg));
        Bitonic {
            seg,
            ls,
            ng: r.count().div_ceil(ls / seg),
        }
    }
}

/// The radix path's tiles of `tile` elements: `tpr` tiles per row, `ntiles` in all, `hlen`
/// histogram entries in `nb` scan blocks.
pub struct Radix {
    pub tpr: usize,
    pub ntiles: usize,
    pub hlen: usize,
    pub nb: usize,
}

impl Radix {
    pub fn of(r: Rows, tile: usize) -> Radix {
        let tpr = r.dim.div_ceil(tile);
        let ntiles = r.count() * tpr;
        let hlen = ntiles * 256;
        Radix {
            tpr,
            ntiles,
            hlen,
            nb: hlen.div_ceil(BLOCK),
        }
    }
    /// Whether one work-group scans the histograms.
    pub fn one_scan(&self) -> bool {
        self.hlen <= ONE_SCAN
    }
    /// The length `af_scan_top` scans: the histograms, or their block sums.
    pub fn top_len(&self) -> usize {
        if self.one_scan() { self.hlen } else { self.nb }
    }
}

/// The passes of a radix sort and its scratch buffers: 0 the histograms, 1 the scan's block
/// sums, 2 the shift (one word), 3 and 4 the elements, 5 and 6 the positions (argsort).
pub struct RadixPasses {
    pub passes: Vec<Pass>,
    pub scratch: Vec<u64>,
    /// Whether the plan starts with `af_in` (rows not contiguous).
    pub copy_in: bool,
    /// Whether the plan ends with `af_out` (rows not contiguous).
    pub copy_out: bool,
}

/// `af_init` or `af_in`; per digit `af_hist`, the scan (`af_scan_top`, which also advances the
/// shift word; around it `af_scan_reduce` and `af_scan_down` unless [`Radix::one_scan`]),
/// `af_scatter`; then `af_out` for rows along an inner axis. Elements and positions ping-pong
/// between the scratch pairs; with contiguous rows the first digit reads the input, and the
/// last digit of a sort writes the output. An argsort's positions are made by the first
/// digit's scatter (each element's position in its row: its tile's start plus its place in
/// the tile; the positions buffer it is given is not read), and its last scatter writes only
/// positions (into the output with contiguous rows): no pass materialises the positions, and
/// no pass writes keys nobody reads. `groups(items)`: the work-groups of a pass over `items`
/// work-group items (tiles, blocks; the target's grid rule).
pub fn radix_passes(
    r: Rows,
    x: &Radix,
    argsort: bool,
    key_bytes: u64,
    groups: impl Fn(usize) -> u32,
) -> RadixPasses {
    let n = r.numel() as u64;
    let contiguous = r.post == 1;
    let copy_in = !contiguous;
    let copy_out = !contiguous;
    let mut scratch = vec![
        x.hlen as u64 * 4,
        x.nb as u64 * 4,
        4,
        n * key_bytes,
        n * key_bytes,
    ];
    if argsort {
        scratch.extend([n * 4, n * 4]);
    }
    let (hist, part, meta) = (BufArg::Scratch(0), BufArg::Scratch(1), BufArg::Scratch(2));
    let pass = |entry: &str, buffers: Vec<BufArg>, groups: u32| Pass {
        entry: entry.into(),
        buffers,
        params: false,
        groups,
        local: LOCAL,
    };
    let elems = groups(r.numel().div_ceil(LOCAL as usize)).min(65535);
    let mut passes = Vec::new();
    // The scratch pair index holding the elements (None: the input), and the positions.
    let (mut keys, mut idx) = (None::<u32>, 0u32);
    if copy_in {
        let b = vec![BufArg::Input(0), BufArg::Scratch(3), meta];
        passes.push(pass("af_in", b, elems));
        keys = Some(0);
    } else {
        passes.push(pass("af_init", vec![meta], 1));
    }
    for p in 0..key_bytes {
        let last = p + 1 == key_bytes;
        let src = keys.map_or(BufArg::Input(0), |k| BufArg::Scratch(3 + k));
        let next = keys.map_or(0, |k| 1 - k);
        let dst = if last && contiguous && !argsort {
            BufArg::Output(0)
        } else {
            BufArg::Scratch(3 + next)
        };
        passes.push(pass("af_hist", vec![src, hist, meta], groups(x.ntiles)));
        if x.one_scan() {
            passes.push(pass("af_scan_top", vec![hist, meta], 1));
        } else {
            passes.push(pass("af_scan_reduce", vec![hist, part], groups(x.nb)));
            passes.push(pass("af_scan_top", vec![part, meta], 1));
            passes.push(pass("af_scan_down", vec![hist, part], groups(x.nb)));
        }
        let mut b = vec![src];
        if argsort {
            b.push(BufArg::Scratch(5 + idx));
        }
        b.extend([hist, meta, dst]);
        if argsort {
            b.push(if last && contiguous {
                BufArg::Output(0)
            } else {
                BufArg::Scratch(5 + 1 - idx)
            });
            idx = 1 - idx;
        }
        passes.push(pass("af_scatter", b, groups(x.ntiles)));
        keys = Some(next);
    }
    if copy_out {
        let from = if argsort {
            BufArg::Scratch(5 + idx)
        } else {
            BufArg::Scratch(3 + keys.expect("passes ran"))
        };
        passes.push(pass("af_out", vec![from, BufArg::Output(0)], elems));
    }
    RadixPasses {
        passes,
        scratch,
        copy_in,
        copy_out,
    }
}
