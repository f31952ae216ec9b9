//! User kernels from a spec (issue 25, seed 002): specs under `tests/data/kernel_spec/` run their
//! OpenCL C on random data (in the private OpenCL context: PoCL in CI) and are compared with plain
//! Rust loops; a launch split by `partition` 0, 3, 5 and 10 gives identical results, its parts are
//! work-group aligned and cover dimension 0, and each part's bytes moved are what its rows of the
//! splittable buffers and the whole of the others come to (counted here by hand); outputs fuse
//! into later operations; every bad field of a spec is an error naming the field and this file's
//! line.

use arrayflow::kernels::KernelSpec;
use arrayflow::{Array, DynArray, ErrorKind};
use serde_json::{Value, json};

const DIR: &str = "tests/data/kernel_spec";

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| (self.next() as f32 / (1u64 << 31) as f32) * 4.0 - 2.0)
            .collect()
    }
    fn f64s(&mut self, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| (self.next() as f64 / (1u64 << 31) as f64) * 4.0 - 2.0)
            .collect()
    }
}

fn spec(file: &str) -> KernelSpec {
    KernelSpec::from_file(format!("{DIR}/{file}")).unwrap()
}

fn f32s(a: &DynArray) -> Vec<f32> {
    a.clone().downcast::<f32>().unwrap().to_vec().unwrap()
}

/// The parts are aligned to `group`, in order, cover `0..n`, and the first is about
/// `partition / 10` of it.
fn check_parts(parts: &[std::ops::Range<usize>], n: usize, group: usize, partition: u32) {
    let mut at = 0;
    for p in parts {
        assert_eq!(p.start, at);
        assert!(p.start < p.end);
        assert_eq!(p.start % group, 0, "{parts:?}");
        at = p.end;
    }
    assert_eq!(at, n);
    let first = if partition == 0 { 0 } else { parts[0].len() };
    let want = n as f64 * partition as f64 / 10.0;
    assert!(
        (first as f64 - want).abs() <= group as f64,
        "{parts:?} for partition {partition}"
    );
}

#[test]
fn vector_add_against_loops_for_every_partition() {
    let mut r = Lcg(11);
    let n = 1000 * 8 + 24;
    let (a, b) = (r.f32s(n), r.f32s(n));
    let want: Vec<f32> = (0..n).map(|i| (a[i] as f64 + b[i] as f64) as f32).collect();
    let aa = Array::from_vec(a.clone(), &[n]).into_dyn();
    let ba = Array::from_vec(b.clone(), &[n]).into_dyn();
    let base = spec("vector_add.json");
    assert_eq!(base.partition, 3);
    for partition in [0, 3, 5, 10] {
        let s = base.clone().with_partition(partition);
        let run = s.launch(n, &[&aa, &ba], &[]).unwrap();
        assert_eq!(run.outputs.len(), 1);
        assert_eq!(f32s(&run.outputs[0]), want, "partition {partition}");
        let parts: Vec<_> = run.parts.iter().map(|p| p.items.clone()).collect();
        check_parts(&parts, n, 8, partition);
        assert_eq!(parts, s.parts(n).unwrap());
        assert_eq!(parts.len(), if partition % 10 == 0 { 1 } else { 2 });
        for p in &run.parts {
            // a and b: the part's elements up; c: the part's elements back.
            assert_eq!(p.moved.upload_bytes, 2 * p.items.len() * 4, "{p:?}");
            assert_eq!(p.moved.download_bytes, p.items.len() * 4, "{p:?}");
            // The transfers made are what the access analysis gives.
            let acc = s.access(n, p.items.clone()).unwrap();
            assert_eq!(
                arrayflow::proggen::access::transfer(&acc, &[n, n, n]),
                p.moved
            );
        }
    }
    // The output is an array like any other: it fuses into later operations.
    let run = base.launch(n, &[&aa, &ba], &[]).unwrap();
    let c = run.outputs[0].clone().downcast::<f32>().unwrap();
    let d = (&c * 2.0 - &Array::from_vec(a.clone(), &[n]))
        .to_vec()
        .unwrap();
    for i in 0..n {
        assert_eq!(
            d[i],
            ((want[i] as f64 * 2.0) as f32 as f64 - a[i] as f64) as f32
        );
    }
}

#[test]
fn pyschedcl_form_reads_the_same() {
    let mut r = Lcg(12);
    let n = 256;
    let (a, b) = (r.f32s(n), r.f32s(n));
    let s = spec("vector_add_pyschedcl.json");
    assert_eq!(s.partition, 10);
    let run = s
        .launch(
            n,
            &[
                &Array::from_vec(a.clone(), &[n]).into_dyn(),
                &Array::from_vec(b.clone(), &[n]).into_dyn(),
            ],
            &[],
        )
        .unwrap();
    let want: Vec<f32> = (0..n).map(|i| (a[i] as f64 + b[i] as f64) as f32).collect();
    assert_eq!(f32s(&run.outputs[0]), want);
    assert_eq!(run.parts.len(), 1);
    assert_eq!(run.parts[0].items, 0..n);
}

#[test]
fn saxpy_with_a_named_scalar_and_an_io_buffer() {
    let mut r = Lcg(13);
    let n = 16 * 77;
    let (x, y) = (r.f32s(n), r.f32s(n));
    let alpha = 1.75f32;
    // The kernel computes alpha * x + y in f32 (no contraction is asked for; allow one rounding).
    let want: Vec<f64> = (0..n)
        .map(|i| alpha as f64 * x[i] as f64 + y[i] as f64)
        .collect();
    let xa = Array::from_vec(x.clone(), &[n]).into_dyn();
    let ya = Array::from_vec(y.clone(), &[n]).into_dyn();
    let base = spec("saxpy.json");
    let mut first: Option<Vec<f32>> = None;
    for partition in [0, 3, 5, 10] {
        let s = base.clone().with_partition(partition);
        let run = s
            .launch(n, &[&xa, &ya], &[("alpha", alpha as f64)])
            .unwrap();
        let got = f32s(&run.outputs[0]);
        for i in 0..n {
            assert!(
                (got[i] as f64 - want[i]).abs()
                    <= 2.0 * f32::EPSILON as f64 * (1.0 + want[i].abs()),
                "element {i}: {} vs {}",
                got[i],
                want[i]
            );
        }
        match &first {
            None => first = Some(got),
            Some(f) => assert_eq!(&got, f, "partition {partition} differs from partition 0"),
        }
        let parts: Vec<_> = run.parts.iter().map(|p| p.items.clone()).collect();
        check_parts(&parts, n, 16, partition);
        for p in &run.parts {
            // x and y up, y back: the part's rows only.
            assert_eq!(p.moved.upload_bytes, 2 * p.items.len() * 4);
            assert_eq!(p.moved.download_bytes, p.items.len() * 4);
        }
    }
    // The input array y is unchanged (the io buffer's result is a new array).
    assert_eq!(f32s(&ya), y);
    // A missing named scalar.
    let e = base.launch(n, &[&xa, &ya], &[]).unwrap_err();
    assert!(e.message.contains("`alpha`"), "{e}");
}

#[test]
fn two_dimensional_launch_with_a_whole_buffer() {
    let mut r = Lcg(14);
    let rows = 36;
    let (m, w) = (r.f64s(rows * 24), r.f64s(24));
    let want: Vec<f64> = (0..rows * 24).map(|k| m[k] * w[k % 24] + 0.25).collect();
    let ma = Array::from_vec(m.clone(), &[rows, 24]).into_dyn();
    let wa = Array::from_vec(w.clone(), &[24]).into_dyn();
    let base = spec("rows_weighted.json");
    for partition in [0, 3, 4, 10] {
        let s = base.clone().with_partition(partition);
        let run = s.launch(rows, &[&ma, &wa], &[]).unwrap();
        let got = run.outputs[0]
            .clone()
            .downcast::<f64>()
            .unwrap()
            .to_vec()
            .unwrap();
        for k in 0..rows * 24 {
            assert!(
                (got[k] - want[k]).abs() <= 1e-15 * (1.0 + want[k].abs()),
                "{k}"
            );
        }
        let parts: Vec<_> = run.parts.iter().map(|p| p.items.clone()).collect();
        check_parts(&parts, rows, 4, partition);
        for p in &run.parts {
            // m's rows and all of w up; out's rows back.
            let rows_bytes = p.items.len() * 24 * 8;
            assert_eq!(p.moved.upload_bytes, rows_bytes + 24 * 8);
            assert_eq!(p.moved.download_bytes, rows_bytes);
        }
    }
}

/// The valid spec the error cases change one field of.
fn base_json() -> Value {
    json!({
        "name": "VectorAdd",
        "src": format!("{DIR}/vector_add.cl"),
        "workDimension": 1,
        "globalWorkSize": "dataset",
        "localWorkSize": 8,
        "partition": 3,
        "buffers": [
            { "kind": "input", "type": "f32", "size": "dataset", "pos": 0, "split": true },
            { "kind": "input", "type": "f32", "size": "dataset", "pos": 1, "split": true },
            { "kind": "output", "type": "f32", "size": "dataset", "pos": 2, "split": true }
        ],
        "scalars": [ { "type": "i32", "pos": 3, "value": "dataset" } ]
    })
}

#[test]
fn bad_specs_name_the_field_and_the_line() {
    assert!(KernelSpec::from_json(&base_json().to_string()).is_ok());
    type Change = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(Change, &str)> = vec![
        (
            Box::new(|v| v["buffers"][1]["type"] = json!("flaot")),
            "buffers[1].type: \"flaot\" is not one of f32, f64, i32, u32",
        ),
        (
            Box::new(|v| v["buffers"][0]["kind"] = json!("inptu")),
            "buffers[0].kind:",
        ),
        (
            Box::new(|v| v["buffers"][2]["size"] = json!("datset * 2")),
            "buffers[2].size: unknown name `datset`",
        ),
        (
            Box::new(|v| v["buffers"][2]["size"] = json!("dataset +")),
            "buffers[2].size:",
        ),
        (
            Box::new(|v| v["buffers"][1]["pos"] = json!(0)),
            "buffers[1].pos: 0 is also the position of buffers[0]",
        ),
        (
            Box::new(|v| v["buffers"][1]["pos"] = json!(9)),
            "buffers[1].pos: 9 is past the last argument",
        ),
        (
            Box::new(|v| v["buffers"][0]["split"] = json!("yes")),
            "buffers[0].split:",
        ),
        (
            Box::new(|v| {
                v["buffers"][0].as_object_mut().unwrap().remove("pos");
            }),
            "buffers[0].pos: missing",
        ),
        (
            Box::new(|v| v["buffers"][0]["sise"] = json!(3)),
            "buffers[0].sise: unknown field",
        ),
        (
            Box::new(|v| v["scalars"][0]["type"] = json!("int64")),
            "scalars[0].type: \"int64\" is not one of",
        ),
        (
            Box::new(|v| {
                v["scalars"][0].as_object_mut().unwrap().remove("value");
            }),
            "scalars[0]: needs a `value` or a `name`",
        ),
        (
            Box::new(|v| v["workDimension"] = json!(4)),
            "workDimension: 4 is not one of 1, 2, 3",
        ),
        (
            Box::new(|v| v["globalWorkSize"] = json!("[dataset, 2]")),
            "globalWorkSize: 2 sizes for workDimension 1",
        ),
        (
            Box::new(|v| v["localWorkSize"] = json!([8, 8])),
            "localWorkSize: 2 sizes",
        ),
        (
            Box::new(|v| v["partition"] = json!(11)),
            "partition: 11 is not an integer in 0..=10",
        ),
        (Box::new(|v| v["name"] = json!("Vector Add")), "name:"),
        (
            Box::new(|v| {
                v.as_object_mut().unwrap().remove("name");
            }),
            "name: missing",
        ),
        (
            Box::new(|v| v["src"] = json!("tests/data/kernel_spec/missing.cl")),
            "src: cannot read",
        ),
        (
            Box::new(|v| v["buffer"] = json!([])),
            "buffer: unknown field",
        ),
        (
            Box::new(|v| v["buffers"] = json!({})),
            "buffers: expected a list",
        ),
    ];
    for (change, want) in cases {
        let mut v = base_json();
        change(&mut v);
        let text = v.to_string();
        let (e, line) = (KernelSpec::from_json(&text).unwrap_err(), line!());
        assert_eq!(e.kind, ErrorKind::Argument);
        assert!(e.message.contains(want), "{:?} lacks {want:?}", e.message);
        let site = e.site.expect("a call site");
        assert!(
            site.file().ends_with("kernel_spec.rs") && site.line() == line,
            "{site}"
        );
        assert!(
            e.to_string().contains(&format!("kernel_spec.rs:{line}")),
            "{e}"
        );
    }
    let (e, line) = (KernelSpec::from_json("{ \"name\": ").unwrap_err(), line!());
    assert!(
        e.message.contains("not valid JSON") && e.site.unwrap().line() == line,
        "{e}"
    );
    let none = format!("{DIR}/none.json");
    let (e, line) = (KernelSpec::from_file(&none).unwrap_err(), line!());
    assert!(
        e.message.contains("cannot read") && e.site.unwrap().line() == line,
        "{e}"
    );

    // Errors found at launch, for a dataset: sizes that do not divide, wrong arrays, an
    // unsplittable output of a split launch.
    let a = Array::from_vec(vec![1.0f32; 20], &[20]).into_dyn();
    let s = KernelSpec::from_json(&base_json().to_string()).unwrap();
    let (e, line) = (s.launch(20, &[&a, &a], &[]).unwrap_err(), line!());
    assert!(
        e.message
            .contains("localWorkSize[0]: 8 does not divide the global size 20"),
        "{e}"
    );
    assert_eq!(e.site.unwrap().line(), line);
    let mut v = base_json();
    v["buffers"][0]["size"] = json!("dataset * 2 + 1");
    let s = KernelSpec::from_json(&v.to_string()).unwrap();
    let b = Array::from_vec(vec![1.0f32; 33], &[33]).into_dyn();
    let e = s.launch(16, &[&b, &b], &[]).unwrap_err();
    assert!(
        e.message
            .contains("buffers[0].split: its 33 elements do not split"),
        "{e}"
    );
    let s = KernelSpec::from_json(&base_json().to_string()).unwrap();
    let c = Array::from_vec(vec![1.0f32; 16], &[16]).into_dyn();
    let e = s.launch(16, &[&c], &[]).unwrap_err();
    assert!(
        e.message.contains("takes 2 input and io arrays, 1 given"),
        "{e}"
    );
    let e = s.launch(24, &[&c, &c], &[]).unwrap_err();
    assert!(
        e.message.contains("buffers[0]") && e.message.contains("24 f32"),
        "{e}"
    );
    let ci = Array::from_vec(vec![1i32; 16], &[16]).into_dyn();
    let e = s.launch(16, &[&c, &ci], &[]).unwrap_err();
    assert!(e.message.contains("buffers[1]"), "{e}");
    let mut v = base_json();
    v["buffers"][2]["split"] = json!(false);
    let s = KernelSpec::from_json(&v.to_string()).unwrap();
    let e = s.launch(16, &[&c, &c], &[]).unwrap_err();
    assert!(
        e.message
            .contains("buffers[2]: a buffer the kernel writes must be splittable"),
        "{e}"
    );
    // Unsplit (partition 0 or 10) it runs.
    let run = s
        .clone()
        .with_partition(10)
        .launch(16, &[&c, &c], &[])
        .unwrap();
    assert_eq!(f32s(&run.outputs[0]), vec![2.0; 16]);
}

#[test]
fn size_expressions() {
    use arrayflow::kernels::expr::Expr;
    let v = |s: &str, d| Expr::parse(s).unwrap().eval(d).unwrap();
    assert_eq!(v("dataset", 7), 7);
    assert_eq!(v("2 * dataset + 1", 7), 15);
    assert_eq!(v("2 * (dataset + 1)", 7), 16);
    assert_eq!(v("dataset / 4 - -3", 8), 5);
    assert_eq!(v("100 - 10 - 1", 0), 89);
    assert_eq!(v("((dataset))*3/2", 4), 6);
    for bad in ["dataset +", "(dataset", "datset", "dataset 3", "", "2 ^ 3"] {
        assert!(Expr::parse(bad).is_err(), "{bad}");
    }
    assert!(Expr::parse("7 / dataset").unwrap().eval(0).is_err());
    assert!(Expr::parse("7 / dataset").unwrap().eval(2).is_err());
}
