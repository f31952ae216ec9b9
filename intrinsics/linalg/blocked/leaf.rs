//! The register panel (`af_lu_panel` when [`Blocked::leaf`]): getf2 on a panel of
//! [`LEAF_NB`] columns held in registers, in OpenCL C and WGSL. Each of the work-group's
//! [`LOCAL`] threads keeps rows `k0 + lid + t * LOCAL` (`t < ceil(n / LOCAL)`, at most
//! [`LEAF_ROWS`](super::LEAF_ROWS)) of the panel as `LEAF_NB` scalars each, so a column costs one pass over
//! registers instead of the global-memory sweeps of the wide panel (whose rank-1 updates read
//! and write the whole panel once per column, from one work-group). Columns and rows are unrolled
//! in the source, so every register index is a literal.
//!
//! Per column `c`: each thread's first largest `|a|` over its rows `>= c`, a tree reduction to
//! the first largest overall (NaN never chosen; row `c` when the column is zero), the pivot row
//! and row `c` published in local memory and swapped by their owners, then the scale by the pivot
//! and the rank-1 update of the columns right of `c`. An exact zero pivot skips its column (and
//! sets the fault word for `solve`/`inv`), as the wide panel. The interchanges reach the columns
//! outside the panel in `af_lu_rows`, as before.

use super::{Blocked, LEAF_NB, LOCAL};
use std::fmt::Write;

/// The per-dialect spellings the body needs.
struct Sp {
    wgsl: bool,
}

impl Sp {
    fn ty(&self) -> &'static str {
        if self.wgsl { "f32" } else { "T" }
    }
    fn zero(&self) -> &'static str {
        if self.wgsl { "0.0" } else { "(T)0" }
    }
    /// A constant binding.
    fn let_(&self, name: &str, ty: &str, e: &str) -> String {
        if self.wgsl {
            format!("let {name} = {e};")
        } else {
            format!("const {ty} {name} = {e};")
        }
    }
    /// A register.
    fn var(&self, name: &str) -> String {
        if self.wgsl {
            format!("var {name} = 0.0;")
        } else {
            format!("T {name} = (T)0;")
        }
    }
    fn barrier(&self) -> &'static str {
        if self.wgsl {
            "workgroupBarrier();"
        } else {
            "barrier(CLK_LOCAL_MEM_FENCE);"
        }
    }
}

/// Everything the two bodies differ in besides spelling: the buffers' names, the pivot store
/// of `lu` and the zero-pivot action.
pub struct Names<'a> {
    /// The working matrices (`m` is the current matrix's offset in WGSL, its pointer in OpenCL).
    pub w: &'a str,
    /// Local arrays: reduction keys and indices, the pivot row, row `c`.
    pub keys: &'a str,
    pub idx: &'a str,
    pub prow: &'a str,
    pub crow: &'a str,
    /// Statements run by thread 0 after the pivot `p` of column `c` is known (pivot stores).
    pub on_pivot: String,
    /// Statements run when the pivot is exactly zero.
    pub on_zero: &'a str,
}

/// The body inside the loop over matrices (`g`, with `m` set), for either dialect.
pub fn body(b: &Blocked, wgsl: bool, nm: &Names) -> String {
    let sp = Sp { wgsl };
    let c = b.consts();
    let (n, ld) = (c.n, c.ld);
    let rows = n.div_ceil(LOCAL as usize);
    let u = if wgsl { "u" } else { "UL" };
    let at = |i: &str, col: &str| -> String {
        if wgsl {
            format!("{w}[m + {i} * {ld}u + {col}]", w = nm.w)
        } else {
            format!("m[(ulong){i} * {ld}{u} + {col}]")
        }
    };
    let mut s = String::new();
    let (prow, crow) = (nm.prow, nm.crow);
    for t in 0..rows {
        let _ = writeln!(
            s,
            "    {}",
            sp.let_(
                &format!("i{t}"),
                "uint",
                &format!("k0 + lid + {}u", t * LOCAL as usize)
            )
        );
        let mut regs = String::new();
        for j in 0..LEAF_NB {
            regs.push_str(&sp.var(&format!("v{t}_{j}")));
            regs.push(' ');
        }
        let _ = writeln!(s, "    {regs}");
        let mut loads = String::new();
        for j in 0..LEAF_NB {
            let _ = write!(
                loads,
                " if ({j}u < kw) {{ v{t}_{j} = {}; }}",
                at(&format!("i{t}"), &format!("k0 + {j}u"))
            );
        }
        let _ = writeln!(s, "    if (i{t} < {n}u) {{{loads} }}");
    }
    for j in 0..LEAF_NB {
        // No barrier sits under a condition (PoCL replicates the code after a conditional
        // barrier per branch): a column past `kw` has `c >= n`, so no row takes part in it, and
        // only its pivot store and zero test are skipped.
        let _ = writeln!(s, "    {{");
        let _ = writeln!(s, "      {}", sp.let_("c", "uint", &format!("k0 + {j}u")));
        // Each thread's first largest magnitude over its rows >= c.
        if wgsl {
            s.push_str("      var best = 0u;\n      var q = c;\n");
        } else {
            s.push_str("      T best = (T)0;\n      uint q = c;\n");
        }
        for t in 0..rows {
            let key = if wgsl {
                format!(
                    "let bits = bitcast<u32>(v{t}_{j}) & 0x7fffffffu; \
                     let a = select(bits, 0u, bits > 0x7f800000u);"
                )
            } else {
                format!("const T a = fabs(v{t}_{j});")
            };
            let _ = writeln!(
                s,
                "      if (i{t} >= c && i{t} < {n}u) {{ {key} if (a > best) {{ best = a; q = i{t}; }} }}"
            );
        }
        let (k, ix) = (nm.keys, nm.idx);
        let _ = write!(
            s,
            "      {k}[lid] = best;
      {ix}[lid] = q;
      {bar}
      for (var_h h = {half}u; h > 0u; h >>= 1u) {{
        if (lid < h) {{
          {o}
          {oi}
          if (o > {k}[lid] || (o == {k}[lid] && oi < {ix}[lid])) {{ {k}[lid] = o; {ix}[lid] = oi; }}
        }}
        {bar}
      }}
      {p}
",
            bar = sp.barrier(),
            half = LOCAL / 2,
            o = sp.let_(
                "o",
                if wgsl { "u32" } else { "T" },
                &format!("{k}[lid + h]")
            ),
            oi = sp.let_("oi", "uint", &format!("{ix}[lid + h]")),
            p = sp.let_("p", "uint", &format!("{ix}[0]")),
        );
        // The owners of the pivot row and of row c publish them.
        for t in 0..rows {
            let mut pub_p = String::new();
            let mut pub_c = String::new();
            for q in 0..LEAF_NB {
                let _ = write!(pub_p, " {prow}[{q}] = v{t}_{q};");
                let _ = write!(pub_c, " {crow}[{q}] = v{t}_{q};");
            }
            let _ = writeln!(
                s,
                "      if (i{t} == p) {{{pub_p} }}\n      if (i{t} == c) {{{pub_c} }}"
            );
        }
        let _ = writeln!(s, "      {}", sp.barrier());
        let _ = writeln!(s, "      if (lid == 0u && {j}u < kw) {{ {} }}", nm.on_pivot);
        // The swap.
        let mut swaps = String::new();
        for t in 0..rows {
            let mut to_c = String::new();
            let mut to_p = String::new();
            for q in 0..LEAF_NB {
                let _ = write!(to_c, " v{t}_{q} = {prow}[{q}];");
                let _ = write!(to_p, " v{t}_{q} = {crow}[{q}];");
            }
            let _ = write!(
                swaps,
                "\n        if (i{t} == c) {{{to_c} }} else if (i{t} == p) {{{to_p} }}"
            );
        }
        let _ = writeln!(s, "      if (p != c) {{{swaps}\n      }}");
        // Scale and rank-1 update.
        let mut upd = String::new();
        for t in 0..rows {
            let mut rank1 = String::new();
            for q in j + 1..LEAF_NB {
                let _ = write!(rank1, " v{t}_{q} = v{t}_{q} - l * {prow}[{q}];");
            }
            let _ = write!(
                upd,
                "\n        if (i{t} > c && i{t} < {n}u) {{ {} v{t}_{j} = l;{rank1} }}",
                sp.let_("l", sp.ty(), &format!("v{t}_{j} / d"))
            );
        }
        let _ = write!(
            s,
            "      {d}
      if ({j}u >= kw) {{
      }} else if (d == {zero}) {{
        {on_zero}
      }} else {{{upd}
      }}
      {bar}
    }}
",
            d = sp.let_("d", sp.ty(), &format!("{prow}[{j}]")),
            zero = sp.zero(),
            on_zero = nm.on_zero,
            bar = sp.barrier(),
        );
    }
    for t in 0..rows {
        let mut stores = String::new();
        for j in 0..LEAF_NB {
            let _ = write!(
                stores,
                " if ({j}u < kw) {{ {} = v{t}_{j}; }}",
                at(&format!("i{t}"), &format!("k0 + {j}u"))
            );
        }
        let _ = writeln!(s, "    if (i{t} < {n}u) {{{stores} }}");
    }
    let _ = writeln!(s, "    {}", sp.barrier());
    // `for (var_h ...)`: the loop variable's declaration differs.
    s.replace("var_h", if wgsl { "var" } else { "uint" })
}
