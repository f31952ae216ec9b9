//! Comparison mode's hook at record time: the reference value of each op as it is recorded (the
//! sequential interpreter on its inputs' reference values) and the magnitude its allowance
//! scales with (`debug::conditioning`).

use crate::compile::Inner;
use crate::exec::TypedVec;
use crate::ir::{DType, NodeId, Op, Shape, Site};
use crate::ir::{NodeInfo, NodeState};
use smallvec::SmallVec;
use std::sync::Arc;

impl Inner {
    /// The reference value of an op about to be recorded (comparison mode): the sequential
    /// interpreter on its inputs' reference values, or on their optimised values where an input
    /// has none (it was recorded before comparison was switched on); and the magnitude each
    /// element's allowance scales with (`debug::conditioning`).
    #[allow(clippy::type_complexity)]
    pub(crate) fn reference_of(
        &self,
        op: &Op,
        inputs: &[(NodeId, &[usize])],
        shape: &Shape,
        dtype: DType,
        site: Site,
    ) -> Option<(Arc<TypedVec>, Option<Arc<Vec<f64>>>)> {
        use crate::debug::conditioning;
        let cfg = self.compare.read().clone();
        let mut vals = Vec::with_capacity(inputs.len());
        // The output's allowance follows the same rule as `record`'s tolerance op and type.
        let (mut tol_op, mut tol_dtype) = (op.base_name(), dtype);
        for (k, &(id, in_shape)) in inputs.iter().enumerate() {
            let (r, mag, tol, buf, in_section, exact) = {
                let fe = self.front();
                let n = fe.nodes.get(&id)?;
                if k == 0 && op.moves_data() {
                    (tol_op, tol_dtype) = (n.tolerance_op, n.tolerance_dtype);
                }
                if dtype == DType::F64 && n.tolerance_dtype == DType::F32 {
                    tol_dtype = DType::F32;
                }
                let mag = match (&n.magnitude, &n.reference) {
                    (Some(m), _) => Some(m.clone()),
                    (None, Some(r)) => Some(Arc::new(conditioning::leaf(&n.op, r))),
                    (None, None) => None,
                };
                let tol = cfg
                    .as_ref()
                    .map(|c| c.tolerance_for(n.tolerance_op, n.tolerance_dtype));
                let exact = matches!(n.op, Op::Source | Op::Const(_));
                let sections = !fe.sections.is_empty();
                (n.reference.clone(), mag, tol, n.buffer(), sections, exact)
            };
            let r = match r {
                Some(r) => r,
                // Stored data: read it (safe inside a code reuse section too; nothing is flushed).
                None if buf.is_some() => self.sched.read(buf?).ok()?,
                // A pending result without a reference: computing it would flush a section.
                None if in_section => return None,
                None => self.read_node(id, site).ok()?,
            };
            // Values recorded before comparison was on: uploads and constants are exact, computed
            // values carry their own size.
            let mag = mag.unwrap_or_else(|| {
                let size = |i: usize| if exact { 0.0 } else { r.get(i).as_f64().abs() };
                Arc::new((0..r.len()).map(size).collect())
            });
            vals.push((r, Shape::from_slice(in_shape), mag, tol));
        }
        let info = NodeInfo::new(
            op.clone(),
            SmallVec::new(),
            shape.clone(),
            dtype,
            site,
            NodeState::Pending,
        );
        let refs: Vec<(&TypedVec, &[usize])> =
            vals.iter().map(|(v, s, _, _)| (&**v, &s[..])).collect();
        let value = crate::debug::reference::eval(&info, &refs).ok()?;
        let magnitude = cfg.map(|c| {
            let ins: Vec<conditioning::CondInput> = vals
                .iter()
                .map(|(v, s, m, t)| conditioning::CondInput {
                    value: v,
                    shape: s,
                    magnitude: m,
                    tolerance: t.unwrap_or(crate::debug::Tolerance::EXACT),
                })
                .collect();
            let out = c.tolerance_for(tol_op, tol_dtype);
            Arc::new(conditioning::magnitudes(
                op, shape, dtype, &ins, &value, out, site,
            ))
        });
        Some((Arc::new(value), magnitude))
    }
}
