//! `perflab serve` on a port that is already in use: a second server fails with
//! "address already in use" naming the port (exit 1) and takes none of the first
//! one's connections — it used to join the port through SO_REUSEPORT and take part of
//! them — unless both ask to share with `--reuse-port`; the two reuseport workers of
//! one server still share their own port.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::Killed;

const LIMIT: Duration = Duration::from_secs(10);

/// A directory whose index page says `name`, so answers tell the servers apart.
fn site(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), name).unwrap();
    dir
}

fn serve(dir: &Path, args: &[&str]) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .arg("serve")
        .arg(dir)
        .args(["--workers", "2", "--accept", "reuseport"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn perflab serve")
}

/// The index page's text, on a new connection each time (so the kernel picks a
/// listening socket for each).
fn index(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect_timeout(&addr, LIMIT).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    write!(s, "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    answer
        .rsplit("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_string()
}

/// How many of `n` new connections server A and server B answered.
fn split(addr: SocketAddr, n: usize) -> (usize, usize) {
    let answers: Vec<String> = (0..n).map(|_| index(addr)).collect();
    let a = answers.iter().filter(|t| *t == "A").count();
    (a, answers.len() - a)
}

/// The exit status within `limit`, or `None` if the process is still running.
fn exit_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let end = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_second_server_on_a_busy_port_exits_1_and_the_first_keeps_every_request() {
    let (a_dir, b_dir) = (site("A"), site("B"));
    let mut first = serve(a_dir.path(), &["--port", "0"]);
    let addr = common::listening_addr(&mut first);
    let _first = Killed(first);
    let port = addr.port().to_string();
    let mut second = Killed(serve(b_dir.path(), &["--port", &port]));
    // Bounded generously: a refused start takes milliseconds, a loaded machine may
    // take seconds to schedule it.
    let status = exit_within(&mut second.0, Duration::from_secs(30));
    // Counted before judging the status, so a second server that did start shows what
    // it took.
    let (a, b) = split(addr, 64);
    let mut err = String::new();
    if status.is_some() {
        let mut pipe = second.0.stderr.take().unwrap();
        pipe.read_to_string(&mut err).unwrap();
    }
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(1),
        "the second server on port {port} must fail; it took {b} of 64 requests"
    );
    assert!(err.contains("address already in use"), "{err}");
    assert!(err.contains(&format!("port {port}")), "{err}");
    assert!(
        err.contains("--reuse-port"),
        "the hint names the flag: {err}"
    );
    // The first server's two reuseport workers answered every request.
    assert_eq!((a, b), (64, 0));
}

#[test]
fn reuse_port_on_both_servers_shares_the_port() {
    let (a_dir, b_dir) = (site("A"), site("B"));
    let mut first = serve(a_dir.path(), &["--port", "0", "--reuse-port"]);
    let addr = common::listening_addr(&mut first);
    let _first = Killed(first);
    let port = addr.port().to_string();
    let mut second = serve(b_dir.path(), &["--port", &port, "--reuse-port"]);
    assert_eq!(common::listening_addr(&mut second), addr);
    let _second = Killed(second);
    // The kernel hashes each connection to one of four sockets: with 64 connections
    // both servers get some (all on one side: odds of 2^-63).
    let (a, b) = split(addr, 64);
    assert!(a > 0 && b > 0, "A answered {a}, B {b}");
}
