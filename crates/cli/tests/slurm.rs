//! `perflab http URL --engine slurm`: distributed load through `srun` on a real two-node
//! Slurm cluster built on this machine (munged, slurmctld, two slurmd:
//! common/slurm.rs), against a server here on 127.0.0.1. Checks that the agents'
//! requests add up, that what the cluster cannot give fails in bounded time naming the
//! cause, that Ctrl-C stops every task (exit 130, no `perflab worker` left, the
//! cluster fine), and the usage errors. Skipped, with the reason, where Slurm or munge
//! is not installed or the test is not root (CI installs them: scripts/test.sh).

mod common;
use common::*;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::slurm::Cluster;

/// `perflab http --engine slurm ARGS` against the cluster, bounded.
fn srun_http(lab: &Lab, cluster: &Cluster, args: &[&str]) -> std::process::Output {
    lab.cmd()
        .env("SLURM_CONF", cluster.conf())
        .timeout(Duration::from_secs(60))
        .args(["http", "--engine", "slurm"])
        .args(args)
        .output()
        .unwrap()
}

/// The `perflab worker` processes of the cluster still alive.
fn workers(cluster: &Cluster) -> Vec<(i32, String)> {
    cluster
        .leftovers()
        .into_iter()
        .filter(|(_, cmd)| cmd.ends_with("perflab worker") && !cmd.contains("srun"))
        .collect()
}

#[test]
fn two_nodes_share_the_load_and_their_requests_add_up() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let lab = Lab::new();
    let server = HelloServer::start();
    let out = srun_http(
        &lab,
        &cluster,
        &[
            "--nodes",
            "2",
            "-n",
            "2000",
            "-c",
            "4",
            "--json",
            &server.url,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requests"], 2000, "{v}");
    let agents = v["agents"].as_array().unwrap();
    let names: Vec<&str> = agents.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["n1", "n2"], "{v}");
    let sum: u64 = agents.iter().map(|a| a["requests"].as_u64().unwrap()).sum();
    assert_eq!(sum, 2000);
    for a in agents {
        assert!(a["requests"].as_u64().unwrap() > 0, "{a}");
        assert_eq!(a["errors"], 0, "{a}");
        assert_eq!(a["connections"], 2, "{a}");
        assert!(a["histogram"].is_string(), "{a}");
    }
    assert!(v["start_skew_ms"].as_f64().unwrap() >= 0.0, "{v}");
    // Recorded like any distributed run, with the node names as its agents.
    let export = lab.open_store().export_run(1).unwrap();
    let requests = export.trials[0]
        .metrics
        .iter()
        .find(|m| m.name == "requests")
        .unwrap();
    assert_eq!(requests.value, 2000.0);
    // The text report has the Agents table, a row per node.
    let out = srun_http(&lab, &cluster, &["--nodes", "2", "-n", "400", &server.url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Agents:"), "{text}");
    for n in ["n1", "n2"] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(n)),
            "{text}"
        );
    }
    assert!(workers(&cluster).is_empty(), "{:?}", workers(&cluster));
}

#[test]
fn what_the_cluster_cannot_give_fails_in_bounded_time_naming_the_cause() {
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    let lab = Lab::new();
    let server = HelloServer::start();
    let t = Instant::now();
    let out = srun_http(
        &lab,
        &cluster,
        &["--partition", "nope", "-n", "100", &server.url],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("srun --nodes=2 --partition=nope failed"),
        "{err}"
    );
    assert!(err.contains("Invalid partition name"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    // Three nodes of two: srun gives up after --immediate (10 s), with its words.
    let t = Instant::now();
    let out = srun_http(&lab, &cluster, &["--nodes", "3", "-n", "300", &server.url]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("srun --nodes=3 failed"), "{err}");
    assert!(err.contains("Unable to allocate resources"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(25), "{:?}", t.elapsed());
    // Nothing left running, no job left queued, the cluster fine.
    assert!(cluster.leftovers().is_empty(), "{:?}", cluster.leftovers());
    assert!(
        wait_until(Duration::from_secs(10), || cluster.jobs().trim().is_empty()),
        "{}",
        cluster.jobs()
    );
    assert!(cluster.healthy());
}

#[test]
fn ctrl_c_stops_every_task_and_leaves_no_worker() {
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    let lab = Lab::new();
    let server = HelloServer::start();
    let mut child = lab
        .process()
        .env("SLURM_CONF", cluster.conf())
        .args(["http", "--engine", "slurm", "--nodes", "2", "--json"])
        .args(["-d", "30s", "-c", "2", &server.url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (rx, mut said) = until_stderr_says(&mut child, "agents: go", Duration::from_secs(30));
    // Both tasks run their load (their workers are alive and connected to the
    // server) before Ctrl-C; on a busy machine a worker that has only just
    // connected may not have a response yet, so give the load a second to flow.
    assert!(
        wait_until(Duration::from_secs(10), || workers(&cluster).len() == 2),
        "{:?}",
        workers(&cluster)
    );
    let port = server.url.rsplit(':').next().unwrap().trim_end_matches('/');
    let port: u16 = port.parse().unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || established_to(port) >= 2),
        "the workers never connected to port {port}"
    );
    std::thread::sleep(Duration::from_secs(1));
    let t = Instant::now();
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let ended = wait_until(Duration::from_secs(15), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !ended {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    while let Ok(l) = rx.try_recv() {
        said.push_str(&(l + "\n"));
    }
    assert!(ended, "still running 15 s after Ctrl-C: {said}");
    // Far below the 30 s of load, with room for a loaded machine.
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(out.status.code(), Some(130), "{said}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["interrupted"], true, "{v}");
    let agents = v["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2, "{v}");
    for a in agents {
        assert!(a["requests"].as_u64().unwrap() > 0, "{a}");
    }
    // No task survives, the job is gone, the daemons are fine.
    assert!(
        wait_until(Duration::from_secs(10), || cluster.leftovers().is_empty()),
        "{:?}",
        cluster.leftovers()
    );
    assert!(
        wait_until(Duration::from_secs(10), || cluster.jobs().trim().is_empty()),
        "{}",
        cluster.jobs()
    );
    assert!(cluster.healthy(), "{}", cluster.log("slurmctld.log"));
}

/// Task `id`'s `perflab worker` (by the SLURM_PROCID in its environment).
fn worker_of_task(cluster: &Cluster, id: usize) -> Option<i32> {
    let want = format!("SLURM_PROCID={id}").into_bytes();
    workers(cluster)
        .into_iter()
        .map(|(pid, _)| pid)
        .find(|pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            env.split(|b| *b == 0).any(|v| v == want.as_slice())
        })
}

#[test]
fn a_task_killed_mid_run_fails_only_its_segment() {
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    let lab = Lab::new();
    let server = HelloServer::start();
    let mut child = lab
        .process()
        .env("SLURM_CONF", cluster.conf())
        .args(["http", "--engine", "slurm", "--nodes", "2", "--json"])
        .args(["-d", "4s", "-c", "2", &server.url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let (rx, mut err) = until_stderr_says(&mut child, "agents: go", Duration::from_secs(30));
    // Task 1 (on n2) dies once both run: srun says so, and n2 alone is lost.
    assert!(
        wait_until(Duration::from_secs(20), || workers(&cluster).len() == 2),
        "{:?}",
        workers(&cluster)
    );
    let pid = worker_of_task(&cluster, 1).expect("task 1's worker");
    // SAFETY: a process of this test's cluster.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let ended = wait_until(Duration::from_secs(30), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !ended {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    while let Ok(l) = rx.recv_timeout(Duration::from_secs(2)) {
        err.push_str(&(l + "\n"));
    }
    assert!(ended, "still running 30 s after the kill: {err}");
    assert!(started.elapsed() < Duration::from_secs(40));
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("agent n2 lost"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let agents = v["agents"].as_array().unwrap();
    assert!(agents[1]["lost"].is_string(), "{v}");
    let n1 = agents[0]["requests"].as_u64().unwrap();
    assert!(n1 > 0, "{v}");
    assert_eq!(v["requests"], n1, "the merged total is n1's alone");
    assert!(
        wait_until(Duration::from_secs(10), || cluster.leftovers().is_empty()),
        "{:?}",
        cluster.leftovers()
    );
    assert!(cluster.healthy());
}

#[test]
fn slurm_flags_without_the_slurm_engine_and_agents_with_it_are_usage_errors() {
    let lab = Lab::new();
    let url = "http://127.0.0.1:9/";
    let out = lab.run(&["http", "--engine", "slurm", "--agents", "x", url]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--engine slurm") && err.contains("--agents"),
        "{err}"
    );
    for (flag, value) in [("--nodes", "2"), ("--partition", "p"), ("--perflab", "/x")] {
        let out = lab.run(&["http", flag, value, url]);
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(flag) && err.contains("--engine slurm"),
            "{err}"
        );
    }
    let help = stdout(&lab.run(&["http", "--help"]));
    for flag in ["--engine", "--nodes", "--partition", "--perflab"] {
        assert!(help.contains(flag), "{flag} in {help}");
    }
}
