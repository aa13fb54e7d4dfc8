//! A command experiment end to end: plan, trials in the store, summary with CIs, and
//! `show --json` giving the same numbers after the process has ended.

mod common;
use common::*;
use serde_json::json;

const TWO_BY_FIVE: &str = r#"
[experiment]
name = "two-by-five"
repetitions = 5
warmup = 1

[matrix]
x = [1, 2]

[workload]
kind = "command"
command = "sh -c 'echo value=$(( {x} * 10 + {repetition} )) home=${HOME}'"
metrics.value = { regex = 'value=(\d+)', unit = "pts", better = "higher" }
"#;

#[test]
fn two_configs_by_five_repetitions_store_ten_trials_and_show_the_same_numbers() {
    let lab = Lab::new();
    let file = lab.write("e.toml", TWO_BY_FIVE);
    let out = lab.run(&["run", file.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let store = lab.open_store();
    let run = store.latest_run().unwrap();
    assert_eq!(run.status, "complete");
    assert_eq!(run.trials_ok, 10);
    assert_eq!(
        store.trials(run.id).unwrap().len(),
        10,
        "warm-ups are not recorded"
    );

    // The same numbers from the store, in a new process.
    let shown = lab.json(&["show", &run.id.to_string(), "--json"]);
    assert_eq!(printed["configs"], shown["configs"]);
    assert_eq!(shown["schema_version"], 1);

    // x=1: values 11..15 → mean 13, sd √2.5, t(0.975, 4) = 2.7764451051977987 (scipy).
    let m = metric(&shown, "x", &json!(1), "value");
    assert_eq!(m["n"], 5);
    assert_eq!(m["mean"], 13.0);
    let half = 2.7764451051977987 * 2.5f64.sqrt() / 5f64.sqrt();
    let lo = m["ci_low"].as_f64().unwrap();
    assert!((lo - (13.0 - half)).abs() < 1e-9, "ci_low {lo}");
    assert_eq!(m["median"], 13.0);
    assert_eq!(m["unit"], "pts");
    assert_eq!(m["better"], "higher");
    for key in [
        "sd",
        "ci_high",
        "median_ci_low",
        "median_ci_high",
        "min",
        "max",
        "cv",
        "outliers",
    ] {
        assert!(!m[key].is_null(), "{key} missing in {m}");
    }
    let m2 = metric(&shown, "x", &json!(2), "value");
    assert_eq!(m2["mean"], 23.0);
    // Whole-tree metrics are always there.
    for name in ["wall_s", "user_s", "sys_s", "peak_rss_bytes"] {
        metric(&shown, "x", &json!(1), name);
    }
}

#[test]
fn the_table_prints_means_with_intervals_and_runs_lists_the_run() {
    let lab = Lab::new();
    let file = lab.write("e.toml", TWO_BY_FIVE);
    let out = lab.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("mean ± 95% CI"), "{text}");
    assert!(text.contains("13.00 ± 1.96 pts"), "{text}");
    assert!(text.contains("x=2"), "{text}");

    let runs = lab.json(&["runs", "--json"]);
    let r = &runs[0];
    for key in [
        "id",
        "name",
        "status",
        "started_at",
        "host",
        "trials_ok",
        "trials_failed",
    ] {
        assert!(!r[key].is_null(), "{key} missing in {r}");
    }
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["name"], "two-by-five");
    assert_eq!(r["trials_ok"], 10);
}

#[test]
fn interleaved_order_alternates_configs_in_the_store() {
    let lab = Lab::new();
    let file = lab.write("e.toml", TWO_BY_FIVE);
    assert!(lab.run(&["run", file.to_str().unwrap()]).status.success());
    let store = lab.open_store();
    let run = store.latest_run().unwrap();
    let configs = store.configs(run.id).unwrap();
    let order: Vec<u32> = store
        .trials(run.id)
        .unwrap()
        .iter()
        .map(|t| {
            configs
                .iter()
                .find(|c| c.id == t.config_id)
                .unwrap()
                .ordinal
        })
        .collect();
    // Rounds: each holds both configs once, in the order the run's seed gave it.
    for round in order.chunks(2) {
        let mut r = round.to_vec();
        r.sort();
        assert_eq!(r, [0, 1], "{order:?}");
    }
}

#[test]
fn a_failing_trial_is_recorded_and_the_run_exits_4() {
    let lab = Lab::new();
    let file = lab.write(
        "e.toml",
        r#"
[experiment]
repetitions = 2
warmup = 0
[matrix]
code = [0, 3]
[workload]
kind = "command"
command = "sh -c 'echo about to exit {code} >&2; exit {code}'"
"#,
    );
    let out = lab.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let store = lab.open_store();
    let run = store.latest_run().unwrap();
    assert_eq!(run.status, "complete_with_failures");
    assert_eq!((run.trials_ok, run.trials_failed), (2, 2));
    let failed: Vec<_> = store
        .trials(run.id)
        .unwrap()
        .into_iter()
        .filter(|t| t.status == "failed")
        .collect();
    let err = failed[0].error.as_deref().unwrap();
    assert!(
        err.contains("exit status 3") && err.contains("about to exit 3"),
        "{err}"
    );
}

#[test]
fn show_without_runs_says_how_to_start() {
    let lab = Lab::new();
    let out = lab.run(&["show"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("perflab run"), "{}", stderr(&out));
}

#[test]
fn auto_repetitions_add_rounds_until_precise_or_the_maximum() {
    let lab = Lab::new();
    // Noise-free metric: precise at the minimum.
    let steady = lab.write(
        "steady.toml",
        "[experiment]\nrepetitions = \"auto\"\nmin_repetitions = 3\nmax_repetitions = 8\ntarget_precision = \"1%\"\nwarmup = 0\nnoise_check = false\n[matrix]\nx = [1, 2]\n[workload]\nkind = \"command\"\ncommand = \"echo v=100\"\nmetrics.v = { regex = 'v=(\\d+)' }\n",
    );
    let out = lab.run(&["run", steady.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("precision target met"),
        "{}",
        stderr(&out)
    );
    assert_eq!(lab.open_store().latest_run().unwrap().trials_ok, 6);

    // Alternating 50/150: never within 1 %: stops at the maximum and says so.
    let noisy = lab.write(
        "noisy.toml",
        "[experiment]\nrepetitions = \"auto\"\nmin_repetitions = 3\nmax_repetitions = 5\ntarget_precision = 0.01\nwarmup = 0\nnoise_check = false\n[workload]\nkind = \"command\"\ncommand = \"sh -c 'echo v=$(( {repetition} % 2 * 100 + 50 ))'\"\nmetrics.v = { regex = 'v=(\\d+)' }\n",
    );
    let out = lab.run(&["run", noisy.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("max_repetitions (5) reached") && err.contains("v of -"),
        "{err}"
    );
    let store = lab.open_store();
    let run = store.latest_run().unwrap();
    assert_eq!(run.trials_ok, 5);
    let reps: Vec<u32> = store
        .trials(run.id)
        .unwrap()
        .iter()
        .map(|t| t.repetition)
        .collect();
    assert_eq!(reps, vec![1, 2, 3, 4, 5]);
}

#[test]
fn auto_repetitions_reject_sequential_order_and_bad_targets() {
    let lab = Lab::new();
    for (text, words) in [
        (
            "[experiment]\nrepetitions = \"auto\"\norder = \"sequential\"\n",
            "cannot be combined",
        ),
        (
            "[experiment]\nrepetitions = \"auto\"\ntarget_precision = \"two\"\n",
            "target_precision",
        ),
        ("[experiment]\nrepetitions = \"many\"\n", "\"auto\""),
        (
            "[experiment]\nprimary = [\"nope\"]\n",
            "primary metric \"nope\"",
        ),
    ] {
        let f = lab.write(
            "bad.toml",
            &format!("{text}[workload]\nkind = \"command\"\ncommand = \"true\"\n"),
        );
        let out = lab.run(&["run", f.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(stderr(&out).contains(words), "{text}: {}", stderr(&out));
    }
}

#[test]
fn the_noise_check_warns_above_its_threshold_and_stores_the_cv() {
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        "[experiment]\nrepetitions = 1\nwarmup = 0\n[workload]\nkind = \"command\"\ncommand = \"true\"\n",
    );
    // A threshold of 0 makes any machine "noisy": the warning path runs.
    let out = lab
        .cmd()
        .env("PERFLAB_NOISE_THRESHOLD", "0")
        .args(["run", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("this machine is noisy right now"),
        "{}",
        stderr(&out)
    );
    let env = lab.open_store().run_environment(1).unwrap();
    assert!(env["noise_cv"].as_f64().unwrap() >= 0.0, "{env}");
    // Off when the file says so.
    let f = lab.write(
        "quiet.toml",
        "[experiment]\nrepetitions = 1\nwarmup = 0\nnoise_check = false\n[workload]\nkind = \"command\"\ncommand = \"true\"\n",
    );
    let out = lab
        .cmd()
        .env("PERFLAB_NOISE_THRESHOLD", "0")
        .args(["run", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!stderr(&out).contains("noisy"), "{}", stderr(&out));
}
