//! `perflab http URL --agents h0,h1`: distributed load. Three hosts on one bridge
//! (network namespaces, each with its own sshd: common/netns.rs): the server under
//! test in the third, the agents in the first two, the controller here. Checks that
//! the split adds up, that the merged percentiles are those of the agents' histograms
//! added, and that an agent whose link goes down mid-run fails only its own segment,
//! within a bounded time. Skipped, with the reason, where namespaces or sshd are not
//! available.

mod common;
use common::*;

use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::netns::Hosts;

/// A server in host `i`'s namespace, killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `perflab serve --hello` in host `i`'s namespace; its URL.
fn hello_in(hosts: &Hosts, i: usize) -> (Server, String) {
    let mut child = Command::new("ip")
        .args(["netns", "exec", &hosts.names[i]])
        .arg(assert_cmd::cargo::cargo_bin("perflab"))
        .args([
            "serve",
            "--hello",
            "--workers",
            "1",
            "--port",
            "0",
            "--bind",
        ])
        .arg(&hosts.addrs[i])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = listening_addr(&mut child);
    (Server(child), format!("http://{addr}/"))
}

/// A server in host `i`'s namespace that sleeps 2 ms before each answer (HTTP/1.1,
/// keep-alive, one thread per connection).
fn slow_in(hosts: &Hosts, i: usize) -> (Server, String) {
    let script = r#"
import http.server, socketserver, sys, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        time.sleep(0.002)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S((sys.argv[1], 0), H)
print("listening on http://%s:%d/" % s.server_address, flush=True)
s.serve_forever()
"#;
    let mut child = Command::new("ip")
        .args(["netns", "exec", &hosts.names[i], "python3", "-c", script])
        .arg(&hosts.addrs[i])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = listening_addr(&mut child);
    (Server(child), format!("http://{addr}/"))
}

fn three_hosts(lab: &Lab) -> Option<Hosts> {
    require::program("python3")?;
    let hosts = Hosts::bridged(lab.dir.path(), 3)?;
    lab.write("hosts.toml", &hosts.inventory(""));
    Some(hosts)
}

/// `perflab http --json ARGS --agents h0,h1`, bounded; (exit code, JSON, stderr).
fn agents_run(lab: &Lab, args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(150))
        .args([
            "http",
            "--json",
            "--agents",
            "h0,h1",
            "--hosts",
            "hosts.toml",
        ])
        .args(args)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: stdout {} stderr {}", stdout(&out), stderr(&out)));
    (out.status.code().unwrap_or(-1), v, stderr(&out))
}

#[test]
fn the_agents_requests_add_up_to_the_merged_total() {
    let lab = Lab::new();
    let Some(hosts) = three_hosts(&lab) else {
        return;
    };
    let (_server, url) = hello_in(&hosts, 2);
    let (code, v, err) = agents_run(&lab, &["-n", "2000", "-c", "4", &url]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["requests"], 2000, "{v}");
    let agents = v["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    let names: Vec<&str> = agents.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["h0", "h1"]);
    let sum: u64 = agents.iter().map(|a| a["requests"].as_u64().unwrap()).sum();
    assert_eq!(sum, 2000);
    for a in agents {
        assert!(a["requests"].as_u64().unwrap() > 0, "{a}");
        assert_eq!(a["errors"], 0, "{a}");
        assert!(a["cpu_busy"].as_f64().unwrap() >= 0.0, "{a}");
        assert!(a["saturated"].is_boolean(), "{a}");
        assert!(a["rps"].as_f64().unwrap() > 0.0, "{a}");
    }
    assert!(v["start_skew_ms"].as_f64().unwrap() >= 0.0, "{v}");
    // Recorded like a one-host run, with the merged histogram.
    let export = lab.open_store().export_run(1).unwrap();
    let t = &export.trials[0];
    let requests = t.metrics.iter().find(|m| m.name == "requests").unwrap();
    assert_eq!(requests.value, 2000.0);
    // ... and each agent's part, which the report shows.
    let doc = t
        .artifacts
        .iter()
        .find(|a| a.name == "agents.json")
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&doc.content).unwrap();
    assert_eq!(doc["agents"], v["agents"]);
    let md = lab.run(&["report", "1", "--markdown", "r.md"]);
    assert!(md.status.success(), "{}", stderr(&md));
    let md = std::fs::read_to_string(lab.path("r.md")).unwrap();
    assert!(
        md.contains("## Agents") && md.contains("| 1 (") && md.contains("| h1 |"),
        "{md}"
    );
}

#[test]
fn the_merged_p99_is_that_of_the_agents_histograms_added() {
    let lab = Lab::new();
    let Some(hosts) = three_hosts(&lab) else {
        return;
    };
    let (_server, url) = slow_in(&hosts, 2);
    let (code, v, err) = agents_run(
        &lab,
        &["-d", "2s", "-c", "4", "--agent-weights", "1,3", &url],
    );
    assert_eq!(code, 0, "{err}");
    let agents = v["agents"].as_array().unwrap();
    assert_eq!(agents[0]["connections"], 1);
    assert_eq!(agents[1]["connections"], 3);
    let a = perflab_load::decode_histogram(agents[0]["histogram"].as_str().unwrap()).unwrap();
    let b = perflab_load::decode_histogram(agents[1]["histogram"].as_str().unwrap()).unwrap();
    let (pa, pb) = (
        a.value_at_quantile(0.99) as f64 / 1e3,
        b.value_at_quantile(0.99) as f64 / 1e3,
    );
    let mut sum = a.clone();
    sum.add(&b).unwrap();
    assert_eq!(sum.len(), v["requests"].as_u64().unwrap());
    let want = sum.value_at_quantile(0.99) as f64 / 1e3;
    let got = v["latency_ms"]["p99"].as_f64().unwrap();
    // HdrHistogram's precision (3 significant digits): within 0.1 %.
    assert!(
        (got - want).abs() <= want * 1e-3,
        "merged p99 {got} vs {want}"
    );
    assert!(
        got >= pa.min(pb) * 0.999 && got <= pa.max(pb) * 1.001,
        "{got} {pa} {pb}"
    );
    // The server sleeps 2 ms per request: no answer is faster.
    assert!(v["latency_ms"]["p50"].as_f64().unwrap() >= 2.0, "{v}");
}

/// The name of host `i`'s interface on the bridge (inside its namespace).
fn link_of(hosts: &Hosts, i: usize) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", &hosts.names[i], "ip", "-o", "link", "show"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|n| n.split('@').next().unwrap().to_string())
        .find(|n| n != "lo")
        .unwrap()
}

/// Starts `perflab http --json --agents h0,h1 -c 2 -d SECS URL` and waits (bounded)
/// until it has said `go`: the child, its stderr lines, what it said so far.
fn start_at_go(lab: &Lab, url: &str, secs: &str) -> (Child, mpsc::Receiver<String>, String) {
    let mut child = lab
        .process()
        .args([
            "http",
            "--json",
            "--agents",
            "h0,h1",
            "--hosts",
            "hosts.toml",
        ])
        .args(["-d", secs, "-c", "2", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (rx, said) = until_stderr_says(&mut child, "agents: go", Duration::from_secs(60));
    (child, rx, said)
}

#[test]
fn a_lost_agent_fails_only_its_segment_in_bounded_time() {
    let lab = Lab::new();
    let Some(hosts) = three_hosts(&lab) else {
        return;
    };
    let (_server, url) = hello_in(&hosts, 2);
    let started = Instant::now();
    let (mut child, rx, mut said) = start_at_go(&lab, &url, "6s");
    // h1's link goes down mid-run: its ssh session can no longer answer.
    let dev = link_of(&hosts, 1);
    netns::sh(&[
        "ip",
        "netns",
        "exec",
        &hosts.names[1],
        "ip",
        "link",
        "set",
        "dev",
        &dev,
        "down",
    ])
    .unwrap();
    let ended = wait_until(Duration::from_secs(90), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !ended {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    while let Ok(l) = rx.try_recv() {
        said.push_str(&(l + "\n"));
    }
    assert!(ended, "still running after 90 s: {said}");
    assert!(started.elapsed() < Duration::from_secs(100));
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(said.contains("agent h1 lost"), "{said}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let agents = v["agents"].as_array().unwrap();
    assert!(agents[1]["lost"].is_string(), "{v}");
    let h0 = agents[0]["requests"].as_u64().unwrap();
    assert!(h0 > 0, "{v}");
    assert_eq!(v["requests"], h0, "the merged total is h0's alone");
}

#[test]
fn ctrl_c_stops_every_agent_and_reports_what_ran() {
    let lab = Lab::new();
    let Some(hosts) = three_hosts(&lab) else {
        return;
    };
    let (_server, url) = hello_in(&hosts, 2);
    let (mut child, rx, mut said) = start_at_go(&lab, &url, "60s");
    // The agents' connections are up (a loaded machine may take seconds after "go"),
    // then the load runs about two seconds (time is the condition here: what is checked
    // is that Ctrl-C then stops every agent promptly and what ran is reported).
    let port: u16 = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let connected = wait_until(Duration::from_secs(30), || {
        hosts
            .exec(2, &["cat", "/proc/net/tcp"])
            .is_ok_and(|t| established_in(&t, port) >= 2)
    });
    if !connected {
        let _ = child.kill();
        panic!("the agents never connected to {url}");
    }
    let t = Instant::now();
    wait_until(Duration::from_secs(3), || {
        t.elapsed() > Duration::from_secs(2)
    });
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let ended = wait_until(Duration::from_secs(30), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !ended {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    while let Ok(l) = rx.try_recv() {
        said.push_str(&(l + "\n"));
    }
    assert!(ended, "still running 30 s after Ctrl-C: {said}");
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    assert_eq!(out.status.code(), Some(130), "{said}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["requests"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["interrupted"], true, "{v}");
    // No worker is left on either agent.
    for i in 0..2 {
        let gone = wait_until(Duration::from_secs(10), || {
            !hosts.processes(i).contains(" worker")
        });
        assert!(gone, "host {i} still runs: {}", hosts.processes(i));
    }
}
