//! `perflab serve` end to end: the first stdout line names the real address, the
//! server answers, SIGTERM / SIGINT stop it gracefully with exit 0, and a bad
//! directory is a usage error (exit 2).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(10);

fn spawn(args: &[&str]) -> (Child, SocketAddr) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn perflab serve");
    let addr = common::listening_addr(&mut child);
    (child, addr)
}

fn get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect_timeout(&addr, LIMIT).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

/// Sends `signal` and waits (bounded) for the exit status.
fn stop(mut child: Child, signal: libc::c_int) -> std::process::ExitStatus {
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    let end = Instant::now() + LIMIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("perflab serve did not stop within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn hello_on_an_os_chosen_port_then_sigterm() {
    let (child, addr) = spawn(&["--port", "0", "--hello", "--workers", "2"]);
    assert!(addr.ip().is_loopback());
    assert_ne!(addr.port(), 0);
    let answer = get(addr, "/anything");
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(answer.ends_with("\r\n\r\nHello, world!\n"), "{answer}");
    let status = stop(child, libc::SIGTERM);
    assert_eq!(status.code(), Some(0));
}

#[test]
fn serves_a_directory_then_sigint() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), "<h1>home</h1>").unwrap();
    let (child, addr) = spawn(&[
        dir.path().to_str().unwrap(),
        "--port",
        "0",
        "--accept",
        "exclusive",
        "--timeout",
        "2s",
    ]);
    assert!(get(addr, "/").ends_with("<h1>home</h1>"));
    assert_eq!(stop(child, libc::SIGINT).code(), Some(0));
}

#[test]
fn ipv6_address_is_bracketed() {
    if TcpStream::connect("[::1]:9").is_err() && std::net::TcpListener::bind("[::1]:0").is_err() {
        return; // no IPv6 loopback here
    }
    let (child, addr) = spawn(&["--port", "0", "--hello", "--bind", "::1"]);
    assert!(addr.is_ipv6());
    assert!(get(addr, "/").starts_with("HTTP/1.1 200"));
    assert_eq!(stop(child, libc::SIGTERM).code(), Some(0));
}

#[test]
fn bad_directory_and_bad_flags_are_usage_errors() {
    let out = Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["serve", "/definitely/not/here", "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("error:"));
    let out = Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["serve", "--accept", "herd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
