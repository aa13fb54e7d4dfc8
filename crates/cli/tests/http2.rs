//! `perflab http` over HTTP/2 against nginx (Debian's build: `listen ... http2` is h2c
//! with prior knowledge, `listen ... ssl http2` is h2 over TLS): h2c with streams agrees
//! with h2load on a fixed request count, https picks h2 by ALPN (and HTTP/1.1 when
//! forced), h2c runs through a unix socket. nginx is started by the test with its own
//! configuration and certificate, and killed when the test ends (also on failure).

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A self-signed test certificate `dir/cert.pem` and its key `dir/key.pem` (openssl);
/// false where openssl is missing.
fn make_cert(dir: &Path) -> bool {
    Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=localhost", "-keyout"])
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// nginx serving `dir/www` as h2c on one port, h2 over TLS on another and h2c on a unix
/// socket; `None` (the test is skipped, see tests/require.rs) where nginx or openssl is
/// missing.
struct Nginx {
    _child: Killed,
    h2c: u16,
    tls: u16,
    sock: PathBuf,
}

fn nginx(dir: &Path) -> Option<Nginx> {
    if !require::programs(&["nginx", "openssl"]) {
        return None;
    }
    assert!(make_cert(dir), "openssl made no test certificate");
    let (h2c, tls, sock) = (free_port(), free_port(), dir.join("nginx.sock"));
    let servers = format!(
        "server {{ listen 127.0.0.1:{h2c} http2; listen unix:{s} http2; root {d}/www; }}\n\
         server {{ listen 127.0.0.1:{tls} ssl http2; ssl_certificate {d}/cert.pem;\n\
         ssl_certificate_key {d}/key.pem; root {d}/www; }}",
        d = dir.display(),
        s = sock.display(),
    );
    let child = start_nginx(dir, &servers)?;
    std::fs::write(dir.join("www/4k.bin"), vec![b'x'; 4096]).unwrap();
    let up = wait_until(Duration::from_secs(10), || {
        std::net::TcpStream::connect(("127.0.0.1", tls)).is_ok() && sock.exists()
    });
    assert!(
        up,
        "nginx did not start: {}",
        std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
    );
    Some(Nginx {
        _child: child,
        h2c,
        tls,
        sock,
    })
}

#[test]
fn h2c_agrees_with_h2load_and_https_negotiates_h2() {
    let lab = Lab::new();
    let Some(n) = nginx(lab.dir.path()) else {
        return;
    };
    let url = format!("http://127.0.0.1:{}/4k.bin", n.h2c);
    let v = lab.json(&[
        "http",
        &url,
        "--http2",
        "-c",
        "10",
        "--streams",
        "10",
        "-n",
        "5000",
        "--json",
    ]);
    assert_eq!(v["requests"], 5000, "{v}");
    assert_eq!(v["errors"]["total"], 0);
    assert_eq!(v["status"]["200"], 5000);
    assert_eq!(v["protocols"]["h2"], 10, "{}", v["protocols"]);
    assert_eq!(v["streams"], 10);
    assert!(v["bytes"].as_u64().unwrap() / 5000 > 4096);
    match Command::new("h2load")
        .args(["-n", "5000", "-c", "10", "-m", "10", &url])
        .output()
    {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(
                text.contains("5000 succeeded, 0 failed, 0 errored"),
                "h2load on the same nginx: {text}"
            );
        }
        // Without h2load (and the switch) the count is compared with -n only.
        Err(_) => require::missing(require::not_found("h2load")),
    }

    let tls = format!("https://127.0.0.1:{}/4k.bin", n.tls);
    let v = lab.json(&[
        "http",
        &tls,
        "-k",
        "-c",
        "4",
        "--streams",
        "5",
        "-n",
        "400",
        "--json",
    ]);
    assert_eq!(
        (v["requests"].as_u64(), v["errors"]["total"].as_u64()),
        (Some(400), Some(0))
    );
    assert_eq!(v["protocols"]["h2"], 4, "ALPN picks h2: {}", v["protocols"]);
    let v = lab.json(&[
        "http",
        &tls,
        "-k",
        "-c",
        "4",
        "--http1.1",
        "-n",
        "400",
        "--json",
    ]);
    assert_eq!(v["requests"], 400);
    assert_eq!(v["protocols"]["http/1.1"], 4, "{}", v["protocols"]);
    let out = lab.run(&[
        "http",
        &tls,
        "-k",
        "-c",
        "2",
        "-n",
        "100",
        "--http2",
        "--streams",
        "4",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("h2 (2 connections, 4 streams each)"),
        "{}",
        stdout(&out)
    );

    let v = lab.json(&[
        "http",
        "--unix-socket",
        n.sock.to_str().unwrap(),
        "--http2",
        "--streams",
        "4",
        "http://localhost/4k.bin",
        "-n",
        "500",
        "-c",
        "2",
        "--json",
    ]);
    assert_eq!(v["requests"], 500, "{v}");
    assert_eq!(v["protocols"]["h2"], 2);
}

#[test]
fn streams_without_http2_on_plain_http_is_a_usage_error() {
    let lab = Lab::new();
    let out = lab.run(&["http", "http://127.0.0.1:9/", "--streams", "4", "-n", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--http2"), "{}", stderr(&out));
    let out = lab.run(&[
        "http",
        "http://127.0.0.1:9/",
        "--http2",
        "--pipeline",
        "4",
        "-n",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("streams"), "{}", stderr(&out));
}

#[test]
fn ctrl_c_ends_the_load_and_keeps_what_ran() {
    let lab = Lab::new();
    let server = HelloServer::start();
    let child = Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .arg("--store")
        .arg(lab.store())
        .args(["http", &server.url, "-c", "2", "-d", "60s", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // Killed on every path; the output is read through a pipe thread.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    // The load has connected (a loaded machine may take seconds to start it) and run
    // for a moment: Ctrl-C then finds requests done.
    let port: u16 = server
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let connected = wait_until(Duration::from_secs(30), || established_to(port) >= 2);
    if !connected {
        // SAFETY: kill has no memory preconditions; the pid is our child's, not yet reaped.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("perflab http never connected to port {port}");
    }
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill has no memory preconditions; the pid is our child's, not yet reaped.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let out = match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("perflab http did not stop on Ctrl-C");
        }
    };
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["interrupted"], true);
    assert!(v["requests"].as_u64().unwrap() > 0);
    assert!(v["duration_s"].as_f64().unwrap() < 30.0);
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    assert!(stderr(&out).contains("recorded as run"), "{}", stderr(&out));
}

/// `perflab serve DIR` with a test certificate; killed on drop.
fn perflab_serve(dir: &Path, tls: bool) -> (Killed, String) {
    use std::io::BufRead;
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("perflab"));
    cmd.args(["serve", "--port", "0", "--workers", "1"])
        .arg(dir.join("www"));
    if tls {
        cmd.arg("--tls-cert")
            .arg(dir.join("cert.pem"))
            .arg("--tls-key")
            .arg(dir.join("key.pem"));
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .expect("listening on URL")
        .to_string();
    (Killed(child), url)
}

#[test]
fn perflab_measures_its_own_server_over_h2c_and_h2() {
    let lab = Lab::new();
    let dir = lab.dir.path();
    if require::program("openssl").is_none() {
        return;
    }
    assert!(make_cert(dir), "openssl made no test certificate");
    std::fs::create_dir_all(dir.join("www")).unwrap();
    std::fs::write(dir.join("www/4k.bin"), vec![b'y'; 4096]).unwrap();
    let (_plain, url) = perflab_serve(dir, false);
    let v = lab.json(&[
        "http",
        &format!("{url}4k.bin"),
        "--http2",
        "-c",
        "4",
        "--streams",
        "8",
        "-n",
        "2000",
        "--json",
    ]);
    assert_eq!(
        (v["requests"].as_u64(), v["errors"]["total"].as_u64()),
        (Some(2000), Some(0)),
        "{v}"
    );
    assert_eq!(v["status"]["200"], 2000);
    assert_eq!(v["protocols"]["h2"], 4);
    let (_tls, url) = perflab_serve(dir, true);
    assert!(url.starts_with("https://"), "{url}");
    let v = lab.json(&[
        "http",
        &format!("{url}4k.bin"),
        "-k",
        "-c",
        "2",
        "--streams",
        "4",
        "-n",
        "500",
        "--json",
    ]);
    assert_eq!(
        (v["requests"].as_u64(), v["errors"]["total"].as_u64()),
        (Some(500), Some(0)),
        "{v}"
    );
    assert_eq!(v["protocols"]["h2"], 2, "ALPN picks h2: {}", v["protocols"]);
}
