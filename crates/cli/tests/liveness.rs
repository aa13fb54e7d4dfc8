//! Runs that never lie about their state: a `perflab run` killed with SIGKILL reads
//! `abandoned` at once and leaves no service behind, and `--resume` finishes it; a
//! resume of a run that is still alive is refused naming its pid; an interrupted
//! `perflab http` is stored `interrupted` with its real start and duration, and one
//! whose threshold failed `gate_failed`.

mod common;
use common::*;

use std::time::{Duration, SystemTime};

/// One config, a service that starts the real server *under* a shell (its pid and the
/// shell's written to service.pid), trials that take a while.
const WITH_SERVICE: &str = r#"
[experiment]
repetitions = 4
warmup = 0
[service]
shell = true
command = """
{perflab} serve --hello --port {port} --workers 1 &
echo $$ $! > {run_dir}/service.pid
wait
"""
ready.tcp = "127.0.0.1:{port}"
[workload]
kind = "command"
command = "sleep 0.4"
"#;

/// Whether process `pid` is gone (or a zombie: dead, not yet reaped by whoever
/// inherited it).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let after = &stat[stat.rfind(')').unwrap() + 1..];
            matches!(after.split_whitespace().next(), Some("Z" | "X"))
        }
    }
}

/// The pids in the run's service.pid (the shell, the server under it).
fn service_pids(lab: &Lab, run: i64) -> Vec<u32> {
    let p = lab.path(&format!("runs/{run}/service.pid"));
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// Service processes the test saw, killed by pid when the test ends (a failed
/// assertion included) if they are still there.
struct Reap(Vec<u32>);

impl Drop for Reap {
    fn drop(&mut self) {
        for &p in self.0.iter().filter(|&&p| !gone(p)) {
            // SAFETY: a pid this test's service wrote down, checked alive just now.
            unsafe { libc::kill(p as i32, libc::SIGKILL) };
        }
    }
}

fn status_of(lab: &Lab, run: i64) -> serde_json::Value {
    let runs = lab.json(&["runs", "--json"]);
    runs.as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == run)
        .cloned()
        .unwrap_or_else(|| panic!("no run {run} in {runs}"))
}

#[test]
fn a_sigkilled_run_reads_abandoned_leaves_no_service_and_resume_finishes_it() {
    let lab = Lab::new();
    let file = lab.write("e.toml", WITH_SERVICE);
    // The run's scratch directory (and service.pid) is beside the store, in the lab.
    let store = lab.store();
    let mut child = lab
        .process()
        .args(["run", "-q", file.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let owner = child.id();
    let started = wait_until(Duration::from_secs(60), || {
        ok_trials(&lab) >= 1 && service_pids(&lab, 1).len() == 2
    });
    if !started {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the run never recorded a trial with its service up");
    }
    let pids = service_pids(&lab, 1);
    let _reap = Reap(pids.clone());
    assert!(pids.iter().all(|&p| !gone(p)), "the service runs: {pids:?}");
    child.kill().unwrap(); // SIGKILL: perflab gets no word in.
    child.wait().unwrap(); // as a shell would reap it
    let lab_env = |args: &[&str]| lab.run(args);
    let runs = lab_env(&["runs", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    let run = &runs[0];
    assert_eq!(run["status"], "abandoned", "{run}");
    assert_eq!(run["owner"]["pid"], owner, "{run}");
    let hint = run["hint"].as_str().unwrap();
    assert!(hint.contains("perflab run --resume 1"), "{hint}");
    let text = lab_env(&["runs"]);
    assert!(stdout(&text).contains("abandoned"), "{}", stdout(&text));
    assert!(stderr(&text).contains("--resume 1"), "{}", stderr(&text));
    // The service, shell and server under it, is gone (the watchdog's doing).
    assert!(
        wait_until(Duration::from_secs(10), || pids.iter().all(|&p| gone(p))),
        "service processes left behind: {pids:?}"
    );
    let out = lab_env(&["run", "-q", "--resume", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = perflab_store::Store::open(&store).unwrap();
    let row = s.run(1).unwrap();
    assert_eq!((row.status.as_str(), row.trials_ok), ("complete", 4));
    // The resumed run's own service was stopped as usual.
    let again = service_pids(&lab, 1);
    let _reap_again = Reap(again.clone());
    assert!(
        wait_until(Duration::from_secs(10), || again.iter().all(|&p| gone(p))),
        "{again:?}"
    );
}

#[test]
fn resume_of_a_live_run_is_refused_naming_its_pid() {
    let lab = Lab::new();
    let file = lab.write(
        "e.toml",
        "[experiment]\nrepetitions = 20\nwarmup = 0\n[workload]\nkind = \"command\"\ncommand = \"sleep 0.5\"\n",
    );
    let child = lab
        .process()
        .args(["run", "-q", file.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    let pid = child.0.id();
    assert!(
        wait_until(Duration::from_secs(60), || ok_trials(&lab) >= 1),
        "the run never started"
    );
    let out = lab.run(&["run", "--resume", "1"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("run 1 is running (pid {pid}")),
        "{err}"
    );
    assert_eq!(status_of(&lab, 1)["status"], "running");
    assert_eq!(
        child.0.try_wait().unwrap(),
        None,
        "the owner runs on untouched"
    );
    // Once the owner is gone, the same resume takes the run over.
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    assert_eq!(status_of(&lab, 1)["status"], "abandoned");
}

fn secs_between(a: &str, b: &str) -> f64 {
    let a = humantime::parse_rfc3339(a).unwrap();
    let b = humantime::parse_rfc3339(b).unwrap();
    b.duration_since(a).unwrap().as_secs_f64()
}

#[test]
fn an_interrupted_http_run_is_stored_interrupted_with_its_real_start_and_duration() {
    let lab = Lab::new();
    let server = HelloServer::start();
    let before = SystemTime::now();
    let child = lab
        .process()
        .args(["http", &server.url, "-c", "1", "-d", "60s", "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    // The heartbeat moving past the start says the run has been at work for a while.
    let beat = wait_until(Duration::from_secs(30), || {
        let Ok(s) = perflab_store::Store::open(lab.store()) else {
            return false;
        };
        s.latest_run().is_ok_and(|r| {
            r.heartbeat_at
                .is_some_and(|h| secs_between(&r.started_at, &h) >= 1.5)
        })
    });
    assert!(beat, "no heartbeat came");
    // SAFETY: signalling the test's own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    let code = child.0.wait().unwrap().code();
    assert_eq!(code, Some(130));
    let s = lab.open_store();
    let run = s.latest_run().unwrap();
    assert_eq!(run.status, "interrupted");
    let trial = &s.trials(run.id).unwrap()[0];
    assert_eq!(trial.status, "interrupted");
    let start = humantime::parse_rfc3339(&run.started_at).unwrap();
    assert!(
        start >= before - Duration::from_secs(1),
        "{}",
        run.started_at
    );
    let span = secs_between(&run.started_at, run.ended_at.as_deref().unwrap());
    assert!(
        span >= 1.5,
        "started_at {} ended_at {:?}",
        run.started_at,
        run.ended_at
    );
    assert!(trial.duration_s >= 1.4, "{}", trial.duration_s);
    assert!(
        (span - trial.duration_s).abs() < 1.0,
        "{span} vs {}",
        trial.duration_s
    );
}

#[test]
fn an_http_run_whose_threshold_failed_is_stored_gate_failed() {
    let lab = Lab::new();
    let server = HelloServer::start();
    let out = lab.run(&[
        "http",
        &server.url,
        "-c",
        "1",
        "-d",
        "1s",
        "--threshold",
        "rps>100000000",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let run = status_of(&lab, 1);
    assert_eq!(run["status"], "gate_failed", "{run}");
    assert_eq!(run["hint"], serde_json::Value::Null);
}
