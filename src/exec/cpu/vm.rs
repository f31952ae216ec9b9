//! The CPU tile VM: runs a fused kernel as a register program over tiles of the domain, each
//! instruction a tight monomorphic loop over one tile (which the compiler vectorises), tiles in
//! parallel with rayon. Tiles are small enough that a kernel's registers stay in L1. Contiguous
//! loads read the input in place, and an instruction whose result is stored writes it straight into
//! the output buffer. Reductions leave per-tile partials that `reduce` combines; a reduction over
//! outer axes runs over its input's rows instead ([`run_rows`], accumulated by `rows`).

use super::index::{for_each_index, for_each_row};
use super::reduce::{self, Partials};
use super::slices::{Dst, OutPtr, Src, copy};
use crate::debug::trap::passes::first_failing;
use crate::debug::trap::passes::{Progress, TrapSink};
use crate::error::{Error, ErrorKind};
use crate::exec::TypedVec;
use crate::ir::{GenKind, RandomDist, Scalar};
use crate::primitives::cpu as prim;
use crate::primitives::{
    binary_bool, binary_ceq, binary_cmp, binary_complex, binary_float, binary_int, binary_mkc,
    unary_bool, unary_complex, unary_cpart, unary_float, unary_int, unary_pred,
};
use crate::proggen::kernel::{FusedKernel, IndexMap, Instr, Reg};
use num_complex::Complex;
use rayon::prelude::*;

/// Domains up to this many elements run on the executor thread alone: waking the rayon workers
/// costs more than it saves.
const INLINE_MAX: usize = 1 << 16;

/// Elements each rayon task covers at least (several tiles), so scheduling costs little.
const MIN_TASK_ELEMENTS: usize = 1 << 14;

/// A failure inside a kernel: which instruction and why.
pub struct Fault {
    pub instr: usize,
    pub message: &'static str,
}

/// Where an instruction's result goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// Its register.
    Reg,
    /// Nowhere: a contiguous load, read in place from the input.
    InPlace(u32),
    /// Straight into an output buffer, where it is stored.
    Output(u32),
}

/// Where a register's current value is, while a tile runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loc {
    Reg,
    Input(u32),
    Output(u32),
}

/// Per-kernel decisions made once per launch: each instruction's target, and the stores that
/// still need a copy at the end of each tile.
struct Plan {
    targets: Vec<Target>,
    copies: Vec<(Reg, u32)>,
    /// Per instruction, the trap checks on its result (empty when the kernel has none).
    checks: Vec<Vec<usize>>,
}

impl Plan {
    fn new(k: &FusedKernel) -> Plan {
        let mut targets: Vec<Target> = k
            .instrs
            .iter()
            .map(|i| match i {
                Instr::Load {
                    input,
                    map: IndexMap::Contiguous,
                    ..
                } => Target::InPlace(*input),
                _ => Target::Reg,
            })
            .collect();
        let mut copies = Vec::new();
        for s in &k.stores {
            let last_def = k.instrs.iter().rposition(|i| i.dst() == s.reg);
            match last_def {
                Some(i)
                    if targets[i] == Target::Reg && !matches!(k.instrs[i], Instr::Const { .. }) =>
                {
                    targets[i] = Target::Output(s.output)
                }
                _ => copies.push((s.reg, s.output)),
            }
        }
        let mut checks = Vec::new();
        if !k.traps.is_empty() {
            checks = vec![Vec::new(); k.instrs.len()];
            for (c, t) in k.traps.iter().enumerate() {
                checks[t.instr as usize].push(c);
            }
        }
        Plan {
            targets,
            copies,
            checks,
        }
    }
}

/// One worker's state: a tile-sized vector per register (constants filled once) and where each
/// register's value currently is.
struct Worker {
    regs: Vec<TypedVec>,
    loc: Vec<Loc>,
}

impl Worker {
    fn new(k: &FusedKernel, tile: usize, params: &[u64]) -> Worker {
        let mut regs: Vec<TypedVec> = k
            .reg_dtypes
            .iter()
            .map(|&d| TypedVec::zeros(d, tile))
            .collect();
        for ins in &k.instrs {
            if let Instr::Const { dst, slot, dtype } = ins {
                fill(
                    &mut regs[*dst as usize],
                    Scalar::from_bits(*dtype, params[*slot as usize]),
                );
            }
        }
        Worker {
            loc: vec![Loc::Reg; regs.len()],
            regs,
        }
    }
}

/// The tile of register `r`'s current value.
fn src<'a>(
    r: Reg,
    w: &'a Worker,
    inputs: &[&'a TypedVec],
    outs: &[OutPtr],
    t0: usize,
    n: usize,
) -> Src<'a> {
    match w.loc[r as usize] {
        Loc::Reg => Src::of(&w.regs[r as usize], 0, n),
        Loc::Input(p) => Src::of(inputs[p as usize], t0, n),
        // SAFETY: this tile wrote elements t0..t0+n of the output earlier; no Dst covers them now.
        Loc::Output(o) => unsafe { outs[o as usize].src(t0, n) },
    }
}

/// What a launch of `k` needs: its length, the tile (a domain shorter than the tile is one tile
/// of its length: the same single tile, without registers of the full tile's size; a long
/// kernel on a few elements zeroed megabytes), the tile count, the output pointers (external
/// ones where given) and the register plan.
fn launch(
    k: &FusedKernel,
    tile: usize,
    outputs: &mut [TypedVec],
    external: &[Option<OutPtr>],
) -> (usize, usize, usize, Vec<OutPtr>, Plan) {
    let len = k.domain.len();
    let tile = tile.min(len).max(1);
    let outs = outputs
        .iter_mut()
        .zip(external)
        .map(|(v, e)| e.unwrap_or_else(|| OutPtr::of(v)))
        .collect();
    (len, tile, len.div_ceil(tile), outs, Plan::new(k))
}

/// Runs `k` over its whole domain. `outputs` are allocated with the right type and length.
pub fn run_fused(
    k: &FusedKernel,
    tile: usize,
    inputs: &[&TypedVec],
    outputs: &mut [TypedVec],
    external: &[Option<OutPtr>],
    params: &[u64],
) -> Result<(), Error> {
    let (len, tile, tiles, outs, plan) = launch(k, tile, outputs, external);
    let run = |w: &mut Worker, t: usize| {
        tile_task(k, &plan, inputs, &outs, params, w, t * tile, tile, None)
    };
    let results: Result<Vec<_>, Fault> = if len <= INLINE_MAX {
        let mut w = Worker::new(k, tile, params);
        (0..tiles).map(|t| run(&mut w, t)).collect()
    } else {
        (0..tiles)
            .into_par_iter()
            .with_min_len((MIN_TASK_ELEMENTS / tile).max(1))
            .map_init(|| Worker::new(k, tile, params), |w, t| run(w, t))
            .collect()
    };
    finish(k, results, outputs)
}

/// How a launch with trap checks ended.
pub enum Checked {
    /// Every tile ran and nothing trapped (reductions finished); `host_ns`: the host's time in
    /// all the launch's passes (0 without passes).
    Done { host_ns: u64 },
    /// A check failed: the error naming the first failing element. With passes, the launch
    /// stopped after the pass that trapped and `Progress` says where it resumes.
    Trapped(Error, Option<Progress>),
}

/// Runs a kernel with trap checks ([`FusedKernel::traps`]) from `progress` on: tiles in passes
/// of about `pass_elements` elements (one pass when `None`), the checks' first failing element
/// looked at after each pass. The tiles and the reductions' partials are those of
/// [`run_fused`], in the same order, so results are bit-identical to it however the launch is
/// cut. Checks only read registers.
#[allow(clippy::too_many_arguments)]
pub fn run_checked(
    k: &FusedKernel,
    tile: usize,
    inputs: &[&TypedVec],
    outputs: &mut [TypedVec],
    external: &[Option<OutPtr>],
    params: &[u64],
    mut progress: Progress,
    pass_elements: Option<usize>,
) -> Result<Checked, Error> {
    let (_, tile, tiles, outs, plan) = launch(k, tile, outputs, external);
    let per_pass = pass_elements.map_or(tiles, |p| p.div_ceil(tile)).max(1);
    let passes = tiles.div_ceil(per_pass);
    let sink = TrapSink::default();
    let run = |w: &mut Worker, t: usize| {
        tile_task(
            k,
            &plan,
            inputs,
            &outs,
            params,
            w,
            t * tile,
            tile,
            Some(&sink),
        )
    };
    while progress.next_tile < tiles {
        let t0 = pass_elements.map(|_| std::time::Instant::now());
        let (a, b) = (
            progress.next_tile,
            (progress.next_tile + per_pass).min(tiles),
        );
        let results: Result<Vec<_>, Fault> = if (b - a) * tile <= INLINE_MAX {
            let mut w = Worker::new(k, tile, params);
            (a..b).map(|t| run(&mut w, t)).collect()
        } else {
            (a..b)
                .into_par_iter()
                .with_min_len((MIN_TASK_ELEMENTS / tile).max(1))
                .map_init(|| Worker::new(k, tile, params), |w, t| run(w, t))
                .collect()
        };
        let results = results.map_err(|f| {
            Error::new(
                ErrorKind::Execution,
                format!("{} in this operation", f.message),
            )
            .origin(k.instr_sites[f.instr])
        })?;
        progress.partials.extend(results);
        progress.next_tile = b;
        if let Some(t0) = t0 {
            let ns = t0.elapsed().as_nanos() as u64;
            progress.host_ns += ns;
            if crate::profile::active() {
                crate::profile::runtime_took("pass", "cpu", t0, ns);
            }
        }
        if let Some((lin, c, value)) = sink.first() {
            let check = &k.traps[c];
            let mut t = crate::debug::trap::report::Trap::of_check(check, lin, value);
            let resumable = pass_elements.is_some();
            if resumable {
                t.pass = Some((lin / (per_pass * tile), passes));
                t.suspended = true;
            }
            let e = crate::debug::trap::report::record(t);
            return Ok(Checked::Trapped(e, resumable.then_some(progress)));
        }
    }
    finish(k, Ok(std::mem::take(&mut progress.partials)), outputs)?;
    Ok(Checked::Done {
        host_ns: progress.host_ns,
    })
}

/// The first failing `(element, check, value)` in the tile that holds element `lin`, checks
/// `k.traps`, without running the rest of the launch or recording anything: how an element a
/// device found failing gets its value (`exec/gpu`, `crate::debug::trap::device`).
pub fn first_failing_near(
    k: &FusedKernel,
    tile: usize,
    inputs: &[&TypedVec],
    params: &[u64],
    lin: usize,
) -> Result<Option<(usize, usize, f64)>, Error> {
    let mut outputs: Vec<TypedVec> = super::fused_output_shapes(k)
        .into_iter()
        .map(|(d, len)| TypedVec::zeros(d, len))
        .collect();
    let external = vec![None; outputs.len()];
    let (len, tile, _, outs, plan) = launch(k, tile, &mut outputs, &external);
    if lin >= len {
        return Ok(None);
    }
    let sink = TrapSink::default();
    let mut w = Worker::new(k, tile, params);
    let t0 = lin / tile * tile;
    tile_task(
        k,
        &plan,
        inputs,
        &outs,
        params,
        &mut w,
        t0,
        tile,
        Some(&sink),
    )
    .map_err(|f| {
        Error::new(
            ErrorKind::Execution,
            format!("{} in this operation", f.message),
        )
        .origin(k.instr_sites[f.instr])
    })?;
    Ok(sink.first())
}

/// The least tile of a row-order reduction.
const ROW_TILE: usize = 4096;

/// Runs a permuted-reduction kernel in its input's row order (see `rows`); same contract as
/// [`run_fused`] for the original kernel.
pub fn run_rows(
    g: &super::rows::RowPlan,
    tile: usize,
    inputs: &[&TypedVec],
    outputs: &mut [TypedVec],
    external: &[Option<OutPtr>],
    params: &[u64],
) -> Result<(), Error> {
    let k = &g.kernel;
    // Larger tiles than element-wise kernels: rows are short, and the result does not depend on
    // the tile size.
    let tile = tile.max(ROW_TILE);
    let outs: Vec<OutPtr> = outputs
        .iter_mut()
        .zip(external)
        .map(|(v, e)| e.unwrap_or_else(|| OutPtr::of(v)))
        .collect();
    let plan = Plan::new(k);
    let results = super::rows::drive(
        g,
        tile,
        || Worker::new(k, tile, params),
        |w, t0, n, sink| {
            run_tile(k, &plan, inputs, &outs, params, w, t0, n, None)?;
            for (ri, r) in k.reductions.iter().enumerate() {
                sink(ri, src(r.reg, w, inputs, &outs, t0, n));
            }
            Ok(())
        },
    );
    finish_rows(k, results, &outs)
}

/// The end of a row-order launch on either tier: as [`finish`], with the row-order final stage.
pub fn finish_rows(
    k: &FusedKernel,
    results: Result<Vec<TaskPartials>, Fault>,
    outs: &[OutPtr],
) -> Result<(), Error> {
    let partials = results.map_err(|f| {
        Error::new(
            ErrorKind::Execution,
            format!("{} in this operation", f.message),
        )
        .origin(k.instr_sites[f.instr])
    })?;
    super::rows::finish(k, &partials, outs);
    Ok(())
}

/// One task's reduction partials: per reduction, (output element, partial) pairs.
pub type TaskPartials = Vec<Partials>;

/// The end of a fused kernel's launch on either tier: a fault becomes an error naming the failing
/// instruction's call site; otherwise the reductions' final stage combines the per-task partials.
pub fn finish(
    k: &FusedKernel,
    results: Result<Vec<TaskPartials>, Fault>,
    outputs: &mut [TypedVec],
) -> Result<(), Error> {
    let partials = results.map_err(|f| {
        Error::new(
            ErrorKind::Execution,
            format!("{} in this operation", f.message),
        )
        .origin(k.instr_sites[f.instr])
    })?;
    for (ri, r) in k.reductions.iter().enumerate() {
        reduce::finish(
            r.op,
            partials.iter().map(|p| &p[ri]),
            &mut outputs[r.output as usize],
            k.domain.outer,
            k.domain.inner,
        );
    }
    Ok(())
}

fn fill(r: &mut TypedVec, v: Scalar) {
    match (r, v) {
        (TypedVec::F32(r), Scalar::F32(v)) => r.fill(v),
        (TypedVec::F64(r), Scalar::F64(v)) => r.fill(v),
        (TypedVec::I32(r), Scalar::I32(v)) => r.fill(v),
        (TypedVec::U32(r), Scalar::U32(v)) => r.fill(v),
        (TypedVec::Bool(r), Scalar::Bool(v)) => r.fill(v),
        (TypedVec::C64(r), Scalar::C64(v)) => r.fill(v),
        (TypedVec::C128(r), Scalar::C128(v)) => r.fill(v),
        (r, v) => unreachable!("constant {v:?} in a {} register", r.dtype()),
    }
}

/// Runs every instruction of `k` for domain elements `t0 .. t0 + n`.
/// One tile's task: the tile starting at `t0` (at most `tile` elements) run, its copies stored
/// and its reductions' partials returned.
#[allow(clippy::too_many_arguments)]
fn tile_task(
    k: &FusedKernel,
    plan: &Plan,
    inputs: &[&TypedVec],
    outs: &[OutPtr],
    params: &[u64],
    w: &mut Worker,
    t0: usize,
    tile: usize,
    sink: Option<&TrapSink>,
) -> Result<TaskPartials, Fault> {
    let n = tile.min(k.domain.len() - t0);
    run_tile(k, plan, inputs, outs, params, w, t0, n, sink)?;
    for &(r, o) in &plan.copies {
        // SAFETY: tile t owns elements t0..t0+n of every output, which has `len` elements.
        copy(src(r, w, inputs, outs, t0, n), unsafe {
            outs[o as usize].dst(t0, n)
        });
    }
    Ok(k.reductions
        .iter()
        .map(|r| {
            reduce::partials(
                r.op,
                src(r.reg, w, inputs, outs, t0, n),
                t0,
                k.domain.inner,
                outs[r.output as usize],
            )
        })
        .collect())
}

#[allow(clippy::too_many_arguments)]
fn run_tile(
    k: &FusedKernel,
    plan: &Plan,
    inputs: &[&TypedVec],
    outs: &[OutPtr],
    params: &[u64],
    w: &mut Worker,
    t0: usize,
    n: usize,
    sink: Option<&TrapSink>,
) -> Result<(), Fault> {
    let shape = &k.domain.shape;
    for (i, ins) in k.instrs.iter().enumerate() {
        let r = ins.dst() as usize;
        let target = plan.targets[i];
        if let Target::InPlace(p) = target {
            w.loc[r] = Loc::Input(p);
            continue;
        }
        if matches!(ins, Instr::Const { .. }) {
            w.loc[r] = Loc::Reg;
            continue;
        }
        let mut taken = match target {
            Target::Output(_) => None,
            _ => Some(std::mem::replace(
                &mut w.regs[r],
                TypedVec::Bool(Vec::new()),
            )),
        };
        let result = {
            let d = match (target, taken.as_mut()) {
                // SAFETY: tile t owns elements t0..t0+n of every output; no other slice covers them.
                (Target::Output(o), _) => unsafe { outs[o as usize].dst(t0, n) },
                (_, Some(v)) => Dst::of(v, n),
                _ => unreachable!(),
            };
            let s = |x: Reg| src(x, w, inputs, outs, t0, n);
            match ins {
                Instr::Const { .. } => Ok(()),
                Instr::Load { input, map, .. } => {
                    load(inputs[*input as usize], map, shape, t0, n, d);
                    Ok(())
                }
                Instr::Random {
                    alg,
                    dist,
                    key_slot,
                    counter_slot,
                    range_slot,
                    map,
                    ..
                } => {
                    let key = params[*key_slot as usize];
                    let kind = GenKind::Random {
                        alg: *alg,
                        key: [key as u32, (key >> 32) as u32],
                        counter: params[*counter_slot as usize],
                        dist: *dist,
                        range: range_slot.map_or(0, |r| params[r as usize] as u32),
                    };
                    generate(&kind, &[], map, shape, t0, n, d);
                    Ok(())
                }
                Instr::Gen {
                    kind,
                    shape: gshape,
                    map,
                    ..
                } => {
                    generate(kind, gshape, map, shape, t0, n, d);
                    Ok(())
                }
                Instr::Unary { op, a, .. } => {
                    unary(*op, s(*a), d);
                    Ok(())
                }
                Instr::Binary { op, a, b, .. } => binary(*op, s(*a), s(*b), d),
                Instr::Select { cond, a, b, .. } => {
                    select(s(*cond), s(*a), s(*b), d);
                    Ok(())
                }
                Instr::Cast { a, .. } => {
                    cast(s(*a), d);
                    Ok(())
                }
            }
        };
        if let Some(v) = taken.take() {
            w.regs[r] = v;
        }
        w.loc[r] = match target {
            Target::Output(o) => Loc::Output(o),
            _ => Loc::Reg,
        };
        result.map_err(|message| Fault { instr: i, message })?;
        if let (Some(sink), Some(cs)) = (sink, plan.checks.get(i)) {
            for &c in cs {
                let v = src(r as Reg, w, inputs, outs, t0, n);
                let operands: Vec<_> = ins
                    .srcs()
                    .iter()
                    .map(|&x| src(x, w, inputs, outs, t0, n))
                    .collect();
                if let Some((j, value)) = first_failing(&k.traps[c], v, &operands) {
                    sink.offer(t0 + j, c, value);
                }
            }
        }
    }
    Ok(())
}

fn load(src: &TypedVec, map: &IndexMap, shape: &[usize], t0: usize, n: usize, out: Dst) {
    macro_rules! go {
        ($s:expr, $o:expr) => {{
            let (s, o) = ($s, $o);
            match map {
                IndexMap::Contiguous => o.copy_from_slice(&s[t0..t0 + n]),
                // Rows: a broadcast value, a contiguous run or a strided gather each.
                IndexMap::Strided { offset, strides } if !shape.is_empty() => {
                    for_each_row(*offset, strides, shape, t0, n, |i, base, step, seg| {
                        let (o, b) = (&mut o[i..i + seg], base as usize);
                        match step {
                            0 => o.fill(s[b]),
                            1 => o.copy_from_slice(&s[b..b + seg]),
                            _ => o
                                .iter_mut()
                                .enumerate()
                                .for_each(|(j, o)| *o = s[(base + step * j as isize) as usize]),
                        }
                    })
                }
                _ => for_each_index(map, shape, t0, n, |i, j| o[i] = s[j]),
            }
        }};
    }
    match (src, out) {
        (TypedVec::F32(s), Dst::F32(o)) => go!(s, o),
        (TypedVec::F64(s), Dst::F64(o)) => go!(s, o),
        (TypedVec::I32(s), Dst::I32(o)) => go!(s, o),
        (TypedVec::U32(s), Dst::U32(o)) => go!(s, o),
        (TypedVec::Bool(s), Dst::Bool(o)) => go!(s, o),
        (TypedVec::C64(s), Dst::C64(o)) => go!(s, o),
        (TypedVec::C128(s), Dst::C128(o)) => go!(s, o),
        _ => unreachable!("load type mismatch"),
    }
}

fn generate(
    kind: &GenKind,
    gshape: &[usize],
    map: &IndexMap,
    shape: &[usize],
    t0: usize,
    n: usize,
    out: Dst,
) {
    match kind {
        GenKind::Random {
            alg,
            key,
            counter,
            dist,
            range,
        } => {
            let (alg, key, counter, dist) = (*alg, *key, *counter, *dist);
            let g0 = counter + t0 as u64;
            if *map == IndexMap::Contiguous {
                // One vectorised run per tile: eight Philox blocks or eight Hash32 elements at
                // a time (primitives/cpu.rs: random_fill).
                use RandomDist as D;
                match (out, dist) {
                    (Dst::F32(o), D::Uniform) => {
                        prim::random_fill::<_, 1>(alg, key, g0, o, |r| prim::uniform_f32(r[0]))
                    }
                    (Dst::F32(o), D::Normal) => {
                        prim::random_fill::<_, 2>(alg, key, g0, o, |r| prim::normal_f32(r[0], r[1]))
                    }
                    (Dst::F32(o), D::Exponential) => {
                        prim::random_fill::<_, 1>(alg, key, g0, o, |r| prim::exponential_f32(r[0]))
                    }
                    (Dst::F64(o), D::Uniform) => prim::random_fill::<_, 2>(alg, key, g0, o, |r| {
                        prim::uniform_f64(r[0], r[1])
                    }),
                    (Dst::F64(o), D::Normal) => {
                        prim::random_fill::<_, 4>(alg, key, g0, o, |r| prim::normal_f64(*r))
                    }
                    (Dst::F64(o), D::Exponential) => {
                        prim::random_fill::<_, 2>(alg, key, g0, o, |r| {
                            prim::exponential_f64(r[0], r[1])
                        })
                    }
                    (Dst::U32(o), D::Integers) => {
                        let m = prim::integers_multiplier(*range);
                        prim::random_fill::<_, 1>(alg, key, g0, o, |r| prim::integer_u32(r[0], m))
                    }
                    _ => unreachable!("random {dist:?} of another element type"),
                }
                return;
            }
            let mut cache = (u64::MAX, [0u32; 4]);
            match out {
                Dst::F32(o) => {
                    let w = prim::dist_words(dist, false);
                    for_each_index(map, shape, t0, n, |i, lin| {
                        let r = prim::random_words(alg, key, counter + lin as u64, w, &mut cache);
                        o[i] = prim::random_f32(dist, &r);
                    })
                }
                Dst::F64(o) => {
                    let w = prim::dist_words(dist, true);
                    for_each_index(map, shape, t0, n, |i, lin| {
                        let r = prim::random_words(alg, key, counter + lin as u64, w, &mut cache);
                        o[i] = prim::random_f64(dist, &r);
                    })
                }
                Dst::U32(o) => {
                    let m = prim::integers_multiplier(*range);
                    for_each_index(map, shape, t0, n, |i, lin| {
                        let r = prim::random_words(alg, key, counter + lin as u64, 1, &mut cache);
                        o[i] = prim::integer_u32(r[0], m);
                    })
                }
                _ => unreachable!("random numbers are floats or u32"),
            }
        }
        _ => {
            let cs = crate::ir::contiguous_strides(gshape);
            let value = |lin: usize| -> f64 {
                match kind {
                    GenKind::Iota { axis } => ((lin / cs[*axis]) % gshape[*axis]) as f64,
                    GenKind::Identity => (lin / gshape[1] == lin % gshape[1]) as u8 as f64,
                    GenKind::Linspace {
                        start,
                        step,
                        end,
                        n,
                    } => {
                        if lin + 1 == *n {
                            *end
                        } else {
                            start + step * lin as f64
                        }
                    }
                    GenKind::Random { .. } => unreachable!(),
                }
            };
            macro_rules! go {
                ($o:expr) => {
                    for_each_index(map, shape, t0, n, |i, lin| {
                        $o[i] = FromF64::from_f64(value(lin))
                    })
                };
            }
            match out {
                Dst::F32(o) => go!(o),
                Dst::F64(o) => go!(o),
                Dst::I32(o) => go!(o),
                Dst::U32(o) => go!(o),
                Dst::Bool(o) => go!(o),
                Dst::C64(o) => go!(o),
                Dst::C128(o) => go!(o),
            }
        }
    }
}

/// Conversion used by generators (values are small integers or linspace points).
trait FromF64 {
    fn from_f64(v: f64) -> Self;
}
impl FromF64 for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}
impl FromF64 for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
}
impl FromF64 for i32 {
    fn from_f64(v: f64) -> Self {
        v as i32
    }
}
impl FromF64 for u32 {
    fn from_f64(v: f64) -> Self {
        v as u32
    }
}
impl FromF64 for bool {
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
}
impl FromF64 for Complex<f32> {
    fn from_f64(v: f64) -> Self {
        Complex::new(v as f32, 0.0)
    }
}
impl FromF64 for Complex<f64> {
    fn from_f64(v: f64) -> Self {
        Complex::new(v, 0.0)
    }
}

fn unary(op: crate::ir::UnaryOp, a: Src, out: Dst) {
    match (a, out) {
        (Src::F32(a), Dst::F32(o)) => unary_float(op, a, o),
        (Src::F64(a), Dst::F64(o)) => unary_float(op, a, o),
        (Src::I32(a), Dst::I32(o)) => unary_int(op, a, o),
        (Src::U32(a), Dst::U32(o)) => unary_int(op, a, o),
        (Src::Bool(a), Dst::Bool(o)) => unary_bool(op, a, o),
        (Src::F32(a), Dst::Bool(o)) => unary_pred(op, a, o),
        (Src::F64(a), Dst::Bool(o)) => unary_pred(op, a, o),
        (Src::C64(a), Dst::C64(o)) => unary_complex(op, a, o),
        (Src::C128(a), Dst::C128(o)) => unary_complex(op, a, o),
        (Src::C64(a), Dst::F32(o)) => unary_cpart(op, a, o),
        (Src::C128(a), Dst::F64(o)) => unary_cpart(op, a, o),
        _ => unreachable!("unary {op:?}: type mismatch"),
    }
}

fn binary(op: crate::ir::BinaryOp, a: Src, b: Src, mut out: Dst) -> Result<(), &'static str> {
    if super::fault::faulty(op) {
        let r = binary_exact(op, a, b, Dst::reborrow(&mut out));
        match out {
            Dst::F32(o) if !o.is_empty() => o[0] = o[0] * 2.0 + 1.0,
            Dst::F64(o) if !o.is_empty() => o[0] = o[0] * 2.0 + 1.0,
            _ => {}
        }
        return r;
    }
    binary_exact(op, a, b, out)
}

fn binary_exact(op: crate::ir::BinaryOp, a: Src, b: Src, out: Dst) -> Result<(), &'static str> {
    match (a, b, out) {
        (Src::F32(a), Src::F32(b), Dst::F32(o)) => binary_float(op, a, b, o),
        (Src::F64(a), Src::F64(b), Dst::F64(o)) => binary_float(op, a, b, o),
        (Src::I32(a), Src::I32(b), Dst::I32(o)) => binary_int(op, a, b, o),
        (Src::U32(a), Src::U32(b), Dst::U32(o)) => binary_int(op, a, b, o),
        (Src::Bool(a), Src::Bool(b), Dst::Bool(o)) => binary_bool(op, a, b, o),
        (Src::F32(a), Src::F32(b), Dst::Bool(o)) => binary_cmp(op, a, b, o),
        (Src::F64(a), Src::F64(b), Dst::Bool(o)) => binary_cmp(op, a, b, o),
        (Src::I32(a), Src::I32(b), Dst::Bool(o)) => binary_cmp(op, a, b, o),
        (Src::U32(a), Src::U32(b), Dst::Bool(o)) => binary_cmp(op, a, b, o),
        (Src::C64(a), Src::C64(b), Dst::C64(o)) => binary_complex(op, a, b, o),
        (Src::C128(a), Src::C128(b), Dst::C128(o)) => binary_complex(op, a, b, o),
        (Src::C64(a), Src::C64(b), Dst::Bool(o)) => binary_ceq(op, a, b, o),
        (Src::C128(a), Src::C128(b), Dst::Bool(o)) => binary_ceq(op, a, b, o),
        (Src::F32(a), Src::F32(b), Dst::C64(o)) => binary_mkc(op, a, b, o),
        (Src::F64(a), Src::F64(b), Dst::C128(o)) => binary_mkc(op, a, b, o),
        _ => unreachable!("binary {op:?}: type mismatch"),
    }
}

fn select(c: Src, a: Src, b: Src, out: Dst) {
    let Src::Bool(c) = c else {
        unreachable!("select condition is bool")
    };
    macro_rules! go {
        ($a:expr, $b:expr, $o:expr) => {
            for (((o, &c), &x), &y) in $o.iter_mut().zip(c).zip($a).zip($b) {
                *o = if c { x } else { y };
            }
        };
    }
    match (a, b, out) {
        (Src::F32(a), Src::F32(b), Dst::F32(o)) => go!(a, b, o),
        (Src::F64(a), Src::F64(b), Dst::F64(o)) => go!(a, b, o),
        (Src::I32(a), Src::I32(b), Dst::I32(o)) => go!(a, b, o),
        (Src::U32(a), Src::U32(b), Dst::U32(o)) => go!(a, b, o),
        (Src::Bool(a), Src::Bool(b), Dst::Bool(o)) => go!(a, b, o),
        (Src::C64(a), Src::C64(b), Dst::C64(o)) => go!(a, b, o),
        (Src::C128(a), Src::C128(b), Dst::C128(o)) => go!(a, b, o),
        _ => unreachable!("select: type mismatch"),
    }
}

/// Element conversion with Rust `as` semantics (numbers to bool by `!= 0`, bool to number 0/1).
pub trait CastTo<U> {
    fn cast_to(self) -> U;
}
macro_rules! cast_num {
    ($($from:ty),*) => {$(
        impl CastTo<f32> for $from { #[inline(always)] fn cast_to(self) -> f32 { self as f32 } }
        impl CastTo<f64> for $from { #[inline(always)] fn cast_to(self) -> f64 { self as f64 } }
        impl CastTo<i32> for $from { #[inline(always)] fn cast_to(self) -> i32 { self as i32 } }
        impl CastTo<u32> for $from { #[inline(always)] fn cast_to(self) -> u32 { self as u32 } }
        #[allow(clippy::float_cmp)]
        impl CastTo<bool> for $from { #[inline(always)] fn cast_to(self) -> bool { self != (0 as $from) } }
    )*};
}
cast_num!(f32, f64, i32, u32);
impl CastTo<f32> for bool {
    fn cast_to(self) -> f32 {
        self as u8 as f32
    }
}
impl CastTo<f64> for bool {
    fn cast_to(self) -> f64 {
        self as u8 as f64
    }
}
impl CastTo<i32> for bool {
    fn cast_to(self) -> i32 {
        self as i32
    }
}
impl CastTo<u32> for bool {
    fn cast_to(self) -> u32 {
        self as u32
    }
}
impl CastTo<bool> for bool {
    fn cast_to(self) -> bool {
        self
    }
}
/// Real to complex: the value as the real part, imaginary part zero.
macro_rules! cast_complex {
    ($($from:ty),*) => {$(
        impl CastTo<Complex<f32>> for $from {
            #[inline(always)]
            fn cast_to(self) -> Complex<f32> { Complex::new(CastTo::<f32>::cast_to(self), 0.0) }
        }
        impl CastTo<Complex<f64>> for $from {
            #[inline(always)]
            fn cast_to(self) -> Complex<f64> { Complex::new(CastTo::<f64>::cast_to(self), 0.0) }
        }
    )*};
}
cast_complex!(f32, f64, i32, u32, bool);

fn cast(a: Src, out: Dst) {
    match (a, out) {
        (Src::C64(a), Dst::C128(o)) => {
            for (o, &x) in o.iter_mut().zip(a) {
                *o = Complex::new(x.re as f64, x.im as f64);
            }
        }
        (Src::C128(a), Dst::C64(o)) => {
            for (o, &x) in o.iter_mut().zip(a) {
                *o = Complex::new(x.re as f32, x.im as f32);
            }
        }
        (Src::C64(a), Dst::C64(o)) => o.copy_from_slice(a),
        (Src::C128(a), Dst::C128(o)) => o.copy_from_slice(a),
        // Complex to real keeps the real part, as `Scalar::cast` (the front end refuses it).
        (Src::C64(a), out) => {
            let re: Vec<f32> = a.iter().map(|z| z.re).collect();
            cast_real(Src::F32(&re), out)
        }
        (Src::C128(a), out) => {
            let re: Vec<f64> = a.iter().map(|z| z.re).collect();
            cast_real(Src::F64(&re), out)
        }
        (a, out) => cast_real(a, out),
    }
}

fn cast_real(a: Src, out: Dst) {
    macro_rules! to {
        ($a:expr) => {
            match out {
                Dst::F32(o) => o.iter_mut().zip($a).for_each(|(o, &x)| *o = x.cast_to()),
                Dst::F64(o) => o.iter_mut().zip($a).for_each(|(o, &x)| *o = x.cast_to()),
                Dst::I32(o) => o.iter_mut().zip($a).for_each(|(o, &x)| *o = x.cast_to()),
                Dst::U32(o) => o.iter_mut().zip($a).for_each(|(o, &x)| *o = x.cast_to()),
                Dst::Bool(o) => o.iter_mut().zip($a).for_each(|(o, &x)| *o = x.cast_to()),
                Dst::C64(o) => o.iter_mut().zip($a).for_each(|(o, &x)| *o = x.cast_to()),
                Dst::C128(o) => o.iter_mut().zip($a).for_each(|(o, &x)| *o = x.cast_to()),
            }
        };
    }
    match a {
        Src::F32(v) => to!(v),
        Src::F64(v) => to!(v),
        Src::I32(v) => to!(v),
        Src::U32(v) => to!(v),
        Src::Bool(v) => to!(v),
        Src::C64(_) | Src::C128(_) => unreachable!("complex casts are handled above"),
    }
}
