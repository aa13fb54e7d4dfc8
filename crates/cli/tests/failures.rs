//! "Did anything fail?" has one answer: a target nobody can connect to stops
//! `perflab http` at once with exit 1 and the cause named (refused, TLS handshake,
//! protocol not offered), as wrk does, and records nothing; the engine a run used
//! (`io`, `protocol`, `tls`) is stored with it and shown by `show` and `compare --json`.

mod common;
use common::*;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

/// A keep-alive HTTP/1.1-only server on 127.0.0.1: every request head (an HTTP/2
/// preface included) gets `200 ok`; bytes that are no HTTP at all (a TLS ClientHello)
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
                        buf.drain(..end + 4);
                        if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                            .is_err()
                        {
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

/// Runs `perflab http ARGS` expecting exit 1 within 2 s, no run recorded, and `cause`
/// in the message; returns the message.
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
    assert!(took < Duration::from_secs(2), "{args:?} took {took:?}");
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
