//! The differential profile and its flame graph (issue 31, item 2) on a real program:
//! a deterministic C program built twice, variant B doing 10 % more work, all of it in
//! one named function (`planted`, 12.5 % more there, `-DEXTRA=1`), profiled with `[profile] target = "workload"` in
//! every repetition. `compare --flamegraph-diff` colours `planted` red, and nothing
//! but it and the frames that hold it; a config against itself (the same binary)
//! colours nothing at α = 1 %.
//!
//! Both runs also count (`counters`) and monitor (`[monitor]`) every trial, and the
//! why block (issue 31, item 3) is read from `compare --json`: the planted run's first
//! reason is the function `planted`, its change's interval above 0; the A/A run's why
//! block lists nothing at α = 1 %.

mod common;
use common::*;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// About 1.8 s of CPU a run here. With half of that (and 10 % more work in `planted`,
/// 8 % in all) a CI run missed the planted cost: +8.8 %, [33, 101] ms at 762 ms, adjusted
/// p 0.014 against α = 1 % — the spread of a busy machine's CPU time, not of the
/// samples. Longer runs average more of that short-lived noise per trial.
const PROGRAM: &str = r#"
#ifndef EXTRA
#define EXTRA 0
#endif
volatile unsigned long sink;
__attribute__((noinline)) void steady(unsigned long n) {
    unsigned long x = 1;
    for (unsigned long i = 0; i < n; i++) x = x * 2862933555777941757UL + 3037000493UL;
    sink += x;
}
__attribute__((noinline)) void planted(unsigned long n) {
    unsigned long x = 7;
    for (unsigned long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink += x;
}
int main(void) {
    steady(320000000UL);
    planted(EXTRA ? 1440000000UL : 1280000000UL);
    return 0;
}
"#;

/// The two tests take turns: each is the other's load, and a 10 % effect is measured
/// against the CPU time's spread on the machine.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Builds the two variants into the lab (before any trial: not inside a timeout);
/// false (and the test skips or fails under `PERFLAB_REQUIRE`) without gcc or perf.
fn build(lab: &Lab) -> bool {
    if require::program("gcc").is_none() || !require::perf_records() {
        return false;
    }
    let src = lab.write("planted.c", PROGRAM);
    for (out, extra) in [("prog-a", None), ("prog-b", Some("-DEXTRA=1"))] {
        let mut gcc = std::process::Command::new("gcc");
        gcc.args(["-O1", "-fno-inline", "-fno-omit-frame-pointer", "-o"])
            .arg(lab.path(out))
            .arg(&src);
        if let Some(d) = extra {
            gcc.arg(d);
        }
        let st = gcc.status().expect("run gcc");
        assert!(st.success(), "gcc failed for {out}");
    }
    true
}

/// Runs `reps` profiled repetitions of configs `variant = a|b`, `command` rendering
/// the program of each.
fn run(lab: &Lab, reps: u32, command: &str) {
    let f = lab.write(
        "e.toml",
        &format!(
            r#"
[experiment]
name = "planted"
repetitions = {reps}
warmup = 0
noise_check = false
timeout = "60s"
[matrix]
variant = ["a", "b"]
[profile]
target = "workload"
repetitions = "all"
frequency = 4999
[monitor]
interval = "100ms"
probes = ["cpu", "sched", "memory"]
[workload]
kind = "command"
command = "{command}"
counters = ["task-clock", "page-faults", "context-switches", "instructions"]
"#
        ),
    );
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(240))
        .args(["run", f.to_str().unwrap()])
        .output()
        .expect("run perflab");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("lost"), "{}", stderr(&out));
}

/// The frame paths (`main;planted`) `compare ARGS --flamegraph-diff FILE
/// --flamegraph-alpha 0.01` coloured: (more, less).
fn coloured(lab: &Lab, args: &[&str], file: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut all: Vec<&str> = args.to_vec();
    all.extend([
        "--flamegraph-diff",
        file.to_str().unwrap(),
        "--flamegraph-alpha",
        "0.01",
    ]);
    let out = lab.run(&all);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let svg = std::fs::read_to_string(file).expect("the SVG was written");
    assert!(svg.starts_with("<svg") && svg.contains("<title>"), "{svg}");
    let of = |class: &str| -> BTreeSet<String> {
        let tag = format!("<g class=\"{class}\" data-frame=\"");
        svg.match_indices(&tag)
            .map(|(at, _)| {
                let rest = &svg[at..];
                let p = rest.find("data-path=\"").unwrap() + "data-path=\"".len();
                rest[p..p + rest[p..].find('"').unwrap()].to_string()
            })
            .collect()
    };
    (of("more"), of("less"))
}

/// The why block of `compare ARGS --json --why-alpha 0.01`: (its entries, how many
/// quantities it checked).
fn why(lab: &Lab, args: &[&str]) -> (Vec<serde_json::Value>, u64) {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--json", "--why-alpha", "0.01"]);
    let out = lab.run(&all);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("compare --json");
    let list = v["why"].as_array().cloned().unwrap_or_default();
    (list, v["why_checked"].as_u64().unwrap_or(0))
}

#[test]
fn a_planted_cost_is_coloured_red_and_nothing_unrelated() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::new();
    if !build(&lab) {
        return;
    }
    let dir = lab.dir.path().display().to_string();
    run(&lab, 5, &format!("{dir}/prog-{{variant}}"));
    for args in [
        vec!["compare", "1:variant=a", "1:variant=b"],
        vec!["compare", "1", "--baseline", "variant=a"],
    ] {
        let (more, less) = coloured(&lab, &args, &lab.path("diff.svg"));
        let planted = |p: &String| p.split(';').any(|f| f == "planted");
        let svg = std::fs::read_to_string(lab.path("diff.svg")).unwrap();
        let title = svg
            .find("<title>planted")
            .map(|i| &svg[i..i + svg[i..].find("</title>").unwrap()]);
        eprintln!("{args:?}: {title:?}");
        assert!(
            more.iter().any(planted),
            "{args:?}: more {more:?}, less {less:?}; {title:?}"
        );
        // Only `planted`, the frames that hold it (main, the C start-up) and those it
        // holds (a timer interrupt while it ran): `steady` did the same work, and its
        // frames are grey.
        let on_its_path = |p: &String| {
            more.iter()
                .any(|q| planted(q) && (q.starts_with(p.as_str()) || planted(p)))
        };
        for p in more.iter().chain(&less) {
            assert!(
                on_its_path(p),
                "{args:?}: unrelated frame {p} coloured: more {more:?}, less {less:?}"
            );
        }
        let steady = |p: &String| p.split(';').any(|f| f == "steady");
        assert!(!more.iter().chain(&less).any(steady));
        assert!(less.is_empty(), "{args:?}: less {less:?}");
    }
    // The why block's first reason is the planted function, its change above 0.
    let (list, checked) = why(&lab, &["compare", "1:variant=a", "1:variant=b"]);
    let first = list.first().expect("the why block lists something");
    assert_eq!(first["kind"], "function", "{list:?}");
    assert_eq!(first["name"], "planted", "{list:?}");
    assert!(first["change"]["lo"].as_f64().unwrap() > 0.0, "{first}");
    assert!(checked > 10, "checked {checked}");
    let text = lab.run(&["compare", "1:variant=a", "1:variant=b"]);
    let text = stdout(&text);
    let block = &text[text.find("why:").expect("a why block")..];
    let first_line = block
        .lines()
        .find(|l| l.contains(" function "))
        .unwrap_or("");
    assert!(first_line.contains("planted"), "{block}");
    // The HTML report draws it too, inline (its titles show on hover).
    let html = lab.path("r.html");
    let out = lab.run(&["report", "1", "--html", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = std::fs::read_to_string(html).unwrap();
    assert!(html.contains("<h2>Differential flame graph</h2>"), "{html}");
    assert!(
        html.contains("<g class=\"more\" data-frame=\"planted\""),
        "planted is not red in the report"
    );
}

#[test]
fn a_config_against_itself_colours_nothing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::new();
    if !build(&lab) {
        return;
    }
    let dir = lab.dir.path().display().to_string();
    // The same binary in both configs (the variant is an ignored argument).
    run(&lab, 10, &format!("{dir}/prog-a {{variant}}"));
    let (more, less) = coloured(
        &lab,
        &["compare", "1:variant=a", "1:variant=b"],
        &lab.path("aa.svg"),
    );
    assert!(
        more.is_empty() && less.is_empty(),
        "A/A coloured more {more:?}, less {less:?}"
    );
    // Nor does the why block list anything, among everything it checked.
    let (list, checked) = why(&lab, &["compare", "1:variant=a", "1:variant=b"]);
    assert!(list.is_empty(), "A/A explained: {list:?}");
    assert!(checked > 10, "checked {checked}");
}
