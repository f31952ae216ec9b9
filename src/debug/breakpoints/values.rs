//! Values at a stop. Non-intrusive (the seed's cloned work queue, FIG. 9B's 908): the requested
//! node is evaluated from the port table on the reference interpreter, recursively from stored
//! buffers (a read may wait for the program computing one) and pending inputs, separately and
//! uncached; the real work queue is not touched, so it fuses and runs as if no debugger were
//! attached. Materialised (intrusive and reproducible modes): the node is computed by the
//! runtime itself and read. Editing replaces a node's value for everything recorded after it.

use crate::error::{Error, ErrorKind, Result};
use crate::exec::TypedVec;
use crate::ir::{DType, NodeId, NodeInfo, NodeState, Op, Site};
use crate::runtime::Inner;
use std::sync::Arc;

/// The host copy of an array's value at a stop: its shape and elements.
#[derive(Debug, Clone, PartialEq)]
pub struct Values {
    pub(crate) shape: Vec<usize>,
    pub(crate) data: Arc<TypedVec>,
}

impl Values {
    /// Dimensions, outermost first.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }
    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.data.len() == 0
    }
    /// The elements, if they are of type `T`.
    pub fn as_slice<T: crate::Element>(&self) -> Option<&[T]> {
        (T::DTYPE == self.dtype()).then(|| T::slice(&self.data))
    }
    /// The elements as `f64` (booleans 0/1; complex values: their real parts).
    pub fn to_f64(&self) -> Vec<f64> {
        (0..self.len())
            .map(|i| match self.data.get(i) {
                crate::ir::Scalar::C64(z) => z.re as f64,
                crate::ir::Scalar::C128(z) => z.re,
                s => s.as_f64(),
            })
            .collect()
    }
    /// Element `i` (row-major) as `f64`, as [`Values::to_f64`].
    pub fn get_f64(&self, i: usize) -> f64 {
        match self.data.get(i) {
            crate::ir::Scalar::C64(z) => z.re as f64,
            crate::ir::Scalar::C128(z) => z.re,
            s => s.as_f64(),
        }
    }
    /// Whether some element (or part of a complex one) is NaN.
    pub fn any_nan(&self) -> bool {
        self.any(|x| x.is_nan())
    }
    /// Whether some element (or part of a complex one) is infinite.
    pub fn any_inf(&self) -> bool {
        self.any(|x| x.is_infinite())
    }
    fn any(&self, f: impl Fn(f64) -> bool) -> bool {
        match &*self.data {
            TypedVec::F32(v) => v.iter().any(|&x| f(x as f64)),
            TypedVec::F64(v) => v.iter().any(|&x| f(x)),
            TypedVec::C64(v) => v.iter().any(|z| f(z.re as f64) || f(z.im as f64)),
            TypedVec::C128(v) => v.iter().any(|z| f(z.re) || f(z.im)),
            _ => false,
        }
    }
}

/// How a stop obtains values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The reference interpreter on a clone of the pending work (nothing is flushed).
    Clone,
    /// The runtime computes the node (a flush that stores it) and it is read.
    Materialise,
}

fn gone(id: NodeId, site: Site) -> Error {
    Error::new(
        ErrorKind::Argument,
        format!("array #{} is no longer known to the runtime", id.0),
    )
    .at(site)
    .hint("`list` (or Stop::live) shows the arrays that can be read at this stop")
}

/// The value of node `id`, obtained as `source` says.
pub(crate) fn value_of(id: NodeId, source: Source, site: Site) -> Result<Values> {
    let inner = Inner::get();
    let shape = {
        let fe = inner.fe.lock();
        fe.nodes
            .get(&id)
            .ok_or_else(|| gone(id, site))?
            .shape
            .to_vec()
    };
    let data = match source {
        Source::Materialise => inner.read_node(id, site)?,
        Source::Clone => {
            let mut memo = ahash::AHashMap::new();
            evaluate(inner, id, &mut memo, site)?
        }
    };
    Ok(Values { shape, data })
}

/// The reference interpreter over the pending nodes that feed `id` (a clone of the work queue up
/// to it), from stored buffers; each node once (`memo`).
fn evaluate(
    inner: &Inner,
    id: NodeId,
    memo: &mut ahash::AHashMap<NodeId, Arc<TypedVec>>,
    site: Site,
) -> Result<Arc<TypedVec>> {
    // An explicit stack: a pending chain can be as long as the queue threshold.
    let mut stack = vec![(id, false)];
    while let Some((n, expanded)) = stack.pop() {
        if memo.contains_key(&n) {
            continue;
        }
        let (info, in_shapes): (NodeInfo, Vec<Vec<usize>>) = {
            let fe = inner.fe.lock();
            let info = fe.nodes.get(&n).ok_or_else(|| gone(n, site))?.clone();
            if let NodeState::Stored(_) = info.state {
                // A stored value is read: its inputs may be gone (stored nodes stop holding them).
                (info, Vec::new())
            } else {
                let mut shapes = Vec::with_capacity(info.inputs.len());
                for i in &info.inputs {
                    shapes.push(
                        fe.nodes
                            .get(i)
                            .ok_or_else(|| gone(*i, site))?
                            .shape
                            .to_vec(),
                    );
                }
                (info, shapes)
            }
        };
        if let NodeState::Stored(buf) = info.state {
            let v = inner.sched.read(buf).map_err(|e| e.at(site))?;
            memo.insert(n, v);
            continue;
        }
        if !expanded {
            stack.push((n, true));
            stack.extend(info.inputs.iter().map(|&i| (i, false)));
            continue;
        }
        let ins: Vec<(&TypedVec, &[usize])> = info
            .inputs
            .iter()
            .zip(&in_shapes)
            .map(|(i, s)| (&*memo[i], &s[..]))
            .collect();
        let v = crate::debug::reference::eval(&info, &ins).map_err(|e| {
            Error::new(
                ErrorKind::Runtime,
                format!("the debugger cannot evaluate `{}`: {e}", info.op.name()),
            )
            .at(site)
            .origin(info.site)
        })?;
        memo.insert(n, Arc::new(v));
    }
    Ok(memo[&id].clone())
}

/// Replaces the value of node `id` by `data` (same type and length): what is recorded from now on
/// reads the new value; what was recorded before keeps the old one (everything pending runs
/// first, every live array stored). The node becomes data written by the application.
pub(crate) fn set_value(id: NodeId, data: TypedVec, site: Site) -> Result<()> {
    let inner = Inner::get();
    let (dtype, len, op) = {
        let fe = inner.fe.lock();
        if !fe.sections.is_empty() {
            return Err(Error::new(
                ErrorKind::Argument,
                "arrays cannot be edited while a code reuse section records",
            )
            .at(site));
        }
        let n = fe.nodes.get(&id).ok_or_else(|| gone(id, site))?;
        (n.dtype, n.len(), n.op.clone())
    };
    if matches!(op, Op::Const(_)) {
        return Err(Error::new(
            ErrorKind::Argument,
            format!("array #{} is a constant folded into what reads it", id.0),
        )
        .at(site)
        .hint("edit an array computed or written by the application instead"));
    }
    if data.dtype() != dtype || data.len() != len {
        return Err(Error::new(
            ErrorKind::Argument,
            format!(
                "array #{} holds {len} {dtype} elements; {} {} elements were given",
                id.0,
                data.len(),
                data.dtype()
            ),
        )
        .at(site));
    }
    // Everything recorded so far runs with the old value; every live array is stored.
    inner.execute();
    if inner
        .fe
        .lock()
        .nodes
        .get(&id)
        .is_some_and(|n| n.is_pending())
    {
        inner.read_node(id, site)?;
    }
    let old = {
        let mut fe = inner.fe.lock();
        let n = fe.nodes.get_mut(&id).ok_or_else(|| gone(id, site))?;
        let buf = inner.sched.new_buffer();
        let old = n.buffer();
        n.op = Op::Source;
        n.inputs.clear();
        n.state = NodeState::Stored(buf);
        n.lazy_cost = 0;
        n.recomputed = false;
        if inner.compare_on.load(std::sync::atomic::Ordering::Relaxed) {
            n.reference = Some(Arc::new(data.clone()));
            n.magnitude = None;
        }
        // Sent under the lock so no later program reaches the scheduler before the data.
        inner.sched.upload(buf, data);
        old
    };
    if let Some(b) = old {
        inner.sched.release(b);
    }
    Ok(())
}
