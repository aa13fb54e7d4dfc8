//! `[profile] host = "b"`: the profiler (perf, crates/profile, as for a local profile)
//! runs on host b in the run's session with b — the session that runs the service
//! there — started before each trial's workload and stopped after it, on the service's
//! process as b sees it; the profile comes back over the session and is stored with the
//! trial as a local one is, `profile.json` naming the host and the pid. The hosts are
//! network namespaces on one bridge, each with its own sshd (common/netns.rs). Skipped,
//! with the reason, where namespaces or sshd are not available, or perf cannot record.

mod common;
use common::*;

use std::process::Stdio;
use std::time::Duration;

use common::netns::Hosts;

/// `perflab serve` on b, profiled on b, loaded from a with `{workload}` (the rest of
/// the workload table, after its `host`).
fn experiment(workload: &str) -> String {
    format!(
        r#"
[experiment]
name = "profile-on-b"
repetitions = 1
warmup = 0
noise_check = false

[service]
host = "b"
command = "{{perflab}} serve --hello --bind {{service_host}} --port {{port}} --workers 1"
ready.http = "http://{{service_host}}:{{port}}/"

[profile]
host = "b"
target = "service"
frequency = 999
top = 10

[workload]
{workload}
"#
    )
}

fn artifact<'a>(t: &'a perflab_store::ExportedTrial, name: &str) -> &'a [u8] {
    &t.artifacts
        .iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| {
            let names: Vec<&str> = t.artifacts.iter().map(|a| a.name.as_str()).collect();
            panic!("no {name} among {names:?}")
        })
        .content
}

#[test]
fn a_profile_on_b_is_of_the_service_there() {
    if !require::perf_records() {
        return;
    }
    let lab = Lab::new();
    let Some(hosts) = Hosts::bridged(lab.dir.path(), 2) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory_as(&["a", "b"], ""));
    let exp = lab.write(
        "exp.toml",
        &experiment(
            "kind = \"http\"\nhost = \"a\"\nurls = [\"http://{service_host}:{port}/\"]\nconnections = 2\nthreads = 1\nduration = \"5s\"\n",
        ),
    );
    let out = lab.run(&["run", exp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("profile"),
        "no profile warning: {}",
        stderr(&out)
    );
    let export = lab.open_store().export_run(1).unwrap();
    let t = &export.trials[0];
    assert_eq!(t.status, "ok", "{t:?}");
    // Stored as a local profile is: report, folded stacks, flame graph, fn: metrics.
    let report: serde_json::Value = serde_json::from_slice(artifact(t, "profile.json")).unwrap();
    let stacks = String::from_utf8(artifact(t, "stacks.folded").to_vec()).unwrap();
    let svg = String::from_utf8(artifact(t, "flamegraph.svg").to_vec()).unwrap();
    assert!(svg.contains("<svg"), "{}", &svg[..svg.len().min(200)]);
    assert!(t.metrics.iter().any(|m| m.name.starts_with("fn:")), "{t:?}");
    assert!(t.metrics.iter().any(|m| m.name == "profile.kernel_pct"));
    // Taken on b, of the service's process there (the pid service.json records).
    let svc: serde_json::Value = serde_json::from_slice(artifact(t, "service.json")).unwrap();
    assert_eq!(report["host"], "b", "{report}");
    assert_eq!(report["pid"], svc["pid"], "{report}");
    assert!(report["samples"].as_u64().unwrap() > 0, "{report}");
    // The serving code is in it, and nothing else: the load engine that ran on a (the
    // same binary, another machine) and the controller are not.
    assert!(stacks.contains("perflab_serve::"), "{stacks}");
    assert!(!stacks.contains("perflab_load::"), "{stacks}");
    // Every stack's root is one of the service's threads (`perflab-serve-0` serves).
    let comms: std::collections::BTreeSet<&str> =
        stacks.lines().filter_map(|l| l.split(';').next()).collect();
    assert!(
        comms.contains("perflab-serve-0") && comms.iter().all(|c| c.starts_with("perflab")),
        "{comms:?}"
    );
    // show and report read it.
    let show = lab.run(&["show", "1"]);
    assert!(show.status.success(), "{}", stderr(&show));
    let html = lab.path("r.html");
    let rep = lab.run(&["report", "1", "--html", html.to_str().unwrap()]);
    assert!(rep.status.success(), "{}", stderr(&rep));
    let html = std::fs::read_to_string(html).unwrap();
    assert!(
        html.contains("<h2>Profile</h2>") && html.contains("alt=\"flame graph\""),
        "no profile section in the report"
    );
    assert!(
        stdout(&show).contains("profile.kernel_pct"),
        "{}",
        stdout(&show)
    );
    // Nothing perflab started is left in b.
    let clean = wait_until(Duration::from_secs(10), || {
        let p = hosts.processes(1);
        !p.contains("perflab") && !p.contains("perf ")
    });
    assert!(clean, "left in b: {}", hosts.processes(1));
}

#[test]
fn without_perf_on_b_the_trial_runs_and_the_lost_profile_names_b() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::bridged(lab.dir.path(), 2) else {
        return;
    };
    // b's perflab finds no perf ($PERFLAB_PERF names a file that is not there).
    let wrapper = lab.write(
        "perflab-without-perf",
        &format!(
            "#!/bin/sh\nPERFLAB_PERF=/nonexistent/perf exec {} \"$@\"\n",
            assert_cmd::cargo::cargo_bin("perflab").display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    lab.write(
        "hosts.toml",
        &hosts.inventory_as(
            &["a", "b"],
            &format!("perflab = \"{}\"\n", wrapper.display()),
        ),
    );
    let exp = lab.write(
        "exp.toml",
        &experiment(
            "kind = \"http\"\nhost = \"a\"\nurls = [\"http://{service_host}:{port}/\"]\nconnections = 2\nthreads = 1\nrequests = 300\n",
        ),
    );
    let out = lab.run(&["run", exp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("profile not started for trial 1 on host b:") && e.contains("perf"),
        "{e}"
    );
    let export = lab.open_store().export_run(1).unwrap();
    let t = &export.trials[0];
    assert_eq!(t.status, "ok", "{t:?}");
    assert!(t.artifacts.iter().all(|a| a.name != "profile.json"));
    // The session went on: the service was stopped in order, its log came back.
    assert!(t.artifacts.iter().any(|a| a.name == "service.log"), "{t:?}");
}

#[test]
fn ctrl_c_while_b_profiles_leaves_no_perf_nor_perflab_there() {
    if !require::perf_records() {
        return;
    }
    let lab = Lab::new();
    let Some(hosts) = Hosts::bridged(lab.dir.path(), 2) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory_as(&["a", "b"], ""));
    // A command workload (it stops at once when interrupted), long enough to be caught.
    let exp = lab.write(
        "exp.toml",
        &experiment("kind = \"command\"\nhost = \"a\"\ncommand = \"sleep 60\"\n"),
    );
    let mut child = lab
        .process()
        .args(["-q", "run", exp.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let running = wait_until(Duration::from_secs(40), || {
        let b = hosts.processes(1);
        b.contains(" serve ")
            && b.contains("perf record")
            && hosts.processes(0).contains("sleep 60")
    });
    if !running {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "perf never recorded in b with the load in a: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // SAFETY: signalling the perflab this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let done = wait_until(Duration::from_secs(30), || {
        child.try_wait().ok().flatten().is_some()
    });
    if !done {
        let _ = child.kill();
        panic!("perflab did not stop within 30 s of Ctrl-C");
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let clean = wait_until(Duration::from_secs(20), || {
        let b = hosts.processes(1);
        !b.contains("perflab") && !b.contains("perf ")
    });
    assert!(clean, "left in b: {}", hosts.processes(1));
}

#[test]
fn a_profile_host_that_is_not_in_the_inventory_is_named_with_its_place() {
    let lab = Lab::new();
    lab.write(
        "hosts.toml",
        "[[hosts]]\nname = \"a\"\n\n[[hosts]]\nname = \"b\"\n",
    );
    let text = experiment(
        "kind = \"http\"\nhost = \"a\"\nurls = [\"http://{service_host}:{port}/\"]\nrequests = 10\n",
    )
    .replace(
        "[profile]\nhost = \"b\"\ntarget = \"service\"",
        "[profile]\nhost = \"zz\"\ntarget = \"system\"",
    );
    let exp = lab.write("exp.toml", &text);
    let out = lab.run(&["run", exp.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    // The value's line and column in the file.
    let line = text.lines().position(|l| l == "host = \"zz\"").unwrap() + 1;
    assert!(
        e.contains(&format!("exp.toml:{line}:8: [profile] host = \"zz\""))
            && e.contains("\"zz\" is not in the inventory (hosts: a, b)"),
        "{e}"
    );
    assert!(!exists(&lab.store()) || ok_trials(&lab) == 0);
}
