//! Blocked LU on the GPU (issue 21): `lu`, `solve` and `inv` of matrices larger than the
//! batched kernels take (`n > 64`), and `det` and `slogdet` of every size, batched over the
//! leading axes (every pass grids over the batch). One multi-pass [`GpuPlan`] per call shape
//! ([`Blocked::plan`]); its kernels come from `opencl.rs` and `wgsl.rs`, which print the same
//! entries (see [`Entry`]).
//!
//! **The algorithm** (right-looking, LAPACK getrf's with panels of width [`Blocked::nb`]): a
//! working matrix `W [batch, n, ld]` holds `A`, and for `solve`/`inv` the right-hand sides
//! beside it (`[A | B]`, `B` the identity for `inv`), so the factorisation's row interchanges
//! and eliminations carry `B` to `L^-1 P B` with no forward substitution of its own. Per panel of
//! columns `k0 .. k0 + w`:
//! 1. `af_lu_panel` (one work-group of 256 per matrix): getf2 on the panel's rows `k0 .. n` in
//!    global memory, the pivot of each column the first largest `|a|` (a tree reduction over the
//!    threads' first maxima; NaN never chosen; row `k` itself when the column is zero), the row
//!    swap within the panel, the column scaled by the pivot and the panel's rank-1 update. An
//!    exact zero pivot skips its column, as getf2; for `solve` and `inv` it sets the fault word.
//!    From n = 512 to 4096 the panel is [`LEAF_NB`] = 8 columns wide and held in registers
//!    instead (`leaf.rs`): the wide panel's per-column sweeps over global memory by one
//!    work-group were most of the time at n = 4096 (337 ms against cuSOLVER's 13 ms on an H200);
//!    narrow panels cost more launches and trailing-update passes, which run on the whole GPU.
//!    The back substitution keeps 64-row blocks ([`Blocked::back_nb`]).
//! 2. `af_lu_rows` (a thread per column): the panel's `w` interchanges applied to the other
//!    columns in order (`lu`: all of them, so the stored `L` is LAPACK's; the others: only the
//!    columns right of the panel), then `U12 = L11^-1 A12` by forward substitution.
//! 3. `af_lu_update`: `A22 -= L21 U12` over the trailing rows and columns (the right-hand sides
//!    included), a 64 x 64 output tile per work-group staged through local memory in steps of 16,
//!    4 x 4 outputs per thread. The matmul intrinsic's generator writes `c = a b` of whole
//!    contiguous matrices, not a strided sub-block with `-=`, so this is a simple tiled update of
//!    its own (a faster one, register-blocked and double buffered like matmul's, is the next step).
//! 4. `af_lu_next`: one thread advances the step word.
//!
//! Then `solve`/`inv` run the blocked back substitution from the last panel up: `af_lu_btrsm`
//! (a thread per right-hand side: `X1 = U11^-1 X1`) and `af_lu_bupdate` (`X0 -= U01 X1`, the
//! same tiled update), and `af_lu_out` copies `X` out. `det`/`slogdet` end with `af_lu_det` (a
//! thread per matrix: the sign of the interchanges and the pivots' product kept as a mantissa
//! and a binary exponent, so no partial product overflows where the CPU's f64 product does not).
//!
//! **One source, many passes**: the panel's position is not a literal: a step word in scratch
//! (set by `af_lu_init`, advanced by `af_lu_next`) tells every kernel which panel it works on, so
//! a plan has nine entries whatever `n`, and only the passes' group counts (from `n` and the
//! panel) differ. On WGSL the step is read through `workgroupUniformLoad`, so the loops around
//! barriers stay uniform.
//!
//! **Output**: exactly the CPU entry's: `lu` writes the packed `[.., n, n + 1]` (factors, then the
//! pivot rows as floats) in place in its output (`ld = n + 1`); `solve`/`inv` `[.., n, r]`;
//! `det` `[..]`, `slogdet` `[.., 2]`.
//!
//! **Singular matrices**: `solve` and `inv` set the fault word and the GPU executor runs the call
//! again on the CPU for its error (batch index, pivot, the user's line), as the batched kernels.
//!
//! **What runs here**: f32 on both targets, f64 on OpenCL devices with `cl_khr_fp64`; WGSL
//! indices are 32-bit, so a call whose working matrices exceed `2^31` elements stays on the CPU.
//! `ARRAYFLOW_LINALG_GPU_BLOCKED=off` keeps every call of this module on the CPU (faer), for
//! comparisons; `ARRAYFLOW_LINALG_GPU_NB` (8, 32 or 64) overrides the panel width.
//!
//! **Speed** (not measured yet; the rows of `benches/linalg.rs` are there for an H100): the panel
//! runs on one work-group per matrix reading global memory, the main cost at large `n` after
//! the update; a single right-hand side costs `n / nb` back-substitution steps of three
//! launches each.

pub mod leaf;
pub mod opencl;
pub mod wgsl;

use super::batch_of;
use crate::ir::{DType, Intrinsic};
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Unsupported};
use crate::proggen::sequence::IntrinsicCall;

/// Threads of every work-group but `af_lu_next`'s.
pub const LOCAL: u32 = 256;
/// The update's output tile (rows and columns).
pub const TILE: usize = 64;
/// The update's step along the inner extent.
pub const TK: usize = 16;
/// The register panel's width (see [`Blocked::leaf`]).
pub const LEAF_NB: usize = 8;
/// Most rows of the register panel one thread holds (`LEAF_NB` registers each).
pub const LEAF_ROWS: usize = 16;
/// The sizes that factor with register panels by default.
pub const LEAF_MIN_N: usize = 512;
pub const LEAF_MAX_N: usize = LEAF_ROWS * LOCAL as usize;
/// Most work-groups of one pass (WebGPU's per-dimension limit); grid-stride loops do the rest.
pub const MAX_GROUPS: usize = 65535;

/// Whether this module's kernels run (yes unless `ARRAYFLOW_LINALG_GPU_BLOCKED=off`).
pub fn enabled() -> bool {
    std::env::var("ARRAYFLOW_LINALG_GPU_BLOCKED").map_or(true, |v| v != "off" && v != "0")
}

/// What a blocked call computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routine {
    Lu,
    Solve,
    Inv,
    Det,
    Slogdet,
}

/// The entries of a plan (one source holds those the routine needs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// `W` from `a` (and `b` or the identity); the step word set to 0.
    Init,
    Panel,
    Rows,
    Update,
    Next,
    Btrsm,
    Bupdate,
    Out,
    Det,
}

impl Entry {
    /// The entry point's name.
    pub fn name(self) -> &'static str {
        match self {
            Entry::Init => "af_lu_init",
            Entry::Panel => "af_lu_panel",
            Entry::Rows => "af_lu_rows",
            Entry::Update => "af_lu_update",
            Entry::Next => "af_lu_next",
            Entry::Btrsm => "af_lu_btrsm",
            Entry::Bupdate => "af_lu_bupdate",
            Entry::Out => "af_lu_out",
            Entry::Det => "af_lu_det",
        }
    }
}

/// The shape of one blocked call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub routine: Routine,
    pub dtype: DType,
    pub n: usize,
    /// Right-hand-side columns (`n` for `inv`, 0 for `lu`, `det`, `slogdet`).
    pub r: usize,
    /// Panel width.
    pub nb: usize,
    /// Matrices in the (broadcast) output batch.
    pub count: usize,
    /// The output's batch shape, and those of `a` and `b`.
    pub batch: Vec<usize>,
    pub a_batch: Vec<usize>,
    pub b_batch: Vec<usize>,
    /// Row stride of `W` (`n + 1` for `lu`, whose output is `W`; `n + r` otherwise).
    pub ld: usize,
    /// Columns of `W` the factorisation works on (`n + r`).
    pub ncols: usize,
}

/// The scratch buffers of a plan, by role.
#[derive(Debug, Clone, Copy)]
pub struct Scratch {
    pub fault: Option<u32>,
    pub step: u32,
    pub piv: u32,
    /// `W`: scratch, or output 0 for `lu`.
    pub w: BufArg,
}

impl Blocked {
    /// The layout of `call`, or why it stays elsewhere (`max_elems`: the largest element index
    /// the target's kernels address).
    pub fn of(call: &IntrinsicCall, max_elems: u64) -> Result<Blocked, Unsupported> {
        if !enabled() {
            return Err(Unsupported(
                "the blocked GPU LU is turned off (ARRAYFLOW_LINALG_GPU_BLOCKED=off)".into(),
            ));
        }
        let routine = match call.op {
            Intrinsic::Lu => Routine::Lu,
            Intrinsic::Solve => Routine::Solve,
            Intrinsic::Inv => Routine::Inv,
            Intrinsic::Det => Routine::Det,
            Intrinsic::Slogdet => Routine::Slogdet,
            _ => {
                return Err(Unsupported(format!(
                    "{} has no blocked GPU kernel",
                    call.op.name()
                )));
            }
        };
        let s0 = &call.in_shapes[0];
        let n = s0[s0.len() - 1];
        let (r, b_batch) = match routine {
            Routine::Solve => {
                let s1 = &call.in_shapes[1];
                (s1[s1.len() - 1], batch_of(s1, 2).to_vec())
            }
            Routine::Inv => (n, Vec::new()),
            _ => (0, Vec::new()),
        };
        let core = match routine {
            Routine::Det => 0,
            Routine::Slogdet => 1,
            _ => 2,
        };
        let batch = batch_of(&call.out_shape, core).to_vec();
        let count: usize = batch.iter().product();
        if n == 0 || count == 0 || (matches!(routine, Routine::Solve) && r == 0) {
            return Err(Unsupported("an empty blocked LU".into()));
        }
        let ld = if routine == Routine::Lu { n + 1 } else { n + r };
        let total = (count * n * ld.max(n + r)) as u64;
        if total > max_elems {
            return Err(Unsupported(format!(
                "blocked {} of {count} x {n} x {n}: more elements than the target indexes",
                call.op.name()
            )));
        }
        let nb = crate::settings::number("ARRAYFLOW_LINALG_GPU_NB")
            .filter(|&v| v == LEAF_NB || v == 32 || v == 64)
            .unwrap_or(match n {
                ..=256 => 32,
                LEAF_MIN_N..=LEAF_MAX_N => LEAF_NB,
                _ => 64,
            });
        Ok(Blocked {
            routine,
            dtype: call.dtype,
            n,
            r,
            nb,
            count,
            batch,
            a_batch: batch_of(s0, 2).to_vec(),
            b_batch,
            ld,
            ncols: n + r,
        })
    }

    /// Panels.
    pub fn panels(&self) -> usize {
        self.n.div_ceil(self.nb)
    }

    /// Whether the panel runs from registers ([`LEAF_NB`] columns, each thread holding at most
    /// [`LEAF_ROWS`] of the panel's rows).
    pub fn leaf(&self) -> bool {
        self.nb == LEAF_NB && self.n.div_ceil(LOCAL as usize) <= LEAF_ROWS
    }

    /// The back substitution's block (wider than narrow factorisation panels: its steps cost
    /// three launches each whatever the width, and one thread per right-hand side).
    pub fn back_nb(&self) -> usize {
        if self.nb == LEAF_NB { 64 } else { self.nb }
    }

    /// Blocks of the back substitution.
    pub fn back_panels(&self) -> usize {
        self.n.div_ceil(self.back_nb())
    }

    /// Whether the plan back-substitutes right-hand sides.
    pub fn solves(&self) -> bool {
        matches!(self.routine, Routine::Solve | Routine::Inv)
    }

    /// The scratch buffers and their bytes.
    pub fn scratch(&self) -> (Scratch, Vec<u64>) {
        let el = self.dtype.size() as u64;
        let mut bytes = Vec::new();
        let fault = self.solves().then(|| {
            bytes.push(4);
            0
        });
        let step = bytes.len() as u32;
        bytes.push(4);
        let piv = bytes.len() as u32;
        bytes.push((self.count * self.n * 4) as u64);
        let w = if self.routine == Routine::Lu {
            BufArg::Output(0)
        } else {
            bytes.push((self.count * self.n * self.ld) as u64 * el);
            BufArg::Scratch(bytes.len() as u32 - 1)
        };
        (
            Scratch {
                fault,
                step,
                piv,
                w,
            },
            bytes,
        )
    }

    /// The buffers entry `e` binds, in its parameter order.
    pub fn buffers(&self, e: Entry) -> Vec<BufArg> {
        let (s, _) = self.scratch();
        let step = BufArg::Scratch(s.step);
        let piv = BufArg::Scratch(s.piv);
        match e {
            Entry::Init => {
                let mut v = vec![BufArg::Input(0)];
                if self.routine == Routine::Solve {
                    v.push(BufArg::Input(1));
                }
                v.extend([s.w, step]);
                v
            }
            Entry::Panel => {
                let mut v = vec![s.w, piv, step];
                v.extend(s.fault.map(BufArg::Scratch));
                v
            }
            Entry::Rows => vec![s.w, piv, step],
            Entry::Update | Entry::Btrsm | Entry::Bupdate => vec![s.w, step],
            Entry::Next => vec![step],
            Entry::Out => vec![s.w, BufArg::Output(0)],
            Entry::Det => vec![s.w, piv, BufArg::Output(0)],
        }
    }

    /// The entries the routine's source holds.
    pub fn entries(&self) -> Vec<Entry> {
        let mut v = vec![
            Entry::Init,
            Entry::Panel,
            Entry::Rows,
            Entry::Update,
            Entry::Next,
        ];
        match self.routine {
            Routine::Lu => {}
            Routine::Solve | Routine::Inv => v.extend([Entry::Btrsm, Entry::Bupdate, Entry::Out]),
            Routine::Det | Routine::Slogdet => v.push(Entry::Det),
        }
        v
    }

    /// The plan over `source` (which holds [`Blocked::entries`]).
    pub fn plan(&self, source: String) -> GpuPlan {
        let (s, scratch) = self.scratch();
        let (n, nb, count) = (self.n, self.nb, self.count);
        let groups = |items: usize| items.div_ceil(LOCAL as usize).min(MAX_GROUPS) as u32;
        let tiles = |rows: usize, cols: usize| {
            (count * rows.div_ceil(TILE) * cols.div_ceil(TILE)).min(MAX_GROUPS) as u32
        };
        let mut passes = Vec::new();
        let mut pass = |e: Entry, groups: u32| {
            passes.push(Pass {
                entry: e.name().into(),
                buffers: self.buffers(e),
                params: false,
                groups,
                local: if e == Entry::Next { 1 } else { LOCAL },
            })
        };
        pass(Entry::Init, groups(count * n * self.ncols));
        let panels = self.panels();
        for p in 0..panels {
            let k0 = p * nb;
            let w = nb.min(n - k0);
            pass(Entry::Panel, count.min(MAX_GROUPS) as u32);
            let cols = if self.routine == Routine::Lu {
                self.ncols
            } else {
                self.ncols - k0 - w
            };
            pass(Entry::Rows, groups(count * cols));
            pass(Entry::Update, tiles(n - k0 - w, self.ncols - k0 - w));
            pass(Entry::Next, 1);
        }
        match self.routine {
            Routine::Lu => {}
            Routine::Solve | Routine::Inv => {
                let (bpanels, bnb) = (self.back_panels(), self.back_nb());
                for q in 0..bpanels {
                    let k0 = (bpanels - 1 - q) * bnb;
                    pass(Entry::Btrsm, groups(count * self.r));
                    pass(Entry::Bupdate, tiles(k0, self.r));
                    pass(Entry::Next, 1);
                }
                pass(Entry::Out, groups(count * n * self.r));
            }
            Routine::Det | Routine::Slogdet => pass(Entry::Det, groups(count)),
        }
        GpuPlan {
            source,
            scratch,
            passes,
            fault: s.fault,
            immediate_words: None,
            kept: None,
            range: None,
        }
    }
}

/// Everything the two dialects print from, as plain numbers.
#[derive(Debug, Clone, Copy)]
pub struct Consts {
    pub n: usize,
    pub r: usize,
    pub nb: usize,
    pub count: usize,
    pub ld: usize,
    pub ncols: usize,
    pub panels: usize,
    /// The back substitution's block and blocks ([`Blocked::back_nb`]).
    pub back_nb: usize,
    pub back_panels: usize,
    /// `n * ld`: elements of one working matrix.
    pub mat: usize,
}

impl Blocked {
    /// The numbers the kernels take as literals.
    pub fn consts(&self) -> Consts {
        Consts {
            n: self.n,
            r: self.r,
            nb: self.nb,
            count: self.count,
            ld: self.ld,
            ncols: self.ncols,
            panels: self.panels(),
            back_nb: self.back_nb(),
            back_panels: self.back_panels(),
            mat: self.n * self.ld,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(op: Intrinsic, shapes: Vec<Vec<usize>>, out: Vec<usize>) -> IntrinsicCall {
        let in_dtypes = vec![DType::F32; shapes.len()];
        IntrinsicCall {
            op,
            in_shapes: shapes
                .into_iter()
                .map(|s| s.into_iter().collect())
                .collect(),
            in_dtypes,
            out_shape: out.into_iter().collect(),
            dtype: DType::F32,
        }
    }

    /// Every panel has its four passes, every back-substitution step its three, and the group
    /// counts shrink with the trailing matrix (zero where nothing trails).
    #[test]
    fn plans_walk_every_panel() {
        let c = call(
            Intrinsic::Solve,
            vec![vec![2, 100, 100], vec![2, 100, 3]],
            vec![2, 100, 3],
        );
        let b = Blocked::of(&c, u32::MAX as u64).unwrap();
        assert_eq!((b.nb, b.panels(), b.ld), (32, 4, 103));
        let plan = b.plan(String::new());
        assert_eq!(plan.passes.len(), 1 + 4 * 4 + 3 * 4 + 1);
        assert_eq!(plan.fault, Some(0));
        let updates: Vec<u32> = plan
            .passes
            .iter()
            .filter(|p| p.entry == "af_lu_update")
            .map(|p| p.groups)
            .collect();
        // Trailing rows 68, 36, 4, 0 by columns 71, 39, 7, 3: 2x2, 1x1, 1x1, none; two matrices.
        assert_eq!(updates, vec![8, 2, 2, 0]);
        let l = call(Intrinsic::Lu, vec![vec![65, 65]], vec![65, 66]);
        let b = Blocked::of(&l, u32::MAX as u64).unwrap();
        let (s, bytes) = b.scratch();
        assert_eq!(s.w, BufArg::Output(0));
        assert_eq!(bytes, vec![4, 65 * 4]);
    }
}
