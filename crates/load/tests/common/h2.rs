//! A small HTTP/2 test server (h2c with prior knowledge, or over rustls with ALPN `h2`)
//! built from `perflab-h2`'s frames, one thread per connection, blocking sockets, with
//! scripted misbehaviour: GOAWAY after some responses, RST_STREAM on every n-th
//! stream, a tiny flow-control window, a stream limit, flow control of its own
//! responses. It checks what the client does (request bodies arrive whole, the stream
//! limit is kept) and stops when dropped.

use perflab_h2::{flag, frame, hpack, kind, settings, Head, Settings, HEAD_LEN};
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How the server behaves.
#[derive(Clone, Default)]
pub struct H2Config {
    /// Response body length (bytes of `b'x'`).
    pub body_len: usize,
    /// After this many responses on a connection, GOAWAY (last stream = the last
    /// answered) and close.
    pub goaway_after: Option<u64>,
    /// Reset every n-th stream (counted over the whole server) with INTERNAL_ERROR.
    pub rst_every: Option<u64>,
    /// SETTINGS_INITIAL_WINDOW_SIZE it advertises (request bodies).
    pub initial_window: Option<u32>,
    /// SETTINGS_MAX_CONCURRENT_STREAMS it advertises; a stream over it is refused
    /// (RST_STREAM REFUSED_STREAM) and counted in `violations`.
    pub max_streams: Option<u32>,
    /// Answer only when no frame arrived for this long (so concurrent streams are seen
    /// as concurrent).
    pub linger: Option<Duration>,
}

/// Counters the tests read.
#[derive(Default)]
pub struct H2Stats {
    pub responses: AtomicU64,
    pub resets: AtomicU64,
    pub violations: AtomicU64,
    pub connections: AtomicU64,
    /// (method, path, body) of every request, in arrival order.
    pub requests: Mutex<Vec<(String, String, Vec<u8>)>>,
}

pub struct H2Server {
    pub addr: SocketAddr,
    pub stats: Arc<H2Stats>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

/// Wraps an accepted socket (TLS, or as is).
pub type Wrap = Arc<dyn Fn(TcpStream) -> Option<Box<dyn ReadWrite>> + Send + Sync>;

pub trait ReadWrite: Read + Write + Send {}
impl<T: Read + Write + Send> ReadWrite for T {}

impl H2Server {
    /// h2c with prior knowledge.
    pub fn start(cfg: H2Config) -> H2Server {
        Self::start_with(cfg, Arc::new(|s| Some(Box::new(s) as Box<dyn ReadWrite>)))
    }

    /// Over `wrap` (e.g. a rustls server stream).
    pub fn start_with(cfg: H2Config, wrap: Wrap) -> H2Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stats = Arc::new(H2Stats::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (Arc::clone(&stats), Arc::clone(&stop));
        let accept = std::thread::spawn(move || {
            for sock in listener.incoming() {
                if sp.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(sock) = sock else { continue };
                let (cfg, st, wrap) = (cfg.clone(), Arc::clone(&st), Arc::clone(&wrap));
                std::thread::spawn(move || {
                    let _ = sock.set_nodelay(true);
                    let _ =
                        sock.set_read_timeout(Some(cfg.linger.unwrap_or(Duration::from_secs(10))));
                    if let Some(s) = wrap(sock) {
                        st.connections.fetch_add(1, Ordering::SeqCst);
                        Conn::new(cfg, st, s).run();
                    }
                });
            }
        });
        H2Server {
            addr,
            stats,
            stop,
            accept: Some(accept),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for H2Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

struct Req {
    method: String,
    path: String,
    body: Vec<u8>,
    complete: bool,
}

struct Conn {
    cfg: H2Config,
    stats: Arc<H2Stats>,
    s: Box<dyn ReadWrite>,
    peer: Settings,
    decoder: hpack::Decoder,
    streams: HashMap<u32, Req>,
    /// Responses waiting for the client's window: (stream, body bytes left).
    waiting: Vec<(u32, usize)>,
    conn_window: i64,
    windows: HashMap<u32, i64>,
    answered: u64,
    last: u32,
    out: Vec<u8>,
}

impl Conn {
    fn new(cfg: H2Config, stats: Arc<H2Stats>, s: Box<dyn ReadWrite>) -> Conn {
        Conn {
            cfg,
            stats,
            s,
            peer: Settings::default(),
            decoder: hpack::Decoder::default(),
            streams: HashMap::new(),
            waiting: Vec::new(),
            conn_window: 65_535,
            windows: HashMap::new(),
            answered: 0,
            last: 0,
            out: Vec::new(),
        }
    }

    fn send(&mut self) -> bool {
        let ok = self
            .s
            .write_all(&self.out)
            .and_then(|()| self.s.flush())
            .is_ok();
        self.out.clear();
        ok
    }

    fn run(mut self) {
        let mut preface = [0u8; 24];
        if self.s.read_exact(&mut preface).is_err() || preface != perflab_h2::PREFACE {
            return;
        }
        let mut pairs = vec![];
        if let Some(w) = self.cfg.initial_window {
            pairs.push((settings::INITIAL_WINDOW_SIZE, w));
        }
        if let Some(m) = self.cfg.max_streams {
            pairs.push((settings::MAX_CONCURRENT_STREAMS, m));
        }
        frame::settings(&mut self.out, &pairs);
        if !self.send() {
            return;
        }
        let mut head = [0u8; HEAD_LEN];
        loop {
            match self.s.read_exact(&mut head) {
                Ok(()) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    // Quiet: answer what waits (`linger`).
                    if !self.answer_complete() {
                        return;
                    }
                    continue;
                }
                Err(_) => return,
            }
            let h = Head::parse(&head);
            let mut payload = vec![0u8; h.len as usize];
            if self.s.read_exact(&mut payload).is_err() {
                return;
            }
            if !self.frame(h, &payload) {
                return;
            }
            if self.cfg.linger.is_none() && !self.answer_complete() {
                return;
            }
            if !self.out.is_empty() && !self.send() {
                return;
            }
        }
    }

    /// Handles one frame; false ends the connection.
    fn frame(&mut self, h: Head, payload: &[u8]) -> bool {
        match h.kind {
            kind::SETTINGS if !h.has(flag::ACK) => {
                let delta = self.peer.apply(payload).unwrap();
                for w in self.windows.values_mut() {
                    *w += delta;
                }
                frame::settings_ack(&mut self.out);
            }
            kind::HEADERS => {
                let block = frame::unpad(&h, payload).unwrap().to_vec();
                assert!(
                    h.has(flag::END_HEADERS),
                    "the test server takes one-frame blocks"
                );
                let (mut method, mut path) = (String::new(), String::new());
                self.decoder
                    .decode(&block, |n, v| match n {
                        b":method" => method = String::from_utf8_lossy(v).into_owned(),
                        b":path" => path = String::from_utf8_lossy(v).into_owned(),
                        _ => {}
                    })
                    .unwrap();
                let open = self.streams.len() + self.waiting.len();
                if self.cfg.max_streams.is_some_and(|m| open as u32 >= m) {
                    self.stats.violations.fetch_add(1, Ordering::SeqCst);
                    frame::rst_stream(&mut self.out, h.stream, perflab_h2::code::REFUSED_STREAM);
                    return true;
                }
                self.windows
                    .insert(h.stream, i64::from(self.peer.initial_window_size));
                self.streams.insert(
                    h.stream,
                    Req {
                        method,
                        path,
                        body: Vec::new(),
                        complete: h.has(flag::END_STREAM),
                    },
                );
            }
            kind::DATA => {
                let data = frame::unpad(&h, payload).unwrap();
                if h.len > 0 {
                    // Give the window back at once: the tiny window stays tiny.
                    frame::window_update(&mut self.out, 0, h.len);
                    frame::window_update(&mut self.out, h.stream, h.len);
                }
                if let Some(r) = self.streams.get_mut(&h.stream) {
                    r.body.extend_from_slice(data);
                    r.complete |= h.has(flag::END_STREAM);
                }
            }
            kind::WINDOW_UPDATE => {
                let inc = i64::from(frame::window_increment(payload).unwrap());
                if h.stream == 0 {
                    self.conn_window += inc;
                } else if let Some(w) = self.windows.get_mut(&h.stream) {
                    *w += inc;
                }
                self.flush_waiting();
            }
            kind::PING if !h.has(flag::ACK) => {
                frame::ping(&mut self.out, true, payload.try_into().unwrap());
            }
            kind::RST_STREAM => {
                self.streams.remove(&h.stream);
            }
            kind::GOAWAY => return false,
            _ => {}
        }
        true
    }

    /// Answers every complete request; false ends the connection.
    fn answer_complete(&mut self) -> bool {
        let mut ids: Vec<u32> = self
            .streams
            .iter()
            .filter(|(_, r)| r.complete)
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        for id in ids {
            let r = self.streams.remove(&id).unwrap();
            self.stats
                .requests
                .lock()
                .unwrap()
                .push((r.method, r.path, r.body));
            let n = self.stats.responses.fetch_add(1, Ordering::SeqCst) + 1;
            if self.cfg.rst_every.is_some_and(|k| n.is_multiple_of(k)) {
                self.stats.resets.fetch_add(1, Ordering::SeqCst);
                frame::rst_stream(&mut self.out, id, perflab_h2::code::INTERNAL_ERROR);
                self.windows.remove(&id);
                continue;
            }
            let len = self.cfg.body_len.to_string();
            let block = hpack::encode([
                (&b":status"[..], &b"200"[..]),
                (b"content-length", len.as_bytes()),
            ]);
            frame::headers(&mut self.out, id, &block, self.cfg.body_len == 0, 16_384);
            if self.cfg.body_len > 0 {
                self.waiting.push((id, self.cfg.body_len));
            }
            self.answered += 1;
            self.last = id;
            if self.cfg.goaway_after == Some(self.answered) {
                self.flush_waiting();
                frame::goaway_frame(&mut self.out, self.last, perflab_h2::code::NO_ERROR);
                self.send();
                std::thread::sleep(Duration::from_millis(20));
                return false;
            }
        }
        self.flush_waiting();
        if !self.out.is_empty() {
            return self.send();
        }
        true
    }

    /// Sends what the client's windows allow of the waiting response bodies.
    fn flush_waiting(&mut self) {
        let body = vec![b'x'; 16_384];
        let max = self.peer.max_frame_size as usize;
        let mut still = Vec::new();
        for (id, mut left) in std::mem::take(&mut self.waiting) {
            loop {
                let w = self.windows.get(&id).copied().unwrap_or(0);
                let room = w.min(self.conn_window).max(0) as usize;
                let n = room.min(left).min(max).min(body.len());
                if n == 0 {
                    break;
                }
                left -= n;
                frame::data(&mut self.out, id, &body[..n], left == 0, max as u32);
                self.conn_window -= n as i64;
                *self.windows.get_mut(&id).unwrap() -= n as i64;
            }
            if left > 0 {
                still.push((id, left));
            } else {
                self.windows.remove(&id);
            }
        }
        self.waiting = still;
    }
}
