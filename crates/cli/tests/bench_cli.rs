//! `perflab bench`: hyperfine's interface on perflab's statistics, run by the lab's
//! runner and stored as a run. Each test uses its own store and short commands.

mod common;
use common::*;

use std::os::unix::process::CommandExt;
use std::time::Duration;

use serde_json::Value;

/// Benches measure time: one at a time, so the tests of this file do not load the
/// machine under each other's measurements.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn read_json(lab: &Lab, name: &str) -> Value {
    let text = std::fs::read_to_string(lab.path(name)).expect("export written");
    serde_json::from_str(&text).expect("export is JSON")
}

#[test]
fn two_sleeps_give_means_with_cis_a_slower_verdict_and_hyperfine_json() {
    let _one = serial();
    let lab = Lab::new();
    let out = lab.run(&[
        "bench",
        "sleep 0.1",
        "sleep 0.5",
        "-r",
        "5",
        "--export-json",
        "out.json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for (i, cmd) in ["sleep 0.1", "sleep 0.5"].iter().enumerate() {
        let block = text
            .split(&format!("Benchmark {}: {cmd}\n", i + 1))
            .nth(1)
            .unwrap_or_else(|| panic!("no block for {cmd}: {text}"));
        let wall = block.lines().next().unwrap();
        assert!(
            wall.contains("(mean ± 95% CI)") && wall.contains(" ± ") && wall.contains("n = 5"),
            "{wall}"
        );
    }
    assert!(text.contains("slower"), "{text}");

    let doc = read_json(&lab, "out.json");
    let results = doc["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    for (r, cmd) in results.iter().zip(["sleep 0.1", "sleep 0.5"]) {
        assert_eq!(r["command"], cmd);
        assert_eq!(r["times"].as_array().unwrap().len(), 5, "{r}");
        assert_eq!(r["exit_codes"], serde_json::json!([0, 0, 0, 0, 0]));
        let mean = r["mean"].as_f64().unwrap();
        let times: Vec<f64> = r["times"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_f64().unwrap())
            .collect();
        assert!((mean - times.iter().sum::<f64>() / 5.0).abs() < 1e-9);
        for key in ["stddev", "median", "user", "system", "min", "max"] {
            assert!(r[key].is_number(), "{key} in {r}");
        }
    }
    let wall = doc["comparison"]
        .as_array()
        .expect("comparison")
        .iter()
        .find(|c| c["metric"] == "wall_s")
        .expect("a wall_s comparison");
    assert_eq!(
        (wall["baseline"].clone(), wall["candidate"].clone()),
        (0.into(), 1.into())
    );
    assert_eq!(wall["candidate_command"], "sleep 0.5");
    assert_eq!(wall["verdict"], "slower");
    let (lo, hi) = (
        wall["ratio_ci_low"].as_f64().unwrap(),
        wall["ratio_ci_high"].as_f64().unwrap(),
    );
    assert!(lo > 1.0, "ratio CI [{lo}, {hi}] must exclude 1");
    // The ratio is 5 on an idle machine; start-up time a loaded machine adds to both
    // commands pulls it towards 1, and jitter widens the interval, never past these.
    assert!(
        lo <= 5.1 && (lo..=10.0).contains(&hi),
        "ratio CI [{lo}, {hi}] should lie within (1, 10] and start at most at 5.1"
    );
    assert!(wall["p_welch"].as_f64().unwrap() < 0.05);

    // Stored as a run like any other.
    let store = lab.open_store();
    let run = store.latest_run().unwrap();
    assert_eq!((run.trials_ok, run.status.as_str()), (10, "complete"));
    assert_eq!(doc["run"], run.id);
}

#[test]
fn a_failing_command_exits_4_unless_failures_are_ignored() {
    let _one = serial();
    let lab = Lab::new();
    let out = lab.run(&["bench", "false", "-r", "2"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("no successful run"),
        "{}",
        stdout(&out)
    );

    let out = lab.run(&["bench", "-i", "false", "-r", "2", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["results"][0]["times"].as_array().unwrap().len(), 2);
    assert_eq!(
        doc["results"][0]["exit_codes"],
        serde_json::json!([null, null])
    );
}

#[test]
fn a_parameter_list_runs_each_value_as_a_matrix_parameter() {
    let _one = serial();
    let lab = Lab::new();
    let out = lab.run(&[
        "bench",
        "-L",
        "n",
        "1,2",
        "sleep 0.0{n}",
        "-r",
        "2",
        "--export-csv",
        "out.csv",
        "--export-json",
        "out.json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = read_json(&lab, "out.json");
    let got: Vec<(Value, Value, usize)> = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["command"].clone(),
                r["parameters"]["n"].clone(),
                r["times"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("sleep 0.01".into(), "1".into(), 2),
            ("sleep 0.02".into(), "2".into(), 2)
        ]
    );
    // The parameter is the run's matrix: `perflab compare RUN:n=1 RUN:n=2` works.
    let show = lab.json(&["show", "--json"]);
    let params: Vec<Value> = show["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["params"].clone())
        .collect();
    assert_eq!(
        params,
        vec![serde_json::json!({"n": "1"}), serde_json::json!({"n": "2"})]
    );
    let run = doc["run"].to_string();
    let cmp = lab.run(&["compare", &format!("{run}:n=1"), &format!("{run}:n=2")]);
    assert_eq!(cmp.status.code(), Some(0), "{}", stderr(&cmp));

    let csv = std::fs::read_to_string(lab.path("out.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].starts_with("command,mean,stddev,median,user,system,min,max,parameter_n"),
        "{csv}"
    );
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(
        lines[2].starts_with("sleep 0.02,") && lines[2].contains(",2,"),
        "{csv}"
    );
}

#[test]
fn a_parameter_scan_runs_every_step() {
    let _one = serial();
    let lab = Lab::new();
    let doc = lab.json(&[
        "bench",
        "-P",
        "n",
        "1",
        "3",
        "sleep 0.0{n}",
        "-r",
        "2",
        "--json",
    ]);
    let commands: Vec<&str> = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["command"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["sleep 0.01", "sleep 0.02", "sleep 0.03"]);
    assert_eq!(doc["results"][2]["parameters"]["n"], "3");
    // Two comparisons with the first, four metrics each.
    let cands: Vec<u64> = doc["comparison"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["metric"] == "wall_s")
        .map(|c| c["candidate"].as_u64().unwrap())
        .collect();
    assert_eq!(cands, [1, 2]);

    let doc = lab.json(&[
        "bench",
        "-P",
        "d",
        "0.01",
        "0.02",
        "-D",
        "0.005",
        "sleep {d}",
        "-r",
        "1",
        "--json",
    ]);
    let commands: Vec<&str> = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["command"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["sleep 0.010", "sleep 0.015", "sleep 0.020"]);
}

#[test]
fn shell_syntax_without_a_shell_is_refused_with_exit_2() {
    let _one = serial();
    let lab = Lab::new();
    for cmd in [
        "echo a | wc -l",
        "true && true",
        "echo a > out.txt",
        "true; true",
    ] {
        let out = lab.run(&["bench", cmd, "-r", "1"]);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", stderr(&out));
        assert!(stderr(&out).contains("use --shell sh"), "{}", stderr(&out));
    }
    assert!(!lab.path("out.txt").exists());
    assert!(
        !lab.store().exists() || lab.open_store().runs().unwrap().is_empty(),
        "nothing runs"
    );
    // Quoted, the same characters are plain arguments.
    let out = lab.run(&["bench", "echo 'a | b && c'", "-r", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn with_a_shell_shell_syntax_runs() {
    let _one = serial();
    let lab = Lab::new();
    let out = lab.run(&["bench", "--shell", "sh", "true && true", "-r", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Another shell's command line, with quotes inside the command.
    let ok = r#"test "$(echo 'a b')" = 'a b'"#;
    let out = lab.run(&["bench", "-S", "sh -e", ok, "-r", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let bad = r#"test "$(echo 'a b')" = 'a c'"#;
    let out = lab.run(&["bench", "-S", "sh -e", bad, "-r", "1"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
}

#[test]
fn markdown_and_csv_exports_are_written_and_the_reference_is_the_baseline() {
    let _one = serial();
    let lab = Lab::new();
    let out = lab.run(&[
        "bench",
        "--reference",
        "sleep 0.05",
        "-n",
        "nothing",
        "true",
        "-r",
        "3",
        "--export-markdown",
        "out.md",
        "--export-csv",
        "out.csv",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let md = std::fs::read_to_string(lab.path("out.md")).unwrap();
    let lines: Vec<&str> = md.lines().collect();
    assert_eq!(lines.len(), 4, "{md}");
    assert!(
        lines[0].starts_with("| Command | Mean ± 95% CI [ms]"),
        "{md}"
    );
    assert!(
        lines[2].starts_with("| `sleep 0.05` |") && lines[2].contains("baseline"),
        "{md}"
    );
    assert!(
        lines[3].starts_with("| `nothing` |") && lines[3].contains("faster"),
        "{md}"
    );
    let csv = std::fs::read_to_string(lab.path("out.csv")).unwrap();
    assert!(
        csv.starts_with("command,mean,stddev,median,user,system,min,max,n,"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(stdout(&out).contains("Compared with benchmark 1 (sleep 0.05)"));
}

#[test]
fn output_is_discarded_unless_asked_and_braces_pass_through() {
    let _one = serial();
    let lab = Lab::new();
    let out = lab.run(&["bench", "-n", "greet", "echo hello-bench", "-r", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stdout(&out).contains("hello-bench"), "{}", stdout(&out));

    let out = lab.run(&[
        "bench",
        "-n",
        "greet",
        "echo hello-bench",
        "-r",
        "2",
        "--show-output",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).matches("hello-bench\n").count(),
        2,
        "{}",
        stdout(&out)
    );

    // `{n}` is the parameter; awk's braces are left alone.
    let out = lab.run(&[
        "bench",
        "-L",
        "n",
        "41",
        "awk 'BEGIN{print {n}+1}'",
        "-r",
        "1",
        "--show-output",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("42\n"), "{}", stdout(&out));
}

#[test]
fn bad_arguments_exit_2() {
    let _one = serial();
    let lab = Lab::new();
    for args in [
        &["bench", "true", "-r", "0"][..],
        &["bench", "-L", "run_dir", "a,b", "echo {run_dir}"],
        &["bench", "-L", "n", "1,1", "echo {n}"],
        &["bench", "-P", "n", "3", "1", "echo {n}"],
        &["bench", "-n", "a", "-n", "b", "-n", "c", "true", "false"],
        &["bench", "echo 'unbalanced"],
    ] {
        let out = lab.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn ctrl_c_keeps_finished_runs_exits_130_and_the_run_resumes() {
    let _one = serial();
    let lab = Lab::new();
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"));
    cmd.current_dir(lab.dir.path())
        .env("PERFLAB_STORE", lab.store())
        .args(["bench", "sleep 0.2", "sleep 0.3", "-r", "6"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    let child = cmd.spawn().unwrap();
    let pgid = child.id() as i32;
    let ok = || {
        lab.store().exists()
            && perflab_store::Store::open(lab.store())
                .ok()
                .and_then(|s| s.latest_run().ok())
                .is_some_and(|r| r.trials_ok >= 2)
    };
    assert!(wait_until(Duration::from_secs(60), ok), "no run finished");
    // SAFETY: signalling the process group we created.
    unsafe { libc::kill(-pgid, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let run = lab.open_store().latest_run().unwrap();
    assert_eq!(run.status, "interrupted");
    assert!((2..12).contains(&run.trials_ok), "kept {}", run.trials_ok);
    assert!(
        stdout(&out).contains("Benchmark 1: sleep 0.2"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("perflab run --resume"),
        "{}",
        stderr(&out)
    );

    // A bench is an experiment run: `perflab run --resume` finishes it in place.
    let out = lab.run(&["run", "--resume", &run.id.to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let runs = lab.open_store().runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (runs[0].status.as_str(), runs[0].trials_ok),
        ("complete", 12)
    );
}

#[test]
fn setup_and_cleanup_run_once_and_prepare_before_every_run() {
    let _one = serial();
    let lab = Lab::new();
    let out = lab.run(&[
        "bench",
        "-s",
        "echo setup >> hooks.log",
        "-p",
        "echo prepare >> hooks.log",
        "-c",
        "echo cleanup >> hooks.log",
        "true",
        "sleep 0",
        "-r",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = std::fs::read_to_string(lab.path("hooks.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.first(), Some(&"setup"), "{log}");
    assert_eq!(lines.last(), Some(&"cleanup"), "{log}");
    assert_eq!(
        lines.iter().filter(|l| **l == "prepare").count(),
        4,
        "{log}"
    );
    assert_eq!(lines.len(), 6, "{log}");
}

#[test]
fn parameters_with_several_commands_expand_in_hyperfines_order() {
    let _one = serial();
    let lab = Lab::new();
    let doc = lab.json(&[
        "bench",
        "-L",
        "n",
        "1,2",
        "sleep 0.0{n}",
        "sleep 0.0{n}5",
        "-n",
        "a{n}",
        "-n",
        "b{n}",
        "-r",
        "1",
        "--json",
    ]);
    let got: Vec<(&str, &str, &str)> = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["command"].as_str().unwrap(),
                r["command_line"].as_str().unwrap(),
                r["parameters"]["n"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("a1", "sleep 0.01", "1"),
            ("b1", "sleep 0.015", "1"),
            ("a2", "sleep 0.02", "2"),
            ("b2", "sleep 0.025", "2")
        ]
    );
}
