//! The more precise references: for f32, the function in f64 (Rust's std, which calls the
//! platform libm, and the `libm` crate's `erf`/`erfc`) rounded to f32; for f64, the C library's
//! `long double` functions (x87 80-bit on x86-64: 11 more bits than f64), compiled at test time
//! from a small C file with the system `cc` and loaded with `libloading`, rounded to f64. Each
//! function is the mathematical definition, computed where the definition is ill-conditioned in
//! a form that is not (asec and acsc near +-1 through `atan`, as accurate formulas write them).

use libloading::Library;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The C source: one `ref_<name>` per function, computing in long double and rounding once.
const SOURCE: &str = r#"
#include <math.h>
#include <stddef.h>
typedef long double L;
static L asec_l(L x) { L r = atanl(sqrtl((fabsl(x) - 1.0L) * (fabsl(x) + 1.0L))); return x < 0 ? 3.14159265358979323846264338327950288L - r : r; }
static L acsc_l(L x) { L a = fabsl(x); L r = a < 2.0L ? atanl(1.0L / sqrtl((a - 1.0L) * (a + 1.0L))) : asinl(1.0L / a); return copysignl(r, x); }
static L mod_l(L x, L y) { L r = fmodl(x, y); return (r != 0.0L && ((r < 0.0L) != (y < 0.0L))) ? r + y : r; }
#define U(name, expr) void ref_##name(const double *in, double *out, size_t n) { for (size_t i = 0; i < n; i++) { L x = in[i]; out[i] = (double)(expr); } }
#define B(name, expr) void ref_##name(const double *a, const double *b, double *out, size_t n) { for (size_t i = 0; i < n; i++) { L x = a[i], y = b[i]; out[i] = (double)(expr); } }
U(sqrt, sqrtl(x)) U(rsqrt, 1.0L / sqrtl(x)) U(cbrt, cbrtl(x))
U(exp, expl(x)) U(exp2, exp2l(x)) U(ln, logl(x)) U(log10, log10l(x)) U(log2, log2l(x))
U(sin, sinl(x)) U(cos, cosl(x)) U(tan, tanl(x))
U(sec, 1.0L / cosl(x)) U(csc, 1.0L / sinl(x)) U(cot, 1.0L / tanl(x))
U(asin, asinl(x)) U(acos, acosl(x)) U(atan, atanl(x))
U(asec, asec_l(x)) U(acsc, acsc_l(x)) U(acot, atanl(1.0L / x))
U(sinh, sinhl(x)) U(cosh, coshl(x)) U(tanh, tanhl(x))
U(sech, 1.0L / coshl(x)) U(csch, 1.0L / sinhl(x)) U(coth, 1.0L / tanhl(x))
U(asinh, asinhl(x)) U(acosh, acoshl(x)) U(atanh, atanhl(x))
U(erf, erfl(x)) U(erfc, erfcl(x))
U(floor, floorl(x)) U(ceil, ceill(x)) U(trunc, truncl(x)) U(round, roundl(x))
B(pow, powl(x, y)) B(atan2, atan2l(x, y)) B(rem, fmodl(x, y)) B(mod, mod_l(x, y))
"#;

type UnaryFn = unsafe extern "C" fn(*const f64, *mut f64, usize);
type BinaryFn = unsafe extern "C" fn(*const f64, *const f64, *mut f64, usize);

/// The compiled long-double library, built once per process.
fn library() -> &'static Library {
    static LIB: OnceLock<Library> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir: PathBuf =
            std::env::temp_dir().join(format!("arrayflow-float-sweep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary directory");
        let (c, so) = (dir.join("reference.c"), dir.join("reference.so"));
        std::fs::write(&c, SOURCE).expect("writing the reference source");
        let out = std::process::Command::new("cc")
            .args(["-O2", "-shared", "-fPIC", "-o"])
            .arg(&so)
            .arg(&c)
            .arg("-lm")
            .output()
            .expect("the float sweep's f64 reference needs the system C compiler `cc`");
        assert!(
            out.status.success(),
            "cc failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // SAFETY: the library is the one just compiled from SOURCE; it has no initialisers.
        let lib = unsafe { Library::new(&so) }.expect("loading the reference library");
        let _ = std::fs::remove_dir_all(&dir);
        lib
    })
}

/// The long-double reference of unary `name` for each of `x`, rounded to f64.
pub fn long_double_unary(name: &str, x: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    // SAFETY: every ref_ function of a unary name has the UnaryFn signature and writes n values.
    unsafe {
        let f = library()
            .get::<UnaryFn>(format!("ref_{name}").as_bytes())
            .expect("reference function");
        f(x.as_ptr(), out.as_mut_ptr(), x.len());
    }
    out
}

/// The long-double reference of binary `name` for each pair of `x` and `y`, rounded to f64.
pub fn long_double_binary(name: &str, x: &[f64], y: &[f64]) -> Vec<f64> {
    assert_eq!(x.len(), y.len());
    let mut out = vec![0.0; x.len()];
    // SAFETY: every ref_ function of a binary name has the BinaryFn signature and writes n values.
    unsafe {
        let f = library()
            .get::<BinaryFn>(format!("ref_{name}").as_bytes())
            .expect("reference function");
        f(x.as_ptr(), y.as_ptr(), out.as_mut_ptr(), x.len());
    }
    out
}

/// The f64 reference of unary `name` at an f32 argument (exact in f64), to be rounded to f32.
pub fn f64_unary(name: &str, x: f64) -> f64 {
    match name {
        "sqrt" => x.sqrt(),
        "rsqrt" => 1.0 / x.sqrt(),
        "cbrt" => x.cbrt(),
        "exp" => x.exp(),
        "exp2" => x.exp2(),
        "ln" => x.ln(),
        "log10" => x.log10(),
        "log2" => x.log2(),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "sec" => 1.0 / x.cos(),
        "csc" => 1.0 / x.sin(),
        "cot" => 1.0 / x.tan(),
        "asin" => x.asin(),
        "acos" => x.acos(),
        "atan" => x.atan(),
        "asec" => {
            // (|x| - 1)(|x| + 1) is exact in f64 for an f32 x up to 2^28; beyond, rounded once.
            let r = ((x.abs() - 1.0) * (x.abs() + 1.0)).sqrt().atan();
            if x < 0.0 { std::f64::consts::PI - r } else { r }
        }
        "acsc" => {
            let a = x.abs();
            let r = if a < 2.0 {
                (1.0 / ((a - 1.0) * (a + 1.0)).sqrt()).atan()
            } else {
                (1.0 / a).asin()
            };
            r.copysign(x)
        }
        "acot" => (1.0 / x).atan(),
        "sinh" => x.sinh(),
        "cosh" => x.cosh(),
        "tanh" => x.tanh(),
        "sech" => 1.0 / x.cosh(),
        "csch" => 1.0 / x.sinh(),
        "coth" => 1.0 / x.tanh(),
        "asinh" => libm::asinh(x),
        // musl's acosh reads |x| below 1 (NaN is the value there).
        "acosh" => {
            if x < 1.0 {
                f64::NAN
            } else {
                libm::acosh(x)
            }
        }
        "atanh" => libm::atanh(x),
        "erf" => libm::erf(x),
        "erfc" => libm::erfc(x),
        "floor" => x.floor(),
        "ceil" => x.ceil(),
        "trunc" => x.trunc(),
        "round" => x.round(),
        _ => panic!("no f64 reference for {name}"),
    }
}

/// The f64 reference of binary `name` at f32 arguments, to be rounded to f32.
pub fn f64_binary(name: &str, x: f64, y: f64) -> f64 {
    match name {
        "pow" => x.powf(y),
        "atan2" => x.atan2(y),
        "rem" => x % y,
        "mod" => {
            let r = x % y;
            if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                r + y
            } else {
                r
            }
        }
        _ => panic!("no f64 reference for {name}"),
    }
}
