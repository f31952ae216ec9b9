//! The intrinsic registry (`intrinsics/mod.rs`) against oracles written here: for every
//! registered intrinsic, random valid calls on which its CPU entry, its reference implementation
//! and a plain loop in this file agree exactly (matrix products and scans of small integers, so
//! every summation order gives the same value); its check gives the output shape the loop expects and
//! rejects a bad call with an error at the caller's file:line; the front end passes the user's
//! call site through the registry. The sorting intrinsics' cases hold small integers too (the
//! order of NaN and signed zeros is `tests/sort.rs`'s).

use arrayflow::Array;
use arrayflow::exec::TypedVec;
use arrayflow::intrinsics::{self, Operand, Output, REGISTRY};
use arrayflow::ir::{DType, Intrinsic, ReduceOp, Shape, Site};
use arrayflow::proggen::sequence::IntrinsicCall;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// One call: the op, its inputs with the shapes the call names, and the expected output.
struct Case {
    op: Intrinsic,
    inputs: Vec<(TypedVec, Shape)>,
    expected: TypedVec,
    out_shape: Vec<usize>,
}

#[track_caller]
fn here() -> Site {
    std::panic::Location::caller()
}

fn shape(r: &mut StdRng, rank: usize, max: usize) -> Vec<usize> {
    (0..rank).map(|_| r.random_range(1..=max)).collect()
}

fn len(s: &[usize]) -> usize {
    s.iter().product()
}

/// Random values of `dtype`: small integers for every type (exact in any summation order).
fn values(r: &mut StdRng, dtype: DType, n: usize) -> TypedVec {
    match dtype {
        DType::F32 => TypedVec::F32((0..n).map(|_| r.random_range(-8..=8) as f32).collect()),
        DType::F64 => TypedVec::F64((0..n).map(|_| r.random_range(-8..=8) as f64).collect()),
        DType::I32 => TypedVec::I32((0..n).map(|_| r.random_range(-1000..1000)).collect()),
        DType::U32 => TypedVec::U32((0..n).map(|_| r.random_range(0..1000)).collect()),
        _ => TypedVec::Bool((0..n).map(|_| r.random_range(0..2) == 1).collect()),
    }
}

/// `out[i] = v[src(i)]` for `n` outputs, whatever the element type.
fn pick(v: &TypedVec, n: usize, src: impl Fn(usize) -> usize) -> TypedVec {
    match v {
        TypedVec::F32(x) => TypedVec::F32((0..n).map(|i| x[src(i)]).collect()),
        TypedVec::F64(x) => TypedVec::F64((0..n).map(|i| x[src(i)]).collect()),
        TypedVec::I32(x) => TypedVec::I32((0..n).map(|i| x[src(i)]).collect()),
        TypedVec::U32(x) => TypedVec::U32((0..n).map(|i| x[src(i)]).collect()),
        TypedVec::Bool(x) => TypedVec::Bool((0..n).map(|i| x[src(i)]).collect()),
        TypedVec::C64(x) => TypedVec::C64((0..n).map(|i| x[src(i)]).collect()),
        TypedVec::C128(x) => TypedVec::C128((0..n).map(|i| x[src(i)]).collect()),
    }
}

fn any_type(r: &mut StdRng) -> DType {
    [DType::F32, DType::F64, DType::I32, DType::U32, DType::Bool][r.random_range(0..5)]
}

fn matmul_case(r: &mut StdRng) -> Case {
    let (m, k, n) = (
        r.random_range(1..=9),
        r.random_range(1..=40),
        r.random_range(1..=9),
    );
    let dtype = if r.random_range(0..2) == 0 {
        DType::F32
    } else {
        DType::F64
    };
    let (a, b) = (values(r, dtype, m * k), values(r, dtype, k * n));
    let get = |v: &TypedVec, i: usize| match v {
        TypedVec::F32(x) => x[i] as f64,
        TypedVec::F64(x) => x[i],
        _ => unreachable!(),
    };
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                c[i * n + j] += get(&a, i * k + p) * get(&b, p * n + j);
            }
        }
    }
    let expected = match dtype {
        DType::F32 => TypedVec::F32(c.iter().map(|&x| x as f32).collect()),
        _ => TypedVec::F64(c),
    };
    Case {
        op: Intrinsic::Matmul {
            trans_a: false,
            trans_b: false,
        },
        inputs: vec![
            (a, Shape::from_slice(&[m, k])),
            (b, Shape::from_slice(&[k, n])),
        ],
        expected,
        out_shape: vec![m, n],
    }
}

fn gather_case(r: &mut StdRng) -> Case {
    let rank = r.random_range(1..=3);
    let ds = shape(r, rank, 5);
    let axis = r.random_range(0..rank);
    let irank = r.random_range(1..=2);
    let is = shape(r, irank, 4);
    let dtype = any_type(r);
    let data = values(r, dtype, len(&ds));
    let picks: Vec<usize> = (0..len(&is)).map(|_| r.random_range(0..ds[axis])).collect();
    let idx = if r.random_range(0..2) == 0 {
        TypedVec::I32(picks.iter().map(|&i| i as i32).collect())
    } else {
        TypedVec::U32(picks.iter().map(|&i| i as u32).collect())
    };
    let (pre, post): (usize, usize) = (len(&ds[..axis]), len(&ds[axis + 1..]));
    let out_shape: Vec<usize> = [&ds[..axis], &is[..], &ds[axis + 1..]].concat();
    // Output (p, j, q) reads data (p, picks[j], q).
    let mut src = Vec::new();
    for p in 0..pre {
        for &i in &picks {
            for q in 0..post {
                src.push((p * ds[axis] + i) * post + q);
            }
        }
    }
    let expected = pick(&data, src.len(), |o| src[o]);
    Case {
        op: Intrinsic::Gather { axis },
        inputs: vec![
            (data, Shape::from_slice(&ds)),
            (idx, Shape::from_slice(&is)),
        ],
        expected,
        out_shape,
    }
}

fn concat_case(r: &mut StdRng) -> Case {
    let rank = r.random_range(1..=3);
    let base = shape(r, rank, 4);
    let axis = r.random_range(0..rank);
    let dtype = any_type(r);
    let mut inputs = Vec::new();
    for _ in 0..r.random_range(1..=4) {
        let mut s = base.clone();
        s[axis] = r.random_range(0..=3);
        inputs.push((values(r, dtype, len(&s)), Shape::from_slice(&s)));
    }
    let mut out_shape = base.clone();
    out_shape[axis] = inputs.iter().map(|(_, s)| s[axis]).sum();
    // Row p of the output (the axes before `axis`) is row p of every part, one after another.
    let pre = len(&base[..axis]);
    let post = len(&base[axis + 1..]);
    let mut src: Vec<(usize, usize)> = Vec::new(); // (part, element)
    for p in 0..pre {
        for (k, (_, s)) in inputs.iter().enumerate() {
            let row = s[axis] * post;
            src.extend((0..row).map(|e| (k, p * row + e)));
        }
    }
    macro_rules! join {
        ($v:ident) => {
            TypedVec::$v(
                src.iter()
                    .map(|&(k, e)| match &inputs[k].0 {
                        TypedVec::$v(x) => x[e],
                        _ => unreachable!(),
                    })
                    .collect(),
            )
        };
    }
    let expected = match dtype {
        DType::F32 => join!(F32),
        DType::F64 => join!(F64),
        DType::I32 => join!(I32),
        DType::U32 => join!(U32),
        _ => join!(Bool),
    };
    Case {
        op: Intrinsic::Concat { axis },
        inputs,
        expected,
        out_shape,
    }
}

fn transpose_case(r: &mut StdRng) -> Case {
    let (batch, rows, cols) = (
        r.random_range(1..=3),
        r.random_range(1..=20),
        r.random_range(1..=20),
    );
    let offset = r.random_range(0..=7);
    let extra = r.random_range(0..=5);
    let dtype = any_type(r);
    let data = values(r, dtype, offset + batch * rows * cols + extra);
    // out[b, j, i] = data[offset + (b, i, j)], written as three loops in output order.
    let mut src = Vec::new();
    for b in 0..batch {
        for j in 0..cols {
            for i in 0..rows {
                src.push(offset + (b * rows + i) * cols + j);
            }
        }
    }
    let expected = pick(&data, src.len(), |o| src[o]);
    Case {
        op: Intrinsic::Transpose { offset },
        inputs: vec![(data, Shape::from_slice(&[batch, rows, cols]))],
        expected,
        out_shape: vec![batch, cols, rows],
    }
}

/// A scatter of `op`'s form: data, indices with duplicates, values; the sources applied in order
/// by a loop over the values' multi-indices (the last duplicate wins, or they add).
fn scatter_case(r: &mut StdRng, form: &str) -> Case {
    let rank = r.random_range(1..=3);
    let ds = shape(r, rank, 4);
    let axis = r.random_range(0..rank);
    let along = form == "put_along_axis";
    let is = if along {
        let mut s = ds.clone();
        s[axis] = r.random_range(1..=5);
        s
    } else {
        let rank = r.random_range(1..=2);
        shape(r, rank, 4)
    };
    let dtype = if form == "scatter_add" {
        [DType::F32, DType::F64, DType::I32, DType::U32][r.random_range(0..4)]
    } else {
        any_type(r)
    };
    let data = values(r, dtype, len(&ds));
    let picks: Vec<usize> = (0..len(&is)).map(|_| r.random_range(0..ds[axis])).collect();
    let idx = if r.random_range(0..2) == 0 {
        TypedVec::I32(picks.iter().map(|&i| i as i32).collect())
    } else {
        TypedVec::U32(picks.iter().map(|&i| i as u32).collect())
    };
    let vs: Vec<usize> = if along {
        is.clone()
    } else {
        [&ds[..axis], &is[..], &ds[axis + 1..]].concat()
    };
    let vals = values(r, dtype, len(&vs));
    // Each value's target: its multi-index with the axis part replaced by its index.
    let strides =
        |s: &[usize]| -> Vec<usize> { (0..s.len()).map(|d| s[d + 1..].iter().product()).collect() };
    let (vst, ist, dst) = (strides(&vs), strides(&is), strides(&ds));
    let target = |v: usize| -> usize {
        let m: Vec<usize> = (0..vs.len()).map(|d| (v / vst[d]) % vs[d]).collect();
        let mut t = 0;
        if along {
            for d in 0..ds.len() {
                let k = if d == axis { picks[v] } else { m[d] };
                t += k * dst[d];
            }
        } else {
            let ir = is.len();
            let j: usize = (0..ir).map(|d| m[axis + d] * ist[d]).sum();
            for d in 0..ds.len() {
                let k = match d.cmp(&axis) {
                    std::cmp::Ordering::Less => m[d],
                    std::cmp::Ordering::Equal => picks[j],
                    std::cmp::Ordering::Greater => m[d + ir - 1],
                };
                t += k * dst[d];
            }
        }
        t
    };
    macro_rules! apply {
        ($v:ident, $add:expr) => {{
            let (TypedVec::$v(d), TypedVec::$v(x)) = (&data, &vals) else {
                unreachable!()
            };
            let mut out = d.clone();
            for (v, &x) in x.iter().enumerate() {
                let t = target(v);
                out[t] = $add(out[t], x);
            }
            TypedVec::$v(out)
        }};
    }
    let add = form == "scatter_add";
    let expected = match dtype {
        DType::F32 => apply!(F32, |a: f32, b: f32| if add { a + b } else { b }),
        DType::F64 => apply!(F64, |a: f64, b: f64| if add { a + b } else { b }),
        DType::I32 => apply!(I32, |a: i32, b: i32| if add {
            a.wrapping_add(b)
        } else {
            b
        }),
        DType::U32 => apply!(U32, |a: u32, b: u32| if add {
            a.wrapping_add(b)
        } else {
            b
        }),
        _ => apply!(Bool, |_: bool, b: bool| b),
    };
    let op = match form {
        "scatter" => Intrinsic::Scatter { axis },
        "scatter_add" => Intrinsic::ScatterAdd { axis },
        _ => Intrinsic::PutAlongAxis { axis },
    };
    Case {
        op,
        inputs: vec![
            (data, Shape::from_slice(&ds)),
            (idx, Shape::from_slice(&is)),
            (vals, Shape::from_slice(&vs)),
        ],
        expected,
        out_shape: ds,
    }
}

fn bincount_case(r: &mut StdRng) -> Case {
    let length = r.random_range(1..=12);
    let rank = r.random_range(1..=2);
    let xs = shape(r, rank, 9);
    let picks: Vec<usize> = (0..len(&xs)).map(|_| r.random_range(0..length)).collect();
    let mut counts = vec![0u32; length];
    for &p in &picks {
        counts[p] += 1;
    }
    let x = if r.random_range(0..2) == 0 {
        TypedVec::I32(picks.iter().map(|&i| i as i32).collect())
    } else {
        TypedVec::U32(picks.iter().map(|&i| i as u32).collect())
    };
    Case {
        op: Intrinsic::Bincount { length },
        inputs: vec![(x, Shape::from_slice(&xs))],
        expected: TypedVec::U32(counts),
        out_shape: vec![length],
    }
}

/// Values on a grid of quarters, edges at the integers 0..=bins: each value's bin by a scan.
fn histogram_case(r: &mut StdRng) -> Case {
    let bins = r.random_range(1..=8);
    let rank = r.random_range(1..=2);
    let xs = shape(r, rank, 9);
    let grid: Vec<f64> = (0..len(&xs))
        .map(|_| r.random_range(-4..=(4 * bins as i32 + 4)) as f64 / 4.0)
        .collect();
    let mut counts = vec![0u32; bins];
    for &x in &grid {
        if x >= 0.0 && x <= bins as f64 {
            counts[(x.floor() as usize).min(bins - 1)] += 1;
        }
    }
    let edges: Vec<f64> = (0..=bins).map(|k| k as f64).collect();
    let (x, e) = if r.random_range(0..2) == 0 {
        (
            TypedVec::F32(grid.iter().map(|&v| v as f32).collect()),
            TypedVec::F32(edges.iter().map(|&v| v as f32).collect()),
        )
    } else {
        (TypedVec::F64(grid), TypedVec::F64(edges))
    };
    Case {
        op: Intrinsic::Histogram { bins },
        inputs: vec![
            (x, Shape::from_slice(&xs)),
            (e, Shape::from_slice(&[bins + 1])),
        ],
        expected: TypedVec::U32(counts),
        out_shape: vec![bins],
    }
}

fn scan_case(r: &mut StdRng) -> Case {
    let rank = r.random_range(1..=3);
    let s = shape(r, rank, 6);
    let axis = r.random_range(0..rank);
    let op = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min][r.random_range(0..4)];
    let dtype = [DType::F32, DType::F64, DType::I32, DType::U32][r.random_range(0..4)];
    let data = values(r, dtype, len(&s));
    let (pre, n, post) = (len(&s[..axis]), s[axis], len(&s[axis + 1..]));
    // Each line (p, q) from its first element on: out[(p, k, q)] combines data[(p, 0..=k, q)].
    macro_rules! lines {
        ($x:expr, $comb:expr) => {{
            let mut out = $x.clone();
            for p in 0..pre {
                for q in 0..post {
                    for k in 1..n {
                        let (i, prev) = ((p * n + k) * post + q, (p * n + k - 1) * post + q);
                        out[i] = $comb(out[prev], $x[i]);
                    }
                }
            }
            out
        }};
    }
    macro_rules! float {
        ($x:expr, $t:ty) => {
            lines!($x, |a: $t, b: $t| match op {
                ReduceOp::Sum => a + b,
                ReduceOp::Prod => a * b,
                ReduceOp::Max =>
                    if b > a {
                        b
                    } else {
                        a
                    },
                _ =>
                    if b < a {
                        b
                    } else {
                        a
                    },
            })
        };
    }
    macro_rules! int {
        ($x:expr, $t:ty) => {
            lines!($x, |a: $t, b: $t| match op {
                ReduceOp::Sum => a.wrapping_add(b),
                ReduceOp::Prod => a.wrapping_mul(b),
                ReduceOp::Max => std::cmp::max(a, b),
                _ => std::cmp::min(a, b),
            })
        };
    }
    let expected = match &data {
        TypedVec::F32(x) => TypedVec::F32(float!(x, f32)),
        TypedVec::F64(x) => TypedVec::F64(float!(x, f64)),
        TypedVec::I32(x) => TypedVec::I32(int!(x, i32)),
        TypedVec::U32(x) => TypedVec::U32(int!(x, u32)),
        TypedVec::Bool(_) | TypedVec::C64(_) | TypedVec::C128(_) => unreachable!(),
    };
    Case {
        op: Intrinsic::Scan { op, axis },
        inputs: vec![(data, Shape::from_slice(&s))],
        expected,
        out_shape: s,
    }
}

fn numeric_type(r: &mut StdRng) -> DType {
    [DType::F32, DType::F64, DType::I32, DType::U32][r.random_range(0..4)]
}

fn as_f64(v: &TypedVec, i: usize) -> f64 {
    match v {
        TypedVec::F32(x) => x[i] as f64,
        TypedVec::F64(x) => x[i],
        TypedVec::I32(x) => x[i] as f64,
        TypedVec::U32(x) => x[i] as f64,
        TypedVec::Bool(x) => x[i] as u8 as f64,
        TypedVec::C64(_) | TypedVec::C128(_) => unreachable!("no complex cases"),
    }
}

/// A sort or argsort along a random axis (rows of up to 5, or one row of up to 700 so that the
/// CPU's radix sort runs too): each row's positions sorted stably by value, in a loop here.
fn sort_case(r: &mut StdRng, argsort: bool) -> Case {
    let ds = if r.random_range(0..4) == 0 {
        vec![r.random_range(500..=700)]
    } else {
        let rank = r.random_range(1..=3);
        shape(r, rank, 5)
    };
    let axis = r.random_range(0..ds.len());
    let descending = r.random_range(0..2) == 1;
    let dtype = numeric_type(r);
    let data = values(r, dtype, len(&ds));
    let (pre, dim, post) = (len(&ds[..axis]), ds[axis], len(&ds[axis + 1..]));
    let mut src = vec![0usize; len(&ds)];
    let mut pos = vec![0u32; len(&ds)];
    for p in 0..pre {
        for q in 0..post {
            let at = |j: usize| (p * dim + j) * post + q;
            let mut js: Vec<usize> = (0..dim).collect();
            js.sort_by(|&a, &b| {
                let o = as_f64(&data, at(a))
                    .partial_cmp(&as_f64(&data, at(b)))
                    .unwrap();
                if descending { o.reverse() } else { o }
            });
            for (j, &from) in js.iter().enumerate() {
                src[at(j)] = at(from);
                pos[at(j)] = from as u32;
            }
        }
    }
    let (op, expected) = if argsort {
        (Intrinsic::Argsort { axis, descending }, TypedVec::U32(pos))
    } else {
        let v = pick(&data, src.len(), |o| src[o]);
        (Intrinsic::Sort { axis, descending }, v)
    };
    Case {
        op,
        inputs: vec![(data, Shape::from_slice(&ds))],
        expected,
        out_shape: ds,
    }
}

/// take_along_axis: indices of the data's rank, `m` positions along the axis.
fn take_case(r: &mut StdRng) -> Case {
    let rank = r.random_range(1..=3);
    let ds = shape(r, rank, 5);
    let axis = r.random_range(0..rank);
    let mut is = ds.clone();
    is[axis] = r.random_range(1..=4);
    let dtype = any_type(r);
    let data = values(r, dtype, len(&ds));
    let picks: Vec<usize> = (0..len(&is)).map(|_| r.random_range(0..ds[axis])).collect();
    let idx = if r.random_range(0..2) == 0 {
        TypedVec::I32(picks.iter().map(|&i| i as i32).collect())
    } else {
        TypedVec::U32(picks.iter().map(|&i| i as u32).collect())
    };
    let (m, post) = (is[axis], len(&ds[axis + 1..]));
    // Output (p, j, q) reads data (p, picks[(p, j, q)], q).
    let src: Vec<usize> = (0..picks.len())
        .map(|o| {
            let (p, q) = (o / (m * post), o % post);
            (p * ds[axis] + picks[o]) * post + q
        })
        .collect();
    let expected = pick(&data, src.len(), |o| src[o]);
    Case {
        op: Intrinsic::TakeAlongAxis { axis },
        inputs: vec![
            (data, Shape::from_slice(&ds)),
            (idx, Shape::from_slice(&is)),
        ],
        expected,
        out_shape: is,
    }
}

/// A sorted 1-D array of small integers (so every element type holds them exactly).
fn sorted_values(r: &mut StdRng, dtype: DType, n: usize) -> TypedVec {
    let mut k: Vec<i32> = (0..n).map(|_| r.random_range(0..12)).collect();
    k.sort();
    match dtype {
        DType::F32 => TypedVec::F32(k.iter().map(|&v| v as f32).collect()),
        DType::F64 => TypedVec::F64(k.iter().map(|&v| v as f64).collect()),
        DType::I32 => TypedVec::I32(k),
        _ => TypedVec::U32(k.iter().map(|&v| v as u32).collect()),
    }
}

/// searchsorted: insertion points counted in a loop.
fn searchsorted_case(r: &mut StdRng) -> Case {
    let n = r.random_range(0..=30);
    let dtype = numeric_type(r);
    let a = sorted_values(r, dtype, n);
    let rank = r.random_range(1..=2);
    let vs = shape(r, rank, 6);
    let v = sorted_values(r, dtype, len(&vs));
    let right = r.random_range(0..2) == 1;
    let pos: Vec<u32> = (0..v.len())
        .map(|i| {
            let x = as_f64(&v, i);
            (0..n)
                .filter(|&j| as_f64(&a, j) < x || (right && as_f64(&a, j) == x))
                .count() as u32
        })
        .collect();
    Case {
        op: Intrinsic::SearchSorted { right },
        inputs: vec![(a, Shape::from_slice(&[n])), (v, Shape::from_slice(&vs))],
        expected: TypedVec::U32(pos),
        out_shape: vs,
    }
}

/// unique_runs: `[runs, starts.., n, zeros..]` of a sorted array, from a loop.
fn unique_runs_case(r: &mut StdRng) -> Case {
    let n = r.random_range(0..=40);
    let dtype = numeric_type(r);
    let a = sorted_values(r, dtype, n);
    let starts: Vec<u32> = (0..n)
        .filter(|&i| i == 0 || as_f64(&a, i) != as_f64(&a, i - 1))
        .map(|i| i as u32)
        .collect();
    let mut out = vec![starts.len() as u32];
    out.extend(&starts);
    out.push(n as u32);
    out.resize(n + 2, 0);
    Case {
        op: Intrinsic::UniqueRuns,
        inputs: vec![(a, Shape::from_slice(&[n]))],
        expected: TypedVec::U32(out),
        out_shape: vec![n + 2],
    }
}

/// topk: the first `k` positions of each row of [`sort_case`]'s descending argsort.
fn topk_case(r: &mut StdRng) -> Case {
    let mut c = sort_case(r, true);
    let Intrinsic::Argsort { axis, .. } = c.op else {
        unreachable!("sort_case(argsort) gives an argsort")
    };
    let ds = c.out_shape.clone();
    let (pre, dim, post) = (len(&ds[..axis]), ds[axis], len(&ds[axis + 1..]));
    let k = r.random_range(0..=dim);
    // Each row's positions sorted stably by value, descending, in a loop here.
    let data = &c.inputs[0].0;
    let mut pos = vec![0u32; pre * k * post];
    for p in 0..pre {
        for q in 0..post {
            let at = |j: usize| (p * dim + j) * post + q;
            let mut js: Vec<usize> = (0..dim).collect();
            js.sort_by(|&a, &b| {
                as_f64(data, at(b))
                    .partial_cmp(&as_f64(data, at(a)))
                    .unwrap()
            });
            for (j, &from) in js.iter().take(k).enumerate() {
                pos[(p * k + j) * post + q] = from as u32;
            }
        }
    }
    let mut out = ds;
    out[axis] = k;
    c.op = Intrinsic::Topk { axis, k };
    c.expected = TypedVec::U32(pos);
    c.out_shape = out;
    c
}

/// A random valid call of the intrinsic named `name` (every registered one must have a case).
fn case(name: &str, r: &mut StdRng) -> Case {
    match name {
        "matmul" => matmul_case(r),
        "gather" => gather_case(r),
        "concat" => concat_case(r),
        "transpose" => transpose_case(r),
        "scatter" | "scatter_add" | "put_along_axis" => scatter_case(r, name),
        "bincount" => bincount_case(r),
        "histogram" => histogram_case(r),
        "scan" => scan_case(r),
        "sort" => sort_case(r, false),
        "argsort" => sort_case(r, true),
        "take_along_axis" => take_case(r),
        "searchsorted" => searchsorted_case(r),
        "unique_runs" => unique_runs_case(r),
        "topk" => topk_case(r),
        "lu" | "lu_unpack" | "lu_solve" | "lu_cond" | "solve" | "inv" | "det" | "slogdet"
        | "cholesky" | "cholesky_solve" | "triangular_solve" | "qr" | "lstsq" => {
            linalg_case(name, r)
        }
        "fft" | "rfft" | "irfft" => fft_case(name, r),
        "convolve" => conv_case(r),
        other => panic!("intrinsic {other} is registered but has no case in this test"),
    }
}

/// A direct convolution of small integers (every sum exact in f32 and f64) over the last one or
/// two axes, in a random mode, with a shared or per-batch filter; the loop here walks the full
/// result's definition `sum_p k[p] x[t - p]` and crops it as the mode says.
fn conv_case(r: &mut StdRng) -> Case {
    use arrayflow::ir::ConvMode;
    let rank = r.random_range(1..=2);
    let mode = [ConvMode::Full, ConvMode::Same, ConvMode::Valid][r.random_range(0..3)];
    let lead_rank = r.random_range(0..=2);
    let lead = shape(r, lead_rank, 3);
    let mut n = shape(r, rank, 6);
    let m: Vec<usize> = n.iter().map(|&d| r.random_range(1..=d + 2)).collect();
    if mode == ConvMode::Valid {
        for (nd, md) in n.iter_mut().zip(&m) {
            *nd = (*nd).max(*md);
        }
    }
    let per_batch = r.random_bool(0.5);
    let dtype = [DType::F32, DType::F64][r.random_range(0..2)];
    let xs: Vec<usize> = lead.iter().chain(&n).copied().collect();
    let ks: Vec<usize> = if per_batch {
        lead.iter().chain(&m).copied().collect()
    } else {
        m.clone()
    };
    let x = values(r, dtype, len(&xs));
    let k = values(r, dtype, len(&ks));
    // Lengths and offsets per convolved axis, a 1-D call seen with a unit first axis.
    let (mut n2, mut m2) = ([1usize, 1], [1usize, 1]);
    for d in 0..rank {
        n2[2 - rank + d] = n[d];
        m2[2 - rank + d] = m[d];
    }
    let ext = |n: usize, m: usize| match mode {
        ConvMode::Full => (n + m - 1, 0),
        ConvMode::Same => (n, (m - 1) / 2),
        ConvMode::Valid => (n + 1 - m, m - 1),
    };
    let (o0, f0) = ext(n2[0], m2[0]);
    let (o1, f1) = ext(n2[1], m2[1]);
    let batch = len(&lead);
    let mut out = Vec::new();
    for b in 0..batch {
        let kb = if per_batch { b * m2[0] * m2[1] } else { 0 };
        for i0 in 0..o0 {
            for i1 in 0..o1 {
                let mut acc = 0.0;
                for p0 in 0..m2[0] {
                    for p1 in 0..m2[1] {
                        let (t0, t1) = (i0 + f0, i1 + f1);
                        if t0 >= p0 && t1 >= p1 && t0 - p0 < n2[0] && t1 - p1 < n2[1] {
                            let xi = (b * n2[0] + t0 - p0) * n2[1] + t1 - p1;
                            acc += as_f64(&x, xi) * as_f64(&k, kb + p0 * m2[1] + p1);
                        }
                    }
                }
                out.push(acc);
            }
        }
    }
    let mut out_shape = lead.clone();
    if rank == 2 {
        out_shape.push(o0);
    }
    out_shape.push(o1);
    let expected = match dtype {
        DType::F32 => TypedVec::F32(out.iter().map(|&v| v as f32).collect()),
        _ => TypedVec::F64(out),
    };
    Case {
        op: Intrinsic::Convolve { rank, mode },
        inputs: vec![(x, Shape::from_slice(&xs)), (k, Shape::from_slice(&ks))],
        expected,
        out_shape,
    }
}

/// A Fourier transform whose result is exact in binary: lengths 1, 2 and 4 (4 for the complex
/// transform only; its twiddles are 1, -i, -1, i), small integers, scales that are powers of
/// two, along a random axis of a batch, the input axis cropped or zero-padded; the loop here
/// is the definition `sum_j x_j w^(jk)` with `w = exp(-+2 pi i / n)` written out. Accuracy on
/// every length is `tests/fft.rs`'s.
fn fft_case(name: &str, r: &mut StdRng) -> Case {
    use arrayflow::ir::FftNorm;
    type Z = num_complex::Complex<f64>;
    let rank = r.random_range(1..=3);
    let mut s = shape(r, rank, 4);
    let axis = r.random_range(0..rank);
    let m = r.random_range(1..=5);
    s[axis] = m;
    let n = if name == "fft" {
        [1, 2, 4][r.random_range(0..3)]
    } else {
        [1, 2][r.random_range(0..2)]
    };
    let inverse = name == "irfft" || (name == "fft" && r.random_bool(0.5));
    // Ortho's 1/sqrt(n) is a power of two only for n = 1 and 4.
    let norms: &[FftNorm] = if n == 2 {
        &[FftNorm::Backward, FftNorm::Forward]
    } else {
        &[FftNorm::Backward, FftNorm::Forward, FftNorm::Ortho]
    };
    let norm = norms[r.random_range(0..norms.len())];
    let f64s = r.random_bool(0.5);
    let small = |r: &mut StdRng| r.random_range(-8..=8) as f64;
    let numel = len(&s);
    let x: Vec<Z> = (0..numel)
        .map(|_| {
            let re = small(r);
            let im = if name == "rfft" { 0.0 } else { small(r) };
            Z::new(re, im)
        })
        .collect();
    // Real input to the complex transform half of the time.
    let real_in = name == "rfft" || (name == "fft" && r.random_bool(0.5));
    let x: Vec<Z> = if real_in {
        x.iter().map(|z| Z::new(z.re, 0.0)).collect()
    } else {
        x
    };
    let data = match (real_in, f64s) {
        (true, true) => TypedVec::F64(x.iter().map(|z| z.re).collect()),
        (true, false) => TypedVec::F32(x.iter().map(|z| z.re as f32).collect()),
        (false, true) => TypedVec::C128(x.clone()),
        (false, false) => TypedVec::C64(
            x.iter()
                .map(|z| num_complex::Complex::new(z.re as f32, z.im as f32))
                .collect(),
        ),
    };
    let half = n / 2 + 1;
    let (lin, lout) = match name {
        "fft" => (n, n),
        "rfft" => (n, half),
        _ => (half, n),
    };
    let w = |t: usize| {
        let q = 4 * (t % n) / n;
        let sign = if inverse { 1.0 } else { -1.0 };
        [
            Z::new(1.0, 0.0),
            Z::new(0.0, sign),
            Z::new(-1.0, 0.0),
            Z::new(0.0, -sign),
        ][q]
    };
    let scale = match (norm, inverse) {
        (FftNorm::Backward, false) | (FftNorm::Forward, true) => 1.0,
        (FftNorm::Ortho, _) => 1.0 / (n as f64).sqrt(),
        _ => 1.0 / n as f64,
    };
    let (pre, post) = (len(&s[..axis]), len(&s[axis + 1..]));
    let mut out = vec![Z::new(0.0, 0.0); pre * lout * post];
    for p in 0..pre {
        for q in 0..post {
            // The line as the transform reads it: cropped or padded to `lin`.
            let mut line: Vec<Z> = (0..lin)
                .map(|j| {
                    if j < m {
                        x[(p * m + j) * post + q]
                    } else {
                        Z::new(0.0, 0.0)
                    }
                })
                .collect();
            if name == "irfft" {
                // The Hermitian spectrum of the coefficients (imaginary parts of 0 and n/2 dropped).
                line[0].im = 0.0;
                if n == 2 {
                    line[1].im = 0.0;
                }
                let h = line.clone();
                line = (0..n)
                    .map(|k| if k < half { h[k] } else { h[n - k].conj() })
                    .collect();
            }
            for k in 0..lout {
                let v: Z = (0..n).map(|j| line[j] * w(j * k)).sum();
                out[(p * lout + k) * post + q] = v * scale;
            }
        }
    }
    let expected = match (name, f64s) {
        ("irfft", true) => TypedVec::F64(out.iter().map(|z| z.re).collect()),
        ("irfft", false) => TypedVec::F32(out.iter().map(|z| z.re as f32).collect()),
        (_, true) => TypedVec::C128(out),
        (_, false) => TypedVec::C64(
            out.iter()
                .map(|z| num_complex::Complex::new(z.re as f32, z.im as f32))
                .collect(),
        ),
    };
    let op = match name {
        "fft" => Intrinsic::Fft {
            axis,
            n,
            inverse,
            norm,
        },
        "rfft" => Intrinsic::Rfft { axis, n, norm },
        _ => Intrinsic::Irfft { axis, n, norm },
    };
    let mut out_shape = s.clone();
    out_shape[axis] = lout;
    Case {
        op,
        inputs: vec![(data, Shape::from_slice(&s))],
        expected,
        out_shape,
    }
}

/// A linear-algebra case whose results are exact in binary (a scaled permutation: powers of two
/// on one entry per row and column), so the CPU entry, the reference and the loop here agree bit
/// for bit; the numerics are tested against oracles in `tests/linalg.rs`.
fn linalg_case(name: &str, r: &mut StdRng) -> Case {
    let n = 3;
    let perm: Vec<usize> = {
        let mut p = vec![0, 1, 2];
        p.rotate_left(r.random_range(0..3));
        p
    };
    let pow = [1.0f64, 2.0, 4.0];
    // a[i, perm[i]] = pow[i]: A^-1[perm[i], i] = 1 / pow[i].
    let mut a = vec![0.0f64; 9];
    for i in 0..n {
        a[i * n + perm[i]] = pow[i];
    }
    let diag: Vec<f64> = (0..9)
        .map(|e| if e % 4 == 0 { pow[e / 4] } else { 0.0 })
        .collect();
    let b: Vec<f64> = (0..6).map(|_| r.random_range(-8..8) as f64).collect();
    let m33 = Shape::from_slice(&[n, n]);
    let m32 = Shape::from_slice(&[n, 2]);
    let f = |v: &[f64]| TypedVec::F64(v.to_vec());
    let piv0 = (TypedVec::I32(vec![0, 1, 2]), Shape::from_slice(&[n]));
    // x = D^-1 b for the diagonal.
    let dsolve: Vec<f64> = (0..6).map(|e| b[e] / pow[e / 2]).collect();
    type Parts = (Intrinsic, Vec<(TypedVec, Shape)>, Vec<f64>, Vec<usize>);
    let (op, inputs, expected, out_shape): Parts = match name {
        "lu" => {
            // Row k of the factors is row q of A where A's column k holds its pivot (pow[q]).
            let mut rows: Vec<usize> = (0..n).collect();
            let mut out = vec![0.0; 12];
            let mut ipiv = vec![0; n];
            for (k, p) in ipiv.iter_mut().enumerate() {
                let q = (k..n).find(|&j| perm[rows[j]] == k).unwrap();
                *p = q;
                rows.swap(k, q);
            }
            for k in 0..n {
                for c in 0..n {
                    out[k * 4 + c] = a[rows[k] * n + c];
                }
                out[k * 4 + 3] = ipiv[k] as f64;
            }
            (
                Intrinsic::Lu,
                vec![(f(&a), m33.clone())],
                out,
                vec![n, n + 1],
            )
        }
        "lu_unpack" => {
            let mut out = vec![0.0; 27];
            for k in 0..n {
                out[k * 9 + k] = 1.0;
                out[k * 9 + 3 + k] = 1.0;
                out[k * 9 + 6 + k] = pow[k];
            }
            (
                Intrinsic::LuUnpack,
                vec![(f(&diag), m33.clone()), piv0],
                out,
                vec![n, 3 * n],
            )
        }
        "lu_solve" => (
            Intrinsic::LuSolve,
            vec![(f(&diag), m33.clone()), piv0, (f(&b), m32.clone())],
            dsolve,
            vec![n, 2],
        ),
        "lu_cond" => (
            Intrinsic::LuCond,
            vec![(f(&diag), m33.clone()), piv0, (f(&[4.0]), Shape::new())],
            vec![0.25],
            vec![],
        ),
        "solve" | "inv" => {
            let (rhs, r2) = if name == "solve" {
                (b.clone(), 2)
            } else {
                (
                    (0..9).map(|e| if e % 4 == 0 { 1.0 } else { 0.0 }).collect(),
                    3,
                )
            };
            let mut x = vec![0.0; n * r2];
            for i in 0..n {
                for c in 0..r2 {
                    x[perm[i] * r2 + c] = rhs[i * r2 + c] / pow[i];
                }
            }
            if name == "solve" {
                (
                    Intrinsic::Solve,
                    vec![(f(&a), m33.clone()), (f(&b), m32.clone())],
                    x,
                    vec![n, 2],
                )
            } else {
                (Intrinsic::Inv, vec![(f(&a), m33.clone())], x, vec![n, n])
            }
        }
        "det" | "slogdet" => {
            // The permutation's sign: a rotation of 3 is even.
            let det = 8.0;
            if name == "det" {
                (
                    Intrinsic::Det,
                    vec![(f(&a), m33.clone())],
                    vec![det],
                    vec![],
                )
            } else {
                // The factors' diagonal in pivot order: the power of each pivot's row.
                let logs: f64 = (0..n)
                    .map(|k| pow[(0..n).find(|&i| perm[i] == k).unwrap()].ln())
                    .sum();
                (
                    Intrinsic::Slogdet,
                    vec![(f(&a), m33.clone())],
                    vec![1.0, logs],
                    vec![2],
                )
            }
        }
        "cholesky" => {
            let sq: Vec<f64> = diag.iter().map(|x| x * x).collect();
            (
                Intrinsic::Cholesky,
                vec![(f(&sq), m33.clone())],
                diag.clone(),
                vec![n, n],
            )
        }
        "cholesky_solve" => {
            let x: Vec<f64> = (0..6).map(|e| b[e] / (pow[e / 2] * pow[e / 2])).collect();
            (
                Intrinsic::CholeskySolve,
                vec![(f(&diag), m33.clone()), (f(&b), m32.clone())],
                x,
                vec![n, 2],
            )
        }
        "triangular_solve" => (
            Intrinsic::TriangularSolve {
                upper: r.random_bool(0.5),
                unit_diagonal: false,
            },
            vec![(f(&diag), m33.clone()), (f(&b), m32.clone())],
            dsolve,
            vec![n, 2],
        ),
        "qr" => {
            // A positive diagonal: Q = I, R = A (exact), packed as [m + k, n].
            let mut out = vec![0.0; 18];
            for k in 0..n {
                out[k * n + k] = 1.0;
            }
            out[9..].copy_from_slice(&diag);
            (
                Intrinsic::Qr,
                vec![(f(&diag), m33.clone())],
                out,
                vec![2 * n, n],
            )
        }
        "lstsq" => (
            Intrinsic::Lstsq,
            vec![(f(&diag), m33.clone()), (f(&b), m32.clone())],
            dsolve,
            vec![n, 2],
        ),
        other => panic!("no linalg case for {other}"),
    };
    Case {
        op,
        inputs,
        expected: TypedVec::F64(expected),
        out_shape,
    }
}

fn call_of(c: &Case, out: &Output) -> IntrinsicCall {
    IntrinsicCall {
        op: c.op.clone(),
        in_shapes: c.inputs.iter().map(|(_, s)| s.clone()).collect(),
        in_dtypes: c.inputs.iter().map(|(v, _)| v.dtype()).collect(),
        out_shape: out.shape.clone(),
        dtype: out.dtype,
    }
}

#[test]
fn cpu_entry_reference_and_loop_agree_for_every_intrinsic() {
    let mut r = StdRng::seed_from_u64(0x1e9);
    for def in REGISTRY.iter() {
        for round in 0..60 {
            let c = case(def.name(), &mut r);
            assert!(std::ptr::addr_eq(intrinsics::def(&c.op), *def));
            let what = format!("{} round {round}: {:?}", def.name(), c.op);
            let operands: Vec<Operand> = c
                .inputs
                .iter()
                .map(|(v, s)| Operand {
                    shape: s,
                    dtype: v.dtype(),
                })
                .collect();
            let outs = def.check(&c.op, &operands, here()).expect(&what);
            assert_eq!(outs.len(), 1, "{what}");
            assert_eq!(&outs[0].shape[..], &c.out_shape[..], "{what}");
            assert_eq!(outs[0].dtype, c.expected.dtype(), "{what}");
            let call = call_of(&c, &outs[0]);

            let refs: Vec<&TypedVec> = c.inputs.iter().map(|(v, _)| v).collect();
            let mut cpu = vec![TypedVec::zeros(outs[0].dtype, len(&c.out_shape))];
            def.cpu(&call, &refs, &mut cpu).expect(&what);
            assert_eq!(cpu[0], c.expected, "CPU entry, {what}");
            // The target-level entry dispatches to the same code.
            let mut one = TypedVec::zeros(outs[0].dtype, len(&c.out_shape));
            intrinsics::cpu::run(&call, &refs, &mut one).expect(&what);
            assert_eq!(one, c.expected, "intrinsics::cpu::run, {what}");

            let with_shapes: Vec<(&TypedVec, &[usize])> =
                c.inputs.iter().map(|(v, s)| (v, &s[..])).collect();
            let reference = def.reference(&c.op, &with_shapes, &outs).expect(&what);
            assert_eq!(reference.len(), 1, "{what}");
            assert_eq!(reference[0], c.expected, "reference, {what}");

            let cost = def.cost(&call);
            assert!(cost.bytes > 0 || c.expected.is_empty(), "{what}: {cost:?}");
            if let Intrinsic::Matmul { .. } = c.op {
                let (m, k, n) = (c.out_shape[0], c.inputs[0].1[1], c.out_shape[1]);
                assert_eq!(cost.flops, 2 * (m * k * n) as u64, "{what}");
            }
        }
    }
}

#[test]
fn gather_out_of_range_fails_in_the_cpu_entry_and_the_reference() {
    let data = TypedVec::F32(vec![1.0, 2.0, 3.0]);
    for idx in [
        TypedVec::I32(vec![0, 3]),
        TypedVec::I32(vec![-1]),
        TypedVec::U32(vec![7]),
    ] {
        let op = Intrinsic::Gather { axis: 0 };
        let ishape = Shape::from_slice(&[idx.len()]);
        let call = IntrinsicCall {
            op: op.clone(),
            in_shapes: vec![Shape::from_slice(&[3]), ishape.clone()],
            in_dtypes: vec![DType::F32, idx.dtype()],
            out_shape: ishape.clone(),
            dtype: DType::F32,
        };
        let mut out = vec![TypedVec::zeros(DType::F32, idx.len())];
        let e = op.def().cpu(&call, &[&data, &idx], &mut out).unwrap_err();
        assert!(e.to_string().contains("out of bounds"), "{e}");
        let outs = [Output {
            shape: ishape.clone(),
            dtype: DType::F32,
        }];
        let e = op
            .def()
            .reference(&op, &[(&data, &[3]), (&idx, &ishape)], &outs)
            .unwrap_err();
        assert!(e.contains("out of bounds"), "{e}");
    }
}

/// The error's text starts with this file and the line of `site`.
fn assert_at(e: &arrayflow::Error, site: Site, what: &str) {
    let text = e.to_string();
    let want = format!("{}:{}:", site.file(), site.line());
    assert!(
        text.starts_with(&want),
        "{what}: `{text}` does not start with `{want}`"
    );
    assert!(site.file().ends_with("intrinsics_registry.rs"), "{want}");
}

#[test]
fn checks_reject_bad_calls_at_the_callers_line() {
    let m23 = [2, 3];
    let bad: Vec<(Intrinsic, Vec<Operand>)> = vec![
        (
            Intrinsic::Matmul {
                trans_a: false,
                trans_b: false,
            },
            vec![
                Operand {
                    shape: &m23,
                    dtype: DType::F32,
                },
                Operand {
                    shape: &m23,
                    dtype: DType::F32,
                },
            ],
        ),
        (
            Intrinsic::Gather { axis: 2 },
            vec![
                Operand {
                    shape: &m23,
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[4],
                    dtype: DType::I32,
                },
            ],
        ),
        (
            Intrinsic::Concat { axis: 0 },
            vec![
                Operand {
                    shape: &m23,
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[2, 4],
                    dtype: DType::F32,
                },
            ],
        ),
        (
            Intrinsic::Transpose { offset: 0 },
            vec![Operand {
                shape: &m23,
                dtype: DType::F32,
            }],
        ),
        // Values of shape [2, 3] for indices [4] along axis 1 (expected [2, 4]).
        (
            Intrinsic::Scatter { axis: 1 },
            vec![
                Operand {
                    shape: &m23,
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[4],
                    dtype: DType::U32,
                },
                Operand {
                    shape: &m23,
                    dtype: DType::F32,
                },
            ],
        ),
        // Bool data cannot be added.
        (
            Intrinsic::ScatterAdd { axis: 0 },
            vec![
                Operand {
                    shape: &[3],
                    dtype: DType::Bool,
                },
                Operand {
                    shape: &[2],
                    dtype: DType::I32,
                },
                Operand {
                    shape: &[2],
                    dtype: DType::Bool,
                },
            ],
        ),
        // Indices of another rank.
        (
            Intrinsic::PutAlongAxis { axis: 0 },
            vec![
                Operand {
                    shape: &m23,
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[2],
                    dtype: DType::I32,
                },
                Operand {
                    shape: &[2],
                    dtype: DType::F32,
                },
            ],
        ),
        // Float values to count.
        (
            Intrinsic::Bincount { length: 3 },
            vec![Operand {
                shape: &[5],
                dtype: DType::F32,
            }],
        ),
        // Four edges for four bins.
        (
            Intrinsic::Histogram { bins: 4 },
            vec![
                Operand {
                    shape: &[5],
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[4],
                    dtype: DType::F32,
                },
            ],
        ),
        (
            Intrinsic::Scan {
                op: ReduceOp::Sum,
                axis: 2,
            },
            vec![Operand {
                shape: &m23,
                dtype: DType::F32,
            }],
        ),
        (
            Intrinsic::Sort {
                axis: 2,
                descending: false,
            },
            vec![Operand {
                shape: &m23,
                dtype: DType::F32,
            }],
        ),
        (
            Intrinsic::Argsort {
                axis: 0,
                descending: true,
            },
            vec![Operand {
                shape: &m23,
                dtype: DType::Bool,
            }],
        ),
        (
            Intrinsic::TakeAlongAxis { axis: 1 },
            vec![
                Operand {
                    shape: &m23,
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[3],
                    dtype: DType::U32,
                },
            ],
        ),
        (
            Intrinsic::SearchSorted { right: false },
            vec![
                Operand {
                    shape: &m23,
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[3],
                    dtype: DType::F32,
                },
            ],
        ),
        (
            Intrinsic::UniqueRuns,
            vec![Operand {
                shape: &m23,
                dtype: DType::I32,
            }],
        ),
        (
            Intrinsic::Topk { axis: 1, k: 4 },
            vec![Operand {
                shape: &m23,
                dtype: DType::F32,
            }],
        ),
        // Linear algebra: non-square matrices, rows that do not fit, i32 data.
        (
            Intrinsic::Lu,
            vec![Operand {
                shape: &m23,
                dtype: DType::F32,
            }],
        ),
        (
            Intrinsic::LuUnpack,
            vec![
                Operand {
                    shape: &[3, 3],
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[2],
                    dtype: DType::I32,
                },
            ],
        ),
        (
            Intrinsic::LuSolve,
            vec![
                Operand {
                    shape: &[3, 3],
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[3],
                    dtype: DType::I32,
                },
                Operand {
                    shape: &[4, 1],
                    dtype: DType::F32,
                },
            ],
        ),
        (
            Intrinsic::LuCond,
            vec![
                Operand {
                    shape: &[3, 3],
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[3],
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[],
                    dtype: DType::F32,
                },
            ],
        ),
        (
            Intrinsic::Solve,
            vec![
                Operand {
                    shape: &[3, 3],
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[4, 1],
                    dtype: DType::F32,
                },
            ],
        ),
        (
            Intrinsic::Inv,
            vec![Operand {
                shape: &[3, 3],
                dtype: DType::I32,
            }],
        ),
        (
            Intrinsic::Det,
            vec![Operand {
                shape: &[3],
                dtype: DType::F64,
            }],
        ),
        (
            Intrinsic::Slogdet,
            vec![Operand {
                shape: &m23,
                dtype: DType::F64,
            }],
        ),
        (
            Intrinsic::Cholesky,
            vec![Operand {
                shape: &m23,
                dtype: DType::F32,
            }],
        ),
        (
            Intrinsic::CholeskySolve,
            vec![
                Operand {
                    shape: &[3, 3],
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[3, 3],
                    dtype: DType::F64,
                },
            ],
        ),
        (
            Intrinsic::TriangularSolve {
                upper: true,
                unit_diagonal: false,
            },
            vec![
                Operand {
                    shape: &[3, 3],
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[2, 1],
                    dtype: DType::F32,
                },
            ],
        ),
        (
            Intrinsic::Qr,
            vec![Operand {
                shape: &[3],
                dtype: DType::F32,
            }],
        ),
        (
            Intrinsic::Lstsq,
            vec![
                Operand {
                    shape: &[2, 3],
                    dtype: DType::F64,
                },
                Operand {
                    shape: &[2, 1],
                    dtype: DType::F64,
                },
            ],
        ),
    ];
    use arrayflow::ir::FftNorm;
    let mut bad = bad;
    bad.extend([
        (
            Intrinsic::Fft {
                axis: 2,
                n: 4,
                inverse: false,
                norm: FftNorm::Backward,
            },
            vec![Operand {
                shape: &m23,
                dtype: DType::C64,
            }],
        ),
        (
            Intrinsic::Rfft {
                axis: 0,
                n: 4,
                norm: FftNorm::Backward,
            },
            vec![Operand {
                shape: &m23,
                dtype: DType::C128,
            }],
        ),
        (
            Intrinsic::Irfft {
                axis: 1,
                n: 0,
                norm: FftNorm::Ortho,
            },
            vec![Operand {
                shape: &m23,
                dtype: DType::C64,
            }],
        ),
        // A filter longer than the input in mode `valid`.
        (
            Intrinsic::Convolve {
                rank: 1,
                mode: arrayflow::ir::ConvMode::Valid,
            },
            vec![
                Operand {
                    shape: &m23,
                    dtype: DType::F32,
                },
                Operand {
                    shape: &[4],
                    dtype: DType::F32,
                },
            ],
        ),
    ]);
    assert_eq!(
        bad.len(),
        REGISTRY.len(),
        "a bad call per registered intrinsic"
    );
    for (op, operands) in &bad {
        let site = here();
        let e = op.def().check(op, operands, site).unwrap_err();
        assert_at(&e, site, op.name());
    }
}

#[test]
fn the_front_end_reports_the_users_line_through_the_registry() {
    let a = Array::from_vec(vec![1.0f32; 6], &[2, 3]);
    let b = Array::from_vec(vec![1.0f32; 8], &[2, 4]);
    let (e, site) = (a.try_matmul(&a).unwrap_err(), here());
    assert_at(&e, site, "matmul");
    assert!(
        e.to_string().contains("matmul of shapes [2, 3] and [2, 3]"),
        "{e}"
    );
    let (e, site) = (Array::try_concat(&[&a, &b], 0).unwrap_err(), here());
    assert_at(&e, site, "concat");
    assert!(
        e.to_string()
            .contains("concat along axis 0 of shapes [2, 3] and [2, 4]"),
        "{e}"
    );
    // And a valid call records through the registry and computes.
    let c = Array::try_concat(&[&a, &b.reshape(&[4, 2]).transpose()], 1).unwrap();
    assert_eq!(c.shape(), &[2, 7]);
}
