//! `perflab http URL --on b` and `perflab disk PATH --on b`: a single-shot command is
//! a one-trial run, and with `--on` that trial runs on the inventory host through the
//! worker `perflab run --on` uses — the run is stored here, its trial with the
//! parameter host = b. The hosts are network namespaces with their own sshd
//! (common/netns.rs), skipped with the reason where they cannot be made. The usage
//! errors (an unknown host, `--on` with `--agents`) need no host.

mod common;
use common::*;

use common::netns::Hosts;

/// The one config's parameters and the one trial's status of run 1.
fn one_trial(lab: &Lab) -> (serde_json::Value, String) {
    let store = lab.open_store();
    let configs = store.configs(1).unwrap();
    assert_eq!(configs.len(), 1, "one config");
    let trials = store.trials(1).unwrap();
    assert_eq!(trials.len(), 1, "one trial");
    (
        serde_json::to_value(&configs[0].params).unwrap(),
        trials[0].status.clone(),
    )
}

#[test]
fn http_on_b_loads_a_server_only_b_can_reach_and_stores_a_trial_on_b() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::new(lab.dir.path(), 2) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory_as(&["a", "b"], ""));
    // Listening on b's loopback: reachable from b, not from here.
    let server = hosts.in_netns(1, HelloServer::start);
    let url = server.url.clone();
    let out = lab.run(&[
        "http", &url, "-d", "300ms", "-c", "2", "-t", "1", "--json", "--on", "b",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["requests"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["errors"]["total"], 0, "{report}");
    assert!(
        stderr(&out).contains("recorded as run 1"),
        "{}",
        stderr(&out)
    );
    let (params, status) = one_trial(&lab);
    assert_eq!(params["host"], "b", "{params}");
    assert_eq!(params["urls"][0], url.as_str(), "{params}");
    assert_eq!(status, "ok");
    let runs = lab.json(&["runs", "--json"]);
    assert_eq!(runs[0]["kind"], "http");
    let show = lab.json(&["show", "1", "--json"]);
    let metrics = show["configs"][0]["metrics"].as_array().unwrap();
    assert!(metrics.iter().any(|m| m["name"] == "rps"), "{show}");

    // Here the same URL reaches nothing: the load above ran on b. (No connection at all
    // now exits 1 before the load, naming the cause.)
    let here = lab.run(&["http", &url, "-d", "300ms", "-c", "1", "-t", "1", "--json"]);
    assert_eq!(here.status.code(), Some(1), "{}", stderr(&here));
    assert!(
        stderr(&here).contains("connection refused"),
        "{}",
        stderr(&here)
    );
    drop(server);
}

#[test]
fn disk_on_b_stores_a_trial_on_b_with_the_report_of_b() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::new(lab.dir.path(), 2) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory_as(&["a", "b"], ""));
    let dir = lab.path("data");
    std::fs::create_dir(&dir).unwrap();
    let out = lab.run(&[
        "disk",
        dir.to_str().unwrap(),
        "--bs",
        "64k",
        "--size",
        "1M",
        "--json",
        "--on",
        "b",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["mode"], "write");
    assert_eq!(v["bytes"], 1 << 20);
    assert!(stderr(&out).contains("run 1 recorded"), "{}", stderr(&out));
    let (params, status) = one_trial(&lab);
    assert_eq!(params["host"], "b", "{params}");
    assert_eq!(params["bs"], 65536, "{params}");
    assert_eq!(status, "ok");
    assert_eq!(lab.json(&["runs", "--json"])[0]["kind"], "disk");
    assert!(
        std::fs::read_dir(&dir).unwrap().next().is_none(),
        "the file made on b was removed"
    );
    drop(hosts);
}

#[test]
fn on_an_unknown_host_exits_2_naming_it_before_anything_is_stored() {
    let lab = Lab::new();
    lab.write(
        "hosts.toml",
        "[[hosts]]\nname = \"a\"\naddress = \"10.0.0.1\"\n",
    );
    let d = lab.dir.path().to_str().unwrap().to_string();
    for args in [
        vec!["disk", &d, "--count", "1", "--on", "nope"],
        vec!["http", "http://127.0.0.1:1/", "-d", "1s", "--on", "nope"],
    ] {
        let out = lab.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("\"nope\" is not in the inventory"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert!(!exists(&lab.store()), "nothing ran, nothing stored");
}

#[test]
fn on_with_agents_is_a_usage_error() {
    let lab = Lab::new();
    let out = lab.run(&[
        "http",
        "http://127.0.0.1:1/",
        "-d",
        "1s",
        "--on",
        "b",
        "--agents",
        "a",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--on") && stderr(&out).contains("--agents"),
        "{}",
        stderr(&out)
    );
    let out = lab.run(&[
        "disk",
        lab.dir.path().to_str().unwrap(),
        "--hosts",
        "x.toml",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--on HOST"), "{}", stderr(&out));
    assert!(!exists(&lab.store()), "nothing ran, nothing stored");
}
