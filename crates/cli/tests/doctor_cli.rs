//! `perflab doctor` end to end: the JSON contract and exit codes, bad input, and the
//! two must-shows — a listener flooded beyond its backlog in a network namespace made
//! here (somaxconn 64) is reported as `listen-overflows` with its port and the
//! somaxconn fix; a helper that leaks CLOSE_WAIT sockets is named by pid.
//!
//! The helpers run as threads of this test process: a thread that has joined the
//! namespace with setns(2) creates its sockets there, so the owner the doctor must name
//! is this process.
//!
//! Every invocation is recorded (a one-trial run of kind `doctor` whose `doctor.json`
//! is the printed object, shown by `perflab report`), also while other tests run in
//! parallel, so each test has its own store; a store that cannot be written costs a
//! warning, not the findings. With sockets leaked the same way, an experiment's trials
//! keep the findings the doctor saw during them.

use std::fs::File;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::Command as StdCommand;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;

mod common;
use common::{require, stderr, stdout, wait_until, Lab};

/// `perflab` with the lab's own store (each invocation records a run).
fn perflab(lab: &Lab) -> Command {
    let mut c = lab.cmd();
    c.timeout(Duration::from_secs(60));
    c
}

/// Checks the documented shape of `doctor --json` and returns the findings.
fn check_schema(v: &Value) -> &Vec<Value> {
    assert_eq!(v["schema_version"], 1, "{v}");
    assert!(v["watch_s"].as_f64().is_some(), "{v}");
    for n in v["not_available"].as_array().expect("not_available") {
        assert!(
            n["rule"].as_str().is_some() && n["reason"].as_str().is_some(),
            "{n}"
        );
    }
    let findings = v["findings"].as_array().expect("findings");
    let mut last = 3;
    for f in findings {
        let o = f.as_object().unwrap();
        for k in ["id", "severity", "evidence", "why", "fix", "doc"] {
            assert!(o[k].as_str().is_some_and(|s| !s.is_empty()), "{k} in {f}");
        }
        for k in o.keys() {
            assert!(
                ["id", "severity", "evidence", "why", "fix", "doc", "pid", "program", "port"]
                    .contains(&k.as_str()),
                "undocumented field {k}"
            );
        }
        let rank = match o["severity"].as_str().unwrap() {
            "critical" => 2,
            "warn" => 1,
            "info" => 0,
            s => panic!("severity {s}"),
        };
        assert!(rank <= last, "most severe first");
        last = rank;
        assert_eq!(
            o["doc"],
            format!("docs/doctor.md#{}", o["id"].as_str().unwrap())
        );
    }
    findings
}

/// The exit status the findings call for.
fn expected_code(findings: &[Value]) -> i32 {
    let has = |s: &str| findings.iter().any(|f| f["severity"] == s);
    if has("critical") {
        5
    } else if has("warn") {
        4
    } else {
        0
    }
}

/// A static `doctor --json` that must warn: 100 million connections fit in no default
/// file limit (`nofile-limit`).
const NOFILE_JSON: [&str; 6] = [
    "doctor",
    "--watch",
    "0",
    "--json",
    "--connections",
    "100000000",
];

#[test]
fn static_json_follows_the_contract_and_the_exit_code_the_findings() {
    let lab = Lab::new();
    let out = perflab(&lab).args(NOFILE_JSON).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let findings = check_schema(&v);
    assert_eq!(v["watch_s"], 0.0);
    // 100 million connections cannot fit in any default file limit.
    assert!(findings.iter().any(|f| f["id"] == "nofile-limit"), "{v}");
    assert!(v["not_available"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["rule"] == "sampled"));
    assert_eq!(out.status.code(), Some(expected_code(findings)), "{v}");
}

#[test]
fn human_report_has_a_summary_and_docs_links() {
    let lab = Lab::new();
    let out = perflab(&lab)
        .args(["doctor", "-w", "0", "--connections", "100000000"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(text.starts_with("perflab doctor: "), "{text}");
    assert!(text.contains("nofile-limit"), "{text}");
    assert!(text.contains("  fix   "), "{text}");
    assert!(text.contains("docs/doctor.md#nofile-limit"), "{text}");
    assert!(!text.contains('\x1b'), "no colour when not a TTY");
    assert!(matches!(out.status.code(), Some(4 | 5)), "{}", stderr(&out));
}

#[test]
fn bad_input_exits_2() {
    let lab = Lab::new();
    for args in [
        &["doctor", "--watch", "soon"][..],
        &["doctor", "--watch", "10ms"],
        &["doctor", "--pid", "2147483647", "--watch", "0"],
        &["doctor", "--connections", "many"],
    ] {
        let out = perflab(&lab).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("error: "),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert!(!lab.store().exists(), "bad input records nothing");
}

/// A network namespace of this test, deleted when dropped (also on panic).
struct Netns {
    name: String,
}

impl Netns {
    /// Why the test cannot run here, if it cannot.
    fn create() -> Result<Netns, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("network namespaces need root (ip netns add)".into());
        }
        let name = format!("perflab-doctor-{}", std::process::id());
        let st = StdCommand::new("ip")
            .args(["netns", "add", &name])
            .output()
            .map_err(|e| format!("`ip` not runnable ({e}): apt-get install iproute2"))?;
        if !st.status.success() {
            return Err(format!(
                "ip netns add refused: {}",
                String::from_utf8_lossy(&st.stderr).trim()
            ));
        }
        let ns = Netns { name };
        ns.exec(&["ip", "link", "set", "lo", "up"])?;
        ns.exec(&["sysctl", "-w", "net.core.somaxconn=64"])?;
        Ok(ns)
    }

    fn exec(&self, args: &[&str]) -> Result<(), String> {
        let out = StdCommand::new("ip")
            .args(["netns", "exec", &self.name])
            .args(args)
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{args:?} in {}: {}",
                self.name,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// Moves the calling thread into the namespace.
    fn enter(&self) -> std::io::Result<()> {
        let f = File::open(format!("/run/netns/{}", self.name))?;
        // SAFETY: a valid namespace fd; only this thread changes namespace.
        if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = StdCommand::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// Stops and joins a helper thread when dropped, so its sockets close before the
/// namespace goes, also when an assertion fails.
struct Helper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn flooded_listener_in_a_netns_is_named_with_the_somaxconn_fix() {
    let Some(ns) = require::have(Netns::create()) else {
        return;
    };
    let ns = Arc::new(ns);
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<Result<(u16, bool), String>>();
    let (ns2, stop2) = (ns.clone(), stop.clone());
    // A listener that never accepts, and clients that keep connecting: once its queue
    // holds 65 (> backlog 64 = somaxconn), every new handshake overflows.
    let thread = std::thread::spawn(move || {
        let run = || -> Result<(), String> {
            ns2.enter().map_err(|e| format!("setns: {e}"))?;
            let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
            let addr = l.local_addr().map_err(|e| e.to_string())?;
            let mut held = Vec::new();
            let mut full = false;
            let mut attempts = 0;
            while !stop2.load(Ordering::SeqCst) && attempts < 10_000 {
                attempts += 1;
                match TcpStream::connect_timeout(&addr, Duration::from_millis(50)) {
                    Ok(s) => held.push(s),
                    Err(_) if !full => {
                        full = true;
                        let _ = tx.send(Ok((addr.port(), true)));
                    }
                    Err(_) => {}
                }
            }
            drop(l);
            Ok(())
        };
        if let Err(e) = run() {
            let _ = tx.send(Err(e));
        }
    });
    let _helper = Helper {
        stop,
        thread: Some(thread),
    };
    let (port, _) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the listener's queue did not fill")
        .expect("helper in the namespace");

    let bin = assert_cmd::cargo::cargo_bin("perflab");
    let lab = Lab::new();
    let out = StdCommand::new("ip")
        .args(["netns", "exec", &ns.name])
        .arg(&bin)
        .env("PERFLAB_STORE", lab.store())
        .args(["doctor", "--watch", "2s", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let findings = check_schema(&v);
    let f = findings
        .iter()
        .find(|f| f["id"] == "listen-overflows" && f["port"] == port)
        .unwrap_or_else(|| panic!("no listen-overflows for port {port}: {v:#}"));
    assert_eq!(f["pid"], std::process::id(), "{f:#}");
    let evidence = f["evidence"].as_str().unwrap();
    assert!(evidence.contains("TcpExt.ListenOverflows +"), "{evidence}");
    assert!(
        evidence.contains(&format!("the accept queue of port {port}")),
        "{evidence}"
    );
    assert!(
        evidence.contains("backlog 64 (= net.core.somaxconn)"),
        "{evidence}"
    );
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.starts_with("sysctl -w net.core.somaxconn=4096"),
        "{fix}"
    );
    // somaxconn = 64 is also below the old default: a static warning of its own.
    assert!(
        findings
            .iter()
            .any(|f| f["id"] == "somaxconn" && f["severity"] == "warn"),
        "{v:#}"
    );
    assert_eq!(out.status.code(), Some(expected_code(findings)));
    assert!(matches!(out.status.code(), Some(4 | 5)));
}

/// Held by each test that leaks CLOSE_WAIT sockets in this process, so that each one
/// sees its own count under this pid.
static CLOSE_WAIT_LEAKS: Mutex<()> = Mutex::new(());

/// Leaks `n` CLOSE_WAIT sockets in this process (a server that accepts and never
/// closes, whose clients hung up): the server's ends, and their port.
fn leak_close_wait(n: usize) -> (Vec<TcpStream>, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // The leaky server: accepts, never reads to EOF, never closes.
    let server = std::thread::spawn(move || {
        (0..n)
            .map(|_| listener.accept().unwrap().0)
            .collect::<Vec<_>>()
    });
    for _ in 0..n {
        drop(TcpStream::connect(addr).unwrap());
    }
    let held = server.join().unwrap();
    let port_hex = format!(":{:04X} ", addr.port());
    assert!(
        wait_until(Duration::from_secs(10), || {
            std::fs::read_to_string("/proc/net/tcp").is_ok_and(|t| {
                t.lines()
                    .filter(|l| l.contains(&port_hex) && l.split_whitespace().nth(3) == Some("08"))
                    .count()
                    >= n
            })
        }),
        "the server side did not reach CLOSE_WAIT"
    );
    (held, addr.port())
}

#[test]
fn leaked_close_wait_sockets_are_named_by_pid() {
    let _one = CLOSE_WAIT_LEAKS.lock().unwrap_or_else(|e| e.into_inner());
    let (held, port) = leak_close_wait(12);
    let lab = Lab::new();
    let out = perflab(&lab)
        .args(["doctor", "--watch", "1s", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = check_schema(&v);
    let me = std::process::id();
    let f = findings
        .iter()
        .find(|f| f["id"] == "close-wait" && f["pid"] == me)
        .unwrap_or_else(|| panic!("pid {me} not named: {v:#}"));
    assert_eq!(f["port"], port);
    assert!(
        f["program"].as_str().unwrap().starts_with("doctor_cli"),
        "{f:#}"
    );
    let evidence = f["evidence"].as_str().unwrap();
    assert!(
        evidence.contains(&format!("pid {me} ("))
            && evidence.contains("holds 12 CLOSE_WAIT sockets"),
        "{evidence}"
    );
    assert!(
        evidence.contains("12 of them were already in CLOSE_WAIT"),
        "{evidence}"
    );
    assert!(f["why"]
        .as_str()
        .unwrap()
        .contains("recv() returned 0 and the socket was never closed"));
    assert!(matches!(out.status.code(), Some(4 | 5)));
    drop(held);
}

/// The `doctor.json` artifacts of run `id`, by trial ordinal, parsed.
fn doctor_artifacts(lab: &Lab, id: i64) -> Vec<(u32, Value)> {
    let export = lab.open_store().export_run(id).unwrap();
    export
        .trials
        .iter()
        .flat_map(|t| {
            t.artifacts
                .iter()
                .filter(|a| a.name == "doctor.json")
                .map(|a| {
                    assert_eq!(a.media_type, "application/json");
                    (t.ordinal, serde_json::from_slice(&a.content).unwrap())
                })
        })
        .collect()
}

/// `perflab report RUN --markdown` of the lab's store, as text.
fn markdown_report(lab: &Lab, id: i64) -> String {
    let md = lab.path("report.md");
    let out = lab.run(&[
        "report",
        &id.to_string(),
        "--markdown",
        md.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::read_to_string(md).unwrap()
}

#[test]
fn every_invocation_is_recorded_with_its_findings_and_shown_by_report() {
    let lab = Lab::new();
    // 100 million connections fit in no default file limit: nofile-limit, a warning.
    let out = perflab(&lab).args(NOFILE_JSON).output().unwrap();
    // stdout is the JSON object and nothing else; the note goes to stderr.
    let printed: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    let findings = check_schema(&printed);
    assert_eq!(out.status.code(), Some(expected_code(findings)));
    assert!(
        stderr(&out).contains(&format!("recorded as run 1 in {}", lab.store().display())),
        "{}",
        stderr(&out)
    );

    let store = lab.open_store();
    let run = store.run(1).unwrap();
    assert_eq!(
        (run.kind.as_str(), run.status.as_str()),
        ("doctor", "complete")
    );
    assert_eq!(run.trials_ok, 1);
    let stored = doctor_artifacts(&lab, 1);
    assert_eq!(stored.len(), 1, "one trial, one doctor.json");
    assert_eq!(stored[0].1, printed, "the artifact is the printed object");
    let export = store.export_run(1).unwrap();
    let metric = |name: &str| {
        export.trials[0]
            .metrics
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no metric {name}"))
            .value
    };
    for (name, severity) in [
        ("findings_critical", "critical"),
        ("findings_warn", "warn"),
        ("findings_info", "info"),
    ] {
        let n = findings
            .iter()
            .filter(|f| f["severity"] == severity)
            .count();
        assert_eq!(metric(name), n as f64, "{name}");
    }

    let md = markdown_report(&lab, 1);
    let section = &md[md.find("## Doctor findings").expect("a doctor section")..];
    assert!(section.contains("stored with 1 of 1 trials"), "{section}");
    let row = section
        .lines()
        .find(|l| l.starts_with("| warn | nofile-limit | 1 of 1 |"))
        .unwrap_or_else(|| panic!("no nofile-limit row: {section}"));
    assert!(row.ends_with("| docs/doctor.md#nofile-limit |"), "{row}");
    assert!(row.contains("ulimit -n"), "the fix: {row}");
}

#[test]
fn a_store_that_cannot_be_written_costs_a_warning_not_the_findings() {
    let lab = Lab::new();
    // A store "inside" a plain file: its directory can never be created, even by root.
    let file = lab.write("not-a-dir", "");
    let out = perflab(&lab)
        .env("PERFLAB_STORE", file.join("results.db"))
        .args(NOFILE_JSON)
        .output()
        .unwrap();
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    let findings = check_schema(&v);
    assert!(findings.iter().any(|f| f["id"] == "nofile-limit"), "{v}");
    assert_eq!(out.status.code(), Some(expected_code(findings)));
    let err = stderr(&out);
    assert!(
        err.contains("warning: nothing was recorded: cannot open the store"),
        "{err}"
    );
    assert!(!err.contains("recorded as run"), "{err}");
}

const TWO_TRIALS: &str = r#"
[experiment]
name = "doctor-trials"
repetitions = 2
warmup = 1
noise_check = false

[workload]
kind = "command"
command = "true"
"#;

#[test]
fn experiment_trials_keep_the_findings_seen_during_them() {
    let _one = CLOSE_WAIT_LEAKS.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::new();
    let file = lab.write("e.toml", TWO_TRIALS);
    let me = std::process::id();
    // 12 CLOSE_WAIT sockets held by this process for the whole run: close-wait, a
    // warning, in every trial.
    let (held, _) = leak_close_wait(12);
    let out = lab.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    drop(held);
    let stored = doctor_artifacts(&lab, 1);
    let trials: Vec<u32> = stored.iter().map(|(t, _)| *t).collect();
    assert_eq!(trials, [1, 2], "every recorded trial, no warm-up");
    for (_, v) in &stored {
        let findings = check_schema(v);
        assert!(
            findings
                .iter()
                .any(|f| f["id"] == "close-wait" && f["pid"] == me && f["severity"] == "warn"),
            "{v:#}"
        );
        assert!(
            v["watch_s"].as_f64().unwrap() > 0.0,
            "sampled over the trial: {v}"
        );
    }
    let md = markdown_report(&lab, 1);
    let section = &md[md.find("## Doctor findings").expect("a doctor section")..];
    assert!(section.contains("stored with 2 of 2 trials"), "{section}");
    assert!(
        section
            .lines()
            .any(|l| l.starts_with("| warn | close-wait | 2 of 2 |")),
        "{section}"
    );
}
