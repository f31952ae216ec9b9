//! Where each program runs when several executors are live (`ARRAYFLOW_DEVICE=all` or a list):
//! the scheduler's cost model (the seed's E-Scheduler routing, l.101-102, l.350-351).
//!
//! **The model.** Each executor has a nominal profile ([`Profile`]) taken from what the device
//! inventory says about it (its kind and, for the CPU, the number of threads): instruction
//! throughput, memory bandwidth, launch latency and the bandwidth of a move to or from the host.
//! A program's time on executor `e` is
//!
//! ```text
//!   start(e)   = max(clock[e], ready time of its inputs)
//!   finish(e)  = start(e) + moves of inputs e does not hold + launch(e)
//!                + max(instructions x elements / throughput(e), bytes / bandwidth(e))
//! ```
//!
//! where a fused kernel's instructions are the primitive table's estimates summed
//! (`FusedKernel::cost`) and an intrinsic's are its registry entry's `Cost`. The program goes to
//! the executor with the earliest finish (ties: the lower index among devices, the CPU last), and
//! that executor's virtual clock moves to the finish. This is list scheduling on estimated times:
//! independent programs spread over devices once one device's queue is longer than a move, and a
//! program follows its data when moving it would cost more than it saves.
//!
//! **Deterministic.** The model keeps its own view of where each buffer will be and when
//! (`Loc`), updated from the messages alone (uploads, routed programs, moves it asks for, reads),
//! never from completions, so placement is a function of the program, its sizes and the device
//! list, not of timing. A read advances the model's "now" to the read buffer's ready time (the
//! application waited that long). `ARRAYFLOW_PLACEMENT=round-robin` rotates programs over the
//! executors that can run them instead (to test moves between every pair of devices); `spread`
//! sends each program to the executor its kernel's hash picks among those that can run it, so
//! consecutive programs land on different devices (moves between every pair) while the same
//! program always runs on the same executor, whatever ran before it (the suite's run under
//! `ARRAYFLOW_DEVICE=all` in CI: a run repeated, or repeated under the debugger, gives the same
//! bits); `first` keeps the single-device rule (the first device that can run it, else the CPU).

use super::device::{Backend, DeviceInfo, DeviceKind};
use crate::ir::BufferId;
use crate::proggen::sequence::{Kernel, Program};
use ahash::AHashMap;

/// How programs are placed over several live executors (`ARRAYFLOW_PLACEMENT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// The cost model (the default with several executors).
    #[default]
    Cost,
    /// Programs rotate over the executors that can run them (for tests of moves).
    RoundRobin,
    /// Each program goes where its kernel's hash points among the executors that can run it:
    /// programs spread over every device, and the same program always lands on the same one.
    Spread,
    /// The first device that can run a program, else the CPU (the single-device rule).
    First,
}

impl Policy {
    /// `ARRAYFLOW_PLACEMENT=cost|round-robin|spread|first`; a bad value is reported and ignored.
    pub fn from_env() -> Policy {
        match std::env::var("ARRAYFLOW_PLACEMENT").as_deref() {
            Err(_) | Ok("") | Ok("cost") => Policy::Cost,
            Ok("round-robin") => Policy::RoundRobin,
            Ok("spread") => Policy::Spread,
            Ok("first") => Policy::First,
            Ok(v) => {
                tracing::warn!(target: "arrayflow::exec",
                    "ARRAYFLOW_PLACEMENT=`{v}` is not cost, round-robin, spread or first; using cost");
                Policy::Cost
            }
        }
    }
}

/// An executor's nominal speeds, in seconds and bytes (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    /// Instructions per second over all the executor's lanes.
    pub throughput: f64,
    /// Bytes per second between the executor and its own memory.
    pub bandwidth: f64,
    /// Seconds from hand-off to a kernel's start.
    pub launch: f64,
    /// Bytes per second of a move between the host and the executor (infinite for the CPU).
    pub link: f64,
}

impl Profile {
    /// The CPU executor with `threads` threads.
    pub fn cpu(threads: usize) -> Profile {
        Profile {
            throughput: threads as f64 * 2.0e9,
            bandwidth: 2.0e10,
            launch: 2.0e-6,
            link: f64::INFINITY,
        }
    }

    /// A device executor, by what the inventory says about it.
    pub fn device(d: &DeviceInfo) -> Profile {
        match d.kind {
            DeviceKind::Discrete => Profile {
                throughput: 2.0e13,
                bandwidth: 1.5e12,
                launch: 1.0e-5,
                link: 2.0e10,
            },
            DeviceKind::Integrated => Profile {
                throughput: 2.0e12,
                bandwidth: 1.0e11,
                launch: 2.0e-5,
                link: 4.0e10,
            },
            // PoCL's and lavapipe's devices: the host's cores behind a driver.
            DeviceKind::Cpu | DeviceKind::Other => {
                let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
                Profile {
                    throughput: threads as f64 * 1.0e9,
                    bandwidth: 1.0e10,
                    launch: match d.backend {
                        Backend::Wgpu => 1.0e-4,
                        _ => 5.0e-5,
                    },
                    link: 1.0e10,
                }
            }
        }
    }

    /// Seconds to run `program` here (launch and compute; moves excluded).
    pub fn run_time(&self, program: &Program, formal_bytes: u64) -> f64 {
        let (instructions, bytes) = work(program, formal_bytes);
        self.launch + (instructions / self.throughput).max(bytes / self.bandwidth)
    }
}

/// A program's instructions and the bytes it moves to and from memory.
fn work(program: &Program, formal_bytes: u64) -> (f64, f64) {
    match &*program.kernel {
        Kernel::Fused(k) => (k.cost() as f64 * k.domain.len() as f64, formal_bytes as f64),
        Kernel::Intrinsic(c) => {
            let cost = c.op.def().cost(c);
            (cost.flops as f64, cost.bytes.max(formal_bytes) as f64)
        }
    }
}

/// Where the model expects a buffer's value, and from when.
#[derive(Debug, Clone, Copy)]
struct Loc {
    /// Executors that will hold it (bit `i` for executor `i`).
    on: u32,
    /// Model seconds at which it is written.
    ready: f64,
}

/// The model's state: one clock per executor and where each live buffer will be.
pub struct Placement {
    policy: Policy,
    profiles: Vec<Profile>,
    /// Executors the cost model may choose beside the devices (the CPU, when the device list
    /// names it or is `all`).
    cpu_candidate: bool,
    clocks: Vec<f64>,
    now: f64,
    buffers: AHashMap<BufferId, Loc>,
    /// Programs placed so far (round-robin's position).
    turn: usize,
}

/// A hash of what a program computes (its kernel's work and launch; not its call sites, its
/// buffers or its constants' values), stable within a process: [`Policy::Spread`]'s choice.
fn spread_hash(program: &Program) -> usize {
    use std::hash::{Hash, Hasher};
    // A fixed-key hasher: the same program hashes alike in every run and process.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match &*program.kernel {
        Kernel::Fused(k) => format!(
            "{:?}{:?}{:?}{:?}{:?}{:?}{:?}{:?}",
            k.domain, k.inputs, k.outputs, k.instrs, k.stores, k.reductions, k.params, k.traps
        ),
        Kernel::Intrinsic(c) => format!("{c:?}"),
    }
    .hash(&mut h);
    format!("{:?}", program.launch).hash(&mut h);
    h.finish() as usize
}

/// A buffer the program reads: its id and size.
pub struct Input {
    pub buf: BufferId,
    pub bytes: u64,
}

impl Placement {
    /// The model for executors with these profiles (index 0 the CPU).
    pub fn new(policy: Policy, profiles: Vec<Profile>, cpu_candidate: bool) -> Placement {
        let n = profiles.len();
        Placement {
            policy,
            profiles,
            cpu_candidate,
            clocks: vec![0.0; n],
            now: 0.0,
            buffers: AHashMap::new(),
            turn: 0,
        }
    }

    /// Chooses the executor of `program` among `allowed` (bit mask), records its outputs there,
    /// and returns it. `pinned`, when allowed, wins.
    pub fn choose(
        &mut self,
        program: &Program,
        inputs: &[Input],
        outputs: &[BufferId],
        formal_bytes: u64,
        allowed: u32,
        pinned: Option<usize>,
    ) -> usize {
        let n = self.profiles.len();
        let mut candidates: Vec<usize> = (1..n).filter(|&e| allowed & (1 << e) != 0).collect();
        if self.cpu_candidate || candidates.is_empty() {
            candidates.push(0);
        }
        let finish = |e: usize| (e, self.finish(e, program, inputs, formal_bytes));
        let (exec, finish) = match pinned.filter(|&p| p < n && allowed & (1 << p) != 0) {
            Some(p) => finish(p),
            None => match self.policy {
                Policy::First => finish(candidates[0]),
                Policy::RoundRobin => finish(candidates[self.turn % candidates.len()]),
                Policy::Spread => finish(candidates[spread_hash(program) % candidates.len()]),
                // The first of equal finishes: devices in order, the CPU last.
                Policy::Cost => candidates
                    .iter()
                    .map(|&e| finish(e))
                    .reduce(|a, b| if b.1 < a.1 { b } else { a })
                    .expect("the CPU is always a candidate"),
            },
        };
        self.turn += 1;
        self.clocks[exec] = finish;
        for i in inputs {
            if let Some(l) = self.buffers.get_mut(&i.buf) {
                l.on |= 1 << exec;
            }
        }
        for &o in outputs {
            self.buffers.insert(
                o,
                Loc {
                    on: 1 << exec,
                    ready: finish,
                },
            );
        }
        exec
    }

    /// Model seconds at which `program` would finish on `e`.
    fn finish(&self, e: usize, program: &Program, inputs: &[Input], formal_bytes: u64) -> f64 {
        let p = &self.profiles[e];
        let mut start = self.clocks[e].max(self.now);
        let mut moves = 0.0;
        for i in inputs {
            let Some(l) = self.buffers.get(&i.buf) else {
                continue;
            };
            start = start.max(l.ready);
            if l.on & (1 << e) == 0 {
                // Through the host: out of the cheapest holder, into `e`.
                let out = (0..self.profiles.len())
                    .filter(|&h| l.on & (1 << h) != 0)
                    .map(|h| self.profiles[h].link)
                    .fold(0.0f64, f64::max);
                let b = i.bytes as f64;
                moves += b / out.max(1.0) + b / p.link;
            }
        }
        start + moves + p.run_time(program, formal_bytes)
    }

    /// The application wrote `buf` from the host.
    pub fn uploaded(&mut self, buf: BufferId) {
        self.buffers.insert(
            buf,
            Loc {
                on: 1,
                ready: self.now,
            },
        );
    }

    /// `buf` is moved to `exec` on request (`Array::to_device`).
    pub fn placed(&mut self, buf: BufferId, exec: usize) {
        if let Some(l) = self.buffers.get_mut(&buf) {
            l.on |= 1 << exec;
        }
    }

    /// The application read `buf`: it waited until then, and the host holds a copy.
    pub fn read(&mut self, buf: BufferId) {
        if let Some(l) = self.buffers.get_mut(&buf) {
            self.now = self.now.max(l.ready);
            l.on |= 1;
        }
    }

    /// `buf` was freed.
    pub fn freed(&mut self, buf: BufferId) {
        self.buffers.remove(&buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_discrete_gpu_outruns_the_cpu_on_large_work_and_not_on_tiny() {
        let gpu = DeviceInfo {
            backend: Backend::OpenCl,
            index: 0,
            name: "gpu".into(),
            platform: "p".into(),
            kind: DeviceKind::Discrete,
            memory: None,
            fp64: true,
        };
        let (c, g) = (Profile::cpu(2), Profile::device(&gpu));
        let t = |p: &Profile, instr: f64, bytes: f64| {
            p.launch + (instr / p.throughput).max(bytes / p.bandwidth)
        };
        assert!(t(&g, 1e9, 4e8) < t(&c, 1e9, 4e8));
        assert!(t(&c, 100.0, 400.0) < t(&g, 100.0, 400.0));
    }
}
