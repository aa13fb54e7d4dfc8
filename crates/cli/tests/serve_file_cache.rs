//! `perflab serve --file-cache`: a cached file whose permissions drop to 000 is
//! refused (403) within the cache's bound by a server that runs unprivileged (root
//! reads mode-000 files, so as root the test drops to nobody with `setpriv`); `off`
//! sees every change at once; a bad value is a usage error naming the flag.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(10);
/// The default `--file-cache` (500ms) promises freshness within 1 s.
const FRESH_WITHIN: Duration = Duration::from_secs(1);

/// The server process, killed when the test ends (also on failure).
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `perflab serve` from `bin` on `dir`, as nobody when we are root.
fn serve(bin: &Path, dir: &Path, extra: &[&str]) -> (Served, SocketAddr) {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut cmd = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(bin);
        c
    } else {
        Command::new(bin)
    };
    cmd.arg("serve")
        .arg(dir)
        .args(["--port", "0", "--workers", "2"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = Served(cmd.spawn().expect("spawn perflab serve"));
    let addr = common::listening_addr(&mut child.0);
    (child, addr)
}

/// (status, body) of a GET on a fresh connection.
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect_timeout(&addr, LIMIT).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1.to_string();
    (status, body)
}

/// A world-readable site, and a copy of the binary nobody may run.
fn site() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let www = dir.path().join("www");
    std::fs::create_dir(&www).unwrap();
    std::fs::set_permissions(&www, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("perflab");
    std::fs::copy(assert_cmd::cargo::cargo_bin("perflab"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, bin)
}

fn write_file(path: &Path, body: &str, mode: u32) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_cached_file_made_unreadable_is_refused_within_the_bound() {
    let (dir, bin) = site();
    let www = dir.path().join("www");
    write_file(&www.join("doc.txt"), "readable\n", 0o644);
    let (_server, addr) = serve(&bin, &www, &[]);
    for _ in 0..10 {
        assert_eq!(get(addr, "/doc.txt"), (200, "readable\n".to_string()));
    }
    std::fs::set_permissions(www.join("doc.txt"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let t = Instant::now();
    loop {
        let (status, body) = get(addr, "/doc.txt");
        if status == 403 {
            assert!(!body.contains("readable"));
            break;
        }
        assert_eq!(status, 200);
        assert!(
            t.elapsed() < FRESH_WITHIN,
            "still served {:?} after chmod 000",
            t.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn with_the_file_cache_off_every_change_shows_at_once() {
    let (dir, bin) = site();
    let www = dir.path().join("www");
    let (_server, addr) = serve(&bin, &www, &["--file-cache", "off"]);
    for i in 0..10 {
        let body = format!("version {i}\n");
        write_file(&www.join("v.txt"), &body, 0o644);
        assert_eq!(get(addr, "/v.txt"), (200, body));
    }
    std::fs::set_permissions(www.join("v.txt"), std::fs::Permissions::from_mode(0o000)).unwrap();
    assert_eq!(get(addr, "/v.txt").0, 403);
    std::fs::remove_file(www.join("v.txt")).unwrap();
    assert_eq!(get(addr, "/v.txt").0, 404);
}

#[test]
fn a_bad_file_cache_value_is_a_usage_error_naming_the_flag() {
    let out = Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["serve", ".", "--port", "0", "--file-cache", "sometimes"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--file-cache"), "{err}");
    assert!(err.contains("off"), "{err}");
}
