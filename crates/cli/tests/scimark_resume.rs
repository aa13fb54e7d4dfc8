//! `perflab scimark` runs its timed rounds through the lab runner: Ctrl-C (SIGINT to
//! the process group, as a terminal sends it) keeps the rounds that finished and exits
//! 130; `--resume` then runs only the missing rounds under the same run id, and the
//! tables cover every round.

mod common;
use common::*;

use std::os::unix::process::CommandExt;
use std::time::Duration;

#[test]
fn ctrl_c_keeps_finished_rounds_and_resume_completes_the_run() {
    let lab = Lab::new();
    let bin = assert_cmd::cargo::cargo_bin("perflab");
    let mut cmd = std::process::Command::new(bin);
    cmd.current_dir(lab.dir.path())
        .env("PERFLAB_STORE", lab.store())
        .env("PERFLAB_CACHE", lab.path("cache"))
        .args([
            "scimark",
            "--lang",
            "c",
            "--repeat",
            "6",
            "--min-time",
            "300ms",
            "--kernels",
            "mc",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    let child = cmd.spawn().unwrap();
    let pgid = child.id() as i32;
    assert!(
        wait_until(Duration::from_secs(120), || ok_trials(&lab) >= 2),
        "rounds never finished"
    );
    // SAFETY: signalling the process group we created.
    unsafe { libc::kill(-pgid, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("perflab scimark --resume"),
        "{}",
        stderr(&out)
    );
    let store = lab.open_store();
    let run = store.latest_run().unwrap();
    assert_eq!(
        (run.kind.as_str(), run.status.as_str()),
        ("scimark", "interrupted")
    );
    let kept = run.trials_ok;
    assert!((2..6).contains(&kept), "kept {kept} rounds");
    drop(store);

    let out = lab
        .cmd()
        .env("PERFLAB_CACHE", lab.path("cache"))
        .args(["scimark", "--resume", &run.id.to_string(), "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["run_id"].as_i64(), Some(run.id), "the same run");
    let c = &doc["languages"][0];
    assert_eq!(c["lang"], "c");
    assert_eq!(
        c["kernels"]["mc"]["n"], 6,
        "every round, old and new: {doc}"
    );
    assert_eq!(c["kernels"]["mc"]["checksum"], 3.139796);
    let store = lab.open_store();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1, "resume must not create a new run");
    assert_eq!(
        (runs[0].status.as_str(), runs[0].trials_ok),
        ("complete", 6)
    );

    // Resuming something that is not a scimark run is a usage error.
    let out = lab.run(&["scimark", "--resume", "99"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn min_time_takes_the_duration_grammar() {
    let lab = Lab::new();
    let out = lab.run(&["scimark", "--min-time", "fast"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--min-time"), "{}", stderr(&out));
    assert!(stderr(&out).contains("500ms"), "{}", stderr(&out));
}
