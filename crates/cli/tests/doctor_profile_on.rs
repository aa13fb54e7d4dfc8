//! `perflab doctor --on b` and `perflab profile -a -d 2s --on b`: each is a one-trial
//! run whose trial runs on the inventory host through `perflab worker` — the path of
//! every remote trial, which tags what comes back with a `host.json` (the relay that
//! `doctor --on` used before did not) — and is stored here with the parameter
//! host = b. The hosts are network namespaces with their own sshd (common/netns.rs),
//! skipped with the reason where they cannot be made; the profile also needs a perf
//! that can record.

mod common;
use common::*;

use common::netns::Hosts;
use serde_json::Value;

/// Run `id`'s one config's parameters and its one trial, exported.
fn one_trial(lab: &Lab, id: i64) -> (Value, perflab_store::ExportedTrial) {
    let e = lab.open_store().export_run(id).unwrap();
    assert_eq!(e.configs.len(), 1, "one config");
    assert_eq!(e.trials.len(), 1, "one trial");
    (
        serde_json::to_value(&e.configs[0].params).unwrap(),
        e.trials.into_iter().next().unwrap(),
    )
}

fn names(t: &perflab_store::ExportedTrial) -> Vec<&str> {
    t.artifacts.iter().map(|a| a.name.as_str()).collect()
}

#[test]
fn doctor_on_b_stores_a_run_whose_trial_ran_on_b_through_the_worker() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::new(lab.dir.path(), 2) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory_as(&["a", "b"], ""));
    let out = lab.run(&["doctor", "--on", "b", "--watch", "0", "--json"]);
    assert!(
        matches!(out.status.code(), Some(0 | 4 | 5)),
        "{}",
        stderr(&out)
    );
    let printed: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&out), stderr(&out)));
    assert_eq!(printed["host"], "b", "{printed}");
    let run = lab.open_store().run(1).unwrap();
    assert_eq!(run.kind, "doctor");
    let (params, t) = one_trial(&lab, 1);
    assert_eq!(params["host"], "b", "{params}");
    assert_eq!(params["watch"], "0", "{params}");
    assert_eq!(t.status, "ok", "{t:?}");
    assert!(names(&t).contains(&"host.json"), "{:?}", names(&t));
    let doc = t
        .artifacts
        .iter()
        .find(|a| a.name == "doctor.json")
        .unwrap();
    let doc: Value = serde_json::from_slice(&doc.content).unwrap();
    assert_eq!(doc, printed, "the stored diagnosis is the printed one");
    drop(hosts);
}

#[test]
fn profile_on_b_stores_a_run_whose_trial_ran_on_b_through_the_worker() {
    if !require::perf_records() {
        return;
    }
    let lab = Lab::new();
    let Some(hosts) = Hosts::new(lab.dir.path(), 2) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory_as(&["a", "b"], ""));
    let out = lab.run(&[
        "profile", "-a", "-d", "2s", "-F", "99", "--json", "--on", "b",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&out), stderr(&out)));
    assert_eq!(r["run_id"], 1, "{r}");
    assert!(r["event"].is_string(), "{r}");
    let run = lab.open_store().run(1).unwrap();
    assert_eq!(run.kind, "profile");
    let (params, t) = one_trial(&lab, 1);
    assert_eq!(params["host"], "b", "{params}");
    assert_eq!(params["target"], "system", "{params}");
    assert_eq!(t.status, "ok", "{t:?}");
    assert_eq!(
        names(&t),
        [
            "profile.json",
            "stacks.folded",
            "flamegraph.svg",
            "host.json"
        ]
    );
    // `perflab profile report RUN` finds the recording b made (one file system here).
    let again = lab.run(&["profile", "report", "1", "--json"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));

    // The per-routine view needs the recording, which stays on the host.
    let out = lab.run(&[
        "profile",
        "-a",
        "-d",
        "1s",
        "--on",
        "b",
        "--routine",
        "main",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("stays on b"), "{}", stderr(&out));
    drop(hosts);
}

/// Ctrl-C while b's doctor watches: 130 here, soon, and nothing perflab started is
/// left in b (its worker hung up with the trial).
#[test]
fn ctrl_c_ends_doctor_on_b_with_130_and_leaves_nothing_there() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::new(lab.dir.path(), 2) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory_as(&["a", "b"], ""));
    let mut child = lab
        .process()
        .args(["doctor", "--on", "b", "--watch", "60s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let working = wait_until(std::time::Duration::from_secs(40), || {
        hosts.processes(1).contains(" worker")
    });
    if !working {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "no worker in b: {}{}",
            hosts.processes(1),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let sent = std::time::Instant::now();
    // SAFETY: signalling the perflab this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let done = wait_until(std::time::Duration::from_secs(15), || {
        child.try_wait().ok().flatten().is_some()
    });
    if !done {
        let _ = child.kill();
        panic!("perflab did not stop within 15 s of Ctrl-C");
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        sent.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        sent.elapsed()
    );
    let clean = wait_until(std::time::Duration::from_secs(5), || {
        !hosts.processes(1).contains("perflab")
    });
    assert!(clean, "left in b: {}", hosts.processes(1));
    drop(hosts);
}
