//! The flush triggers (the seed's C-Scheduler deciding when the work queue is compiled): after
//! each recorded op (a non-fusible op entering an empty queue, the queue threshold), a read, a read
//! into the application's memory, an evaluation, a hint, `execute`, the end of the outermost block,
//! and a code reuse section's boundaries. Every flush starts here; `flush.rs` compiles the queue
//! and `handoff.rs` submits the result. Once a trigger has released the front end's lock it
//! calls the debugger's `settled` hook (`observe.rs`), where a watchpoint on an array the flush
//! computed stops.

use super::Handle;
use super::state::{FrontEnd, Inner};
use super::{Entry, FlushReason, flush};
use crate::counters::Counters;
use crate::error::{Error, ErrorKind, Result};
use crate::exec::TypedVec;
use crate::ir::{NodeId, Site};
use std::sync::Arc;

impl Inner {
    /// Decides, after an op was queued, whether the queue is compiled now: a non-fusible op
    /// (an intrinsic) alone in the queue runs at once (nothing could fuse with it), and a queue of
    /// `queue_threshold` compute entries is flushed so it does not grow without bound. Inside a
    /// block (and a recording section, which holds one) neither applies.
    pub(crate) fn after_record(&self, fe: &mut FrontEnd, fusible: bool) {
        if fe.block_depth > 0 {
            return;
        }
        if !fusible && fe.queue.computes() == 1 {
            flush(self, fe, FlushReason::NonFusible, None);
        } else if fe.queue.computes() >= self.config.queue_threshold {
            flush(self, fe, FlushReason::Threshold, None);
        }
    }

    /// A code reuse section's boundary: `ids` (its inputs when it starts, its outputs when it
    /// ends) are stored and everything queued before is compiled.
    pub(crate) fn flush_for_section(&self, fe: &mut FrontEnd, ids: &[NodeId]) {
        for &id in ids {
            enqueue_pending(fe, id);
        }
        if !fe.queue.is_empty() {
            flush(self, fe, FlushReason::Section, None);
        }
    }

    /// Computes `h` if needed and returns its data.
    pub fn read(&self, h: &Handle, site: Site) -> Result<Arc<TypedVec>> {
        self.read_node(h.id, site)
    }

    /// Computes node `id` if needed and returns its data.
    pub fn read_node(&self, id: NodeId, site: Site) -> Result<Arc<TypedVec>> {
        let t0 = crate::profile::now();
        let buf = {
            let mut fe = self.front();
            if let Some(e) = self.section_violation(&mut fe, "a read", site) {
                return Err(e);
            }
            if fe.nodes.get(&id).is_some_and(|n| n.is_pending()) {
                enqueue_leaf(&mut fe, id);
                flush(self, &mut fe, FlushReason::Read, Some(id));
            }
            fe.nodes.get(&id).and_then(|n| n.buffer())
        };
        super::observe::settled();
        let buf = buf.ok_or_else(|| {
            Error::new(ErrorKind::Runtime, "array has no buffer after its flush").at(site)
        })?;
        let Some(at) = t0 else {
            return self.sched.read(buf).map_err(|e| invalid_read(e, site));
        };
        let waited = std::time::Instant::now();
        let r = self.sched.read(buf).map_err(|e| invalid_read(e, site));
        let end = std::time::Instant::now();
        crate::profile::emit(crate::profile::Event::Read {
            site,
            bytes: r.as_ref().map_or(0, |v| v.bytes() as u64),
            at,
            ns: (end - at).as_nanos() as u64,
            wait_ns: (end - waited).as_nanos() as u64,
        });
        r
    }

    /// Computes `h` straight into the application's memory at `dest` (which has room for all its
    /// elements) when it is a large pending element-wise result: no buffer, no copy, and the array
    /// stays lazy. `Ok(false)` when that does not apply; the caller then reads as usual.
    pub fn read_external(
        &self,
        h: &Handle,
        dest: crate::exec::HostDest,
        site: Site,
    ) -> Result<bool> {
        let n: usize = h.shape.iter().product();
        if n < ZERO_COPY_MIN {
            return Ok(false);
        }
        let buf = {
            let mut fe = self.front();
            if let Some(e) = self.section_violation(&mut fe, "a read", site) {
                return Err(e);
            }
            let eligible = fe
                .nodes
                .get(&h.id)
                .is_some_and(|n| n.is_pending() && crate::proggen::liveness::may_stay_lazy(n));
            if !eligible {
                return Ok(false);
            }
            enqueue_leaf(&mut fe, h.id);
            crate::compile::flush_into(self, &mut fe, FlushReason::Read, Some(h.id), Some(dest))
        };
        super::observe::settled();
        let Some(buf) = buf else { return Ok(false) };
        let waited = crate::profile::now();
        let r = self.sched.wait(buf);
        self.sched.release(buf);
        Counters::add(&self.counters.bytes_downloaded, (n * h.dtype.size()) as u64);
        if let Some(w) = waited {
            let wait_ns = w.elapsed().as_nanos() as u64;
            crate::profile::emit(crate::profile::Event::Read {
                site,
                bytes: (n * h.dtype.size()) as u64,
                at: w,
                ns: wait_ns,
                wait_ns,
            });
        }
        r.map(|()| true).map_err(|e| invalid_read(e, site))
    }

    /// Computes `h` if needed and waits until its value exists (on whichever executor computed
    /// it; nothing is copied to the host).
    pub fn eval(&self, h: &Handle, site: Site) -> Result<()> {
        let buf = {
            let mut fe = self.front();
            if let Some(e) = self.section_violation(&mut fe, "an evaluation", site) {
                return Err(e);
            }
            self.start(&mut fe, h)
        };
        super::observe::settled();
        match buf {
            Some(b) => self.sched.wait(b).map_err(|e| invalid_read(e, site)),
            // A constant or a value folded at record time: nothing to compute.
            None => Ok(()),
        }
    }

    /// The application will read `h` soon: start computing it now.
    pub fn hint_read(&self, h: &Handle) {
        {
            let mut fe = self.front();
            if !fe.sections.is_empty() {
                return; // inside a code reuse section the whole section runs together
            }
            self.start(&mut fe, h);
        }
        super::observe::settled();
    }

    /// Starts computing `h` if it is pending (a hint flush); returns its buffer (`None` for a
    /// constant or a value folded at record time).
    fn start(&self, fe: &mut FrontEnd, h: &Handle) -> Option<crate::exec::BufferId> {
        if fe.nodes.get(&h.id).is_some_and(|n| n.is_pending()) {
            enqueue_leaf(fe, h.id);
            fe.queue.push(Entry::HintRead(h.id));
            {
                let f = &mut *fe;
                f.key.push_hint(&f.nodes, h.id);
            }
            flush(self, fe, FlushReason::Hint, Some(h.id));
        }
        fe.nodes.get(&h.id).and_then(|n| n.buffer())
    }

    /// Flushes the queue without waiting (a placement scope's edges: what was recorded before
    /// runs where it would have, what is recorded inside runs where the scope says).
    pub fn flush_now(&self) {
        {
            let mut fe = self.front();
            if fe.sections.is_empty() && !fe.queue.is_empty() {
                flush(self, &mut fe, FlushReason::Execute, None);
            }
        }
        super::observe::settled();
    }

    /// Computes `h` if needed (without waiting) and moves its value to executor `exec` once it
    /// exists (`Array::to_device`).
    pub fn place(&self, h: &Handle, exec: usize, site: Site) -> Result<()> {
        let buf = {
            let mut fe = self.front();
            if let Some(e) = self.section_violation(&mut fe, "a placement", site) {
                return Err(e);
            }
            self.start(&mut fe, h)
        };
        super::observe::settled();
        if let Some(b) = buf {
            self.sched.place(b, exec);
        }
        Ok(())
    }

    /// The executors holding `h`'s value once it is computed (bit `i` for executor `i`); 0 while
    /// it is pending or when it is a constant.
    pub fn holders(&self, h: &Handle) -> u32 {
        let buf = self.front().nodes.get(&h.id).and_then(|n| n.buffer());
        buf.map_or(0, |b| self.sched.holders(b))
    }

    /// Flushes the queue and waits until everything recorded so far has run.
    pub fn execute(&self) {
        {
            let mut fe = self.front();
            if !fe.sections.is_empty() {
                return; // inside a code reuse section the whole section runs together
            }
            if !fe.queue.is_empty() {
                flush(self, &mut fe, FlushReason::Execute, None);
            }
        }
        super::observe::settled();
        self.sched.barrier();
    }

    pub fn begin_block(&self) {
        let mut fe = self.front();
        fe.block_depth += 1;
        fe.queue.push(Entry::BlockBegin);
        fe.key.push_block(true);
    }

    /// Closes a block whose body panicked, without flushing (the next flush runs its work).
    pub fn unwind_block(&self) {
        let mut fe = self.front();
        if fe.block_depth > 0 {
            fe.block_depth -= 1;
            fe.queue.push(Entry::BlockEnd);
            fe.key.push_block(false);
        }
    }

    pub fn end_block(&self, site: Site) -> Result<()> {
        let r = self.end_block_locked(site);
        super::observe::settled();
        r
    }

    fn end_block_locked(&self, site: Site) -> Result<()> {
        let mut fe = self.front();
        if fe.block_depth == 0 {
            return Err(Error::new(
                ErrorKind::Argument,
                "end_block() without a matching begin_block()",
            )
            .at(site)
            .hint("pair every end_block() with an earlier begin_block()"));
        }
        fe.block_depth -= 1;
        fe.queue.push(Entry::BlockEnd);
        fe.key.push_block(false);
        if fe.block_depth == 0 && !fe.queue.is_empty() {
            flush(self, &mut fe, FlushReason::BlockEnd, None);
        }
        Ok(())
    }
}

/// Reads of at least this many elements go straight into the application's memory.
const ZERO_COPY_MIN: usize = 1 << 16;

/// The error a read returns for a result whose computation failed (a trap keeps its kind).
fn invalid_read(e: Error, site: Site) -> Error {
    let message = match e.kind {
        ErrorKind::Execution | ErrorKind::InvalidResult => format!(
            "this array is invalid: its computation failed: {}",
            e.message
        ),
        _ => e.message,
    };
    Error {
        // A trap stays a trap (`crate::debug::trap`): the read of a trapped result says so.
        kind: match e.kind {
            ErrorKind::Trap => ErrorKind::Trap,
            _ => ErrorKind::InvalidResult,
        },
        message,
        site: Some(site),
        origin: e.origin.or(e.site),
        hint: e.hint,
    }
}

/// Puts a pending node that is not queued (a lazy leaf or lazy result) into the queue, so the
/// next flush computes and stores it.
fn enqueue_pending(fe: &mut FrontEnd, id: NodeId) {
    if fe.nodes.get(&id).is_some_and(|n| n.is_pending()) {
        enqueue_leaf(fe, id)
    }
}

/// Puts a lazy leaf (constant, generator) into the queue so the next flush stores it.
fn enqueue_leaf(fe: &mut FrontEnd, id: NodeId) {
    if let Some(n) = fe.nodes.get_mut(&id)
        && !n.queued
    {
        n.queued = true;
        fe.queue.push(Entry::Compute(id));
        let traces = &fe.traces;
        fe.key.push_compute(&fe.nodes, id, |s| {
            traces.is_cold(s as *const _ as *const () as usize as u64)
        });
    }
}
