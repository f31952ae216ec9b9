//! The intrinsic library (the seed's 700): hand-written, non-fusible kernels and the host code that
//! launches them, one folder per target. The program generator schedules them between fused kernels.

pub mod cpu;
pub mod opencl;
pub mod wgsl;

/// How a GPU matrix product `c[m, n] = a[m, k] b[k, n]` splits its inner extent: a product with
/// few 64 x 64 output tiles and a long `k` (k-means' one-hot sums, the normal equations of a tall
/// matrix: 8 x 2,000,000 x 2) would leave all but a few compute units idle while one work-group
/// walks `k`. Split into `parts` ranges of `chunk` (a multiple of 16), each tile of each range is
/// a work-group writing partial sums; a second pass adds the parts in order. `None`: one pass.
pub(crate) fn matmul_split(m: usize, n: usize, k: usize) -> Option<(usize, usize)> {
    /// Work-groups worth filling a large GPU.
    const TARGET_GROUPS: usize = 512;
    /// Shortest range of `k` one work-group takes.
    const MIN_CHUNK: usize = 512;
    /// Longest range of `k` one work-group walks: lavapipe dropped every term past 58,255 of one
    /// long walk (issue 18), so no work-group walks more than this whatever the tiles.
    const MAX_CHUNK: usize = 16384;
    let tiles = m.div_ceil(64) * n.div_ceil(64);
    let few_tiles = tiles < TARGET_GROUPS / 4 && k >= 2 * MIN_CHUNK;
    if !few_tiles && k <= MAX_CHUNK {
        return None;
    }
    let wanted = if few_tiles {
        TARGET_GROUPS.div_ceil(tiles).min(k / MIN_CHUNK)
    } else {
        1
    };
    let parts = wanted.max(k.div_ceil(MAX_CHUNK)).max(2);
    let chunk = k.div_ceil(parts).next_multiple_of(16);
    Some((k.div_ceil(chunk), chunk))
}
