//! Ctrl-C, as a terminal sends it (SIGINT to the whole process group), in the middle
//! of a run: no finished trial is lost, the run is `interrupted`, exit 130; then
//! `--resume` completes the run under the same id.

mod common;
use common::*;

use std::os::unix::process::CommandExt;
use std::time::Duration;

const SLOW: &str = r#"
[experiment]
name = "slow"
repetitions = 5
warmup = 0
[matrix]
x = [1, 2]
[service]
command = "sh -c 'echo up; exec sleep 60'"
ready.log = "up"
[workload]
kind = "command"
command = "sh -c 'sleep 0.25; echo v={x}'"
metrics.v = { regex = 'v=(\d+)' }
"#;

#[test]
fn ctrl_c_keeps_finished_trials_exits_130_and_resume_completes_the_run() {
    let lab = Lab::new();
    let file = lab.write("e.toml", SLOW);
    let bin = assert_cmd::cargo::cargo_bin("perflab");
    let mut cmd = std::process::Command::new(bin);
    cmd.current_dir(lab.dir.path())
        .env("PERFLAB_STORE", lab.store())
        .args(["run", file.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    let child = cmd.spawn().unwrap();
    let pgid = child.id() as i32;
    assert!(
        wait_until(Duration::from_secs(60), || ok_trials(&lab) >= 3),
        "trials never finished"
    );
    // SAFETY: signalling the process group we created.
    unsafe { libc::kill(-pgid, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("--resume"), "{}", stderr(&out));

    let store = lab.open_store();
    let run = store.latest_run().unwrap();
    assert_eq!(run.status, "interrupted");
    let kept = run.trials_ok;
    assert!((3..10).contains(&kept), "kept {kept} trials");
    // No service left behind.
    drop(store);

    let out = lab.run(&["run", "--resume", &run.id.to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let store = lab.open_store();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1, "resume must not create a new run");
    let r = &runs[0];
    assert_eq!(
        (r.id, r.status.as_str(), r.trials_ok),
        (run.id, "complete", 10)
    );
    assert_eq!(
        store
            .trials(r.id)
            .unwrap()
            .iter()
            .filter(|t| t.status == "ok")
            .count(),
        10
    );
}

#[test]
fn resume_of_a_complete_run_runs_nothing_and_of_an_unknown_run_is_an_error() {
    let lab = Lab::new();
    let file = lab.write(
        "e.toml",
        "[experiment]\nrepetitions = 2\nwarmup = 0\n[workload]\nkind = \"command\"\ncommand = \"true\"\n",
    );
    assert!(lab.run(&["run", file.to_str().unwrap()]).status.success());
    let out = lab.run(&["run", "--resume", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(lab.open_store().trials(1).unwrap().len(), 2);
    let out = lab.run(&["run", "--resume", "99"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no run with id 99"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn resume_refuses_a_run_from_another_host() {
    let lab = Lab::new();
    let store = lab.open_store();
    let other = perflab_store::HostInfo {
        hostname: "some-other-machine".into(),
        cores: Some(64),
        ..Default::default()
    };
    let host = store.upsert_host(&other).unwrap();
    let run = store
        .create_run(
            &perflab_store::NewRun {
                name: "elsewhere".into(),
                kind: "experiment".into(),
                file_path: Some("e.toml".into()),
                file_text: Some(
                    "[experiment]\n[workload]\nkind = \"command\"\ncommand = \"true\"\n".into(),
                ),
                seed: Some(1),
                ..Default::default()
            },
            host,
        )
        .unwrap();
    store
        .finish_run(run, perflab_store::RunStatus::Interrupted)
        .unwrap();
    drop(store);
    let out = lab.run(&["run", "--resume", &run.to_string()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("some-other-machine"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        lab.open_store().trials(run).unwrap().len(),
        0,
        "nothing ran"
    );
}
