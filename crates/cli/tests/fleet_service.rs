//! The server on its own host: `[service] host = "b"` starts, checks and stops the
//! service under test on host b for every config, `[monitor] host = "b"` samples there,
//! and `[workload] host = "a"` drives the load from host a — over the system ssh client,
//! `perflab worker` at the far end. The hosts are network namespaces on one bridge,
//! each with its own sshd (common/netns.rs), removed when a test ends, also when it
//! fails. Skipped, with the reason, where namespaces or sshd are not available.

mod common;
use common::*;

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::netns::Hosts;

/// `perflab serve` on b (logging each request with its peer), sampled on b, loaded
/// from a; `{workload}` is the rest of the http workload table.
fn experiment(repetitions: u32, workload: &str) -> String {
    format!(
        r#"
[experiment]
name = "server-on-b"
repetitions = {repetitions}
warmup = 0
noise_check = false

[service]
host = "b"
command = "{{perflab}} serve --hello --access-log --bind {{service_host}} --port {{port}} --workers 1"
ready.http = "http://{{service_host}}:{{port}}/"

[monitor]
host = "b"
interval = "100ms"
probes = ["cpu", "process"]

[workload]
kind = "http"
host = "a"
urls = ["http://{{service_host}}:{{port}}/"]
connections = 2
threads = 1
{workload}
"#
    )
}

/// Every process seen in a namespace while it runs: pid → (its network namespace,
/// its command line), sampled until stopped.
struct Watcher {
    seen: Arc<Mutex<HashMap<i32, (String, String)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watcher {
    fn start(ns: String) -> Watcher {
        let seen = Arc::new(Mutex::new(HashMap::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, halt) = (seen.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !halt.load(Ordering::SeqCst) {
                let out = std::process::Command::new("ip")
                    .args(["netns", "pids", &ns])
                    .output()
                    .unwrap();
                for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                    let Ok(pid) = pid.parse::<i32>() else {
                        continue;
                    };
                    let link = std::fs::read_link(format!("/proc/{pid}/ns/net"));
                    let cmd = std::fs::read_to_string(format!("/proc/{pid}/cmdline"));
                    if let (Ok(link), Ok(cmd)) = (link, cmd.map(|c| c.replace('\0', " "))) {
                        if cmd.is_empty() {
                            continue; // exited: keep what was seen
                        }
                        // The latest view: a pid seen between its fork and its
                        // exec still shows its parent's command line.
                        s.lock()
                            .unwrap()
                            .insert(pid, (link.display().to_string(), cmd));
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Watcher {
            seen,
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> HashMap<i32, (String, String)> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().unwrap().join().unwrap();
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn artifact(t: &perflab_store::ExportedTrial, name: &str) -> Option<Vec<u8>> {
    t.artifacts
        .iter()
        .find(|a| a.name == name)
        .map(|a| a.content.clone())
}

fn json_artifact(t: &perflab_store::ExportedTrial, name: &str) -> serde_json::Value {
    let bytes = artifact(t, name).unwrap_or_else(|| panic!("no {name} in {t:?}"));
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn a_service_on_b_loaded_from_a_is_sampled_on_b() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::bridged(lab.dir.path(), 2) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory_as(&["a", "b"], ""));
    let exp = lab.write("exp.toml", &experiment(2, "requests = 300"));
    let watch = Watcher::start(hosts.names[1].clone());
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(180))
        .args(["run", exp.to_str().unwrap()])
        .output()
        .unwrap();
    let seen = watch.finish();
    assert!(out.status.success(), "{}", stderr(&out));
    let export = lab.open_store().export_run(1).unwrap();
    assert_eq!(export.trials.len(), 2);
    let (a, b) = (&hosts.addrs[0], &hosts.addrs[1]);
    let netns_b = hosts.netns(1);
    assert!(netns_b.starts_with("net:["), "{netns_b}");
    let mut pids = Vec::new();
    for t in &export.trials {
        assert_eq!(t.status, "ok", "{t:?}");
        // The load ran on a: its worker's answer is tagged with a, and counted 300.
        assert_eq!(json_artifact(t, "host.json")["name"], "a");
        let requests = t.metrics.iter().find(|m| m.name == "requests").unwrap();
        assert_eq!(requests.value, 300.0);
        // The service ran on b: the pid recorded is a process this test saw in b's
        // namespace (its own /proc/PID/ns/net), running `perflab serve`.
        let svc = json_artifact(t, "service.json");
        assert_eq!(svc["host"], "b");
        assert_eq!(svc["address"], b.as_str());
        let pid = svc["pid"].as_i64().unwrap() as i32;
        let (link, cmd) = seen
            .get(&pid)
            .unwrap_or_else(|| panic!("pid {pid} never seen in b: {seen:?}"));
        assert_eq!(link, &netns_b, "pid {pid}: {cmd}");
        assert!(cmd.contains(" serve "), "{cmd}");
        assert_eq!(svc["netns"], netns_b.as_str());
        // The monitor sampled on b, following that pid there.
        let mon = json_artifact(t, "monitor.json");
        assert_eq!(mon["host"], "b");
        assert_eq!(mon["pid"], pid);
        let names: Vec<&str> = t.series.iter().map(|s| s.name.as_str()).collect();
        assert!(names.iter().any(|n| n.starts_with("process.")), "{names:?}");
        assert!(names.iter().any(|n| n.starts_with("cpu.")), "{names:?}");
        assert!(
            t.metrics.iter().any(|m| m.name == "service_cpu_per_req_us"),
            "the service's CPU time per request, from b's process series"
        );
        pids.push(pid);
    }
    // One service for the config's two trials, its log back with the last one: every
    // request came from a.
    assert_eq!(pids[0], pids[1]);
    let log = String::from_utf8(artifact(&export.trials[1], "service.log").unwrap()).unwrap();
    let from_a = log
        .lines()
        .filter(|l| l.starts_with(&format!("{a}:")))
        .count();
    assert!(from_a >= 600, "{from_a} requests from a in the log:\n{log}");
    // Nothing perflab started is left in b.
    let left = wait_until(Duration::from_secs(10), || {
        !hosts.processes(1).contains("perflab")
    });
    assert!(left, "left in b: {}", hosts.processes(1));
}

#[test]
fn a_service_on_b_is_loaded_from_here_through_its_address() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::bridged(lab.dir.path(), 2) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory_as(&["a", "b"], ""));
    // The workload on the controller; the monitor on a, where no service runs: a
    // session of its own, system-wide counters only.
    let exp = experiment(1, "requests = 50")
        .replace(
            "[monitor]\nhost = \"b\"\ninterval = \"100ms\"\nprobes = [\"cpu\", \"process\"]\n",
            "[monitor]\nhost = \"a\"\ninterval = \"100ms\"\nprobes = [\"cpu\"]\n",
        )
        .replace("kind = \"http\"\nhost = \"a\"\n", "kind = \"http\"\n");
    let exp = lab.write("exp.toml", &exp);
    let out = lab.run(&["run", exp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let export = lab.open_store().export_run(1).unwrap();
    let t = &export.trials[0];
    assert_eq!(t.status, "ok", "{t:?}");
    assert!(artifact(t, "host.json").is_none(), "the load ran here");
    assert_eq!(json_artifact(t, "service.json")["host"], "b");
    let mon = json_artifact(t, "monitor.json");
    assert_eq!(
        (&mon["host"], &mon["pid"]),
        (&"a".into(), &serde_json::Value::Null)
    );
    assert!(t.series.iter().any(|s| s.name.starts_with("cpu.")), "{t:?}");
    // The requests came from this machine's end of the bridge.
    let a = &hosts.addrs[0];
    let here = format!("{}.1:", &a[..a.rfind('.').unwrap()]);
    let log = String::from_utf8(artifact(t, "service.log").unwrap()).unwrap();
    let from_here = log.lines().filter(|l| l.starts_with(&here)).count();
    assert!(from_here >= 50, "{from_here} requests from {here}\n{log}");
}

/// Runs the experiment with a long workload until the service runs in b and the
/// workload in a, then sends `signal` to the controller; returns it (exited or not).
/// (The workload is a command: an http trial does not stop before its end when
/// interrupted, here or on a host — a limit of the load engine, not of the fleet.)
fn interrupt(lab: &Lab, hosts: &Hosts, signal: i32) -> std::process::Child {
    lab.write("hosts.toml", &hosts.inventory_as(&["a", "b"], ""));
    let http = experiment(3, "");
    let start = http.find("[workload]").unwrap();
    let exp = format!(
        "{}[workload]\nkind = \"command\"\nhost = \"a\"\ncommand = \"sleep 60\"\n",
        &http[..start]
    );
    let exp = lab.write("exp.toml", &exp);
    let mut child = lab
        .process()
        .args(["-q", "run", exp.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let running = wait_until(Duration::from_secs(60), || {
        hosts.processes(1).contains(" serve ") && hosts.processes(0).contains("sleep 60")
    });
    if !running {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "the service never ran in b with the load in a: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The load runs for a moment first.
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: signalling the perflab this test started.
    unsafe { libc::kill(child.id() as i32, signal) };
    child
}

/// Nothing perflab started is left in a or b (sshd itself stays).
fn assert_clean(hosts: &Hosts) {
    let clean = wait_until(Duration::from_secs(20), || {
        (0..2).all(|i| !hosts.processes(i).contains("perflab"))
    });
    assert!(
        clean,
        "left behind: a: {} b: {}",
        hosts.processes(0),
        hosts.processes(1)
    );
}

#[test]
fn ctrl_c_stops_the_service_on_b_in_order_and_leaves_nothing() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::bridged(lab.dir.path(), 2) else {
        return;
    };
    let mut child = interrupt(&lab, &hosts, libc::SIGINT);
    let done = wait_until(Duration::from_secs(30), || {
        child.try_wait().ok().flatten().is_some()
    });
    if !done {
        let _ = child.kill();
        panic!("perflab did not stop within 30 s of Ctrl-C");
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert_clean(&hosts);
    // The service was stopped in order: its log came back with the interrupted trial
    // (the readiness check's request, from b itself).
    let export = lab.open_store().export_run(1).unwrap();
    let t = export.trials.last().unwrap();
    assert_eq!(t.status, "interrupted", "{t:?}");
    let log = String::from_utf8(artifact(t, "service.log").expect("the service log")).unwrap();
    assert!(
        log.contains(&format!("{}:", hosts.addrs[1])) && log.contains("\"GET / HTTP/1.0\""),
        "{log}"
    );
}

#[test]
fn a_killed_controller_leaves_no_service_behind() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::bridged(lab.dir.path(), 2) else {
        return;
    };
    let mut child = interrupt(&lab, &hosts, libc::SIGKILL);
    let _ = child.wait();
    // Its ssh clients read the end of their stdin; the workers stop what they run.
    assert_clean(&hosts);
}

#[test]
fn a_host_that_is_not_in_the_inventory_is_named_with_its_key_and_place() {
    let lab = Lab::new();
    lab.write(
        "hosts.toml",
        "[[hosts]]\nname = \"a\"\n\n[[hosts]]\nname = \"b\"\n",
    );
    let exp = lab.write(
        "exp.toml",
        &experiment(1, "requests = 10").replace("host = \"b\"", "host = \"zz\""),
    );
    let out = lab.run(&["run", exp.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("exp.toml:9:8: [service] host = \"zz\"")
            && e.contains("\"zz\" is not in the inventory (hosts: a, b)"),
        "{e}"
    );
    assert!(!exists(&lab.store()) || ok_trials(&lab) == 0);
}

#[test]
fn what_cannot_run_elsewhere_yet_is_refused_with_its_key() {
    let lab = Lab::new();
    lab.write("hosts.toml", "[[hosts]]\nname = \"a\"\n");
    let cases = [
        (
            "[profile]\nhost = \"a\"\n",
            "[profile] would profile the service's process, which runs on host \"b\" ([service] host), from host \"a\"",
        ),
        (
            "[profile]\n",
            "[profile] would profile the service's process, which runs on host \"b\"",
        ),
    ];
    for (extra, want) in cases {
        let exp = lab.write(
            "exp.toml",
            &experiment(1, "requests = 10").replace("[workload]", &format!("{extra}\n[workload]")),
        );
        let out = lab.run(&["run", exp.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(want), "{}", stderr(&out));
    }
    // `on` and [workload] host both place the workload.
    let exp = lab.write(
        "exp.toml",
        &experiment(1, "requests = 10").replace("noise_check", "on = [\"a\"]\nnoise_check"),
    );
    let out = lab.run(&["run", exp.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("[workload] host and `on` both say where the workload runs"),
        "{}",
        stderr(&out)
    );
    // The process probe follows the service only on the service's host.
    let exp = lab.write(
        "exp.toml",
        &experiment(1, "requests = 10").replace("[monitor]\nhost = \"b\"\n", "[monitor]\n"),
    );
    let out = lab.run(&["run", exp.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("which runs on host \"b\" while [monitor] samples this machine"),
        "{}",
        stderr(&out)
    );
}
