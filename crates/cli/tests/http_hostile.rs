//! `perflab http` against hostile servers (issue 32): scripted peers on 127.0.0.1, one
//! per class — a header block of endless CONTINUATION frames, a PING flood while the
//! client's replies cannot drain (the server never reads), WINDOW_UPDATEs that take a
//! window past 2^31-1, and servers that accept requests and never answer (HTTP/2 and
//! HTTP/1.1). Each run must end within its duration plus 5 s, stay under 64 MiB of
//! peak RSS (the child's own `ru_maxrss`, from `wait4`), count the errors by kind in
//! `--json`, and exit 4.
//!
//! The servers are hand-framed bytes (a frame is a 9-byte head and a payload): no HTTP/2
//! library, so nothing here can be polite by accident. Each connection has its own
//! thread, bounded by socket timeouts and a stop flag; the client process is killed
//! (by pid) if it outlives its deadline.

mod common;
use common::*;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const HEADERS: u8 = 0x1;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;
const PREFACE_LEN: usize = 24;

/// The recorded duration of every run here, and the slack the issue allows after it.
const DURATION_S: u64 = 3;
const SLACK: Duration = Duration::from_secs(5);
/// The client's peak RSS bound.
const MAX_RSS_KB: i64 = 64 * 1024;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let l = (payload.len() as u32).to_be_bytes();
    let mut out = vec![l[1], l[2], l[3], kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// What a scripted connection does once accepted.
type Script = fn(&mut TcpStream, &AtomicBool, &AtomicU64);

/// A listener whose every connection runs `script` on its own thread.
struct Hostile {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    /// What the scripts count (requests seen).
    seen: Arc<AtomicU64>,
    accept: Option<JoinHandle<()>>,
}

impl Hostile {
    fn start(script: Script) -> Hostile {
        Self::start_with(script, None)
    }

    /// With `rcvbuf` as the accepted sockets' SO_RCVBUF (a server that never reads is
    /// full sooner with a small one).
    fn start_with(script: Script, rcvbuf: Option<libc::c_int>) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        if let Some(size) = rcvbuf {
            // SAFETY: setsockopt on our own listener with a valid int option.
            unsafe {
                libc::setsockopt(
                    listener.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_RCVBUF,
                    (&size as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                );
            }
        }
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicU64::new(0));
        let (sp, sn) = (Arc::clone(&stop), Arc::clone(&seen));
        let accept = std::thread::spawn(move || {
            let mut conns = Vec::new();
            while !sp.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        let (sp, sn) = (Arc::clone(&sp), Arc::clone(&sn));
                        conns.push(std::thread::spawn(move || {
                            let _ = s.set_nonblocking(false);
                            let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
                            let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
                            script(&mut s, &sp, &sn);
                        }));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            for c in conns {
                let _ = c.join();
            }
        });
        Hostile {
            addr,
            stop,
            seen,
            accept: Some(accept),
        }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// Reads exactly `buf`, retrying read timeouts until `stop`; false on EOF or error.
fn read_full(s: &mut TcpStream, buf: &mut [u8], stop: &AtomicBool) -> bool {
    let mut at = 0;
    while at < buf.len() {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        match s.read(&mut buf[at..]) {
            Ok(0) => return false,
            Ok(n) => at += n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return false,
        }
    }
    true
}

/// Writes all of `b`, retrying write timeouts until `stop`; false once the client is
/// gone.
fn write_full(s: &mut TcpStream, b: &[u8], stop: &AtomicBool) -> bool {
    let mut at = 0;
    while at < b.len() {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        match s.write(&b[at..]) {
            Ok(0) => return false,
            Ok(n) => at += n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return false,
        }
    }
    true
}

/// The h2c opening: the client's preface read, an empty SETTINGS sent.
fn open_h2(s: &mut TcpStream, stop: &AtomicBool) -> bool {
    let mut preface = [0u8; PREFACE_LEN];
    read_full(s, &mut preface, stop) && write_full(s, &frame(SETTINGS, 0, 0, &[]), stop)
}

/// Reads frames until the client's next HEADERS; its stream id.
fn next_request(s: &mut TcpStream, stop: &AtomicBool, seen: &AtomicU64) -> Option<u32> {
    loop {
        let mut head = [0u8; 9];
        if !read_full(s, &mut head, stop) {
            return None;
        }
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0u8; len];
        if !read_full(s, &mut payload, stop) {
            return None;
        }
        if head[3] == HEADERS {
            seen.fetch_add(1, Ordering::SeqCst);
            return Some(u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff);
        }
    }
}

/// Reads (and drops) whatever comes until the client closes.
fn read_to_end(s: &mut TcpStream, stop: &AtomicBool) {
    let mut sink = [0u8; 64 * 1024];
    while !stop.load(Ordering::SeqCst) {
        match s.read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// HEADERS without END_HEADERS on the request's stream, then CONTINUATION frames of
/// 16 KiB for as long as the client takes them.
fn endless_continuation(s: &mut TcpStream, stop: &AtomicBool, seen: &AtomicU64) {
    if !open_h2(s, stop) {
        return;
    }
    let Some(id) = next_request(s, stop, seen) else {
        return;
    };
    if !write_full(s, &frame(HEADERS, 0, id, &[0x88]), stop) {
        return;
    }
    let mut burst = Vec::new();
    for _ in 0..8 {
        burst.extend(frame(CONTINUATION, 0, id, &[0x40; 16 * 1024]));
    }
    while write_full(s, &burst, stop) {}
}

/// PINGs as fast as the client reads them, never reading its ACKs.
fn ping_flood(s: &mut TcpStream, stop: &AtomicBool, seen: &AtomicU64) {
    if !open_h2(s, stop) || next_request(s, stop, seen).is_none() {
        return;
    }
    let mut burst = Vec::new();
    for i in 0..4096u64 {
        burst.extend(frame(PING, 0, 0, &i.to_be_bytes()));
    }
    while write_full(s, &burst, stop) {}
}

/// PINGs as fast as the client reads them, its ACKs read (and dropped) as they come,
/// so its socket drains: the flood never ends by itself.
fn draining_ping_flood(s: &mut TcpStream, stop: &AtomicBool, seen: &AtomicU64) {
    if !open_h2(s, stop) || next_request(s, stop, seen).is_none() {
        return;
    }
    let Ok(mut r) = s.try_clone() else { return };
    let done = Arc::new(AtomicBool::new(false));
    let d = Arc::clone(&done);
    let reader = std::thread::spawn(move || read_to_end(&mut r, &d));
    let mut burst = Vec::new();
    for i in 0..4096u64 {
        burst.extend(frame(PING, 0, 0, &i.to_be_bytes()));
    }
    while write_full(s, &burst, stop) {}
    done.store(true, Ordering::SeqCst);
    let _ = reader.join();
}

/// A WINDOW_UPDATE of 2^31-1 on the first request's stream (its window passes the
/// maximum: a stream error), then on the connection at the next request.
fn window_overflow(s: &mut TcpStream, stop: &AtomicBool, seen: &AtomicU64) {
    if !open_h2(s, stop) {
        return;
    }
    let inc = 0x7fff_ffffu32.to_be_bytes();
    for on_stream in [true, false] {
        let Some(id) = next_request(s, stop, seen) else {
            return;
        };
        let target = if on_stream { id } else { 0 };
        if !write_full(s, &frame(WINDOW_UPDATE, 0, target, &inc), stop) {
            return;
        }
    }
    read_to_end(s, stop);
}

/// HTTP/2 accepted, requests read, never answered.
fn silent_h2(s: &mut TcpStream, stop: &AtomicBool, seen: &AtomicU64) {
    if !open_h2(s, stop) {
        return;
    }
    while next_request(s, stop, seen).is_some() {}
}

/// Accepted and read, never answered (HTTP/1.1; or HTTP/2 without even SETTINGS).
fn silent_h1(s: &mut TcpStream, stop: &AtomicBool, _seen: &AtomicU64) {
    read_to_end(s, stop);
}

/// HTTP/1.1: a response head promising a body of a terabyte, then body bytes as fast
/// as the client takes them.
fn endless_h1_body(s: &mut TcpStream, stop: &AtomicBool, _seen: &AtomicU64) {
    let mut head = [0u8; 16];
    if !read_full(s, &mut head, stop) {
        return;
    }
    let start = b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n";
    if !write_full(s, start, stop) {
        return;
    }
    let chunk = vec![b'x'; 64 * 1024];
    while write_full(s, &chunk, stop) {}
}

/// What one bounded run of `perflab http` came to.
struct Outcome {
    code: Option<i32>,
    wall: Duration,
    max_rss_kb: i64,
    json: serde_json::Value,
    stderr: String,
}

/// Runs `perflab http --json -d 3s ARGS URL`, waiting for it with `wait4` (its own peak
/// RSS) until the duration plus the slack, killing it (by pid) past that.
// The child is reaped by `wait4` (for its rusage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run_bounded(lab: &Lab, url: &str, args: &[&str]) -> Outcome {
    let duration = format!("{DURATION_S}s");
    let mut child = lab
        .process()
        .args(["http", "--json", "-c", "2", "-t", "1", "-d", &duration])
        .args(args)
        .arg(url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn perflab");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let pid = child.id() as libc::pid_t;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(DURATION_S) + SLACK;
    let (mut status, mut ru): (libc::c_int, libc::rusage) = (0, unsafe { std::mem::zeroed() });
    let code = loop {
        // SAFETY: wait4 on our own child, with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        }
        if Instant::now() > deadline {
            // SAFETY: our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let wall = started.elapsed();
    let stdout = reader.join().unwrap();
    let stderr = err_reader.join().unwrap();
    Outcome {
        code,
        wall,
        max_rss_kb: ru.ru_maxrss,
        json: serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null),
        stderr,
    }
}

/// The bounds every hostile run must keep; returns the report.
fn assert_bounded(o: &Outcome) -> &serde_json::Value {
    assert!(
        o.code.is_some(),
        "perflab http did not end within {DURATION_S} s + {SLACK:?} (killed after {:?}, peak \
         RSS {} kB): {}",
        o.wall,
        o.max_rss_kb,
        o.stderr
    );
    assert!(
        o.max_rss_kb < MAX_RSS_KB,
        "peak RSS {} kB (bound {MAX_RSS_KB} kB)",
        o.max_rss_kb
    );
    assert_eq!(o.code, Some(4), "exit status; stderr: {}", o.stderr);
    let r = &o.json;
    eprintln!(
        "ended in {:.2?}, peak RSS {} kB, errors {}",
        o.wall, o.max_rss_kb, r["error_kinds"]
    );
    assert!(r["errors"]["total"].as_u64().unwrap_or(0) > 0, "{r:#}");
    assert_eq!(
        r["errors"]["total"], r["failed"]["transport_errors"],
        "{r:#}"
    );
    r
}

fn kind(r: &serde_json::Value, k: &str) -> u64 {
    r["error_kinds"][k].as_u64().unwrap_or(0)
}

#[test]
fn endless_continuation_is_bounded_and_counted() {
    let srv = Hostile::start(endless_continuation);
    let lab = Lab::new();
    let o = run_bounded(&lab, &srv.url(), &["--http2"]);
    let r = assert_bounded(&o);
    assert!(kind(r, "header_block_too_large") > 0, "{r:#}");
    assert_eq!(r["errors"]["malformed"], kind(r, "header_block_too_large"));
}

#[test]
fn ping_flood_with_a_non_draining_socket_is_bounded_and_counted() {
    let srv = Hostile::start_with(ping_flood, Some(4096));
    let lab = Lab::new();
    let o = run_bounded(&lab, &srv.url(), &["--http2"]);
    let r = assert_bounded(&o);
    assert!(kind(r, "output_queue_full") > 0, "{r:#}");
}

/// The end of the run is kept even while a connection never stops delivering frames.
#[test]
fn draining_ping_flood_does_not_hold_the_run() {
    let srv = Hostile::start(draining_ping_flood);
    let lab = Lab::new();
    let o = run_bounded(&lab, &srv.url(), &["--http2"]);
    let r = assert_bounded(&o);
    assert_eq!(kind(r, "stalled"), 2, "{r:#}");
}

#[test]
fn window_overflow_is_a_flow_control_error() {
    let srv = Hostile::start(window_overflow);
    let lab = Lab::new();
    let o = run_bounded(&lab, &srv.url(), &["--http2"]);
    let r = assert_bounded(&o);
    // Both: the stream error (one request) and the connection error (the other).
    assert!(kind(r, "flow_control") >= 2, "{r:#}");
    assert!(srv.seen.load(Ordering::SeqCst) >= 2);
}

#[test]
fn all_requests_stalled_over_h2_exit_4() {
    let srv = Hostile::start(silent_h2);
    let lab = Lab::new();
    let o = run_bounded(&lab, &srv.url(), &["--http2", "--streams", "4"]);
    let r = assert_bounded(&o);
    assert_eq!(r["requests"], 0, "{r:#}");
    // 2 connections × 4 streams, all unanswered for the whole run.
    assert_eq!(kind(r, "stalled"), 8, "{r:#}");
    assert_eq!(r["errors"]["timeout"], 8, "{r:#}");
    assert_eq!(r["cancelled_at_end"], 0, "{r:#}");
}

/// A server that accepts and never sends a byte, not even its SETTINGS: the
/// connections never open (the connect timeout, 5 s, outlasts the run), yet TCP was
/// made, so the run exits 4 with each stuck connection a stalled request — not 0 with
/// nothing counted, and not 1.
#[test]
fn a_server_silent_from_the_start_stalls_over_h2_exit_4() {
    let srv = Hostile::start(silent_h1);
    let lab = Lab::new();
    let o = run_bounded(&lab, &srv.url(), &["--http2"]);
    let r = assert_bounded(&o);
    assert_eq!(kind(r, "stalled"), 2, "{r:#}");
    assert_eq!(r["connections_opened"], 0, "{r:#}");
}

/// The same over HTTP/1.1, on each I/O engine: a body that never ends.
#[test]
fn endless_h1_body_does_not_hold_the_run() {
    let srv = Hostile::start(endless_h1_body);
    let lab = Lab::new();
    for io in ["epoll", "auto"] {
        let o = run_bounded(&lab, &srv.url(), &["--io", io]);
        let r = assert_bounded(&o);
        assert_eq!(kind(r, "stalled"), 2, "{r:#}");
    }
}

#[test]
fn all_requests_stalled_over_h1_exit_4() {
    let srv = Hostile::start(silent_h1);
    let lab = Lab::new();
    let o = run_bounded(&lab, &srv.url(), &[]);
    let r = assert_bounded(&o);
    assert_eq!(r["requests"], 0, "{r:#}");
    assert_eq!(kind(r, "stalled"), 2, "{r:#}");
}
