//! Program sequences (the seed's FIG. 6B): programs with formal buffer parameters, their launch
//! specifications and executor kind. A sequence is independent of the actual buffers, so a cache can
//! instantiate it again on new ports.

use super::kernel::FusedKernel;
use crate::ir::{DType, Intrinsic, Shape, Site};
use std::sync::Arc;

/// Index of a formal buffer parameter of a [`ProgramSequence`].
pub type FormalId = u32;

/// What a formal buffer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FormalRole {
    /// Computed before the sequence; bound to an existing buffer.
    Input,
    /// Computed here and still held by the application.
    Output,
    /// Computed and consumed here; released when the sequence's last program is done.
    Temp,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Formal {
    pub dtype: DType,
    pub len: usize,
    pub role: FormalRole,
}

/// Which kind of executor runs a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecutorKind {
    Cpu,
}

/// How a program is launched: the domain is cut into `tiles` work units of `tile` elements.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LaunchSpec {
    pub domain_len: usize,
    pub tile: usize,
    pub tiles: usize,
    /// Whether a final reduction stage follows the tiles.
    pub final_stage: bool,
}

/// A hand-written kernel call (the seed's intrinsic library).
#[derive(Debug, Clone, PartialEq)]
pub struct IntrinsicCall {
    pub op: Intrinsic,
    pub in_shapes: Vec<Shape>,
    pub in_dtypes: Vec<DType>,
    pub out_shape: Shape,
    pub dtype: DType,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kernel {
    Fused(FusedKernel),
    Intrinsic(IntrinsicCall),
}

/// One program of a sequence: a kernel bound to formal buffers.
#[derive(Debug, Clone)]
pub struct Program {
    pub kernel: Arc<Kernel>,
    pub inputs: Vec<FormalId>,
    pub outputs: Vec<FormalId>,
    pub launch: LaunchSpec,
    pub executor: ExecutorKind,
    /// The user's call sites of the IR nodes this program computes (shared: every task of the
    /// program carries them).
    pub sites: Arc<[Site]>,
}

/// The result of program generation for one flush.
#[derive(Debug, Clone, Default)]
pub struct ProgramSequence {
    pub programs: Vec<Program>,
    pub formals: Vec<Formal>,
}

impl ProgramSequence {
    /// A readable listing of every program: kernels with their instructions and call sites,
    /// intrinsic calls, and the formal buffers.
    pub fn describe(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "program sequence: {} programs, {} buffers",
            self.programs.len(),
            self.formals.len()
        );
        for (f, formal) in self.formals.iter().enumerate() {
            let _ = writeln!(
                s,
                "  buffer {f}: {:?} {} x {}",
                formal.role, formal.len, formal.dtype
            );
        }
        for (i, p) in self.programs.iter().enumerate() {
            let _ = write!(
                s,
                "program {i}: inputs {:?} outputs {:?}, {} tiles of {}: ",
                p.inputs, p.outputs, p.launch.tiles, p.launch.tile
            );
            match &*p.kernel {
                Kernel::Fused(k) => s.push_str(&k.describe()),
                Kernel::Intrinsic(c) => {
                    let _ = writeln!(
                        s,
                        "intrinsic {} {:?} -> {:?} ({})",
                        c.op.name(),
                        c.in_shapes,
                        c.out_shape,
                        p.sites
                            .iter()
                            .map(|s| s.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
            }
        }
        s
    }
}
