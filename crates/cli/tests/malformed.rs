//! Malformed experiment files: each gives a clear error with file, line and column,
//! exits 2, and runs nothing (the workload would create a marker file; the store is
//! not even created). Shell variables and awk programs pass through untouched.

mod common;
use common::*;

/// (name, file text, expected "line:col", words the message must contain). Every
/// experiment-file error is tested where it is read, by `Experiment::parse` alone
/// (crates/lab/tests/experiment_file.rs); these few check what the binary adds: exit 2,
/// the error on stderr, nothing run and no store created.
const CASES: &[(&str, &str, &str, &[&str])] = &[
    (
        "unknown key",
        "[experiment]\nrepetition = 5\n[workload]\nkind = \"command\"\ncommand = \"touch MARK\"\n",
        "2:1",
        &["unknown field", "repetition"],
    ),
    (
        "unknown placeholder",
        "[experiment]\n[matrix]\nlevel = [1, 2]\n[workload]\nkind = \"command\"\ncommand = \"touch MARK -{levle}\"\n",
        "6:24",
        &["unknown placeholder {levle}", "level"],
    ),
    (
        "bad duration",
        "[experiment]\ntimeout = \"fast\"\n[workload]\nkind = \"command\"\ncommand = \"touch MARK\"\n",
        "2:11",
        &["bad duration", "30s"],
    ),
];

#[test]
fn malformed_files_are_located_and_run_nothing() {
    for (name, text, at, words) in CASES {
        let lab = Lab::new();
        let file = lab.write("bad.toml", text);
        let out = lab.run(&["run", file.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{name}: exit code; stderr: {err}"
        );
        let located = format!("bad.toml:{at}");
        assert!(
            err.contains(&located),
            "{name}: expected {located} in: {err}"
        );
        for w in *words {
            assert!(err.contains(w), "{name}: expected {w:?} in: {err}");
        }
        assert!(err.starts_with("error: "), "{name}: {err}");
        assert!(!lab.path("MARK").exists(), "{name}: something ran");
        assert!(!lab.store().exists(), "{name}: the store was touched");
    }
}

#[test]
fn shell_variables_and_awk_programs_pass_through_untouched() {
    let lab = Lab::new();
    let file = lab.write(
        "e.toml",
        r#"
[experiment]
repetitions = 1
warmup = 0
[matrix]
n = [3]
[workload]
kind = "command"
shell = true
command = "echo {n} ${HOME} {{literal}} | awk '{print $1, NF}'; echo home=${HOME}"
metrics.first = { regex = '^(\d+) ', unit = "" }
metrics.fields = { regex = '^\d+ (\d+)', unit = "" }
"#,
    );
    let out = lab
        .cmd()
        .env("HOME", "/some/home")
        .args(["run", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let store = lab.open_store();
    let run = store.latest_run().unwrap();
    let trial = &store.trials(run.id).unwrap()[0];
    let arts = store.trial_artifacts(trial.id).unwrap();
    let stdout = arts.iter().find(|a| a.0 == "stdout").unwrap();
    let text = String::from_utf8_lossy(&stdout.2);
    // awk saw 3 fields: "3", "/some/home", "{literal}".
    assert_eq!(text, "3 3\nhome=/some/home\n");
}

#[test]
fn dry_run_prints_the_plan_and_runs_nothing() {
    let lab = Lab::new();
    let file = lab.write(
        "e.toml",
        "[experiment]\nrepetitions = 3\n[matrix]\na = { from = 1, to = 3 }\nb = { values = [\"x\", \"y\"] }\n[workload]\nkind = \"command\"\ncommand = \"touch MARK\"\n",
    );
    let out = lab.run(&["run", file.to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        text.contains("6 config(s) × 3 repetition(s) = 18 trials"),
        "{text}"
    );
    assert!(text.contains("a=3,b=y"), "{text}");
    assert!(!lab.path("MARK").exists());
}
