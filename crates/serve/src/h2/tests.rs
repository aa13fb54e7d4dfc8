//! The session as a state machine: frames in, frames out, no socket. Each test feeds
//! the client side of a conversation through `Session::recv` / `Session::fill` and
//! checks the frames the server wrote.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Instant;

use perflab_h2::frame::{self, Head};
use perflab_h2::settings::{INITIAL_WINDOW_SIZE, MAX_CONCURRENT_STREAMS};
use perflab_h2::{code, flag, hpack, kind, HEAD_LEN, PREFACE};

use super::{Limits, Scratch, Session, CONN_WINDOW, STREAM_WINDOW};
use crate::config::Config;
use crate::conn::Io;
use crate::dispatch::Env;
use crate::hello::HelloPages;
use crate::response::Response;

/// A frame the server wrote.
#[derive(Debug, Clone)]
struct Frame {
    head: Head,
    payload: Vec<u8>,
}

impl Frame {
    fn is(&self, k: u8) -> bool {
        self.head.kind == k
    }
    fn u32_at(&self, at: usize) -> u32 {
        u32::from_be_bytes(self.payload[at..at + 4].try_into().unwrap())
    }
}

fn frames(mut b: &[u8]) -> Vec<Frame> {
    let mut v = Vec::new();
    while let Some((head, n)) = frame::next(b, perflab_h2::MAX_FRAME_SIZE).unwrap() {
        v.push(Frame {
            head,
            payload: b[HEAD_LEN..n].to_vec(),
        });
        b = &b[n..];
    }
    assert!(b.is_empty(), "a partial frame was written");
    v
}

fn fields(block: &[u8]) -> Vec<(String, String)> {
    let mut v = Vec::new();
    hpack::Decoder::default()
        .decode(block, |n, val| {
            v.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(val).into_owned(),
            ))
        })
        .unwrap();
    v
}

fn field<'a>(f: &'a [(String, String)], name: &str) -> Option<&'a str> {
    f.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// A server's worth of context for one session, and the client's side of it.
struct Harness {
    config: Config,
    root: PathBuf,
    _dir: tempfile::TempDir,
    hello: HelloPages,
    scratch: Scratch,
    requests: u64,
    session: Session,
    /// Bytes fed but not used yet.
    pending: Vec<u8>,
}

const PEER: ([u8; 4], u16) = ([127, 0, 0, 1], 9);

impl Harness {
    fn new(config: Config) -> (Harness, Vec<Frame>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello file\n").unwrap();
        std::fs::write(dir.path().join("big.bin"), vec![7u8; 100_000]).unwrap();
        let mut out = Vec::new();
        let session = Session::new(Limits::of(&config), &mut out);
        let mut hello = HelloPages::default();
        hello.rebuild(b"Date: x\r\n");
        let h = Harness {
            root: dir.path().canonicalize().unwrap(),
            _dir: dir,
            config,
            hello,
            scratch: Scratch::default(),
            requests: 0,
            session,
            pending: Vec::new(),
        };
        (h, frames(&out))
    }

    /// A session past the preface and the SETTINGS exchange.
    fn open(config: Config, settings: &[(u16, u32)]) -> Harness {
        let (mut h, _) = Harness::new(config);
        let mut b = PREFACE.to_vec();
        frame::settings(&mut b, settings);
        let out = h.feed(&b);
        assert!(out[0].is(kind::SETTINGS) && out[0].head.has(flag::ACK));
        h
    }

    /// Feeds client bytes; returns what the server wrote (with `fill` after).
    fn feed(&mut self, bytes: &[u8]) -> Vec<Frame> {
        self.pending.extend_from_slice(bytes);
        let env = Env {
            config: &self.config,
            root: Some(&self.root),
            date: b"Date: x\r\n",
            hello: &self.hello,
        };
        let mut io = Io {
            env: &env,
            log: None,
            requests: &mut self.requests,
            now: Instant::now(),
            draining: false,
            cache: None,
            scratch: &mut self.scratch,
        };
        let mut out = Vec::new();
        let used = self.session.recv(
            &self.pending,
            &mut out,
            usize::MAX,
            &mut io,
            SocketAddr::from(PEER),
        );
        self.pending.drain(..used);
        self.session.fill(&mut out, usize::MAX);
        frames(&out)
    }
}

/// The pseudo-fields of a GET of `path`.
fn get_fields(path: &str) -> [(&[u8], &[u8]); 4] {
    [
        (b":method", b"GET"),
        (b":scheme", b"http"),
        (b":path", path.as_bytes()),
        (b":authority", b"t"),
    ]
}

fn get(stream: u32, path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut f: Vec<(&[u8], &[u8])> = vec![
        (b":method", b"GET"),
        (b":scheme", b"http"),
        (b":path", path.as_bytes()),
        (b":authority", b"t"),
    ];
    f.extend(extra.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
    let mut b = Vec::new();
    frame::headers(&mut b, stream, &hpack::encode(f), true, 16_384);
    b
}

fn data_of(out: &[Frame], stream: u32) -> Vec<u8> {
    out.iter()
        .filter(|f| f.is(kind::DATA) && f.head.stream == stream)
        .flat_map(|f| f.payload.clone())
        .collect()
}

fn ends(out: &[Frame], stream: u32) -> bool {
    out.iter()
        .any(|f| f.head.stream == stream && f.head.has(flag::END_STREAM))
}

#[test]
fn the_server_preface_comes_first_then_settings_are_acked() {
    let (mut h, first) = Harness::new(Config {
        h2_max_streams: 42,
        ..Config::default()
    });
    assert!(first[0].is(kind::SETTINGS) && !first[0].head.has(flag::ACK));
    let pairs: Vec<(u16, u32)> = first[0]
        .payload
        .chunks(6)
        .map(|c| {
            (
                u16::from_be_bytes([c[0], c[1]]),
                u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
            )
        })
        .collect();
    assert_eq!(
        pairs,
        [
            (MAX_CONCURRENT_STREAMS, 42),
            (INITIAL_WINDOW_SIZE, STREAM_WINDOW)
        ]
    );
    assert!(first[1].is(kind::WINDOW_UPDATE));
    assert_eq!(first[1].u32_at(0), CONN_WINDOW - 65_535);
    // The preface may arrive in pieces; nothing happens until it is whole.
    assert!(h.feed(&PREFACE[..10]).is_empty());
    assert!(h.feed(&PREFACE[10..]).is_empty());
    let mut b = Vec::new();
    frame::settings(&mut b, &[]);
    frame::ping(&mut b, false, *b"12345678");
    let out = h.feed(&b);
    assert!(out[0].is(kind::SETTINGS) && out[0].head.has(flag::ACK));
    assert!(out[1].is(kind::PING) && out[1].head.has(flag::ACK));
    assert_eq!(out[1].payload, b"12345678");
}

#[test]
fn a_get_is_answered_with_headers_then_data() {
    let mut h = Harness::open(Config::default(), &[]);
    let out = h.feed(&get(1, "/a.txt", &[]));
    assert!(out[0].is(kind::HEADERS) && out[0].head.has(flag::END_HEADERS));
    let f = fields(&out[0].payload);
    assert_eq!(field(&f, ":status"), Some("200"));
    assert_eq!(field(&f, "content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(field(&f, "content-length"), Some("11"));
    assert!(field(&f, "etag").is_some() && field(&f, "connection").is_none());
    assert_eq!(data_of(&out, 1), b"hello file\n");
    assert!(ends(&out, 1));
    assert_eq!(h.session.active(), 0);
    // A 304 for the same validator, a 404, a HEAD: the HTTP/1.1 path's answers.
    let etag = field(&f, "etag").unwrap().to_string();
    let out = h.feed(&get(3, "/a.txt", &[("if-none-match", &etag)]));
    assert_eq!(field(&fields(&out[0].payload), ":status"), Some("304"));
    assert!(out[0].head.has(flag::END_STREAM) && out.len() == 1);
    let out = h.feed(&get(5, "/missing", &[]));
    assert_eq!(field(&fields(&out[0].payload), ":status"), Some("404"));
    assert_eq!(h.requests, 3);
}

#[test]
fn headers_split_over_continuation_frames_are_one_request() {
    let mut h = Harness::open(Config::default(), &[]);
    let block = hpack::encode([
        (&b":method"[..], &b"HEAD"[..]),
        (b":scheme", b"http"),
        (b":path", b"/a.txt"),
        (b":authority", b"t"),
    ]);
    let mut b = Vec::new();
    frame::headers(&mut b, 1, &block, true, 3); // HEADERS + CONTINUATIONs of 3 bytes
    let out = h.feed(&b);
    let f = fields(&out[0].payload);
    assert_eq!(
        field(&f, "content-length"),
        Some("11"),
        "HEAD keeps the length"
    );
    assert!(
        out[0].head.has(flag::END_STREAM) && out.len() == 1,
        "and has no body"
    );
}

#[test]
fn data_waits_for_the_clients_windows() {
    let mut h = Harness::open(Config::default(), &[(INITIAL_WINDOW_SIZE, 10)]);
    let out = h.feed(&get(1, "/a.txt", &[]));
    assert_eq!(
        data_of(&out, 1),
        b"hello file",
        "10 bytes: the stream window"
    );
    assert!(!ends(&out, 1));
    let mut b = Vec::new();
    frame::window_update(&mut b, 1, 1);
    let out = h.feed(&b);
    assert_eq!(data_of(&out, 1), b"\n");
    assert!(ends(&out, 1));
    // A SETTINGS change of the initial window applies to streams already open.
    let out = h.feed(&get(3, "/big.bin", &[]));
    assert_eq!(data_of(&out, 3).len(), 10);
    let mut b = Vec::new();
    frame::settings(&mut b, &[(INITIAL_WINDOW_SIZE, 1 << 20)]);
    let out = h.feed(&b);
    // The connection window (65,535) is now the limit: 65,535 - 11 - 10 bytes.
    assert_eq!(data_of(&out, 3).len(), 65_535 - 21);
    assert!(out.iter().all(|f| f.payload.len() <= 16_384));
    let mut b = Vec::new();
    frame::window_update(&mut b, 0, 1 << 20);
    let out = h.feed(&b);
    assert_eq!(data_of(&out, 3).len(), 100_000 - (65_535 - 11));
    assert!(ends(&out, 3) && h.session.active() == 0);
}

#[test]
fn a_reset_stream_is_dropped_with_its_queued_body() {
    let mut h = Harness::open(Config::default(), &[(INITIAL_WINDOW_SIZE, 0)]);
    let out = h.feed(&get(1, "/big.bin", &[]));
    assert!(out.len() == 1 && out[0].is(kind::HEADERS));
    assert_eq!(h.session.active(), 1);
    let mut b = Vec::new();
    frame::rst_stream(&mut b, 1, code::CANCEL);
    frame::window_update(&mut b, 1, 1000);
    assert!(h.feed(&b).is_empty(), "nothing more for a reset stream");
    assert_eq!(h.session.active(), 0);
}

#[test]
fn streams_over_the_limit_are_refused() {
    let config = Config {
        h2_max_streams: 1,
        ..Config::default()
    };
    let mut h = Harness::open(config, &[(INITIAL_WINDOW_SIZE, 0)]);
    h.feed(&get(1, "/a.txt", &[]));
    let out = h.feed(&get(3, "/a.txt", &[]));
    assert!(out[0].is(kind::RST_STREAM) && out[0].head.stream == 3);
    assert_eq!(out[0].u32_at(0), code::REFUSED_STREAM);
    // The refused block was still decoded: the HPACK state holds for the next one.
    let mut b = Vec::new();
    frame::settings(&mut b, &[(INITIAL_WINDOW_SIZE, 100)]);
    let out = h.feed(&b);
    assert!(ends(&out, 1));
    let out = h.feed(&get(5, "/a.txt", &[]));
    assert_eq!(data_of(&out, 5), b"hello file\n");
}

#[test]
fn request_bodies_reach_the_handler_and_widen_the_window() {
    let config = Config {
        handler: Some(std::sync::Arc::new(|r: &crate::Request<'_>| {
            Some(Response::text(format!(
                "{} {} {}",
                r.method(),
                r.version(),
                r.body().len()
            )))
        })),
        ..Config::default()
    };
    let mut h = Harness::open(config, &[]);
    let block = hpack::encode([
        (&b":method"[..], &b"POST"[..]),
        (b":scheme", b"http"),
        (b":path", b"/echo"),
        (b":authority", b"t"),
    ]);
    let mut b = Vec::new();
    frame::headers(&mut b, 1, &block, false, 16_384);
    assert!(h.feed(&b).is_empty());
    let chunk = vec![b'x'; 16_384];
    let mut updates = 0;
    for _ in 0..40 {
        let mut b = Vec::new();
        frame::data(&mut b, 1, &chunk, false, 16_384);
        let out = h.feed(&b);
        updates += out
            .iter()
            .filter(|f| f.is(kind::WINDOW_UPDATE) && f.head.stream == 1)
            .count();
    }
    assert_eq!(updates, 1, "one WINDOW_UPDATE per half window received");
    let mut b = Vec::new();
    frame::data(&mut b, 1, b"!", true, 16_384);
    let out = h.feed(&b);
    assert_eq!(
        data_of(&out, 1),
        format!("POST HTTP/2 {}", 40 * 16_384 + 1).as_bytes()
    );
}

#[test]
fn a_body_over_the_limit_is_answered_413_and_the_stream_reset() {
    let config = Config {
        max_body_bytes: 100,
        ..Config::default()
    };
    let mut h = Harness::open(config, &[]);
    let block = hpack::encode([
        (&b":method"[..], &b"PUT"[..]),
        (b":scheme", b"http"),
        (b":path", b"/x"),
        (b":authority", b"t"),
    ]);
    let mut b = Vec::new();
    frame::headers(&mut b, 1, &block, false, 16_384);
    frame::data(&mut b, 1, &[0; 200], false, 16_384);
    let out = h.feed(&b);
    assert_eq!(field(&fields(&out[0].payload), ":status"), Some("413"));
    let rst = out.iter().find(|f| f.is(kind::RST_STREAM)).unwrap();
    assert_eq!(rst.u32_at(0), code::NO_ERROR);
    let mut b = Vec::new();
    frame::data(&mut b, 1, &[0; 50], true, 16_384);
    assert!(h.feed(&b).is_empty(), "the rest is dropped");
}

#[test]
fn a_malformed_request_is_a_stream_error() {
    let mut h = Harness::open(Config::default(), &[]);
    let out = h.feed(&get(1, "/a.txt", &[("connection", "keep-alive")]));
    assert!(out[0].is(kind::RST_STREAM));
    assert_eq!(out[0].u32_at(0), code::PROTOCOL_ERROR);
    assert!(!h.session.failed());
    let out = h.feed(&get(3, "/a.txt", &[]));
    assert!(ends(&out, 3));
}

fn goaway_code(out: &[Frame]) -> Option<u32> {
    out.iter().find(|f| f.is(kind::GOAWAY)).map(|f| f.u32_at(4))
}

#[test]
fn connection_errors_send_goaway_with_their_code() {
    let cases: [(&str, Vec<u8>, u32); 6] = [
        (
            "DATA on stream 0",
            {
                let mut b = Vec::new();
                frame::data(&mut b, 0, b"x", false, 100);
                b
            },
            code::PROTOCOL_ERROR,
        ),
        (
            "oversized frame",
            {
                let mut b = Vec::new();
                frame::write(&mut b, kind::DATA, 0, 1, &vec![0; 20_000]);
                b
            },
            code::FRAME_SIZE_ERROR,
        ),
        (
            "interleaved CONTINUATION",
            {
                let mut b = get(1, "/", &[]);
                b[4] &= !flag::END_HEADERS; // HEADERS without END_HEADERS...
                frame::ping(&mut b, false, [0; 8]); // ...then not a CONTINUATION
                b
            },
            code::PROTOCOL_ERROR,
        ),
        (
            "broken HPACK",
            {
                let mut b = Vec::new();
                frame::headers(&mut b, 1, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff], true, 100);
                b
            },
            code::COMPRESSION_ERROR,
        ),
        (
            "window overflow",
            {
                let mut b = Vec::new();
                frame::window_update(&mut b, 0, perflab_h2::MAX_WINDOW);
                b
            },
            code::FLOW_CONTROL_ERROR,
        ),
        (
            "a PING of 7 bytes",
            {
                let mut b = Vec::new();
                frame::write(&mut b, kind::PING, 0, 0, &[0; 7]);
                b
            },
            code::FRAME_SIZE_ERROR,
        ),
    ];
    for (what, bytes, want) in cases {
        let mut h = Harness::open(Config::default(), &[]);
        let out = h.feed(&bytes);
        assert_eq!(goaway_code(&out), Some(want), "{what}");
        assert!(h.session.failed() && h.session.done(), "{what}");
        assert!(
            h.feed(&get(3, "/a.txt", &[])).is_empty(),
            "{what}: nothing read after"
        );
    }
    // A bad preface, and a preface not followed by SETTINGS.
    let (mut h, _) = Harness::new(Config::default());
    assert_eq!(
        goaway_code(&h.feed(b"GET / HTTP/1.1\r\n\r\n")),
        Some(code::PROTOCOL_ERROR)
    );
    let (mut h, _) = Harness::new(Config::default());
    let mut b = PREFACE.to_vec();
    frame::ping(&mut b, false, [0; 8]);
    assert_eq!(goaway_code(&h.feed(&b)), Some(code::PROTOCOL_ERROR));
}

#[test]
fn after_the_clients_goaway_open_streams_finish_then_the_session_is_done() {
    let mut h = Harness::open(Config::default(), &[(INITIAL_WINDOW_SIZE, 5)]);
    h.feed(&get(1, "/a.txt", &[]));
    let mut b = Vec::new();
    frame::goaway_frame(&mut b, 0, code::NO_ERROR);
    h.feed(&b);
    assert!(!h.session.done(), "stream 1 still sends");
    let mut b = Vec::new();
    frame::window_update(&mut b, 1, 100);
    let out = h.feed(&b);
    assert!(ends(&out, 1));
    assert!(h.session.done() && !h.session.failed());
}

#[test]
fn our_goaway_ignores_later_streams() {
    let mut h = Harness::open(Config::default(), &[]);
    h.feed(&get(1, "/a.txt", &[]));
    let mut out = Vec::new();
    h.session.goaway(&mut out);
    let f = frames(&out);
    assert_eq!((f[0].u32_at(0), f[0].u32_at(4)), (1, code::NO_ERROR));
    assert!(h.feed(&get(3, "/a.txt", &[])).is_empty());
    assert!(h.session.done());
}

mod limits;
mod states;
