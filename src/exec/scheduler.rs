//! The execution scheduler (the seed's E-Scheduler 800) on its own thread. It turns instantiated
//! program sequences into executor messages, keeps the pending-operation table keyed by buffer
//! (FIG. 7C), tracks each buffer's state and users, serves reads, frees released buffers, and
//! propagates failures so every result of a failed program reads as invalid.

use super::cpu::CpuExecutor;
use super::{BufferId, TypedVec};
use crate::error::{Error, ErrorKind, Result};
use crate::proggen::sequence::{Kernel, Program, ProgramSequence};
use crate::runtime::FlowControl;
use crate::runtime::stats::Counters;
use ahash::AHashMap;
use crossbeam_channel::{Receiver, Sender, unbounded};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A program sequence bound to actual buffers: `bindings[formal]` is the buffer of each formal.
#[derive(Debug, Clone)]
pub struct Instance {
    pub seq: Arc<ProgramSequence>,
    pub bindings: Vec<BufferId>,
    /// Each program's parameter values (constants, random streams), in slot order.
    pub params: Vec<Arc<[u64]>>,
}

/// Messages to the scheduler thread.
pub(crate) enum SchedMsg {
    /// The application wrote data into a new buffer (seed: data movement request from the FE).
    Upload {
        buf: BufferId,
        data: TypedVec,
    },
    Submit(Instance),
    Read {
        buf: BufferId,
        reply: Sender<Result<Arc<TypedVec>>>,
    },
    /// The buffer is the application's memory; programs write it in place.
    BindExternal {
        buf: BufferId,
        ptr: super::cpu::slices::OutPtr,
    },
    /// A buffer whose value is an error (an invalid result the application chose to continue with).
    Poison {
        buf: BufferId,
        error: Error,
    },
    /// Reply once the buffer is written (or its program failed).
    Wait {
        buf: BufferId,
        reply: Sender<Result<()>>,
    },
    Release(BufferId),
    /// Reply once everything submitted before has completed.
    Barrier(Sender<()>),
    /// An executor finished a task.
    Done {
        task: u64,
        result: Result<()>,
    },
    Shutdown,
}

/// One program bound to buffers, as sent to an executor.
#[derive(Debug, Clone)]
pub struct Task {
    pub id: u64,
    pub program: Program,
    pub params: Arc<[u64]>,
    pub inputs: Vec<BufferId>,
    pub outputs: Vec<BufferId>,
}

/// Messages from the scheduler to an executor (the seed's FIG. 7D).
pub(crate) enum ExecMsg {
    MoveDataIn {
        buf: BufferId,
        data: TypedVec,
    },
    ComputeData(Task),
    /// Several tasks to run in this order.
    ComputeSequential(Vec<Task>),
    MoveDataOut {
        buf: BufferId,
        reply: Sender<Result<Arc<TypedVec>>>,
    },
    BindExternal {
        buf: BufferId,
        ptr: super::cpu::slices::OutPtr,
    },
    Free(BufferId),
    Shutdown,
}

#[derive(Debug, Clone)]
enum Status {
    /// Its producing task waits in the pending-operation table.
    Unwritten,
    /// Its producing task is queued on an executor (which runs its queue in order).
    InFlight,
    Ready,
    Invalid(Error),
}

struct BufState {
    status: Status,
    /// Tasks not yet completed that read or write it.
    uses: u32,
    released: bool,
    reads: Vec<Sender<Result<Arc<TypedVec>>>>,
    waits: Vec<Sender<Result<()>>>,
}

/// Handle the application side uses to talk to the scheduler thread.
pub struct Scheduler {
    tx: Sender<SchedMsg>,
    next_buffer: AtomicU64,
    thread: parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Scheduler {
    pub(crate) fn start(counters: Arc<Counters>, flow: Arc<FlowControl>) -> Scheduler {
        let (tx, rx) = unbounded();
        let cpu = CpuExecutor::start(tx.clone(), counters.clone());
        let thread = std::thread::Builder::new()
            .name("arrayflow-scheduler".into())
            .spawn(move || SchedulerLoop::new(cpu, counters, flow).run(rx))
            .expect("arrayflow: cannot start the scheduler thread");
        Scheduler {
            tx,
            next_buffer: AtomicU64::new(1),
            thread: parking_lot::Mutex::new(Some(thread)),
        }
    }

    pub fn new_buffer(&self) -> BufferId {
        BufferId(self.next_buffer.fetch_add(1, Ordering::Relaxed))
    }
    pub(crate) fn send(&self, msg: SchedMsg) {
        // The scheduler thread only stops at process exit; a send error then is harmless.
        let _ = self.tx.send(msg);
    }
    pub fn upload(&self, buf: BufferId, data: TypedVec) {
        self.send(SchedMsg::Upload { buf, data });
    }
    pub fn submit(&self, inst: Instance) {
        self.send(SchedMsg::Submit(inst));
    }
    pub fn release(&self, buf: BufferId) {
        self.send(SchedMsg::Release(buf));
    }
    /// Blocks until the buffer's value is computed, then returns it.
    pub fn read(&self, buf: BufferId) -> Result<Arc<TypedVec>> {
        let (reply, rx) = crossbeam_channel::bounded(1);
        self.send(SchedMsg::Read { buf, reply });
        rx.recv().unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::Runtime,
                "the execution scheduler stopped",
            ))
        })
    }
    /// Makes `buf` the application's memory at `ptr` (written in place, never stored).
    pub fn bind_external(&self, buf: BufferId, ptr: super::cpu::slices::OutPtr) {
        self.send(SchedMsg::BindExternal { buf, ptr });
    }
    /// Blocks until `buf` is written.
    pub fn wait(&self, buf: BufferId) -> Result<()> {
        let (reply, rx) = crossbeam_channel::bounded(1);
        self.send(SchedMsg::Wait { buf, reply });
        rx.recv().unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::Runtime,
                "the execution scheduler stopped",
            ))
        })
    }
    /// Blocks until all work submitted so far has completed.
    pub fn barrier(&self) {
        let (reply, rx) = crossbeam_channel::bounded(1);
        self.send(SchedMsg::Barrier(reply));
        let _ = rx.recv();
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        let _ = self.tx.send(SchedMsg::Shutdown);
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

struct SchedulerLoop {
    cpu: CpuExecutor,
    counters: Arc<Counters>,
    flow: Arc<FlowControl>,
    buffers: AHashMap<BufferId, BufState>,
    tasks: AHashMap<u64, Task>,
    /// The pending-operation table: tasks deferred until the keyed buffer is written.
    pending: AHashMap<BufferId, Vec<u64>>,
    next_task: u64,
    barriers: Vec<Sender<()>>,
}

impl SchedulerLoop {
    fn new(cpu: CpuExecutor, counters: Arc<Counters>, flow: Arc<FlowControl>) -> Self {
        SchedulerLoop {
            cpu,
            counters,
            flow,
            buffers: AHashMap::new(),
            tasks: AHashMap::new(),
            pending: AHashMap::new(),
            next_task: 1,
            barriers: Vec::new(),
        }
    }

    fn run(mut self, rx: Receiver<SchedMsg>) {
        while let Ok(msg) = rx.recv() {
            match msg {
                SchedMsg::Upload { buf, data } => {
                    Counters::add(&self.counters.bytes_uploaded, data.bytes() as u64);
                    self.buffers.insert(
                        buf,
                        BufState {
                            status: Status::Ready,
                            uses: 0,
                            released: false,
                            reads: Vec::new(),
                            waits: Vec::new(),
                        },
                    );
                    self.cpu.send(ExecMsg::MoveDataIn { buf, data });
                }
                SchedMsg::Submit(inst) => self.submit(inst),
                SchedMsg::Read { buf, reply } => self.read(buf, reply),
                SchedMsg::BindExternal { buf, ptr } => {
                    self.buffers.insert(
                        buf,
                        BufState {
                            status: Status::Unwritten,
                            uses: 0,
                            released: false,
                            reads: Vec::new(),
                            waits: Vec::new(),
                        },
                    );
                    self.cpu.send(ExecMsg::BindExternal { buf, ptr });
                }
                SchedMsg::Poison { buf, error } => {
                    self.buffers.insert(
                        buf,
                        BufState {
                            status: Status::Invalid(error),
                            uses: 0,
                            released: false,
                            reads: Vec::new(),
                            waits: Vec::new(),
                        },
                    );
                }
                SchedMsg::Wait { buf, reply } => match self.buffers.get_mut(&buf) {
                    None => {
                        let _ = reply.send(Err(Error::new(
                            ErrorKind::Runtime,
                            "wait on a buffer the runtime does not know",
                        )));
                    }
                    Some(s) => match &s.status {
                        Status::Ready => {
                            let _ = reply.send(Ok(()));
                        }
                        Status::Invalid(e) => {
                            let _ = reply.send(Err(e.clone()));
                        }
                        _ => s.waits.push(reply),
                    },
                },
                SchedMsg::Release(buf) => {
                    if let Some(s) = self.buffers.get_mut(&buf) {
                        s.released = true;
                    }
                    self.maybe_free(buf);
                }
                SchedMsg::Barrier(reply) => {
                    if self.tasks.is_empty() {
                        let _ = reply.send(());
                    } else {
                        self.barriers.push(reply);
                    }
                }
                SchedMsg::Done { task, result } => self.done(task, result),
                SchedMsg::Shutdown => break,
            }
        }
        self.cpu.send(ExecMsg::Shutdown);
    }

    fn submit(&mut self, inst: Instance) {
        let mut batch = Vec::new();
        for (pi, program) in inst.seq.programs.iter().enumerate() {
            let id = self.next_task;
            self.next_task += 1;
            let task = Task {
                id,
                program: program.clone(),
                params: inst.params[pi].clone(),
                inputs: program
                    .inputs
                    .iter()
                    .map(|&f| inst.bindings[f as usize])
                    .collect(),
                outputs: program
                    .outputs
                    .iter()
                    .map(|&f| inst.bindings[f as usize])
                    .collect(),
            };
            for &b in task.inputs.iter().chain(&task.outputs) {
                let s = self.buffers.entry(b).or_insert_with(|| BufState {
                    status: Status::Unwritten,
                    uses: 0,
                    released: false,
                    reads: Vec::new(),
                    waits: Vec::new(),
                });
                s.uses += 1;
            }
            self.tasks.insert(id, task);
            self.launch(id, &mut batch);
        }
        self.dispatch(batch);
    }

    /// The seed's "launch": run the task if its inputs allow, else defer it in the pending table.
    fn launch(&mut self, id: u64, batch: &mut Vec<Task>) {
        let task = &self.tasks[&id];
        for &b in &task.inputs {
            match &self.buffers[&b].status {
                Status::Invalid(e) => {
                    let e = e.clone();
                    self.fail(id, e);
                    return;
                }
                Status::Unwritten => {
                    self.pending.entry(b).or_default().push(id);
                    return;
                }
                Status::InFlight | Status::Ready => {}
            }
        }
        let outputs = task.outputs.clone();
        match &*task.program.kernel {
            Kernel::Fused(k) => {
                Counters::add(&self.counters.kernels_launched, 1);
                if !k.reductions.is_empty() {
                    Counters::add(&self.counters.final_stages_launched, 1);
                }
            }
            Kernel::Intrinsic(_) => Counters::add(&self.counters.intrinsics_launched, 1),
        }
        batch.push(task.clone());
        for b in outputs {
            self.set_status(b, Status::InFlight, batch);
        }
    }

    fn dispatch(&mut self, batch: Vec<Task>) {
        match batch.len() {
            0 => {}
            1 => self
                .cpu
                .send(ExecMsg::ComputeData(batch.into_iter().next().unwrap())),
            _ => self.cpu.send(ExecMsg::ComputeSequential(batch)),
        }
    }

    /// Changes a buffer's status and retries the tasks and reads waiting on it.
    fn set_status(&mut self, b: BufferId, status: Status, batch: &mut Vec<Task>) {
        let Some(s) = self.buffers.get_mut(&b) else {
            return;
        };
        s.status = status;
        if matches!(s.status, Status::Ready | Status::Invalid(_)) {
            let done = match &s.status {
                Status::Invalid(e) => Err(e.clone()),
                _ => Ok(()),
            };
            for w in std::mem::take(&mut s.waits) {
                let _ = w.send(done.clone());
            }
            for reply in std::mem::take(&mut s.reads) {
                self.serve_read(b, reply);
            }
        }
        if let Some(waiting) = self.pending.remove(&b) {
            for id in waiting {
                self.launch(id, batch);
            }
        }
    }

    fn fail(&mut self, id: u64, e: Error) {
        Counters::add(&self.counters.failed_programs, 1);
        self.finish(id, Err(e), &mut Vec::new());
    }

    fn done(&mut self, id: u64, result: Result<()>) {
        if result.is_err() {
            Counters::add(&self.counters.failed_programs, 1);
        }
        let mut batch = Vec::new();
        self.finish(id, result, &mut batch);
        self.dispatch(batch);
    }

    fn finish(&mut self, id: u64, result: Result<()>, batch: &mut Vec<Task>) {
        let Some(task) = self.tasks.remove(&id) else {
            return;
        };
        self.flow.complete(1);
        for &b in &task.outputs {
            let status = match &result {
                Ok(()) => Status::Ready,
                Err(e) => Status::Invalid(e.clone()),
            };
            self.set_status(b, status, batch);
        }
        for &b in task.inputs.iter().chain(&task.outputs) {
            if let Some(s) = self.buffers.get_mut(&b) {
                s.uses -= 1;
            }
            self.maybe_free(b);
        }
        if self.tasks.is_empty() {
            for reply in self.barriers.drain(..) {
                let _ = reply.send(());
            }
        }
    }

    fn read(&mut self, b: BufferId, reply: Sender<Result<Arc<TypedVec>>>) {
        match self.buffers.get_mut(&b) {
            None => {
                let _ = reply.send(Err(Error::new(
                    ErrorKind::Runtime,
                    "read of a buffer the runtime does not know",
                )));
            }
            Some(s) if matches!(s.status, Status::Unwritten | Status::InFlight) => {
                s.reads.push(reply)
            }
            Some(_) => self.serve_read(b, reply),
        }
    }

    fn serve_read(&mut self, b: BufferId, reply: Sender<Result<Arc<TypedVec>>>) {
        match &self.buffers[&b].status {
            Status::Invalid(e) => {
                let _ = reply.send(Err(e.clone()));
            }
            _ => self.cpu.send(ExecMsg::MoveDataOut { buf: b, reply }),
        }
    }

    fn maybe_free(&mut self, b: BufferId) {
        let Some(s) = self.buffers.get(&b) else {
            return;
        };
        if s.released
            && s.uses == 0
            && !matches!(s.status, Status::Unwritten | Status::InFlight)
            && s.reads.is_empty()
            && s.waits.is_empty()
        {
            self.buffers.remove(&b);
            self.cpu.send(ExecMsg::Free(b));
        }
    }
}
