//! `[profile]` on a `command` workload (issue 31, item 4): every trial finishes, in
//! bounded time, with a profile. The command's reaper once took perf for a leftover of
//! the measured tree — waited for it until the trial timed out, then reaped it, so the
//! profile was lost ("cannot wait for perf: No child processes").

mod common;
use common::*;

use std::time::Duration;

/// A shell loop of a few tenths of a second: a short program with its own samples.
const SPIN: &str = r#"sh -c 'i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done'"#;

/// Runs 3 repetitions of [`SPIN`] profiled with `target`, each trial bounded by 20 s
/// and the whole run by 90 s; returns the lab, the run's exit code and its stderr.
fn profiled_run(target: &str) -> (Lab, Option<i32>, String) {
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        &format!(
            r#"
[experiment]
name = "profiled-command"
repetitions = 3
warmup = 0
noise_check = false
timeout = "20s"
[profile]
target = "{target}"
repetitions = "all"
frequency = 499
[workload]
kind = "command"
command = "{}"
"#,
            SPIN.replace('\\', "\\\\").replace('"', "\\\"")
        ),
    );
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(90))
        .args(["run", f.to_str().unwrap()])
        .output()
        .expect("run perflab");
    (lab, out.status.code(), stderr(&out))
}

/// Every trial of run 1 is ok and stored a non-empty `stacks.folded`; returns them.
fn folded_of_every_trial(lab: &Lab, err: &str) -> Vec<String> {
    let store = lab.open_store();
    let trials = store.trials(1).unwrap();
    assert_eq!(trials.len(), 3, "{err}");
    trials
        .iter()
        .map(|t| {
            assert_eq!(t.status, "ok", "trial {}: {:?}\n{err}", t.ordinal, t.error);
            let arts = store.trial_artifacts(t.id).unwrap();
            let folded = arts
                .iter()
                .find(|a| a.0 == "stacks.folded")
                .unwrap_or_else(|| panic!("trial {} has no profile: {err}", t.ordinal));
            let text = String::from_utf8_lossy(&folded.2).into_owned();
            assert!(!text.trim().is_empty(), "trial {}: no samples", t.ordinal);
            text
        })
        .collect()
}

#[test]
fn a_command_profiled_system_wide_finishes_every_trial_with_its_profile() {
    if !require::perf_records() {
        return;
    }
    let (lab, code, err) = profiled_run("system");
    assert!(!err.contains("lost"), "{err}");
    assert_eq!(code, Some(0), "{err}");
    folded_of_every_trial(&lab, &err);
}

#[test]
fn a_command_profiled_as_the_workload_has_only_its_own_samples_in_every_trial() {
    if !require::perf_records() {
        return;
    }
    let (lab, code, err) = profiled_run("workload");
    assert!(
        !err.contains("lost") && !err.contains("not started"),
        "{err}"
    );
    assert_eq!(code, Some(0), "{err}");
    for folded in folded_of_every_trial(&lab, &err) {
        // Only the trial's own process tree (the shell), from its first instruction
        // (the dynamic loader) on; nothing else that ran on the machine meanwhile.
        for line in folded.lines() {
            assert!(
                line.starts_with("sh;"),
                "a sample of another process: {line}"
            );
        }
        let samples: u64 = folded
            .lines()
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
            .sum();
        assert!(samples >= 5, "too few samples ({samples}):\n{folded}");
    }
}
