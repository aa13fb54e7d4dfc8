//! `[workload] agents = [...]`: an experiment's http load driven from several
//! inventory hosts — split, started at one barrier, merged — with the server under
//! test on a third (`[service] host`). Hosts are network namespaces on one bridge,
//! each with its own sshd (common/netns.rs), removed when a test ends, also when it
//! fails. Skipped, with the reason, where namespaces or sshd are not available.

mod common;
use common::*;

use std::time::Duration;

use common::netns::Hosts;

/// `perflab serve` on srv, loaded from the agents; `{extra}` ends the workload table.
fn experiment(agents: &str, extra: &str) -> String {
    format!(
        r#"
[experiment]
name = "spread"
repetitions = 2
warmup = 0
noise_check = false

[service]
host = "srv"
command = "{{perflab}} serve --hello --access-log --bind {{service_host}} --port {{port}} --workers 1"
ready.http = "http://{{service_host}}:{{port}}/"

[workload]
kind = "http"
urls = ["http://{{service_host}}:{{port}}/"]
connections = 4
threads = 1
requests = 800
agents = {agents}
{extra}
"#
    )
}

fn agents_of(t: &perflab_store::ExportedTrial) -> serde_json::Value {
    let a = t.artifacts.iter().find(|a| a.name == "agents.json");
    serde_json::from_slice(&a.unwrap_or_else(|| panic!("no agents.json: {t:?}")).content).unwrap()
}

#[test]
fn an_experiment_drives_its_load_from_two_agents_and_reports_each() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::bridged(lab.dir.path(), 3) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory_as(&["a", "b", "srv"], ""));
    let exp = lab.write(
        "exp.toml",
        &experiment(r#"["a", "b"]"#, "agent_weights = [1, 3]"),
    );
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(180))
        .args(["run", exp.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let export = lab.open_store().export_run(1).unwrap();
    assert_eq!(export.trials.len(), 2);
    for t in &export.trials {
        assert_eq!(t.status, "ok", "{t:?}");
        let requests = t.metrics.iter().find(|m| m.name == "requests").unwrap();
        assert_eq!(requests.value, 800.0);
        // The whole merged latency histogram is kept, as for a one-host trial.
        assert!(!t.histograms.is_empty());
        let doc = agents_of(t);
        let agents = doc["agents"].as_array().unwrap();
        let names: Vec<&str> = agents.iter().map(|a| a["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["a", "b"]);
        // Split 1:3, adding up to the total.
        let n: Vec<u64> = agents
            .iter()
            .map(|a| a["requests"].as_u64().unwrap())
            .collect();
        assert_eq!(n, [200, 600], "{doc}");
        assert!(doc["start_skew_ms"].as_f64().is_some(), "{doc}");
    }
    // The server saw requests from both agents' addresses.
    let log = export
        .trials
        .iter()
        .flat_map(|t| &t.artifacts)
        .find(|a| a.name == "service.log")
        .map(|a| String::from_utf8_lossy(&a.content).into_owned())
        .unwrap();
    for addr in &hosts.addrs[..2] {
        assert!(log.contains(addr.as_str()), "no request from {addr}");
    }
    // The reports show each agent.
    let html = lab.run(&["report", "1", "--html", "r.html"]);
    assert!(html.status.success(), "{}", stderr(&html));
    let html = std::fs::read_to_string(lab.path("r.html")).unwrap();
    assert!(html.contains("<h2>Agents</h2>"), "no Agents section");
    assert!(html.contains("<td>b</td><td>600</td>"), "b's row");
    assert!(html.contains("Start skew at the barrier"));
    let md = lab.run(&["report", "1", "--markdown", "r.md"]);
    assert!(md.status.success(), "{}", stderr(&md));
    let md = std::fs::read_to_string(lab.path("r.md")).unwrap();
    assert!(
        md.contains("## Agents") && md.contains("| a | 200 |"),
        "{md}"
    );
}

#[test]
fn a_lost_agent_fails_its_trials_with_the_reason_and_keeps_the_others_figures() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::bridged(lab.dir.path(), 2) else {
        return;
    };
    // 10.231.99.2: no route from here, ssh to "gone" fails at once.
    let gone = format!(
        "[[hosts]]\nname = \"gone\"\naddress = \"10.231.99.2\"\nidentity = \"{}/id\"\n",
        lab.dir.path().display()
    );
    lab.write("hosts.toml", &hosts.inventory_as(&["a", "srv"], &gone));
    let exp = lab.write("exp.toml", &experiment(r#"["a", "gone"]"#, ""));
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(180))
        .args(["run", exp.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let export = lab.open_store().export_run(1).unwrap();
    for t in &export.trials {
        assert_eq!(t.status, "failed", "{t:?}");
        let e = t.error.as_deref().unwrap();
        assert!(e.contains("agent gone lost"), "{e}");
        // What a measured is kept.
        let doc = agents_of(t);
        let a = &doc["agents"][0];
        assert_eq!(a["name"], "a");
        assert!(a["requests"].as_u64().unwrap() > 0, "{doc}");
        assert!(doc["agents"][1]["lost"].is_string(), "{doc}");
    }
}

#[test]
fn bad_agents_are_refused_before_anything_runs() {
    let lab = Lab::new();
    lab.write(
        "hosts.toml",
        "[[hosts]]\nname = \"a\"\naddress = \"10.231.99.2\"\n\n[[hosts]]\nname = \"srv\"\naddress = \"10.231.99.3\"\n",
    );
    let cases = [
        (
            experiment(r#"["a", "nope"]"#, ""),
            "\"nope\" is not in the inventory",
        ),
        (
            experiment(r#"["a"]"#, "agent_weights = [1, 2]"),
            "`agent_weights` has 2 weights for 1 agents",
        ),
        (
            experiment(r#"["a", "a"]"#, ""),
            "`agents`: a is named twice",
        ),
        (
            experiment(r#"["a"]"#, "").replace("[experiment]\n", "[experiment]\non = [\"a\"]\n"),
            "[workload] agents and `on` both say where the load runs",
        ),
    ];
    for (text, want) in cases {
        let exp = lab.write("bad.toml", &text);
        let out = lab.run(&["run", exp.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{want}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{want}: {}", stderr(&out));
    }
    assert!(!exists(&lab.store()) || ok_trials(&lab) == 0);
}

/// docs/fleet.md's worked example: nginx on one host, the load from two, and the
/// report of the run. (`--nocapture` prints what the doc quotes.)
#[test]
fn nginx_on_one_host_loaded_from_two() {
    let lab = Lab::new();
    if require::program("nginx").is_none() {
        return;
    }
    let Some(hosts) = Hosts::bridged(lab.dir.path(), 3) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory_as(&["a", "b", "srv"], ""));
    let exp = lab.write(
        "nginx-from-two.toml",
        r#"
[experiment]
name = "nginx-from-two"
repetitions = 3
warmup = 0
noise_check = false

[matrix]
workers = [1, 2]

[service]
host = "srv"
command = "nginx -c {run_dir}/nginx.conf -g 'daemon off;'"
files."nginx.conf" = """
user root;
worker_processes {workers};
pid {run_dir}/nginx.pid;
error_log {run_dir}/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    server {
        listen {service_host}:{port};
        location / { return 200 "hello\n"; }
    }
}
"""
ready.http = "http://{service_host}:{port}/"

[workload]
kind = "http"
urls = ["http://{service_host}:{port}/"]
agents = ["a", "b"]
connections = 8
threads = 1
duration = "2s"
"#,
    );
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(240))
        .args(["run", exp.to_str().unwrap()])
        .output()
        .unwrap();
    println!("{}", stdout(&out));
    assert!(out.status.success(), "{}", stderr(&out));
    let export = lab.open_store().export_run(1).unwrap();
    assert_eq!(export.trials.len(), 6);
    for t in &export.trials {
        assert_eq!(t.status, "ok", "{t:?}");
        let doc = agents_of(t);
        let sum: u64 = doc["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["requests"].as_u64().unwrap())
            .sum();
        let requests = t.metrics.iter().find(|m| m.name == "requests").unwrap();
        assert_eq!(requests.value, sum as f64, "{doc}");
        assert!(sum > 0);
    }
    let md = lab.run(&["report", "1", "--markdown", "report.md"]);
    assert!(md.status.success(), "{}", stderr(&md));
    println!(
        "{}",
        std::fs::read_to_string(lab.path("report.md")).unwrap()
    );
}
