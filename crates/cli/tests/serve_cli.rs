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
        common::require::missing("no IPv6 loopback (::1) here");
        return;
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

/// A self-signed P-256 certificate for `localhost` (valid until 2126) and its key, for
/// `--tls-cert` / `--tls-key` (made with `openssl req -x509 -newkey ec`).
const TLS_CERT: &str = "
-----BEGIN CERTIFICATE-----
MIIBfjCCASWgAwIBAgIUcMRepUMNM9VAmW5inmX7zCqQyGIwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyNTA4MTUyOFoYDzIxMjYxMTAx
MDgxNTI4WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAARXmEWYYQRrEdAU06cNs66ysNB9rpP/Qd6nHJlT//IKJHR6TMPq+cVp
zLLIDwzzcvjYpnX2KaW9+tX8AFaTkAmvo1MwUTAdBgNVHQ4EFgQUaeqCi+L4AGi0
Sl6oeHKgh3JYzCswHwYDVR0jBBgwFoAUaeqCi+L4AGi0Sl6oeHKgh3JYzCswDwYD
VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiA8twF4txlkcWZTBetD2DZT
XMU19Tn8bhUGpBjSMPdsigIgKLi4Q8h6DKSuWG/nbjutcinmagEk0Y1fk0aPf79M
Eto=
-----END CERTIFICATE-----
";
const TLS_KEY: &str = "
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgCD3eEX+r+pazUpmm
o/B9oFCsTaFHSp7ciVMuylvxTG6hRANCAARXmEWYYQRrEdAU06cNs66ysNB9rpP/
Qd6nHJlT//IKJHR6TMPq+cVpzLLIDwzzcvjYpnX2KaW9+tX8AFaTkAmv
-----END PRIVATE KEY-----
";

/// Runs `perflab` with `args` to completion (killed past `LIMIT`): (exit code, stderr).
fn run_bounded(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + LIMIT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("perflab {args:?} did not exit within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_bad_tls_key_is_a_usage_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("not-a-key.pem");
    std::fs::write(&cert, TLS_CERT).unwrap();
    std::fs::write(&key, "this is not a key\n").unwrap();
    let (c, k) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let base = ["serve", "--hello", "--port", "0"];
    let (code, err) = run_bounded(&[&base[..], &["--tls-cert", c, "--tls-key", k]].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("not-a-key.pem") && err.contains("private key"),
        "{err}"
    );
    let (code, err) = run_bounded(&[&base[..], &["--tls-cert", c]].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--tls-key"), "{err}");
}

#[test]
fn tls_listens_on_https_and_answers_h2_by_alpn() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, TLS_CERT).unwrap();
    std::fs::write(&key, TLS_KEY).unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["serve", "--hello", "--port", "0", "--workers", "1"])
        .arg("--tls-cert")
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim_end().strip_prefix("listening on ").unwrap_or("");
    if !url.starts_with("https://127.0.0.1:") {
        let _ = child.kill();
        let _ = child.wait();
        panic!("first line was {line:?}");
    }
    // curl is what scripts/test.sh installs for the HTTP tests; without it, the
    // listening line is what is checked.
    let curl = Command::new("curl")
        .args([
            "-sk",
            "--http2",
            "--max-time",
            "10",
            "-w",
            " %{http_version}",
            url,
        ])
        .output();
    let status = stop(child, libc::SIGTERM);
    if let Ok(out) = curl {
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text, "Hello, world!\n 2");
    }
    assert_eq!(status.code(), Some(0));
}
