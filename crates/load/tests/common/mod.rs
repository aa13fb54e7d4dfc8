//! Small HTTP/1.1 test servers on 127.0.0.1 (OS-chosen ports), one thread per
//! connection, with scripted misbehaviour. They stop when dropped.
#![allow(dead_code)]

#[path = "../../../../tests/require.rs"]
pub mod require;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the server does with one request.
pub enum Reply {
    /// Write these bytes and keep the connection.
    Send(Vec<u8>),
    /// Write these bytes, then close.
    SendClose(Vec<u8>),
    /// Write these bytes, then reset the connection (SO_LINGER 0).
    SendReset(Vec<u8>),
    /// Never answer (keep the connection open until the server stops).
    Silent,
    /// Wait, then write.
    Delay(Duration, Vec<u8>),
}

/// A request as the server saw it.
pub struct Req<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub head: &'a str,
    pub index: u64,
}

type Handler = dyn Fn(&Req<'_>) -> Reply + Send + Sync;

pub struct TestServer {
    pub addr: SocketAddr,
    pub requests: Arc<AtomicU64>,
    pub connections: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

pub fn ok(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

pub fn status(code: u16) -> Vec<u8> {
    format!("HTTP/1.1 {code} X\r\nContent-Length: 2\r\n\r\nno").into_bytes()
}

impl TestServer {
    pub fn start(handler: impl Fn(&Req<'_>) -> Reply + Send + Sync + 'static) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let handler: Arc<Handler> = Arc::new(handler);
        let (s, r, c) = (stop.clone(), requests.clone(), connections.clone());
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                c.fetch_add(1, Ordering::SeqCst);
                let (h, s2, r2) = (handler.clone(), s.clone(), r.clone());
                std::thread::spawn(move || serve(stream, &*h, &s2, &r2));
            }
        });
        TestServer {
            addr,
            requests,
            connections,
            stop,
            accept: Some(accept),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wakes the accept loop
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn serve(mut s: TcpStream, handler: &Handler, stop: &AtomicBool, count: &AtomicU64) {
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf: Vec<u8> = Vec::new();
    let mut tmp = [0u8; 16 * 1024];
    let mut index = 0u64;
    while !stop.load(Ordering::SeqCst) {
        // Serve every complete request in the buffer (pipelining).
        while let Some(end) = find(&buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let body_len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            if buf.len() < end + 4 + body_len {
                break;
            }
            buf.drain(..end + 4 + body_len);
            let mut parts = head.split(' ');
            let method = parts.next().unwrap_or("").to_string();
            let path = parts.next().unwrap_or("").to_string();
            count.fetch_add(1, Ordering::SeqCst);
            let req = Req {
                method: &method,
                path: &path,
                head: &head,
                index,
            };
            index += 1;
            match handler(&req) {
                Reply::Send(b) => {
                    if s.write_all(&b).is_err() {
                        return;
                    }
                }
                Reply::SendClose(b) => {
                    let _ = s.write_all(&b);
                    return;
                }
                Reply::SendReset(b) => {
                    let _ = s.write_all(&b);
                    reset(&s);
                    return;
                }
                Reply::Silent => {
                    while !stop.load(Ordering::SeqCst) {
                        if matches!(s.read(&mut tmp), Ok(0)) {
                            return;
                        }
                    }
                    return;
                }
                Reply::Delay(d, b) => {
                    let until = Instant::now() + d;
                    while Instant::now() < until && !stop.load(Ordering::SeqCst) {
                        std::thread::sleep(
                            until
                                .saturating_duration_since(Instant::now())
                                .min(Duration::from_millis(20)),
                        );
                    }
                    if s.write_all(&b).is_err() {
                        return;
                    }
                }
            }
        }
        match s.read(&mut tmp) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn reset(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc_linger();
    // SAFETY: setsockopt with a valid fd and a correctly sized linger struct.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

fn libc_linger() -> libc::linger {
    libc::linger {
        l_onoff: 1,
        l_linger: 0,
    }
}

/// A port on 127.0.0.1 where nothing listens.
pub fn refused_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// Whether io_uring tests can run here. Where the kernel (or a sandbox) does not allow
/// io_uring they are skipped with a note — or fail, under `PERFLAB_REQUIRE`
/// ([`require`]), on machines that must cover it.
pub fn uring_or_skip() -> bool {
    let support = perflab_load::uring_support();
    require::have(support.map_err(|why| format!("io_uring is unavailable here: {why}"))).is_some()
}

/// Runs `spec` and checks that it ran on the engine it asked for.
pub fn run_on(spec: &perflab_load::LoadSpec) -> perflab_load::Report {
    use perflab_load::{Io, IoChoice};
    let r = perflab_load::run(spec).unwrap();
    match spec.io {
        IoChoice::Epoll => assert_eq!(r.io, Io::Epoll),
        IoChoice::Uring => assert_eq!(r.io, Io::Uring),
        IoChoice::Auto => {}
    }
    r
}

/// [`run_on`], checking that the run ended by itself within `limit`.
pub fn run_within(
    spec: &perflab_load::LoadSpec,
    limit: std::time::Duration,
) -> perflab_load::Report {
    let t = std::time::Instant::now();
    let r = run_on(spec);
    assert!(t.elapsed() < limit, "took {:?}", t.elapsed());
    r
}

/// Turns behaviour tests `fn NAME(io: IoChoice)` into tests `epoll::NAME` and
/// `uring::NAME`, so every behaviour is checked on both I/O engines.
#[macro_export]
macro_rules! on_both_engines {
    ($($name:ident),* $(,)?) => {
        mod epoll {
            $(#[test]
            fn $name() {
                super::$name(perflab_load::IoChoice::Epoll)
            })*
        }
        mod uring {
            $(#[test]
            fn $name() {
                if $crate::common::uring_or_skip() {
                    super::$name(perflab_load::IoChoice::Uring)
                }
            })*
        }
    };
}

/// A listener on 127.0.0.1 whose accept queue is full, so further connects get no
/// answer (the kernel drops their SYNs): they can only time out. Keep the returned
/// value alive for as long as the address is used.
pub fn unanswered_addr() -> (SocketAddr, Vec<TcpStream>, std::os::fd::OwnedFd) {
    use std::os::fd::{AsRawFd, OwnedFd};
    let std_listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = std_listener.local_addr().unwrap();
    let fd: OwnedFd = std_listener.into();
    // SAFETY: listen(2) on a bound socket we own; a backlog of 0 holds one connection.
    assert_eq!(unsafe { libc::listen(fd.as_raw_fd(), 0) }, 0);
    let mut held = Vec::new();
    for _ in 0..2 {
        if let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_millis(100)) {
            held.push(s);
        }
    }
    (addr, held, fd)
}
pub mod h2;
