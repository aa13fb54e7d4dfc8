//! HTTP/2 attacks on a real server over loopback sockets: rapid reset, CONTINUATION
//! floods, HPACK decoding bombs, control-frame floods and slowloris over HTTP/2. Four
//! attacker connections run each attack for a few seconds while a well-behaved client
//! on another connection asks for a page now and then: every answer must come within
//! 1 s, the process's RSS may grow by at most 64 MiB, and where the attack has a limit
//! the attacker must be told GOAWAY(ENHANCE_YOUR_CALM) — or, for slowloris, be cut off
//! by the request timeout. The frame-level half (exact budgets, CPU time of a bomb) is
//! `src/h2/tests/limits.rs`. Every thread stops on a flag; every socket has timeouts.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use perflab_h2::frame::Head;
use perflab_h2::{code, flag, frame, hpack, kind, HEAD_LEN, PREFACE};
use perflab_serve::{Rate, Server, ServerHandle};

const ATTACKERS: usize = 4;
const ATTACK: Duration = Duration::from_secs(3);

/// A hello server on two workers; with `PERFLAB_H2_LIMITS_OFF` set, its HTTP/2
/// limits are off (how each test here was shown able to fail).
fn serve(timeout: Duration) -> ServerHandle {
    let mut b = Server::builder()
        .hello(true)
        .workers(2)
        .timeout(timeout)
        .bind("127.0.0.1:0");
    if std::env::var_os("PERFLAB_H2_LIMITS_OFF").is_some() {
        b = b
            .h2_reset_rate(Rate::UNLIMITED)
            .h2_control_rate(Rate::UNLIMITED)
            .h2_max_continuations(u32::MAX);
    }
    b.start().unwrap()
}

fn open(addr: SocketAddr) -> TcpStream {
    let mut s = common::connect(addr);
    let mut b = PREFACE.to_vec();
    frame::settings(&mut b, &[]);
    s.write_all(&b).unwrap();
    s
}

fn get_block() -> Vec<u8> {
    let f: [(&[u8], &[u8]); 4] = [
        (b":method", b"GET"),
        (b":scheme", b"http"),
        (b":path", b"/"),
        (b":authority", b"t"),
    ];
    hpack::encode(f)
}

/// Reads frames until `stop` says so for one of them, or EOF / the timeout (then None).
fn read_until(s: &mut TcpStream, mut stop: impl FnMut(&Head, &[u8]) -> bool) -> Option<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16_384];
    loop {
        while let Ok(Some((h, n))) = frame::next(&buf, 1 << 24) {
            if stop(&h, &buf[HEAD_LEN..n]) {
                return Some(());
            }
            buf.drain(..n);
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// One GET on a new connection: how long until its END_STREAM.
fn probe(addr: SocketAddr) -> Duration {
    let t = Instant::now();
    let mut s = open(addr);
    let mut b = Vec::new();
    frame::headers(&mut b, 1, &get_block(), true, 16_384);
    s.write_all(&b).unwrap();
    read_until(&mut s, |h, _| h.stream == 1 && h.has(flag::END_STREAM)).expect("answered");
    t.elapsed()
}

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// Runs `ATTACKERS` connections writing what `step` makes (given the next stream id)
/// until the attack's time is up or the server closes; meanwhile probes. Returns the
/// GOAWAY codes the attackers got (0 where none) and asserts the probes and RSS.
fn attack(addr: SocketAddr, step: fn(&mut Vec<u8>, u32)) -> Vec<u32> {
    let stop = Arc::new(AtomicBool::new(false));
    let rss_before = rss_kib();
    let attackers: Vec<_> = (0..ATTACKERS)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let s = open(addr);
                let got = Arc::new(AtomicU32::new(0));
                let (mut r, g) = (s.try_clone().unwrap(), got.clone());
                let reader = std::thread::spawn(move || {
                    read_until(&mut r, |h, p| {
                        if h.kind == kind::GOAWAY {
                            g.store(
                                u32::from_be_bytes(p[4..8].try_into().unwrap()),
                                Ordering::SeqCst,
                            );
                        }
                        false
                    });
                });
                let mut w = s;
                let mut id = 1;
                let end = Instant::now() + ATTACK;
                while Instant::now() < end && !stop.load(Ordering::SeqCst) {
                    let mut b = Vec::new();
                    for _ in 0..16 {
                        step(&mut b, id);
                        id += 2;
                    }
                    if w.write_all(&b).is_err() {
                        break;
                    }
                }
                let _ = w.shutdown(std::net::Shutdown::Both);
                reader.join().unwrap();
                got.load(Ordering::SeqCst)
            })
        })
        .collect();
    let mut rss_max = rss_before;
    let t = Instant::now();
    while t.elapsed() < ATTACK {
        let took = probe(addr);
        assert!(
            took < Duration::from_secs(1),
            "a well-behaved client waited {took:?}"
        );
        rss_max = rss_max.max(rss_kib());
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, Ordering::SeqCst);
    let codes = attackers.into_iter().map(|a| a.join().unwrap()).collect();
    assert!(
        rss_max - rss_before < 64 << 10,
        "RSS grew {} KiB",
        rss_max - rss_before
    );
    codes
}

#[test]
fn rapid_reset_attackers_get_goaway_enhance_your_calm_while_others_are_served() {
    let server = serve(Duration::from_secs(10));
    let codes = attack(server.local_addr(), |b, id| {
        frame::headers(b, id, &get_block(), false, 16_384);
        frame::rst_stream(b, id, code::CANCEL);
    });
    assert!(
        codes.iter().all(|&c| c == code::ENHANCE_YOUR_CALM),
        "{codes:?}"
    );
}

#[test]
fn continuation_flood_attackers_get_goaway_enhance_your_calm_while_others_are_served() {
    let server = serve(Duration::from_secs(10));
    let codes = attack(server.local_addr(), |b, id| {
        if id == 1 {
            frame::write(b, kind::HEADERS, flag::END_STREAM, 1, &get_block());
        }
        frame::write(b, kind::CONTINUATION, 0, 1, &[]);
    });
    assert!(
        codes.iter().all(|&c| c == code::ENHANCE_YOUR_CALM),
        "{codes:?}"
    );
}

#[test]
fn hpack_bomb_attackers_do_not_slow_others_down() {
    let server = serve(Duration::from_secs(10));
    attack(server.local_addr(), |b, id| {
        // Stream 1 puts a 4,000-byte entry in the table; every later block refers
        // to it 60,000 times (answered 431).
        let mut block = get_block();
        if id == 1 {
            block.extend([0x40, 0x05]);
            block.extend_from_slice(b"x-big");
            block.extend([0x7f, 0xa1, 0x1e]);
            block.extend(std::iter::repeat_n(b'v', 4000));
        } else {
            block.extend(std::iter::repeat_n(0x80 | 62, 60_000));
        }
        frame::headers(b, id, &block, true, 16_384);
    });
}

#[test]
fn control_frame_flood_attackers_get_goaway_enhance_your_calm_while_others_are_served() {
    let server = serve(Duration::from_secs(10));
    let codes = attack(server.local_addr(), |b, _| frame::ping(b, false, [7; 8]));
    assert!(
        codes.iter().all(|&c| c == code::ENHANCE_YOUR_CALM),
        "{codes:?}"
    );
}

/// Slowloris over HTTP/2: control and unknown frames, each cut in the middle and
/// completed later. None of it is progress, so the connection is closed by the
/// request timeout (1 s here) however long the client keeps it up.
#[test]
fn slowloris_h2_clients_are_closed_by_the_timeout() {
    let timeout = Duration::from_secs(1);
    let server = serve(timeout);
    let addr = server.local_addr();
    let tricks: [fn(&mut Vec<u8>); 3] = [
        |b| frame::ping(b, false, [1; 8]),
        |b| frame::write(b, 0x42, 0, 0, b"x"),
        |b| frame::settings(b, &[]),
    ];
    let clients: Vec<_> = tricks
        .into_iter()
        .map(|trick| {
            std::thread::spawn(move || {
                // No stream open: each half frame flips the connection from idle to
                // the request phase and each completed one back, which used to re-arm
                // the deadline every time.
                let mut s = open(addr);
                let t = Instant::now();
                let mut r = s.try_clone().unwrap();
                let reader = std::thread::spawn(move || {
                    read_until(&mut r, |_, _| false);
                    Instant::now()
                });
                while t.elapsed() < Duration::from_secs(15) && !reader.is_finished() {
                    let mut f = Vec::new();
                    trick(&mut f);
                    let half = f.len() / 2;
                    let ok = s.write_all(&f[..half]).is_ok() && {
                        std::thread::sleep(Duration::from_millis(150));
                        s.write_all(&f[half..]).is_ok()
                    };
                    if !ok {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(150));
                }
                let _ = s.shutdown(std::net::Shutdown::Both);
                reader.join().unwrap() - t
            })
        })
        .collect();
    for c in clients {
        let held = c.join().unwrap();
        assert!(held < timeout + Duration::from_secs(3), "held for {held:?}");
    }
    let took = probe(addr);
    assert!(
        took < Duration::from_secs(1),
        "a well-behaved client waited {took:?}"
    );
}
