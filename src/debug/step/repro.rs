//! The reproducing program of a divergence: the ops that feed the diverging IR node, written as
//! Rust on arrayflow's public API. Inputs are the whole arrays the kernel read (and the
//! values of ops the public API has no spelling for here), written as `Array::from_slice` of
//! their values; every other op of the cone is one statement at its recorded call site. The
//! program prints the diverging element beside its reference value.

use crate::exec::TypedVec;
use crate::ir::{BinaryOp, DType, NodeId, NodeInfo, Op, Scalar, UnaryOp};
use ahash::{AHashMap, AHashSet};
use std::fmt::Write;
use std::sync::Arc;

/// The most elements of one input a reproducing program writes out as a literal (larger inputs
/// are filled with one value, and the program says so).
pub const MAX_LITERAL_ELEMENTS: usize = 1 << 16;

/// The diverging element of the node a program reproduces, with both values.
pub struct Target {
    pub node: NodeId,
    pub element: usize,
    pub optimised: f64,
    pub reference: f64,
}

/// The Rust type of an element type.
fn rust_type(d: DType) -> &'static str {
    match d {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::I32 => "i32",
        DType::U32 => "u32",
        DType::Bool => "bool",
        DType::C64 => "arrayflow::Complex<f32>",
        DType::C128 => "arrayflow::Complex<f64>",
    }
}

/// A Rust literal of `v` (typed by the surrounding slice; non-finite floats by their constants).
fn literal(v: Scalar) -> String {
    fn float(x: f64, t: &str) -> String {
        if x.is_nan() {
            format!("{t}::NAN")
        } else if x.is_infinite() {
            format!("{}{t}::INFINITY", if x < 0.0 { "-" } else { "" })
        } else {
            format!("{x:?}")
        }
    }
    match v {
        Scalar::F32(x) => {
            let s = float(x as f64, "f32");
            // f32 values print by their own shortest form.
            if x.is_finite() { format!("{x:?}") } else { s }
        }
        Scalar::F64(x) => float(x, "f64"),
        Scalar::I32(x) => x.to_string(),
        Scalar::U32(x) => x.to_string(),
        Scalar::Bool(x) => x.to_string(),
        Scalar::C64(z) => format!(
            "arrayflow::Complex::new({}, {})",
            literal(Scalar::F32(z.re)),
            literal(Scalar::F32(z.im))
        ),
        Scalar::C128(z) => format!(
            "arrayflow::Complex::new({}, {})",
            literal(Scalar::F64(z.re)),
            literal(Scalar::F64(z.im))
        ),
    }
}

/// The expression computing node `n` from its inputs' variables (of shapes `shapes`), or `None`
/// when the public API has no spelling for it here (it becomes an input). An intrinsic's comes
/// from its definition ([`crate::intrinsics::IntrinsicDef::spelling`]).
fn expression(n: &NodeInfo, args: &[String], shapes: &[&[usize]]) -> Option<String> {
    let shape = format!("{:?}", &n.shape[..]);
    Some(match &n.op {
        Op::Intrinsic(i) => return crate::intrinsics::def(i).spelling(i, args, shapes),
        Op::Const(v) => format!(
            "Array::<{}>::full(&{shape}, {})",
            rust_type(n.dtype),
            literal(*v)
        ),
        Op::Unary(UnaryOp::Neg) => format!("-&{}", args[0]),
        Op::Unary(op @ (UnaryOp::Conj | UnaryOp::Re | UnaryOp::Im | UnaryOp::Arg)) => {
            let _ = op;
            return None;
        }
        Op::Unary(op) => format!("{}.{}()", args[0], op.name()),
        Op::Binary(op) => {
            let (a, b) = (&args[0], &args[1]);
            match op {
                BinaryOp::Add => format!("&{a} + &{b}"),
                BinaryOp::Sub => format!("&{a} - &{b}"),
                BinaryOp::Mul => format!("&{a} * &{b}"),
                BinaryOp::Div => format!("&{a} / &{b}"),
                BinaryOp::Mod => format!("{a}.modulo(&{b})"),
                BinaryOp::Min => format!("{a}.minimum(&{b})"),
                BinaryOp::Max => format!("{a}.maximum(&{b})"),
                BinaryOp::Complex => return None,
                _ => format!("{a}.{}(&{b})", op.name()),
            }
        }
        Op::Select => format!("{}.select(&{}, &{})", args[0], args[1], args[2]),
        Op::Cast(to) => format!("{}.cast::<{}>()", args[0], rust_type(*to)),
        Op::Reshape => format!("{}.reshape(&{shape})", args[0]),
        Op::Broadcast => format!("{}.broadcast_to(&{shape})", args[0]),
        Op::Permute(perm) => format!("{}.permute(&{:?})", args[0], &perm[..]),
        Op::Reduce { op, axes } => format!(
            "{}.{}_axes(&{:?}).reshape(&{shape})",
            args[0],
            op.name(),
            &axes[..]
        ),
        _ => return None,
    })
}

/// The program reproducing `target`: `nodes` are the flush's nodes, `value` gives the values of a
/// node written as an input (a kernel input's data, else the node's reference), `inputs` the nodes
/// the fused kernel read.
pub fn program(
    target: &Target,
    nodes: &AHashMap<NodeId, NodeInfo>,
    inputs: &AHashSet<NodeId>,
    value: &dyn Fn(NodeId) -> Option<Arc<TypedVec>>,
) -> String {
    // The cone in dependency order (inputs first), by an explicit post-order walk.
    let mut order: Vec<NodeId> = Vec::new();
    let mut seen: AHashSet<NodeId> = AHashSet::new();
    let mut stack = vec![(target.node, false)];
    // The shapes of a node's inputs (where recorded).
    let shapes = |n: &NodeInfo| -> Vec<&[usize]> {
        n.inputs
            .iter()
            .map(|i| nodes.get(i).map_or(&[][..], |x| &x.shape[..]))
            .collect()
    };
    let is_leaf = |id: NodeId| {
        inputs.contains(&id)
            || nodes.get(&id).is_none_or(|n| {
                let args: Vec<String> = n.inputs.iter().map(|_| String::new()).collect();
                n.inputs.iter().any(|i| !nodes.contains_key(i)) && !inputs.contains(&id)
                    || expression(n, &args, &shapes(n)).is_none()
            })
    };
    while let Some((id, expanded)) = stack.pop() {
        if expanded {
            order.push(id);
            continue;
        }
        if !seen.insert(id) {
            continue;
        }
        stack.push((id, true));
        if !is_leaf(id)
            && let Some(n) = nodes.get(&id)
        {
            for &i in n.inputs.iter().rev() {
                if !seen.contains(&i) {
                    stack.push((i, false));
                }
            }
        }
    }
    let var: AHashMap<NodeId, String> = order
        .iter()
        .enumerate()
        .map(|(k, &id)| (id, format!("v{k}")))
        .collect();
    let mut s = String::new();
    let t = &nodes[&target.node];
    let _ = writeln!(
        s,
        "// Reproduces `{}` recorded at {} (element {}): optimised {:?}, reference {:?}.",
        t.op.base_name(),
        t.site,
        target.element,
        target.optimised,
        target.reference
    );
    let _ = writeln!(s, "use arrayflow::Array;");
    let _ = writeln!(s);
    let _ = writeln!(s, "fn main() -> arrayflow::Result<()> {{");
    for &id in &order {
        let Some(n) = nodes.get(&id) else { continue };
        let v = &var[&id];
        let what = format!("{} at {}", n.op.base_name(), n.site);
        if is_leaf(id) {
            let (ty, shape) = (rust_type(n.dtype), &n.shape[..]);
            let len = shape.iter().product::<usize>();
            match value(id) {
                Some(data) if data.len() == len && len <= MAX_LITERAL_ELEMENTS => {
                    let items: Vec<String> = (0..len).map(|i| literal(data.get(i))).collect();
                    let _ = writeln!(
                        s,
                        "    let {v} = Array::<{ty}>::from_slice(&[{}], &{shape:?}); // {what}",
                        items.join(", "),
                    );
                }
                // Too large to write out, or not known: the program still compiles and runs,
                // with one value everywhere, and says so.
                data => {
                    let why = match &data {
                        Some(d) if d.len() == len => format!(
                            "its {len} values are more than the {MAX_LITERAL_ELEMENTS} a program writes out"
                        ),
                        _ => "its values were not kept".to_string(),
                    };
                    let fill = data.as_ref().filter(|d| !d.is_empty()).map_or_else(
                        || literal(Scalar::I32(0).cast(n.dtype)),
                        |d| literal(d.get(0)),
                    );
                    let _ = writeln!(
                        s,
                        "    // {what}: {why}; it is filled with {fill} here, so the values
    // printed may differ from the divergence's. Put its values here to reproduce it.
    let {v} = Array::<{ty}>::full(&{shape:?}, {fill});",
                    );
                }
            }
        } else {
            let args: Vec<String> = n.inputs.iter().map(|i| var[i].clone()).collect();
            let e = expression(n, &args, &shapes(n)).expect("a non-leaf has a spelling");
            let _ = writeln!(s, "    let {v} = {e}; // {what}");
        }
    }
    let v = &var[&target.node];
    if is_leaf(target.node) && !inputs.contains(&target.node) {
        let _ = writeln!(
            s,
            "    // `{}` has no spelling here: {v} holds its reference values; call the op on its \
             inputs here to reproduce it.",
            t.op.base_name()
        );
    }
    let _ = writeln!(s, "    let values = {v}.to_vec()?;");
    let _ = writeln!(
        s,
        "    println!(\"element {}: {{:?}} (reference {:?})\", values[{}]);",
        target.element, target.reference, target.element
    );
    let _ = writeln!(s, "    Ok(())");
    let _ = writeln!(s, "}}");
    s
}
