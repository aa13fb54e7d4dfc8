//! `perflab profile` end to end: a C program with one known hot function, recorded
//! with the real perf; the reducer's filters on the committed `perf script` fixture;
//! bad input. Tests that need perf (or a C compiler) skip, printing why, where the
//! machine cannot run them — or fail, under `PERFLAB_REQUIRE` (tests/require.rs).

mod common;

use std::path::PathBuf;
use std::process::Command as Std;

use common::{require, stderr, stdout, Lab};
use serde_json::Value;

/// One hot function (called in a loop for the given seconds) and a colder one. It
/// calls `keep` so that it is not a leaf and sets up a frame: call chains then show
/// `main` as its caller.
const HOT_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
volatile unsigned long sink;
__attribute__((noinline)) void keep(unsigned long x) { sink += x; }
__attribute__((noinline)) void hot_function(unsigned long n) {
    unsigned long x = 0;
    for (unsigned long i = 0; i < n; i++) { x += i * i ^ (x >> 3); }
    keep(x);
}
__attribute__((noinline)) void cold_function(unsigned long n) {
    unsigned long x = 1;
    for (unsigned long i = 0; i < n; i++) { x = x * 31 + i; }
    keep(x);
}
static double now(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 1.0, start = now();
    while (now() - start < secs) { hot_function(200000); cold_function(10000); }
    printf("hot done %lu\n", sink);
    return 0;
}
"#;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../profile/tests/fixtures/perf-script.txt")
}

/// Compiles the hot program in the lab; None (with the reason printed, or a failure
/// under `PERFLAB_REQUIRE`: tests/require.rs) where perf or cc is missing.
fn build_hot(lab: &Lab) -> Option<PathBuf> {
    if !require::perf_records() || require::program("cc").is_none() {
        return None;
    }
    let src = lab.write("hot.c", HOT_C);
    let bin = lab.path("hot");
    let out = Std::new("cc")
        .args(["-O1", "-g", "-fno-inline", "-fno-omit-frame-pointer", "-o"])
        .arg(&bin)
        .arg(&src)
        .output();
    match out {
        Ok(o) if o.status.success() => Some(bin),
        Ok(o) => panic!("cc failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => panic!("cc does not run: {e}"),
    }
}

fn functions(report: &Value) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = report["images"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["functions"].as_array().unwrap().iter())
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["samples"].as_u64().unwrap(),
            )
        })
        .collect();
    v.sort_by_key(|f| std::cmp::Reverse(f.1));
    v
}

#[test]
fn hot_function_comes_first_with_most_user_samples() {
    let lab = Lab::new();
    let Some(_) = build_hot(&lab) else { return };
    let out = lab.run(&[
        "profile",
        "-F",
        "999",
        "--json",
        "--folded",
        "stacks.folded",
        "--flamegraph",
        "fg.svg",
        "--output",
        "rec",
        "--",
        "./hot",
        "1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // stdout is the JSON alone; the program's own output went to stderr.
    let r: Value = serde_json::from_slice(&out.stdout).expect("stdout is only JSON");
    assert!(stderr(&out).contains("hot done"), "{}", stderr(&out));
    let event = r["event"].as_str().unwrap();
    assert!(event == "cycles" || event == "cpu-clock", "{event}");
    if event == "cpu-clock" {
        assert!(r["event_note"]
            .as_str()
            .unwrap()
            .contains("cycles not supported"));
    }
    let samples = r["samples"].as_u64().unwrap();
    assert!(samples >= 50, "too few samples: {samples}");
    let user = samples as f64 * r["user_pct"].as_f64().unwrap() / 100.0;
    let fns = functions(&r);
    assert_eq!(fns[0].0, "hot_function", "{fns:?}");
    assert!(
        fns[0].1 as f64 >= 0.5 * user,
        "hot_function has {} of {user} user samples",
        fns[0].1
    );
    assert_eq!(r["images"][0]["name"], "hot");

    let folded = std::fs::read_to_string(lab.path("stacks.folded")).unwrap();
    assert!(
        folded.lines().any(|l| l.contains(";main;hot_function")),
        "{folded}"
    );
    let svg = std::fs::read_to_string(lab.path("fg.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("hot_function"));

    // Stored as a one-trial run of kind "profile", with artifacts and fn: metrics.
    let store = lab.open_store();
    let run = store.latest_run().unwrap();
    assert_eq!(run.kind, "profile");
    assert_eq!(r["run_id"].as_i64(), Some(run.id));
    let trials = store.trials(run.id).unwrap();
    assert_eq!(trials.len(), 1);
    let names: Vec<String> = store
        .trial_artifacts(trials[0].id)
        .unwrap()
        .into_iter()
        .map(|a| a.0)
        .collect();
    // The profile artifact is "profile.json", as an experiment's [profile] names it (was
    // "report.json", which `perflab report` did not find).
    assert_eq!(names, ["profile.json", "stacks.folded", "flamegraph.svg"]);
    let m = store.metrics(run.id).unwrap();
    let hot = m
        .iter()
        .find(|m| m.name == "fn:hot_function")
        .expect("metric");
    assert_eq!((hot.unit.as_str(), hot.better.as_str()), ("%", "lower"));
    assert!(hot.value > 50.0);

    // The routine view of the kept perf.data: per-instruction shares, the hottest marked.
    let data = r["perf_data"].as_str().unwrap();
    let out = lab.run(&["profile", "report", data, "--routine", "hot_function"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("hot_function in hot"), "{text}");
    assert!(text.contains('»'), "no hot line marked: {text}");
    assert!(text.contains("callers: main"), "{text}");
    let j = lab.json(&[
        "profile",
        "report",
        data,
        "--routine",
        "hot_function",
        "--json",
    ]);
    let lines = j["routine"]["lines"].as_array().unwrap();
    let hot: Vec<&Value> = lines.iter().filter(|l| l["hot"] == true).collect();
    assert!(!hot.is_empty() && hot.len() < lines.len());
    let hot_pct: f64 = hot.iter().map(|l| l["pct"].as_f64().unwrap()).sum();
    assert!(hot_pct >= 50.0, "{hot_pct}");
    if j["routine"]["source"] == "perf annotate" {
        assert!(hot.iter().all(|l| !l["asm"].as_str().unwrap().is_empty()));
    }
    assert_eq!(j["call_graph"]["callers"][0]["name"], "main");

    // The same recording through the stored run id.
    let id = run.id.to_string();
    let by_run = lab.json(&["profile", "report", &id, "--json"]);
    assert_eq!(functions(&by_run)[0].0, "hot_function");
}

#[test]
fn command_output_file_and_kernel_mode() {
    let lab = Lab::new();
    let Some(_) = build_hot(&lab) else { return };
    let out = lab.run(&[
        "profile",
        "--json",
        "--mode",
        "k",
        "--threshold",
        "0",
        "--command-output",
        "cmd.out",
        "--output",
        "rec",
        "--",
        "./hot",
        "0.3",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cmd_out = std::fs::read_to_string(lab.path("cmd.out")).unwrap();
    assert!(cmd_out.contains("hot done"));
    assert!(!stderr(&out).contains("hot done"));
    assert!(lab.path("rec/perf.data").is_file());
    assert_eq!(r["mode"], "k");
    for img in r["images"].as_array().unwrap() {
        assert!(img["name"].as_str().unwrap().starts_with('['), "{img}");
    }
}

#[test]
fn report_filters_on_the_fixture() {
    let lab = Lab::new();
    let f = fixture();
    let f = f.to_str().unwrap();
    let all = lab.json(&["profile", "report", f, "--json"]);
    assert_eq!(all["samples"], 71);
    assert_eq!(all["images"].as_array().unwrap().len(), 5);
    let k = lab.json(&["profile", "report", f, "--json", "--mode", "k"]);
    assert_eq!(k["samples"], 19);
    assert_eq!(k["images"][0]["name"], "[kernel.kallsyms]");
    assert_eq!(k["images"][0]["functions"][0]["name"], "clear_page_erms");
    let t = lab.json(&["profile", "report", f, "--json", "--threshold", "5"]);
    let names: Vec<&str> = t["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "hot",
            "[kernel.kallsyms]",
            "libLLVM.so.22.1-rust-1.95.0-stable"
        ]
    );
    let idle = lab.json(&["profile", "report", f, "--json", "--include-idle"]);
    assert_eq!(idle["samples"], 73);
    let comm = lab.json(&["profile", "report", f, "--json", "--comm", "nginx"]);
    assert_eq!(comm["samples"], 8);
    let pid = lab.json(&["profile", "report", f, "--json", "--pid", "16728"]);
    assert_eq!(pid["samples"], 46);

    let out = lab.run(&["profile", "report", f]);
    let text = stdout(&out);
    assert!(text.contains("kernel 26.8% · user 73.2%"), "{text}");
    assert!(text.contains("hot_function"), "{text}");
}

#[test]
fn missing_or_refused_perf_exits_1_with_the_fix() {
    let lab = Lab::new();
    let out = lab
        .cmd()
        .env("PERFLAB_PERF", lab.path("no-such-perf"))
        .args(["profile", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("apt-get install linux-perf"),
        "{}",
        stderr(&out)
    );

    // A perf that answers the way a kernel with perf_event_paranoid = 3 makes it.
    let fake = lab.write(
        "perf",
        "#!/bin/sh\necho 'Error:' >&2\necho 'Access to performance monitoring and observability operations is limited.' >&2\nexit 255\n",
    );
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = lab
        .cmd()
        .env("PERFLAB_PERF", &fake)
        .args(["profile", "-a", "-d", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("not permitted"), "{err}");
    assert!(err.contains("sysctl kernel.perf_event_paranoid=1"), "{err}");
}

#[test]
fn bad_input_exits_2() {
    let lab = Lab::new();
    let f = fixture();
    let f = f.to_str().unwrap();
    for args in [
        vec!["profile"],
        vec!["profile", "-F", "0", "--", "true"],
        vec!["profile", "-a", "--", "true"],
        vec!["profile", "--mode", "x", "--", "true"],
        vec!["profile", "--threshold", "200", "--", "true"],
        vec!["profile", "--event", "instructions", "--", "true"],
        vec!["profile", "-d", "soon", "-a"],
        vec!["profile", "--", "/no/such/program"],
        vec!["profile", "report", "/no/such/perf.data"],
        vec!["profile", "report", f, "--routine", "no_such_function"],
    ] {
        let out = lab.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("error"), "{args:?}");
    }
}

/// Regression: `perflab profile` stored its report as `report.json` while the HTML
/// report looked for an experiment's `profile.json`, so a profile run's report had no
/// top-functions table. Both now use the store's one artifact name.
#[test]
fn a_profile_run_reports_its_top_functions_in_html() {
    let lab = Lab::new();
    let Some(_) = build_hot(&lab) else { return };
    let out = lab.run(&["profile", "-F", "999", "-q", "--", "./hot", "0.5"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let store = lab.open_store();
    let trial = store.trials(1).unwrap()[0].id;
    let names: Vec<String> = store
        .trial_artifacts(trial)
        .unwrap()
        .into_iter()
        .map(|(name, _, _)| name)
        .collect();
    assert!(names.iter().any(|n| n == "profile.json"), "{names:?}");
    let out = lab.run(&["report", "1", "--html", "r.html"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(lab.path("r.html")).unwrap();
    assert!(
        html.contains("Top functions, trial"),
        "no top-functions table"
    );
    assert!(
        html.contains("hot_function"),
        "the hot function is not in the table"
    );
}
