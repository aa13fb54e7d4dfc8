//! `perflab http` end to end: bad input exits 2 before anything is sent; a run prints
//! the JSON contract; failed requests exit 4 — runs on both I/O engines (`--io`).

#[path = "../../../tests/require.rs"]
mod require;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use assert_cmd::Command;

/// A keep-alive hello server on 127.0.0.1; counts accepted connections. The accept
/// thread ends with the test process.
fn hello_server() -> (SocketAddr, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let accepted = Arc::new(AtomicU64::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            count.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut pending = Vec::new();
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    pending.extend_from_slice(&buf[..n]);
                    while let Some(i) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        pending.drain(..i + 4);
                        if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
                            .is_err()
                        {
                            return;
                        }
                    }
                }
            });
        }
    });
    (addr, accepted)
}

/// The run's `--json` document, once its exit code is `code` (stderr shown if not).
fn json_exiting(out: &std::process::Output, code: i32) -> serde_json::Value {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn perflab() -> Command {
    let mut c = Command::cargo_bin("perflab").unwrap();
    c.timeout(Duration::from_secs(30));
    c
}

/// The `--io` engines to run a behaviour on: epoll, and io_uring where the kernel
/// allows it (under `PERFLAB_REQUIRE` its absence is a failure: tests/require.rs).
fn engines() -> Vec<&'static str> {
    match perflab_load::uring_support() {
        Ok(()) => vec!["epoll", "uring"],
        Err(why) => {
            require::missing(format!("io_uring is unavailable here: {why}"));
            vec!["epoll"]
        }
    }
}

#[test]
fn bad_input_exits_2_and_sends_nothing() {
    let (addr, accepted) = hello_server();
    let url = format!("http://{addr}/");
    let cases: Vec<Vec<String>> = vec![
        vec!["http".into(), "http://bad host/".into()],
        vec!["http".into(), "not-a-url".into()],
        vec!["http".into(), format!("gopher://{addr}/")],
        vec!["http".into(), "-c".into(), "0".into(), url.clone()],
        vec!["http".into(), "--rate".into(), "-1".into(), url.clone()],
        vec![
            "http".into(),
            "--body-file".into(),
            "/nonexistent/perflab-body".into(),
            url.clone(),
        ],
        vec!["http".into(), "-d".into(), "ten".into(), url.clone()],
    ];
    for args in cases {
        let out = perflab().args(&args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "a bad-input run connected to the server"
    );
}

#[test]
fn json_has_the_contract_fields() {
    for io in engines() {
        json_has_the_contract_fields_on(io);
    }
}

fn json_has_the_contract_fields_on(io: &str) {
    let (addr, _) = hello_server();
    let out = perflab()
        .args([
            "http",
            "-c",
            "2",
            "-n",
            "200",
            "--io",
            io,
            "--json",
            &format!("http://{addr}/"),
        ])
        .output()
        .unwrap();
    let v = json_exiting(&out, 0);
    assert_eq!(v["requests"], 200);
    assert_eq!(v["status"]["200"], 200);
    for key in [
        "duration_s",
        "rps",
        "mbps",
        "errors",
        "latency_ms",
        "client_cpu_per_req_us",
        "client_saturated",
        "siege",
        "steps",
        "max_rate",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    for key in [
        "total",
        "connect",
        "timeout",
        "reset",
        "malformed",
        "closed",
    ] {
        assert_eq!(v["errors"][key], 0, "errors.{key}");
    }
    for key in [
        "mean", "sd", "p50", "p75", "p90", "p99", "p999", "p9999", "max",
    ] {
        assert!(v["latency_ms"][key].is_number(), "latency_ms.{key}");
    }
    assert!(
        v.get("latency_uncorrected_ms").is_none(),
        "closed loop has no uncorrected latency"
    );
    assert_eq!(v["io"], io, "the report names the engine that ran");
}

#[test]
fn open_loop_json_and_human_table() {
    let (addr, _) = hello_server();
    let url = format!("http://{addr}/");
    let out = perflab()
        .args([
            "http", "-c", "1", "--rate", "200", "-d", "500ms", "--json", &url,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["latency_uncorrected_ms"]["p99"].is_number());
    assert_eq!(v["io"], "epoll", "the open loop runs on epoll");
    let out = perflab()
        .args(["http", "-c", "1", "-n", "20", &url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "req/s",
        "MB/s",
        "Latency (ms)",
        "Transactions:",
        "Availability:",
    ] {
        assert!(text.contains(needle), "{needle} missing in\n{text}");
    }
}

#[test]
fn failed_requests_exit_4() {
    for io in engines() {
        failed_requests_exit_4_on(io);
    }
}

/// A server that accepts every connection and closes it at once: the connections are
/// made, every request fails.
fn closing_server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            drop(s);
        }
    });
    port
}

fn failed_requests_exit_4_on(io: &str) {
    // Not a refused port: no connection at all exits 1 before the load starts
    // (`failures.rs`); failed requests need connections that are made.
    let port = closing_server();
    let out = perflab()
        .args([
            "http",
            "-c",
            "1",
            "-d",
            "300ms",
            "--io",
            io,
            "--json",
            &format!("http://127.0.0.1:{port}/"),
        ])
        .output()
        .unwrap();
    let v = json_exiting(&out, 4);
    assert!(v["errors"]["total"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["io"], io);
}

/// io_uring is for plain-http closed loops: `--io uring` with an https URL (or a rate)
/// is bad input (exit 2, nothing sent), while `--io auto` runs https on epoll.
#[test]
fn io_uring_refuses_https_and_auto_falls_back_to_epoll() {
    let (addr, accepted) = hello_server();
    for (args, needle) in [
        (vec!["--io", "uring"], "plain http:// only"),
        (vec!["--io", "uring", "--rate", "100"], "closed-loop"),
        (vec!["--io", "kqueue"], "--io"),
    ] {
        let out = perflab()
            .arg("http")
            .args(&args)
            .args(["-d", "300ms", &format!("https://{addr}/")])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(needle),
            "{args:?}: {err}"
        );
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "a refused run connected"
    );
    // `--io auto` takes https (on epoll) rather than refusing it; the hello server does
    // not speak TLS, so the first handshake times out and no connection is ever made:
    // exit 1 with the cause, before the load (no longer a report of failed connects).
    let out = perflab()
        .args(["http", "--io", "auto", "-k", "-c", "1", "-d", "400ms"])
        .args(["--connect-timeout", "100ms", "--json"])
        .arg(format!("https://{addr}/"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("connect timed out"), "{err}");
}

#[test]
fn bad_tls_input_exits_2_and_sends_nothing() {
    let (addr, accepted) = hello_server();
    let url = format!("https://{addr}/");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "http".into(),
                "--cacert".into(),
                "/nonexistent/perflab-ca.pem".into(),
                url.clone(),
            ],
            "CA file",
        ),
        (
            vec![
                "http".into(),
                "--insecure".into(),
                "--cacert".into(),
                "ca.pem".into(),
                url.clone(),
            ],
            "--cacert",
        ),
        (
            vec!["http".into(), format!("ftp://{addr}/")],
            "supported: http, https",
        ),
    ];
    for (args, needle) in cases {
        let out = perflab().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
}
