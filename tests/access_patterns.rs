//! Access patterns (issue 25, seed 004): for kernels built through the public API (recorded,
//! flushed, their program sequences kept at the hand-off), `proggen::access` gives each argument's
//! read and write sets per launch part (a range of domain dimension 0). The oracle enumerates every
//! work item of the part in plain loops, writes down by hand which elements of which array the
//! operation touches there (`a[8 + i]` for `a[8..40]`), and compares the sets; the bytes
//! `access::transfer` counts are the oracle's set sizes times the element size. The results
//! themselves are checked against plain f64 loops on random data.
//!
//! Cases: the thesis's VectorAdd (global 32, local 8), a slice, a step, a transpose and a 3-D
//! permute split on dimension 0, a broadcast row, roll and pad folds (1-D and 2-D), row, column
//! and full reductions, and a gather (the table `Unknown`).

use arrayflow::compile::observe;
use arrayflow::proggen::access::{self, Arg, ArgAccess, Span};
use arrayflow::proggen::sequence::{FormalRole, Kernel, Program, ProgramSequence};
use arrayflow::{Array, Pad, Slice};
use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::Arc;

static SERIAL: Mutex<()> = Mutex::new(());

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn values(&mut self, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| (self.next() as f32 / (1u64 << 31) as f32) * 4.0 - 2.0)
            .collect()
    }
}

/// Keeps the sequences of the flushes `f` triggers and returns them with `f`'s value.
fn kept<R>(f: impl FnOnce() -> R) -> (R, Vec<Arc<ProgramSequence>>) {
    observe::keep_sequences(true);
    observe::take_sequences();
    let r = f();
    let seqs = observe::take_sequences();
    observe::keep_sequences(false);
    (r, seqs)
}

/// The one program whose kernel is fused over `domain` (or the one intrinsic when `domain` is
/// `None`), with its sequence's formals.
fn find(
    seqs: &[Arc<ProgramSequence>],
    domain: Option<&[usize]>,
) -> (Program, Vec<arrayflow::proggen::sequence::Formal>) {
    let mut found = Vec::new();
    for s in seqs {
        for p in &s.programs {
            let hit = match (&*p.kernel, domain) {
                (Kernel::Fused(k), Some(d)) => k.domain.shape.as_slice() == d,
                (Kernel::Intrinsic(_), None) => true,
                _ => false,
            };
            if hit {
                found.push((p.clone(), s.formals.clone()));
            }
        }
    }
    assert_eq!(
        found.len(),
        1,
        "one program over {domain:?} in {:#?}",
        seqs.iter().map(|s| s.describe()).collect::<Vec<_>>()
    );
    found.pop().unwrap()
}

/// One array of a case: its length (distinct within the case, so kernel arguments are found by
/// their buffers' lengths) and whether it is the result.
struct Buf {
    len: usize,
    output: bool,
}

/// What one work item (domain multi-index) reads and writes: (case buffer, element).
type Touch = Vec<(usize, usize)>;

/// The domain's multi-indices with dimension 0 in `part`.
fn items(shape: &[usize], part: Range<usize>) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut d: Vec<usize> = shape.iter().map(|_| 0).collect();
    d[0] = part.start;
    if part.is_empty() || shape.contains(&0) {
        return out;
    }
    loop {
        out.push(d.clone());
        let mut k = shape.len();
        loop {
            if k == 0 {
                return out;
            }
            k -= 1;
            d[k] += 1;
            let end = if k == 0 { part.end } else { shape[k] };
            if d[k] < end {
                break;
            }
            d[k] = if k == 0 { part.start } else { 0 };
            if k == 0 {
                return out;
            }
        }
    }
}

/// The elements of `span` in a buffer of `len` (Unknown is returned as `None`).
fn set_of(span: &Span, len: usize) -> Option<BTreeSet<usize>> {
    match span {
        Span::Empty => Some(BTreeSet::new()),
        Span::Intervals(v) => Some(v.iter().flat_map(|r| r.clone()).collect()),
        Span::Whole => Some((0..len).collect()),
        Span::Unknown => None,
    }
}

/// Checks the analysis of `prog` against the oracle for each part; `unknown` lists case buffers
/// whose reads are data-dependent.
fn check(
    prog: &Program,
    formals: &[arrayflow::proggen::sequence::Formal],
    shape: &[usize],
    bufs: &[Buf],
    parts: &[Range<usize>],
    unknown: &[usize],
    oracle: impl Fn(&[usize]) -> (Touch, Touch),
) {
    // Kernel argument k is case buffer arg_buf[k].
    let lens: Vec<usize> = prog
        .inputs
        .iter()
        .chain(&prog.outputs)
        .map(|&f| formals[f as usize].len)
        .collect();
    let n_in = prog.inputs.len();
    let arg_buf: Vec<usize> = lens
        .iter()
        .enumerate()
        .map(|(k, &len)| {
            let out = k >= n_in;
            bufs.iter()
                .position(|b| b.len == len && b.output == out)
                .unwrap_or_else(|| panic!("argument {k} of {len} elements is no case buffer"))
        })
        .collect();
    for (k, &f) in prog.outputs.iter().enumerate() {
        assert_ne!(formals[f as usize].role, FormalRole::Input, "output {k}");
    }
    for part in parts {
        let args: Vec<ArgAccess> = access::of_program(prog, formals, part.clone());
        assert_eq!(args.len(), lens.len());
        let mut reads = vec![BTreeSet::new(); bufs.len()];
        let mut writes = vec![BTreeSet::new(); bufs.len()];
        for d in items(shape, part.clone()) {
            let (r, w) = oracle(&d);
            for (b, i) in r {
                reads[b].insert(i);
            }
            for (b, i) in w {
                writes[b].insert(i);
            }
        }
        let mut up = 0;
        let mut down = 0;
        for (k, a) in args.iter().enumerate() {
            let b = arg_buf[k];
            assert_eq!(
                a.arg,
                if k < n_in {
                    Arg::Input(k)
                } else {
                    Arg::Output(k - n_in)
                }
            );
            let len = lens[k];
            if unknown.contains(&b) {
                assert_eq!(a.reads, Span::Unknown, "buffer {b} part {part:?}");
                up += len * 4;
            } else {
                let got = set_of(&a.reads, len).unwrap();
                assert_eq!(
                    got, reads[b],
                    "reads of buffer {b}, part {part:?}: {:?}",
                    a.reads
                );
                if reads[b].len() == len && len > 0 {
                    assert_eq!(a.reads, Span::Whole, "buffer {b} read whole");
                }
                up += reads[b].len() * 4;
            }
            let got = set_of(&a.writes, len).unwrap();
            assert_eq!(
                got, writes[b],
                "writes of buffer {b}, part {part:?}: {:?}",
                a.writes
            );
            down += writes[b].len() * 4;
        }
        let t = access::transfer(&args, &lens);
        assert_eq!(
            (t.upload_bytes, t.download_bytes),
            (up, down),
            "part {part:?}"
        );
    }
}

/// Parts of `g` rows, the whole domain, and two ratio splits aligned to `g`.
fn parts(n: usize, g: usize) -> Vec<Range<usize>> {
    let mut v: Vec<Range<usize>> = (0..n.div_ceil(g))
        .map(|i| i * g..(i * g + g).min(n))
        .collect();
    v.push(0..n);
    for t in [3, 7] {
        v.extend(access::split_by_ratio(n, g, t));
    }
    v
}

fn close(got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (*g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "element {i}: {g} vs {w}"
        );
    }
}

#[test]
fn vector_add_global_32_local_8() {
    let _l = SERIAL.lock();
    let mut r = Lcg(1);
    let (av, bv) = (r.values(32), r.values(32));
    let a = Array::from_vec(av.clone(), &[32]);
    let b = Array::from_vec(bv.clone(), &[32]);
    let (c, seqs) = kept(|| (&a + &b).to_vec().unwrap());
    let want: Vec<f64> = (0..32).map(|i| av[i] as f64 + bv[i] as f64).collect();
    close(&c, &want);
    let (p, f) = find(&seqs, Some(&[32]));
    // The thesis's numbers: a and b read on all 32, c written on all 32.
    let whole = access::of_program(&p, &f, 0..32);
    assert_eq!(whole.len(), 3);
    for a in &whole[..2] {
        assert_eq!((&a.reads, &a.writes), (&Span::Whole, &Span::Empty));
    }
    assert_eq!(
        (&whole[2].reads, &whole[2].writes),
        (&Span::Empty, &Span::Whole)
    );
    // Each work-group of 8: its own 8 elements.
    for g in 0..4 {
        let part = access::of_program(&p, &f, g * 8..g * 8 + 8);
        let own = Span::interval(g * 8..g * 8 + 8);
        assert_eq!(part[0].reads, own);
        assert_eq!(part[1].reads, own);
        assert_eq!(part[2].writes, own);
    }
    let bufs = [
        Buf {
            len: 32,
            output: false,
        },
        Buf {
            len: 32,
            output: true,
        },
    ];
    check(&p, &f, &[32], &bufs, &parts(32, 8), &[], |d| {
        (vec![(0, d[0]), (0, d[0])], vec![(1, d[0])])
    });
}

#[test]
fn sliced_and_strided_inputs() {
    let _l = SERIAL.lock();
    let mut r = Lcg(2);
    let (av, bv) = (r.values(48), r.values(32));
    let a = Array::from_vec(av.clone(), &[48]);
    let b = Array::from_vec(bv.clone(), &[32]);
    let (c, seqs) = kept(|| (&a.slice(&[(8..40).into()]) + &b).to_vec().unwrap());
    close(
        &c,
        &(0..32)
            .map(|i| av[8 + i] as f64 + bv[i] as f64)
            .collect::<Vec<_>>(),
    );
    let (p, f) = find(&seqs, Some(&[32]));
    let bufs = [
        Buf {
            len: 48,
            output: false,
        },
        Buf {
            len: 32,
            output: false,
        },
        Buf {
            len: 32,
            output: true,
        },
    ];
    check(&p, &f, &[32], &bufs, &parts(32, 8), &[], |d| {
        (vec![(0, 8 + d[0]), (1, d[0])], vec![(2, d[0])])
    });

    // Every other element, and a reversed step of 3.
    let sv = r.values(100);
    let s = Array::from_vec(sv.clone(), &[100]);
    let (c, seqs) = kept(|| (s.slice(&[Slice::step(.., 2)]) * 3.0).to_vec().unwrap());
    close(
        &c,
        &(0..50).map(|i| sv[2 * i] as f64 * 3.0).collect::<Vec<_>>(),
    );
    let (p, f) = find(&seqs, Some(&[50]));
    let bufs = [
        Buf {
            len: 100,
            output: false,
        },
        Buf {
            len: 50,
            output: true,
        },
    ];
    check(&p, &f, &[50], &bufs, &parts(50, 8), &[], |d| {
        (vec![(0, 2 * d[0])], vec![(1, d[0])])
    });
    // 95, 92, ..., 11: a reversed step of 3.
    let (c, seqs) = kept(|| {
        (s.slice(&[Slice::new(Some(95), Some(10), -3)]) - 1.0)
            .to_vec()
            .unwrap()
    });
    let idx: Vec<usize> = (0..29).map(|k| 95 - 3 * k).collect();
    let n = idx.len();
    close(
        &c,
        &idx.iter().map(|&i| sv[i] as f64 - 1.0).collect::<Vec<_>>(),
    );
    let (p, f) = find(&seqs, Some(&[n]));
    let bufs = [
        Buf {
            len: 100,
            output: false,
        },
        Buf {
            len: n,
            output: true,
        },
    ];
    check(&p, &f, &[n], &bufs, &parts(n, 8), &[], |d| {
        (vec![(0, idx[d[0]])], vec![(1, d[0])])
    });
}

#[test]
fn transpose_and_permute_split_on_dimension_0() {
    let _l = SERIAL.lock();
    let mut r = Lcg(3);
    let mv = r.values(12 * 20);
    let m = Array::from_vec(mv.clone(), &[12, 20]);
    let (c, seqs) = kept(|| (m.transpose() * 2.0 + 1.0).to_vec().unwrap());
    let want: Vec<f64> = (0..20)
        .flat_map(|i| (0..12).map(move |j| (i, j)))
        .map(|(i, j)| mv[j * 20 + i] as f64 * 2.0 + 1.0)
        .collect();
    close(&c, &want);
    let (p, f) = find(&seqs, Some(&[20, 12]));
    let bufs = [
        Buf {
            len: 240,
            output: false,
        },
        Buf {
            len: 240,
            output: true,
        },
    ];
    check(&p, &f, &[20, 12], &bufs, &parts(20, 4), &[], |d| {
        (vec![(0, d[1] * 20 + d[0])], vec![(1, d[0] * 12 + d[1])])
    });

    let pv = r.values(4 * 5 * 6);
    let q = Array::from_vec(pv.clone(), &[4, 5, 6]);
    let (c, seqs) = kept(|| (q.permute(&[2, 0, 1]) - 0.5).to_vec().unwrap());
    // Output [6, 4, 5]: out[i][j][k] = q[j][k][i].
    let mut want = Vec::new();
    for i in 0..6 {
        for j in 0..4 {
            for k in 0..5 {
                want.push(pv[j * 30 + k * 6 + i] as f64 - 0.5);
            }
        }
    }
    close(&c, &want);
    let (p, f) = find(&seqs, Some(&[6, 4, 5]));
    let bufs = [
        Buf {
            len: 120,
            output: false,
        },
        Buf {
            len: 120,
            output: true,
        },
    ];
    check(&p, &f, &[6, 4, 5], &bufs, &parts(6, 2), &[], |d| {
        (
            vec![(0, d[1] * 30 + d[2] * 6 + d[0])],
            vec![(1, d[0] * 20 + d[1] * 5 + d[2])],
        )
    });
}

#[test]
fn broadcast_row_is_read_whole_by_every_part() {
    let _l = SERIAL.lock();
    let mut r = Lcg(4);
    let (mv, rv) = (r.values(10 * 16), r.values(16));
    let m = Array::from_vec(mv.clone(), &[10, 16]);
    let row = Array::from_vec(rv.clone(), &[16]);
    let (c, seqs) = kept(|| (&m * &row).to_vec().unwrap());
    close(
        &c,
        &(0..160)
            .map(|i| mv[i] as f64 * rv[i % 16] as f64)
            .collect::<Vec<_>>(),
    );
    let (p, f) = find(&seqs, Some(&[10, 16]));
    for part in [0..2, 4..6, 8..10] {
        assert_eq!(access::of_program(&p, &f, part)[1].reads, Span::Whole);
    }
    let bufs = [
        Buf {
            len: 160,
            output: false,
        },
        Buf {
            len: 16,
            output: false,
        },
        Buf {
            len: 160,
            output: true,
        },
    ];
    check(&p, &f, &[10, 16], &bufs, &parts(10, 2), &[], |d| {
        (
            vec![(0, d[0] * 16 + d[1]), (1, d[1])],
            vec![(2, d[0] * 16 + d[1])],
        )
    });
}

#[test]
fn roll_and_pad_folds() {
    let _l = SERIAL.lock();
    let mut r = Lcg(5);
    let av = r.values(40);
    let a = Array::from_vec(av.clone(), &[40]);
    let (c, seqs) = kept(|| (a.roll(7, 0) * 2.0).to_vec().unwrap());
    let src = |i: usize| (i + 40 - 7) % 40;
    close(
        &c,
        &(0..40).map(|i| av[src(i)] as f64 * 2.0).collect::<Vec<_>>(),
    );
    let (p, f) = find(&seqs, Some(&[40]));
    // The first part of 8 reads a's last 7 elements and its first one: two intervals.
    assert_eq!(
        access::of_program(&p, &f, 0..8)[0].reads,
        Span::Intervals(vec![0..1, 33..40])
    );
    let bufs = [
        Buf {
            len: 40,
            output: false,
        },
        Buf {
            len: 40,
            output: true,
        },
    ];
    check(&p, &f, &[40], &bufs, &parts(40, 8), &[], |d| {
        (vec![(0, src(d[0]))], vec![(1, d[0])])
    });

    // Edge and reflect pads of a 1-D array of 30 (out 38).
    let ev = r.values(30);
    let e = Array::from_vec(ev.clone(), &[30]);
    for (mode, fold) in [
        (Pad::Edge, (|v: isize| v.clamp(0, 29)) as fn(isize) -> isize),
        (Pad::Reflect, |v: isize| {
            let v = v.abs();
            if v > 29 { 58 - v } else { v }
        }),
    ] {
        let (c, seqs) = kept(|| (e.pad(&[(3, 5)], mode) + 1.0).to_vec().unwrap());
        let src = |i: usize| fold(i as isize - 3) as usize;
        close(
            &c,
            &(0..38).map(|i| ev[src(i)] as f64 + 1.0).collect::<Vec<_>>(),
        );
        let (p, f) = find(&seqs, Some(&[38]));
        let bufs = [
            Buf {
                len: 30,
                output: false,
            },
            Buf {
                len: 38,
                output: true,
            },
        ];
        check(&p, &f, &[38], &bufs, &parts(38, 4), &[], |d| {
            (vec![(0, src(d[0]))], vec![(1, d[0])])
        });
    }

    // A 2-D wrap pad: out [9, 10] from m [6, 7], read at (wrap(i - 2), wrap(j - 1)).
    let mv = r.values(42);
    let m = Array::from_vec(mv.clone(), &[6, 7]);
    let (c, seqs) = kept(|| {
        (m.pad(&[(2, 1), (1, 2)], Pad::Wrap) * -1.0)
            .to_vec()
            .unwrap()
    });
    let src = |i: usize, j: usize| ((i + 6 - 2) % 6) * 7 + (j + 7 - 1) % 7;
    let want: Vec<f64> = (0..90).map(|x| -(mv[src(x / 10, x % 10)] as f64)).collect();
    close(&c, &want);
    let (p, f) = find(&seqs, Some(&[9, 10]));
    let bufs = [
        Buf {
            len: 42,
            output: false,
        },
        Buf {
            len: 90,
            output: true,
        },
    ];
    check(&p, &f, &[9, 10], &bufs, &parts(9, 2), &[], |d| {
        (vec![(0, src(d[0], d[1]))], vec![(1, d[0] * 10 + d[1])])
    });
}

#[test]
fn reduction_outputs() {
    let _l = SERIAL.lock();
    let mut r = Lcg(6);
    let mv = r.values(10 * 16);
    let m = Array::from_vec(mv.clone(), &[10, 16]);
    let bufs = [
        Buf {
            len: 160,
            output: false,
        },
        Buf {
            len: 10,
            output: true,
        },
    ];
    // Row sums: part rows lo..hi read those rows and write those results.
    let (c, seqs) = kept(|| m.sum_axis(1).to_vec().unwrap());
    let want: Vec<f64> = (0..10)
        .map(|i| (0..16).map(|j| mv[i * 16 + j] as f64).sum())
        .collect();
    close(&c, &want);
    let (p, f) = find(&seqs, Some(&[10, 16]));
    check(&p, &f, &[10, 16], &bufs, &parts(10, 2), &[], |d| {
        (vec![(0, d[0] * 16 + d[1])], vec![(1, d[0])])
    });
    // Column sums: the domain puts the reduced axis last ([16, 10]).
    let bufs = [
        Buf {
            len: 160,
            output: false,
        },
        Buf {
            len: 16,
            output: true,
        },
    ];
    let (c, seqs) = kept(|| m.sum_axis(0).to_vec().unwrap());
    let want: Vec<f64> = (0..16)
        .map(|j| (0..10).map(|i| mv[i * 16 + j] as f64).sum())
        .collect();
    close(&c, &want);
    let (p, f) = find(&seqs, Some(&[16, 10]));
    check(&p, &f, &[16, 10], &bufs, &parts(16, 4), &[], |d| {
        (vec![(0, d[1] * 16 + d[0])], vec![(1, d[0])])
    });
    // A full sum: every part writes (its partial of) the one result.
    let bufs = [
        Buf {
            len: 160,
            output: false,
        },
        Buf {
            len: 1,
            output: true,
        },
    ];
    let (c, seqs) = kept(|| m.sum().to_vec().unwrap());
    close(&c, &[mv.iter().map(|&v| v as f64).sum()]);
    let seq_domain: Vec<usize> = seqs
        .iter()
        .flat_map(|s| s.programs.iter())
        .find_map(|p| match &*p.kernel {
            Kernel::Fused(k) => Some(k.domain.shape.to_vec()),
            _ => None,
        })
        .unwrap();
    let (p, f) = find(&seqs, Some(&seq_domain));
    check(
        &p,
        &f,
        &seq_domain,
        &bufs,
        &parts(seq_domain[0], 2),
        &[],
        |d| {
            let lin = d.iter().zip(&seq_domain).fold(0, |a, (&x, &n)| a * n + x);
            (vec![(0, lin)], vec![(1, 0)])
        },
    );
}

#[test]
fn gather_table_is_unknown() {
    let _l = SERIAL.lock();
    let mut r = Lcg(7);
    let tv = r.values(50);
    let table = Array::from_vec(tv.clone(), &[50]);
    let iv: Vec<u32> = (0..12).map(|_| (r.next() % 50) as u32).collect();
    let idx = Array::from_vec(iv.clone(), &[12]);
    let (c, seqs) = kept(|| table.gather(&idx, 0).to_vec().unwrap());
    close(
        &c,
        &iv.iter()
            .map(|&i| tv[i as usize] as f64)
            .collect::<Vec<_>>(),
    );
    let (p, f) = find(&seqs, None);
    let args = access::of_program(&p, &f, 0..12);
    assert_eq!(args[0].reads, Span::Unknown);
    assert_eq!(args[1].reads, Span::Whole);
    assert_eq!(args[2].writes, Span::Whole);
    let t = access::transfer(&args, &[50, 12, 12]);
    assert_eq!(
        (t.upload_bytes, t.download_bytes),
        (50 * 4 + 12 * 4, 12 * 4)
    );
}

/// Affine sets against enumeration (overlapping, negative, zero and interleaved strides), and
/// the ratio split's alignment.
#[test]
fn affine_sets_and_splits() {
    fn brute(off: isize, terms: &[(isize, usize)]) -> Vec<Range<isize>> {
        let mut v = vec![off];
        for &(s, n) in terms {
            v = v
                .iter()
                .flat_map(|&a| (0..n as isize).map(move |t| a + s * t))
                .collect();
        }
        v.sort();
        v.dedup();
        let mut out: Vec<Range<isize>> = Vec::new();
        for i in v {
            match out.last_mut() {
                Some(l) if l.end == i => l.end += 1,
                _ => out.push(i..i + 1),
            }
        }
        out
    }
    let mut r = Lcg(8);
    let mut cases: Vec<(isize, Vec<(isize, usize)>)> = vec![
        (0, vec![(1, 32)]),
        (0, vec![(12, 5), (1, 12)]),
        (0, vec![(3, 4), (5, 3)]),
        (40, vec![(-1, 8), (-10, 3)]),
        (0, vec![(0, 7), (1, 3)]),
        (5, vec![(2, 3), (3, 2), (7, 2)]),
    ];
    for _ in 0..300 {
        let k = 1 + (r.next() % 3) as usize;
        let terms = (0..k)
            .map(|_| ((r.next() % 15) as isize - 7, (r.next() % 6) as usize))
            .collect();
        cases.push(((r.next() % 50) as isize + 50, terms));
    }
    for (off, terms) in &cases {
        assert_eq!(
            access::affine_set(*off, terms),
            brute(*off, terms),
            "{off} {terms:?}"
        );
    }
    assert_eq!(access::split_by_ratio(32, 8, 0), [0..0, 0..32]);
    assert_eq!(access::split_by_ratio(32, 8, 10), [0..32, 32..32]);
    assert_eq!(access::split_by_ratio(32, 8, 5), [0..16, 16..32]);
    assert_eq!(access::split_by_ratio(100, 8, 3), [0..32, 32..100]);
}
