//! `counters = [...]` and `perflab bench --counters`: events counted with
//! perf_event_open over a trial's whole process tree, checked against `perf stat` on
//! the same program, and the errors of a bad counter name.
//!
//! The fixed program is a small C file compiled here: it touches a fixed number of
//! pages (huge pages off, so each touch is one fault) and spins a fixed loop, so its
//! page faults and CPU time are the same run after run.

mod common;
use common::*;

use std::path::PathBuf;

use perflab_telemetry::perfcount::{has_hardware_pmu, NO_PMU};

/// Counting tests measure CPU time: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const PROGRAM: &str = r#"
#include <stdlib.h>
#include <sys/mman.h>
int main(int argc, char **argv) {
    long pages = argc > 1 ? atol(argv[1]) : 20000;
    long spin = argc > 2 ? atol(argv[2]) : 60000000;
    char *p = mmap(0, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    madvise(p, pages * 4096, MADV_NOHUGEPAGE);
    for (long i = 0; i < pages; i++) p[i * 4096] = 1;
    volatile unsigned long x = 0;
    for (long i = 0; i < spin; i++) x += i;
    return 0;
}
"#;

/// The fixed program, compiled into the lab (None: no C compiler, said by `require`).
fn program(lab: &Lab) -> Option<PathBuf> {
    let cc = require::program("cc")?;
    let src = lab.write("faults.c", PROGRAM);
    let exe = lab.path("faults");
    let st = std::process::Command::new(cc)
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("run cc");
    assert!(st.success(), "cc failed");
    Some(exe)
}

fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty());
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `perf stat -x, -e EVENTS -- EXE` `runs` times: each event's values (task-clock in
/// ms, as perf prints it).
fn perf_stat(perf: &PathBuf, exe: &PathBuf, events: &[&str], runs: usize) -> Vec<Vec<f64>> {
    let mut out = vec![Vec::new(); events.len()];
    for _ in 0..runs {
        let o = std::process::Command::new(perf)
            .args(["stat", "-x,", "-e", &events.join(","), "--"])
            .arg(exe)
            .output()
            .expect("run perf stat");
        assert!(o.status.success(), "perf stat: {}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stderr);
        for (i, e) in events.iter().enumerate() {
            let line = text
                .lines()
                .find(|l| l.split(',').nth(2).is_some_and(|f| f.starts_with(e)))
                .unwrap_or_else(|| panic!("no {e} in perf stat's output:\n{text}"));
            let v: f64 = line.split(',').next().unwrap().parse().unwrap_or_else(|_| {
                panic!("perf stat did not count {e}: {line}");
            });
            out[i].push(v);
        }
    }
    out
}

/// Per-trial values of `metric` in the lab's latest run.
fn trial_values(lab: &Lab, metric: &str) -> Vec<f64> {
    let store = lab.open_store();
    let run = store.latest_run().unwrap().id;
    store
        .metrics(run)
        .unwrap()
        .into_iter()
        .filter(|m| m.name == metric)
        .map(|m| m.value)
        .collect()
}

/// The `counters.json` of the latest run's first trial.
fn counters_json(lab: &Lab) -> serde_json::Value {
    let store = lab.open_store();
    let run = store.latest_run().unwrap().id;
    let trial = store.trials(run).unwrap()[0].id;
    let (_, _, content) = store
        .trial_artifacts(trial)
        .unwrap()
        .into_iter()
        .find(|(name, _, _)| name == "counters.json")
        .expect("a counters.json artifact");
    serde_json::from_slice(&content).unwrap()
}

/// Runs per side in one attempt of the perf stat comparison.
const ROUNDS: usize = 9;

fn within(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

/// One attempt of [`page_faults_and_task_clock_agree_with_perf_stat`] over 9 runs
/// each: page faults by their medians; task-clock by the least of each side's runs
/// (CPU time only grows when other work contends for the core and its caches, so the
/// least is the estimate of the program's own cost, where a median of a few swings by
/// ±20 % on a busy VM).
struct Attempt {
    faults: f64,
    clock: f64,
    their_faults: f64,
    their_clock: f64,
    their_runs: Vec<Vec<f64>>,
    out: std::process::Output,
}

/// 9 runs of `perflab bench --counters` and 9 of `perf stat`, interleaved one by one
/// (the order flips each round) so a busy machine's phases fall on both sides alike.
fn compare_with_perf(lab: &Lab, perf: &PathBuf, exe: &PathBuf) -> Attempt {
    let (mut theirs, mut faults, mut clock) = (vec![Vec::new(), Vec::new()], vec![], vec![]);
    let mut out = None;
    for round in 0..ROUNDS {
        let mut ours = || {
            let o = lab.run(&[
                "bench",
                "--counters",
                "page-faults,task-clock",
                "-r",
                "1",
                exe.to_str().unwrap(),
            ]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            faults.extend(trial_values(lab, "counter.page-faults"));
            clock.extend(trial_values(lab, "counter.task-clock"));
            out = Some(o);
        };
        let mut perf_once = || {
            let t = perf_stat(perf, exe, &["page-faults", "task-clock"], 1);
            theirs[0].extend(&t[0]);
            theirs[1].extend(&t[1]);
        };
        if round % 2 == 0 {
            ours();
            perf_once();
        } else {
            perf_once();
            ours();
        }
    }
    assert_eq!((faults.len(), clock.len()), (ROUNDS, ROUNDS));
    let least = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    Attempt {
        faults: median(faults),
        clock: least(&clock),
        their_faults: median(theirs[0].clone()),
        their_clock: least(&theirs[1]),
        their_runs: theirs,
        out: out.unwrap(),
    }
}

#[test]
fn page_faults_and_task_clock_agree_with_perf_stat() {
    let _one = serial();
    let lab = Lab::new();
    let Some(exe) = program(&lab) else { return };
    let Some(perf) = require::program("perf") else {
        return;
    };
    // The program's CPU time itself swings by ±20 % between runs on the shared VM
    // (steal and cache contention: perf stat's own medians of 5 ranged 55-77 ms at
    // load 3, and medians of 5 each missed 5 % three times in a row during a full
    // suite), so task-clock compares the least of 9 runs each, in up to three attempts;
    // page faults are exact and must agree in every attempt. A real bias (perflab
    // counting something perf does not) fails all three.
    let mut attempts = Vec::new();
    let (out, faults) = loop {
        let a = compare_with_perf(&lab, &perf, &exe);
        assert!(
            within(a.faults, a.their_faults, 0.02),
            "page-faults: perflab {}, perf stat {} (runs {:?})",
            a.faults,
            a.their_faults,
            a.their_runs[0]
        );
        let agreed = within(a.clock, a.their_clock, 0.05);
        attempts.push(format!(
            "perflab {:.2} ms vs perf stat {:.2} ms (runs {:?})",
            a.clock, a.their_clock, a.their_runs[1]
        ));
        if agreed {
            break (a.out, a.faults);
        }
        assert!(
            attempts.len() < 3,
            "task-clock never within 5 %: {attempts:#?}"
        );
    };
    assert!(faults > 20000.0, "every touched page faults: {faults}");
    let text = stdout(&out);
    assert!(
        text.contains("Counters:  page-faults ") && text.contains("task-clock "),
        "{text}"
    );
    let detail = counters_json(&lab);
    let pf = &detail["events"]["page-faults"];
    assert_eq!(pf["multiplexed"], false, "{detail}");
    assert!(pf["time_enabled_ns"].as_u64().unwrap() > 0, "{detail}");
    assert_eq!(pf["time_enabled_ns"], pf["time_running_ns"], "{detail}");
}

#[test]
fn hardware_counters_are_missing_with_the_reason_where_there_is_no_pmu() {
    let _one = serial();
    let lab = Lab::new();
    let Some(exe) = program(&lab) else { return };
    let out = lab.run(&[
        "bench",
        "--counters",
        "instructions,cycles,page-faults",
        "-r",
        "3",
        "--export-json",
        "out.json",
        exe.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let detail = counters_json(&lab);
    // Whether the machine has a PMU is a property of the machine, not a missing tool:
    // the test checks what this machine must say either way (most VMs have none).
    if has_hardware_pmu() {
        let ins = median(trial_values(&lab, "counter.instructions"));
        let Some(perf) = require::program("perf") else {
            return;
        };
        let theirs = median(perf_stat(&perf, &exe, &["instructions"], 5).remove(0));
        assert!(
            within(ins, theirs, 0.01),
            "instructions: perflab {ins}, perf stat {theirs}"
        );
        assert!(!trial_values(&lab, "counter.ipc").is_empty());
        return;
    }
    for e in ["instructions", "cycles"] {
        assert_eq!(detail["events"][e]["missing"], NO_PMU, "{detail}");
        assert!(
            trial_values(&lab, &format!("counter.{e}")).is_empty(),
            "a missing {e} is no metric, never 0"
        );
    }
    assert!(trial_values(&lab, "counter.ipc").is_empty());
    assert_eq!(trial_values(&lab, "counter.page-faults").len(), 3);
    let text = stdout(&out);
    assert!(
        text.contains(&format!("instructions: {NO_PMU}")),
        "the summary says why:\n{text}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(lab.path("out.json")).unwrap()).unwrap();
    let c = &doc["results"][0]["counters"];
    assert!(c["page-faults"]["mean"].as_f64().unwrap() > 20000.0, "{c}");
    assert!(c.get("instructions").is_none(), "{c}");
}

#[test]
fn a_child_process_is_counted_with_its_parent() {
    let _one = serial();
    let lab = Lab::new();
    let Some(exe) = program(&lab) else { return };
    let exe = exe.to_str().unwrap();
    // sh runs the program as its child (twice): both children's faults are counted.
    let f = lab.write(
        "e.toml",
        &format!(
            r#"
[experiment]
repetitions = 3
noise_check = false
[matrix]
times = [1, 2]
[workload]
kind = "command"
shell = true
command = "for i in $(seq {{times}}); do {exe} 20000 1000; done"
counters = ["page-faults", "task-clock", "context-switches"]
"#
        ),
    );
    let out = lab.run(&["run", f.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let show: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let faults = |t: i64| {
        metric(&show, "times", &serde_json::json!(t), "counter.page-faults")["median"]
            .as_f64()
            .unwrap()
    };
    let (one, two) = (faults(1), faults(2));
    assert!(one > 20000.0, "the child's faults are in: {one}");
    assert!(
        two > 1.9 * one - 2000.0 && two > 40000.0,
        "two children fault twice as much: {one} vs {two}"
    );
}

/// `perflab run` names a counter it could not count, with the reason, once per run
/// (not once per trial), and stores no value for it.
#[test]
fn a_run_names_a_missing_counter_once_with_its_reason() {
    let _one = serial();
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        r#"
[experiment]
repetitions = 3
noise_check = false
[matrix]
v = ["a", "b"]
[workload]
kind = "command"
command = "true"
counters = ["instructions", "page-faults"]
"#,
    );
    let out = lab.run(&["run", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(trial_values(&lab, "counter.page-faults").len(), 6);
    // Whether this machine has a PMU is its property (see the test above).
    if has_hardware_pmu() {
        assert_eq!(trial_values(&lab, "counter.instructions").len(), 6);
        return;
    }
    let err = stderr(&out);
    let said = format!("counter instructions: {NO_PMU} (not stored)");
    assert_eq!(err.matches(&said).count(), 1, "{err}");
    assert!(trial_values(&lab, "counter.instructions").is_empty());
}

#[test]
fn an_unknown_counter_is_a_usage_error_that_lists_the_valid_ones() {
    let lab = Lab::new();
    let out = lab.run(&[
        "bench",
        "--counters",
        "task-clock,cycels",
        "-r",
        "1",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("\"cycels\""), "{err}");
    assert!(err.contains("cycles, instructions"), "{err}");
    assert!(err.contains("page-faults"), "{err}");

    let f = lab.write(
        "bad.toml",
        "[experiment]\n[workload]\nkind = \"command\"\ncommand = \"true\"\ncounters = [\"page-faults\", \"nope\"]\n",
    );
    let out = lab.run(&["run", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("bad.toml:5"), "the file and line: {err}");
    assert!(err.contains("unknown counter \"nope\""), "{err}");
}

#[test]
fn a_service_is_counted_per_request() {
    let _one = serial();
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        r#"
[experiment]
repetitions = 2
noise_check = false
[service]
command = "{perflab} serve --hello --port {port} --workers 1"
ready.http = "http://127.0.0.1:{port}/"
counters = ["task-clock", "context-switches", "instructions"]
[workload]
kind = "http"
urls = ["http://127.0.0.1:{port}/"]
connections = 2
threads = 1
duration = "400ms"
"#,
    );
    let out = lab.run(&["run", f.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let show: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = |name: &str| {
        show["configs"][0]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
    };
    let clock = m("service_task_clock_per_req").expect("task-clock per request");
    let cs = m("service_context_switches_per_req").expect("context switches per request");
    assert!(clock["mean"].as_f64().unwrap() > 0.0, "{clock}");
    assert!(cs["mean"].as_f64().unwrap() > 0.0, "{cs}");
    assert!(m("service.counter.task-clock").is_some());
    assert_eq!(
        m("service_instructions_per_req").is_some(),
        has_hardware_pmu(),
        "instructions are counted only with a PMU"
    );
}

#[test]
fn a_service_is_counted_per_trial_not_since_it_started() {
    let _one = serial();
    let lab = Lab::new();
    // A service that does a fixed piece of work (twenty `true`s, each a fork and an
    // exec) each time a trial asks through a FIFO, and nothing in between: three
    // trials must count the same; totals since the service started would make the
    // third three times the first.
    for fifo in ["p", "q"] {
        let st = std::process::Command::new("mkfifo")
            .arg(lab.path(fifo))
            .status()
            .expect("mkfifo");
        assert!(st.success());
    }
    let (p, q) = (lab.path("p"), lab.path("q"));
    let (p, q) = (p.display(), q.display());
    let f = lab.write(
        "e.toml",
        &format!(
            r#"
[experiment]
repetitions = 3
noise_check = false
[service]
command = "while :; do read x < {p}; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do /bin/true; done; echo done > {q}; done"
shell = true
counters = ["page-faults", "task-clock"]
[workload]
kind = "command"
shell = true
command = "echo go > {p}; read x < {q}"
"#
        ),
    );
    let out = lab.run(&["run", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let per_trial = trial_values(&lab, "service.counter.page-faults");
    assert_eq!(per_trial.len(), 3, "{per_trial:?}");
    let (lo, hi) = per_trial
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    assert!(lo > 200.0, "the service's children fault: {per_trial:?}");
    assert!(hi < 1.3 * lo, "each trial counts its own: {per_trial:?}");
}

#[test]
fn a_scimark_trial_counts_its_kernel_program() {
    let _one = serial();
    if require::program("cc").is_none() {
        return;
    }
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        "[experiment]\nrepetitions = 2\nwarmup = 0\nnoise_check = false\n[workload]\nkind = \"scimark\"\nlang = \"c\"\nmin_time = 0.02\nkernels = [\"mc\"]\ncounters = [\"task-clock\", \"page-faults\", \"cycles\"]\n",
    );
    let out = lab
        .cmd()
        .env("PERFLAB_CACHE", lab.path("cache"))
        .args(["run", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let clock = trial_values(&lab, "counter.task-clock");
    assert_eq!(clock.len(), 2, "{clock:?}");
    // The program's own CPU time of its kernels is part of what the tree counted.
    let kernel = trial_values(&lab, "kernel_cpu_s");
    for (ms, k) in clock.iter().zip(&kernel) {
        assert!(
            *ms >= 0.9 * k * 1000.0 && *ms > 0.0,
            "{clock:?} vs {kernel:?}"
        );
    }
    assert_eq!(trial_values(&lab, "counter.page-faults").len(), 2);
    assert_eq!(
        trial_values(&lab, "counter.cycles").len(),
        if has_hardware_pmu() { 2 } else { 0 }
    );

    let bad = lab.write(
        "bad.toml",
        "[experiment]\n[workload]\nkind = \"scimark\"\nlang = \"c\"\ncounters = [\"instructions\", \"cache-miss\"]\n",
    );
    let out = lab.run(&["run", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown counter \"cache-miss\": expected one of cycles"),
        "{}",
        stderr(&out)
    );
}
