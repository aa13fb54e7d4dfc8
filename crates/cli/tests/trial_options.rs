//! Per-trial options: CPU pinning, prepare/cleanup hooks, setup/teardown, timeouts.

mod common;
use common::*;

#[test]
fn the_workload_is_pinned_to_the_listed_cpus() {
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        "[experiment]\nrepetitions = 1\nwarmup = 0\nnoise_check = false\ncpus = \"0\"\n[workload]\nkind = \"command\"\ncommand = \"grep Cpus_allowed_list /proc/self/status\"\n",
    );
    let out = lab.run(&["run", f.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let store = lab.open_store();
    let t = &store.trials(1).unwrap()[0];
    let arts = store.trial_artifacts(t.id).unwrap();
    let text =
        String::from_utf8_lossy(&arts.iter().find(|a| a.0 == "stdout").unwrap().2).into_owned();
    assert!(
        text.trim_end().ends_with(":\t0"),
        "not pinned to CPU 0: {text:?}"
    );
}

#[test]
fn prepare_and_cleanup_run_around_every_trial_setup_and_teardown_once() {
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        r#"
[experiment]
repetitions = 3
warmup = 1
noise_check = false
setup = "echo setup >> {run_dir}/../../hooks.log"
prepare = "echo prepare {x} {repetition} >> {run_dir}/../../hooks.log; echo ready > {run_dir}/flag"
cleanup = "rm {run_dir}/flag; echo cleanup >> {run_dir}/../../hooks.log"
teardown = "echo teardown >> {run_dir}/../../hooks.log"
[matrix]
x = ["a", "b"]
[workload]
kind = "command"
command = "cat {run_dir}/flag"
"#,
    );
    let store_dir = lab.path("s");
    let out = lab
        .cmd()
        .env("PERFLAB_STORE", store_dir.join("results.db"))
        .args(["run", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = std::fs::read_to_string(store_dir.join("hooks.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.first(), Some(&"setup"));
    assert_eq!(lines.last(), Some(&"teardown"));
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("prepare")).count(),
        8,
        "{log}"
    );
    assert_eq!(
        lines.iter().filter(|l| **l == "cleanup").count(),
        8,
        "{log}"
    );
    assert!(lines.contains(&"prepare b 3"), "{log}");
}

#[test]
fn a_trial_over_its_timeout_fails_and_the_run_goes_on() {
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        "[experiment]\nrepetitions = 1\nwarmup = 0\nnoise_check = false\ntimeout = \"2s\"\n[matrix]\nt = [0.01, 60]\n[workload]\nkind = \"command\"\ncommand = \"sleep {t}\"\n",
    );
    let start = std::time::Instant::now();
    let out = lab.run(&["run", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    // The 2 s timeout kills the 60 s sleeper (room for a loaded machine; the 10 ms
    // sleeper stays far below the timeout however busy the machine is).
    assert!(
        start.elapsed().as_secs_f64() < 30.0,
        "the sleeper was not killed"
    );
    let store = lab.open_store();
    // Rounds are shuffled from the run's seed: order the trials by config (t = 0.01 first).
    let mut trials = store.trials(1).unwrap();
    trials.sort_by_key(|t| t.config_id);
    assert_eq!(trials[0].status, "ok");
    assert_eq!(trials[1].status, "failed");
    assert!(trials[1].error.as_deref().unwrap().contains("timed out"));
}

#[test]
fn a_failing_prepare_fails_the_trial_with_its_output() {
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        "[experiment]\nrepetitions = 1\nwarmup = 0\nnoise_check = false\nprepare = \"echo cannot prepare >&2; exit 7\"\n[workload]\nkind = \"command\"\ncommand = \"true\"\n",
    );
    let out = lab.run(&["run", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let e = lab.open_store().trials(1).unwrap()[0]
        .error
        .clone()
        .unwrap();
    assert!(
        e.contains("prepare failed") && e.contains("exit status 7") && e.contains("cannot prepare"),
        "{e}"
    );
}

#[test]
fn help_documents_exit_codes_and_examples() {
    let lab = Lab::new();
    let out = stdout(&lab.run(&["--help"]));
    assert!(
        out.contains("130") && out.contains("a gate failed"),
        "{out}"
    );
    let out = stdout(&lab.run(&["run", "--help"]));
    assert!(
        out.contains("Examples:") && out.contains("--resume"),
        "{out}"
    );
    let out = lab.run(&["completions", "bash"]);
    assert!(stdout(&out).contains("perflab"));
}
