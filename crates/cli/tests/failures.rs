//! "Did anything fail?" has one answer: a target nobody can connect to stops
//! `perflab http` at once with exit 1 and the cause named (refused, TLS handshake,
//! protocol not offered), as wrk does, and records nothing; the engine a run used
//! (`io`, `protocol`, `tls`) is stored with it and shown by `show` and `compare --json`;
//! and every place that counts failed requests gives the same number.

mod common;
use common::*;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

/// A keep-alive HTTP/1.1-only server on 127.0.0.1: every request head (an HTTP/2
/// preface included) gets `200 ok`, but `GET /missing...` a `404`; bytes that are no HTTP at all (a TLS ClientHello)
/// get a `400` and a close, as nginx answers them. A thread per connection; they end
/// when the client closes.
fn http1_server() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                let mut buf: Vec<u8> = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    if buf.first().is_some_and(|b| !b.is_ascii_uppercase()) {
                        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
                        return;
                    }
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let missing = buf.starts_with(b"GET /missing");
                        buf.drain(..end + 4);
                        let answer: &[u8] = if missing {
                            b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno"
                        } else {
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                        };
                        if s.write_all(answer).is_err() {
                            return;
                        }
                    }
                    match s.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    addr
}

/// A port nobody listens on (bound by the OS, then released).
fn refused_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `perflab http ARGS` expecting exit 1 within 5 s (half the 10 s load these tests
/// ask for, with room for a loaded machine), no run recorded, and `cause` in the
/// message; returns the message.
fn fails_at_once(lab: &Lab, args: &[&str], cause: &str) -> String {
    let started = Instant::now();
    let out = lab.run(args);
    let took = started.elapsed();
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{args:?}: {err}{}",
        stdout(&out)
    );
    assert!(took < Duration::from_secs(5), "{args:?} took {took:?}");
    assert!(err.contains(cause), "{args:?}: {cause:?} missing in {err}");
    assert!(!err.contains("recorded as run"), "{err}");
    err
}

#[test]
fn a_refused_port_exits_1_at_once_saying_connection_refused() {
    let lab = Lab::new();
    let url = format!("http://127.0.0.1:{}/", refused_port());
    for io in ["auto", "epoll"] {
        fails_at_once(
            &lab,
            &["http", &url, "-d", "10s", "--io", io],
            "connection refused",
        );
    }
    fails_at_once(
        &lab,
        &["http", &url, "-n", "50", "--json"],
        "connection refused",
    );
}

#[test]
fn https_against_a_plain_port_names_the_tls_handshake() {
    let addr = http1_server();
    let lab = Lab::new();
    let url = format!("https://{addr}/");
    fails_at_once(&lab, &["http", &url, "-d", "10s"], "TLS handshake failed");
}

#[test]
fn http2_against_an_http1_only_server_names_the_protocol() {
    let addr = http1_server();
    let lab = Lab::new();
    let url = format!("http://{addr}/");
    let err = fails_at_once(
        &lab,
        &["http", &url, "--http2", "-d", "10s"],
        "protocol not offered",
    );
    assert!(err.contains("--http2"), "{err}");
    // The same server without --http2 is fine.
    let out = lab.run(&["http", &url, "-n", "20", "-c", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn show_and_compare_json_carry_the_engine_of_an_http_run() {
    let addr = http1_server();
    let lab = Lab::new();
    let url = format!("http://{addr}/");
    for io in ["epoll", "auto"] {
        let out = lab.run(&["http", &url, "-n", "50", "-c", "2", "--io", io]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let show = stdout(&lab.run(&["show", "1"]));
    assert!(show.contains("io=epoll"), "{show}");
    assert!(show.contains("protocol=h1"), "{show}");
    assert!(show.contains("tls=false"), "{show}");
    let v = lab.json(&["compare", "1", "2", "--json"]);
    assert_eq!(v["baseline"]["params"]["io"], "epoll", "{v}");
    // `auto` is stored as what it resolved to, never as `auto`.
    let resolved = v["candidate"]["params"]["io"].as_str().unwrap_or_default();
    assert!(["epoll", "uring"].contains(&resolved), "{v}");
    assert_eq!(v["candidate"]["params"]["protocol"], "h1", "{v}");
    assert_eq!(v["candidate"]["params"]["tls"], false, "{v}");
}

/// Two runs on different engines are not like with like: `perflab compare` says so,
/// naming both engines, in the text and in the JSON's `params_differ`.
#[test]
fn comparing_an_io_uring_run_with_an_epoll_run_warns_naming_both() {
    if let Err(why) = perflab_load::uring_support() {
        require::missing(format!("io_uring is unavailable here: {why}"));
        return;
    }
    let addr = http1_server();
    let lab = Lab::new();
    let url = format!("http://{addr}/");
    for io in ["uring", "epoll"] {
        let out = lab.run(&["http", &url, "-n", "200", "-c", "2", "--io", io]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let out = lab.run(&["compare", "1", "2"]);
    let err = stderr(&out);
    let warning = err
        .lines()
        .find(|l| l.starts_with("warning:") && l.contains(" io"))
        .unwrap_or_else(|| panic!("no warning about io: {err}"));
    assert!(
        warning.contains("uring") && warning.contains("epoll"),
        "{warning}"
    );
    let v = lab.json(&["compare", "1", "2", "--json"]);
    let differ = v["params_differ"].as_array().cloned().unwrap_or_default();
    let io = differ.iter().find(|d| d["param"] == "io");
    let io = io.unwrap_or_else(|| panic!("no io in params_differ: {v}"));
    assert_eq!(
        (io["a"].as_str(), io["b"].as_str()),
        (Some("uring"), Some("epoll")),
        "{v}"
    );
}

/// The number after `label` on the text line that starts with it (`  Failed requests   200`).
fn count_after(text: &str, label: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} line in\n{text}"));
    line.trim_start()[label.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {line:?}"))
}

#[test]
fn a_404_target_is_counted_the_same_in_every_place_that_counts_failures() {
    // Regression: one run said `Errors 0`, `Failed transactions: 29967`, per-target
    // errors 14,842 and 15,125, and `perflab runs` "1 failed" — six answers.
    let addr = http1_server();
    let lab = Lab::new();
    let targets = lab.write(
        "t.txt",
        &format!("GET http://{addr}/ok\n\nGET http://{addr}/missing\n"),
    );
    let t = targets.to_str().unwrap();
    let out = lab.run(&["http", "--targets", t, "-n", "300", "-c", "2"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(4), "{text}{}", stderr(&out));
    let status = text.lines().find(|l| l.contains("Status")).unwrap();
    let n: u64 = status
        .split("404: ")
        .nth(1)
        .and_then(|x| x.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("{status}"));
    assert!(n > 0, "{text}");
    assert!(
        text.contains(&format!("(HTTP errors {n}, transport errors 0)")),
        "{text}"
    );
    assert_eq!(count_after(&text, "Failed requests"), n, "{text}");
    assert_eq!(count_after(&text, "Transport errors"), 0, "{text}");
    assert_eq!(count_after(&text, "Failed transactions:"), n, "{text}");
    // The per-target table (names cut at 28 characters): the 404 target's row.
    let row = text
        .lines()
        .find(|l| l.starts_with("  GET ") && l.contains("404: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains(&format!(" {n}  404: {n}")), "{row}");
    // The siege block's transfer rate is the report's.
    let mbps = |label: &str| {
        let l = text
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap();
        l.split_whitespace().rev().nth(1).unwrap().to_string()
    };
    assert_eq!(mbps("Transfer"), mbps("Throughput:"), "{text}");

    // The stored run: the trial's message and its stored report carry the same numbers.
    let store = lab.open_store();
    let run = store.latest_run().unwrap();
    let trial = &store.trials(run.id).unwrap()[0];
    assert_eq!(
        trial.error.as_deref(),
        Some(format!("{n} failed requests (HTTP errors {n}, transport errors 0)").as_str()),
    );
    // The report it stored (the metrics `errors`, `http_errors`, `transport_errors` are
    // read from the same `failed`).
    let (_, _, bytes) = store
        .trial_artifacts(trial.id)
        .unwrap()
        .into_iter()
        .find(|(name, _, _)| name == "http-report.json")
        .expect("the stored report");
    let stored: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(stored["failed"]["requests"], n, "{stored}");
    assert_eq!(stored["failed"]["http_errors"], n, "{stored}");
    let show = stdout(&lab.run(&["show", &run.id.to_string()]));
    assert!(
        show.contains(&format!("{n} failed requests (HTTP errors {n}")),
        "{show}"
    );

    // The JSON: `failed`, the siege block and the targets agree.
    let out = lab.run(&["http", "--targets", t, "-n", "300", "-c", "2", "--json"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = v["status"]["404"].as_u64().unwrap();
    assert_eq!(v["failed"]["requests"], n, "{v}");
    assert_eq!(v["failed"]["http_errors"], n, "{v}");
    assert_eq!(v["failed"]["transport_errors"], 0, "{v}");
    assert_eq!(v["errors"]["total"], 0, "{v}");
    assert_eq!(v["siege"]["failed_transactions"], n, "{v}");
    let per_target: u64 = v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["errors"].as_u64().unwrap())
        .sum();
    assert_eq!(per_target, n, "{v}");
    let (mbps, siege) = (
        v["mbps"].as_f64().unwrap(),
        v["siege"]["throughput_mbps"].as_f64().unwrap(),
    );
    assert!(
        (mbps - siege).abs() <= 1e-9 * mbps.max(1.0),
        "{mbps} vs {siege}"
    );
}

#[test]
fn an_experiment_trial_whose_target_refuses_fails_at_once_with_the_cause() {
    let lab = Lab::new();
    let exp = lab.write(
        "r.toml",
        &format!(
            "[experiment]\nrepetitions = 1\nwarmup = 0\nnoise_check = false\n\
             [workload]\nkind = \"http\"\nurls = [\"http://127.0.0.1:{}/\"]\n\
             duration = \"10s\"\n",
            refused_port()
        ),
    );
    let started = Instant::now();
    let out = lab.run(&["run", exp.to_str().unwrap()]);
    assert!(started.elapsed() < Duration::from_secs(10), "ran the load");
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    let store = lab.open_store();
    let run = store.latest_run().unwrap();
    let trial = &store.trials(run.id).unwrap()[0];
    let error = trial.error.clone().unwrap_or_default();
    assert!(error.contains("connection refused"), "{error}");
}
