//! The profiler's HTML report in a real browser: a profiled run of three call sites is written as
//! `report.html` by `arrayflow-prof html`, loaded in headless Chromium, and the DOM Chromium
//! dumps after the page's script ran is checked: the script ran (`data-ready`), raised no error
//! (`data-errors`, also Chromium's console log), and the call-site table lists the three sites
//! with the costliest first. A screenshot is left in `target/profile-html/report.png` for a
//! person to look at.
//!
//! Without Chromium the test prints a skip message, unless `ARRAYFLOW_REQUIRE_TOOLS` names
//! `chromium` (CI installs it and sets that), where a missing browser fails the test.

mod common;

use arrayflow::{Array, Runtime};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The browser's command, if one is installed.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

fn required() -> bool {
    std::env::var("ARRAYFLOW_REQUIRE_TOOLS")
        .is_ok_and(|v| v.split(',').any(|b| b.trim() == "chromium"))
}

/// Runs headless Chromium on `page` with `extra` arguments; stdout and stderr.
fn browse(browser: &str, page: &Path, extra: &[&str]) -> (String, String) {
    let profile = std::env::temp_dir().join(format!("af-chromium-{}", std::process::id()));
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    let _ = std::fs::remove_dir_all(&profile);
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Three sites of different cost, each in a kernel of its own (a read between them): `small`
/// (2^10 adds), `medium` (2^16 elements of a chain of square roots and exponentials) and `large`
/// (the same chain on 2^19 elements). Returns the results and the sites, costliest first.
fn program(x: &[f32]) -> (Vec<Vec<f32>>, [String; 3]) {
    let (xs, xm, xl) = (
        Array::from_slice(&x[..1 << 10], &[1 << 10]),
        Array::from_slice(&x[..1 << 16], &[1 << 16]),
        Array::from_slice(x, &[x.len()]),
    );
    let l0 = line!();
    let small = xs + 1.0f32;
    let medium = (((xm.sqrt() + 1.0f32).exp().sqrt() + 1.0f32).exp().sqrt()).exp();
    let large = (((xl.sqrt() + 1.0f32).exp().sqrt() + 1.0f32).exp().sqrt()).exp();
    let mut out = Vec::new();
    for a in [&small, &medium, &large] {
        out.push(a.to_vec().expect("read"));
    }
    let site = |d: u32| format!("{}:{}", file!(), l0 + d);
    (out, [site(3), site(2), site(1)])
}

#[test]
fn html_report_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        assert!(
            !required(),
            "ARRAYFLOW_REQUIRE_TOOLS names chromium, but no chromium is installed (apt-get install -y chromium)"
        );
        eprintln!("skipped: no chromium (apt-get install -y chromium)");
        return;
    };
    let mut r = common::rng(24);
    let x = common::rand_f32(&mut r, 1 << 19, 0.5, 2.0);
    let _ = program(&x); // warm: kernels compiled outside the profile
    let dir = std::env::temp_dir().join(format!("af-profile-html-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let guard = Runtime::profile(&dir).expect("start the profiler");
    let (got, sites) = program(&x);
    guard.finish().expect("profile written");
    // The numbers first (an f64 oracle).
    let f = |v: f64| (((v.sqrt() + 1.0).exp().sqrt() + 1.0).exp().sqrt()).exp();
    for (i, (g, n)) in got.iter().zip([1usize << 10, 1 << 16, 1 << 19]).enumerate() {
        assert_eq!(g.len(), n);
        for (j, &v) in g.iter().enumerate() {
            let want = if i == 0 {
                x[j] as f64 + 1.0
            } else {
                f(x[j] as f64)
            };
            assert!(
                ((v as f64) - want).abs() <= 1e-5 * want.abs(),
                "{i} {j}: {v} vs {want}"
            );
        }
    }

    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("profile-html");
    std::fs::create_dir_all(&out_dir).unwrap();
    let page = out_dir.join("report.html");
    let st = Command::new(env!("CARGO_BIN_EXE_arrayflow-prof"))
        .args(["html", dir.to_str().unwrap(), "-o", page.to_str().unwrap()])
        .status()
        .expect("run arrayflow-prof");
    assert!(st.success());

    let (dom, log) = browse(browser, &page, &["--dump-dom"]);
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page's script did not run:\n{dom}"
    );
    assert!(!dom.contains("data-errors"), "script errors: {dom}");
    assert!(
        !log.contains("Uncaught") && !log.contains("SyntaxError"),
        "console errors:\n{log}"
    );
    // The call-site table lists the three sites, costliest (largest estimated time) first.
    let table = &dom[dom.find("<table id=\"sites\"").expect("call-site table")..];
    let table = &table[..table.find("</table>").unwrap()];
    let at: Vec<usize> = sites
        .iter()
        .map(|s| {
            table
                .find(s.as_str())
                .unwrap_or_else(|| panic!("{s} not in {table}"))
        })
        .collect();
    assert!(at[0] < at[1] && at[1] < at[2], "order {at:?} in {table}");
    assert!(dom.matches("<svg").count() >= 3, "plots missing");

    let shot = out_dir.join("report.png");
    let _ = std::fs::remove_file(&shot);
    browse(
        browser,
        &page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,1600",
        ],
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
