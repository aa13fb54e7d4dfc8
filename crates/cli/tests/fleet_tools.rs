//! `perflab doctor --on b` and `perflab top --on b`: run there, printed here. The hosts
//! are network namespaces on one bridge, each with its own sshd (common/netns.rs),
//! removed when a test ends, also when it fails; skipped, with the reason, where
//! namespaces or sshd are not available.
//!
//! Namespaces share /proc/stat, so CPU counters cannot tell the hosts apart: each test
//! proves where its output came from with a per-namespace fact — CLOSE_WAIT sockets
//! made in b only (top), a sysctl of b's network namespace (doctor).

mod common;
use common::*;

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::netns::Hosts;
use serde_json::Value;

/// The sockets in CLOSE_WAIT that the top test makes in b.
const CLOSE_WAIT: u64 = 25;

/// Hosts a and b on one bridge, and hosts.toml naming them (plus `extra`).
fn hosts(lab: &Lab, extra: &str) -> Option<Hosts> {
    let hosts = Hosts::bridged(lab.dir.path(), 2)?;
    lab.write("hosts.toml", &hosts.inventory_as(&["a", "b"], extra));
    Some(hosts)
}

/// `n` sockets in CLOSE_WAIT in host `i`'s namespace: clients whose server closed,
/// held open here until dropped.
fn close_wait(hosts: &Hosts, i: usize, n: u64) -> Vec<TcpStream> {
    hosts.in_netns(i, || {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = l.local_addr().unwrap();
        let clients: Vec<TcpStream> = (0..n).map(|_| TcpStream::connect(at).unwrap()).collect();
        for _ in 0..n {
            drop(l.accept().unwrap());
        }
        clients
    })
}

/// The JSON lines of a `top --json` that exited 0.
fn top_lines(lab: &Lab, args: &[&str]) -> Vec<Value> {
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(60))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn close_waits(lines: &[Value]) -> Vec<u64> {
    lines
        .iter()
        .map(|v| v["sockets"]["close_wait"].as_u64().unwrap())
        .collect()
}

#[test]
fn top_on_b_shows_the_close_wait_sockets_made_in_b() {
    let lab = Lab::new();
    let Some(hosts) = hosts(&lab, "") else {
        return;
    };
    let _held = close_wait(&hosts, 1, CLOSE_WAIT);
    let top = ["--json", "--count", "2", "--interval", "200ms"];
    let on = |h: &'static str| [&["top", "--on", h][..], &top[..]].concat();
    let b = top_lines(&lab, &on("b"));
    assert_eq!(b.len(), 2, "{b:?}");
    for v in &b {
        assert_eq!(v["host"], "b", "{v}");
        assert!(
            v["cpu"].is_object() && v["t"].is_number(),
            "the remote top's own fields: {v}"
        );
    }
    assert!(
        close_waits(&b).iter().all(|&n| n >= CLOSE_WAIT),
        "b: {:?}",
        close_waits(&b)
    );
    // Here and on a the sockets are not seen: the figures came from b.
    let here = top_lines(&lab, &[&["top"][..], &top[..]].concat());
    assert!(here.iter().all(|v| v.get("host").is_none()));
    assert!(
        close_waits(&here).iter().all(|&n| n < CLOSE_WAIT),
        "{here:?}"
    );
    let a = top_lines(&lab, &on("a"));
    assert!(a.iter().all(|v| v["host"] == "a"), "{a:?}");
    assert!(close_waits(&a).iter().all(|&n| n < CLOSE_WAIT), "{a:?}");
    // Both at once: each line tagged with its host.
    let both = top_lines(&lab, &on("a,b"));
    assert_eq!(both.len(), 4, "{both:?}");
    for v in &both {
        let want_many = v["host"] == "b";
        assert_eq!(
            v["sockets"]["close_wait"].as_u64().unwrap() >= CLOSE_WAIT,
            want_many,
            "{v}"
        );
    }
    // The table, headed by the host.
    let out = lab.run(&["top", "--on", "b", "--count", "1", "--interval", "100ms"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(format!("host b ({})", hosts.addrs[1]).as_str())
    );
    assert!(lines.next().unwrap().contains("close_wait"), "{text}");
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert!(
        row.last().unwrap().parse::<u64>().unwrap() >= CLOSE_WAIT,
        "{text}"
    );
}

#[test]
fn doctor_on_b_reports_the_somaxconn_of_b() {
    let lab = Lab::new();
    let Some(hosts) = hosts(&lab, "") else {
        return;
    };
    // net.core.somaxconn is per network namespace: 16 in b, the default in a.
    hosts
        .exec(1, &["sh", "-c", "echo 16 > /proc/sys/net/core/somaxconn"])
        .unwrap();
    let doctor = |on: &str| {
        lab.cmd()
            .timeout(Duration::from_secs(60))
            .args(["doctor", "--on", on, "--watch", "0", "--json"])
            .output()
            .unwrap()
    };
    let somaxconn = |v: &Value| {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == "somaxconn")
            .cloned()
    };
    let out = doctor("b");
    let b: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&out), stderr(&out)));
    assert_eq!(b["host"], "b");
    assert_eq!(b["schema_version"], 1, "the remote doctor's object: {b}");
    let f = somaxconn(&b).unwrap_or_else(|| panic!("no somaxconn finding in {b}"));
    assert_eq!(f["severity"], "warn");
    assert!(
        f["evidence"]
            .as_str()
            .unwrap()
            .contains("net.core.somaxconn is 16"),
        "{f}"
    );
    // The exit status is the doctor's own there: its worst finding's.
    let worst = |v: &Value| {
        let sev: Vec<&str> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["severity"].as_str().unwrap())
            .collect();
        if sev.contains(&"critical") {
            5
        } else if sev.contains(&"warn") {
            4
        } else {
            0
        }
    };
    assert_eq!(out.status.code(), Some(worst(&b)), "{}", stderr(&out));
    let out = doctor("a");
    let a: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(a["host"], "a");
    assert!(somaxconn(&a).is_none(), "a has the default somaxconn: {a}");
    assert_eq!(out.status.code(), Some(worst(&a)), "{}", stderr(&out));
    // Several hosts: an array in the order of --on.
    let out = doctor("b,a");
    let both: Value = serde_json::from_slice(&out.stdout).unwrap();
    let both = both.as_array().unwrap_or_else(|| panic!("{both}"));
    assert_eq!(
        (&both[0]["host"], &both[1]["host"]),
        (&"b".into(), &"a".into())
    );
    assert!(somaxconn(&both[0]).is_some() && somaxconn(&both[1]).is_none());
    // The report, headed by the host.
    let out = lab.run(&["doctor", "--on", "b", "--watch", "0"]);
    assert_eq!(out.status.code(), Some(worst(&b)), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!("host b ({})\nperflab doctor: ", hosts.addrs[1])),
        "{text}"
    );
    assert!(
        text.contains("somaxconn") && text.contains("net.core.somaxconn is 16"),
        "{text}"
    );
    assert!(
        !text.contains("perflab-doctor-json") && !stderr(&out).contains("perflab-doctor-json"),
        "the diagnosis sent back is not shown"
    );
    // Every diagnosis was recorded here, tagged with its host: b, a, b and a, b.
    let runs = lab.open_store().runs().unwrap();
    let mut hosts_recorded = Vec::new();
    for r in runs.iter().rev() {
        let e = lab.open_store().export_run(r.id).unwrap();
        assert_eq!(e.run.kind, "doctor");
        let host = e.configs[0].params["host"].as_str().unwrap().to_string();
        let warn = e.trials[0]
            .metrics
            .iter()
            .find(|m| m.name == "findings_warn")
            .unwrap()
            .value;
        let doc = &e.trials[0].artifacts[0];
        assert_eq!(doc.name, "doctor.json");
        let doc: Value = serde_json::from_slice(&doc.content).unwrap();
        assert_eq!(doc["host"], host.as_str());
        assert_eq!(somaxconn(&doc).is_some(), host == "b", "{doc}");
        assert!(host != "b" || warn >= 1.0);
        hosts_recorded.push(host);
    }
    hosts_recorded.sort();
    assert_eq!(hosts_recorded, ["a", "a", "b", "b", "b"]);
}

/// `perflab top --on b --json` started, and its lines as they come, once 3 have come
/// (each from b) while it runs: streamed, not kept until the end.
fn top_on_b(lab: &Lab, hosts: &Hosts) -> std::process::Child {
    let mut child = lab
        .process()
        .args(["top", "--on", "b", "--json", "--interval", "100ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(40);
    while lines.len() < 3 && Instant::now() < deadline {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            lines.push(l);
        }
    }
    if lines.len() < 3 {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!("{lines:?} {}", String::from_utf8_lossy(&out.stderr));
    }
    for l in &lines {
        assert_eq!(
            serde_json::from_str::<Value>(l).unwrap()["host"],
            "b",
            "{l}"
        );
    }
    assert!(
        hosts.processes(1).contains(" top --interval"),
        "{}",
        hosts.processes(1)
    );
    child
}

/// Nothing perflab started is left in b within a few seconds (sshd itself stays).
fn assert_clean(hosts: &Hosts) {
    let clean = wait_until(Duration::from_secs(15), || {
        !hosts.processes(1).contains("perflab")
    });
    assert!(clean, "left in b: {}", hosts.processes(1));
}

#[test]
fn ctrl_c_ends_top_here_and_on_b() {
    let lab = Lab::new();
    let Some(hosts) = hosts(&lab, "") else {
        return;
    };
    let mut child = top_on_b(&lab, &hosts);
    let sent = Instant::now();
    // SAFETY: signalling the perflab this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let done = wait_until(Duration::from_secs(20), || {
        child.try_wait().ok().flatten().is_some()
    });
    if !done {
        let _ = child.kill();
        panic!("perflab did not stop within 20 s of Ctrl-C");
    }
    let out = child.wait_with_output().unwrap();
    // `top` never ends by itself: any bound shows Ctrl-C ended it; this one leaves
    // room for a loaded machine.
    assert!(
        sent.elapsed() < Duration::from_secs(15),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert_clean(&hosts);
    // Killed outright, it cannot hang up: its end of the session's stdin closes with
    // it, and the top on b ends all the same.
    let mut child = top_on_b(&lab, &hosts);
    child.kill().unwrap();
    let _ = child.wait();
    assert_clean(&hosts);
    // Its scratch folder (the binary prepared for copying) it could not remove.
    let _ =
        std::fs::remove_dir_all(std::env::temp_dir().join(format!("perflab-relay-{}", child.id())));
}

#[test]
fn an_unknown_or_unreachable_host_is_named_with_why() {
    let lab = Lab::new();
    lab.write(
        "hosts.toml",
        "[[hosts]]\nname = \"a\"\n\n[[hosts]]\nname = \"b\"\n",
    );
    for cmd in ["doctor", "top"] {
        let out = lab.run(&[cmd, "--on", "zz"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("--on zz: host \"zz\" is not in the inventory (hosts: a, b)"),
            "{}",
            stderr(&out)
        );
    }
    // An inventory entry whose address nothing answers: an unused address on the
    // bridge (no ARP answer), so the failure is bounded without waiting for a timeout.
    let probe = Lab::new();
    let Some(hosts) = Hosts::bridged(probe.dir.path(), 1) else {
        return;
    };
    let a = &hosts.addrs[0];
    let gone = format!("{}.99", &a[..a.rfind('.').unwrap()]);
    lab.write(
        "hosts.toml",
        &hosts.inventory_as(
            &["a"],
            &format!("[[hosts]]\nname = \"c\"\naddress = \"{gone}\"\nuser = \"root\"\n"),
        ),
    );
    for args in [
        &["doctor", "--on", "c", "--watch", "0"][..],
        &["top", "--on", "c", "--count", "1"][..],
    ] {
        let started = Instant::now();
        let out = lab.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
        let e = stderr(&out);
        assert!(
            e.contains(&format!(
                "error: host c ({gone}): ssh: connect to host {gone}"
            )),
            "{e}"
        );
    }
    // With a host that answers: its report, and the other one's error, exit 1.
    let out = lab.run(&["doctor", "--on", "a,c", "--watch", "0", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["host"], "a");
    assert!(v[0]["findings"].is_array(), "{v}");
    assert_eq!(v[1]["host"], "c");
    assert!(v[1]["error"].as_str().unwrap().contains(&gone), "{v}");
}
