//! The per-connection limits against hostile clients, frame by frame: rapid reset,
//! CONTINUATION floods, HPACK decoding bombs, control-frame floods. Each test asserts
//! the bound it guards (the GOAWAY code and how much got through before it, or the
//! CPU time) and is bounded in time. The socket-level half (a well-behaved client
//! answered during each attack, the server's RSS, the deadlines) is
//! `crates/serve/tests/h2_hostile.rs`.
//!
//! With `PERFLAB_H2_LIMITS_OFF` set, the configurable limits are switched off
//! (`Rate::UNLIMITED`, no CONTINUATION bound): every test here that guards one of them
//! then fails, which is how each was shown able to fail.

use std::time::Duration;

use super::*;
use crate::config::Rate;

fn config() -> Config {
    let mut c = Config::default();
    if std::env::var_os("PERFLAB_H2_LIMITS_OFF").is_some() {
        c.h2_reset_rate = Rate::UNLIMITED;
        c.h2_control_rate = Rate::UNLIMITED;
        c.h2_max_continuations = u32::MAX;
    }
    c
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to fill.
    assert_eq!(
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) },
        0
    );
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[test]
fn rapid_reset_gets_goaway_enhance_your_calm_within_its_budget() {
    let started = Instant::now();
    let mut h = Harness::open(config(), &[]);
    let rate = h.config.h2_reset_rate;
    let mut resets = 0u64;
    let mut code = None;
    let mut id = 1;
    while code.is_none() && resets < 20_000 && started.elapsed() < Duration::from_secs(20) {
        let mut b = Vec::new();
        frame::headers(
            &mut b,
            id,
            &hpack::encode(get_fields("/a.txt")),
            false,
            16_384,
        );
        frame::rst_stream(&mut b, id, code::CANCEL);
        code = goaway_code(&h.feed(&b));
        resets += 1;
        id += 2;
    }
    assert_eq!(code, Some(code::ENHANCE_YOUR_CALM), "after {resets} resets");
    let allowed = u64::from(rate.burst)
        + (started.elapsed().as_secs_f64() * f64::from(rate.per_sec)) as u64
        + 1;
    assert!(resets <= allowed, "{resets} resets, {allowed} allowed");
    assert!(h.session.failed());
}

/// The variant where the client makes the server reset each stream (a WINDOW_UPDATE
/// of 0 is a stream error): it draws on the same budget.
#[test]
fn rapid_reset_by_provoked_stream_errors_gets_goaway_enhance_your_calm() {
    let mut h = Harness::open(config(), &[]);
    let burst = u64::from(h.config.h2_reset_rate.burst);
    let (mut errors, mut code, mut id) = (0u64, None, 1);
    while code.is_none() && errors < 20_000 {
        let mut b = Vec::new();
        frame::headers(
            &mut b,
            id,
            &hpack::encode(get_fields("/a.txt")),
            false,
            16_384,
        );
        frame::write(&mut b, kind::WINDOW_UPDATE, 0, id, &[0; 4]);
        code = goaway_code(&h.feed(&b));
        errors += 1;
        id += 2;
    }
    assert_eq!(
        code,
        Some(code::ENHANCE_YOUR_CALM),
        "after {errors} stream errors"
    );
    assert!(errors <= 2 * burst, "{errors} stream errors");
}

#[test]
fn continuation_flood_of_empty_frames_gets_goaway_enhance_your_calm() {
    let mut h = Harness::open(config(), &[]);
    let max = h.config.h2_max_continuations;
    let mut b = get(1, "/a.txt", &[]);
    b[4] &= !flag::END_HEADERS;
    let mut out = h.feed(&b);
    let mut sent = 0;
    while goaway_code(&out).is_none() && sent < 500 {
        let mut c = Vec::new();
        frame::write(&mut c, kind::CONTINUATION, 0, 1, &[]);
        out = h.feed(&c);
        sent += 1;
    }
    assert_eq!(goaway_code(&out), Some(code::ENHANCE_YOUR_CALM));
    assert_eq!(sent, max + 1, "the frame past the bound is refused");
}

/// A block of `n` copies of `field` after a GET's pseudo-fields, as HEADERS and as
/// many CONTINUATION frames as it takes.
fn big_block(stream: u32, field: &[u8], n: usize) -> Vec<u8> {
    let mut block = hpack::encode(get_fields("/a.txt"));
    for _ in 0..n {
        block.extend_from_slice(field);
    }
    let mut b = Vec::new();
    frame::headers(&mut b, stream, &block, true, 16_384);
    b
}

#[test]
fn hpack_bomb_is_answered_431_for_little_cpu() {
    // One 4,000-byte entry in the dynamic table (a literal with incremental
    // indexing), then 64 KiB blocks that reference it thousands of times: as an
    // indexed field (1 byte each), and as the name of a literal without indexing.
    let mut h = Harness::open(config(), &[]);
    let big = vec![b'v'; 4000];
    let mut first = hpack::encode(get_fields("/a.txt"));
    first.push(0x40);
    first.push(0x05);
    first.extend_from_slice(b"x-big");
    first.extend([0x7f, (4000 - 127) as u8 | 0x80, ((4000 - 127) >> 7) as u8]);
    first.extend_from_slice(&big);
    let mut b = Vec::new();
    frame::headers(&mut b, 1, &first, true, 16_384);
    assert!(ends(&h.feed(&b), 1), "a 4 KB field is within the limit");
    let n = 60_000;
    for (i, field) in [&[0x80 | 62][..], &[0x0f, 62 - 15, 0x00]]
        .iter()
        .enumerate()
    {
        let attack = big_block(3 + 2 * i as u32, field, n / field.len());
        let cpu = thread_cpu();
        let out = h.feed(&attack);
        let spent = thread_cpu() - cpu;
        let f = out.iter().find(|f| f.is(kind::HEADERS)).expect("answered");
        assert_eq!(field_of(&f.payload, ":status"), Some("431".into()));
        assert!(
            spent < Duration::from_millis(10),
            "variant {i}: {spent:?} of CPU"
        );
    }
    assert!(!h.session.failed(), "the connection goes on");
    // Last, a 4,000-byte *name* in the table, then literals with indexing named by
    // it: each would add a copy of the name to the table; past a budget of copies
    // per block the connection is refused (COMPRESSION_ERROR), still cheaply.
    let mut named = hpack::encode(get_fields("/a.txt"));
    named.push(0x40);
    named.extend([0x7f, 0xa1, 0x1e]);
    named.extend_from_slice(&[b'n'; 4000]);
    named.push(0x00);
    let mut b = Vec::new();
    frame::headers(&mut b, 7, &named, true, 16_384);
    assert!(ends(&h.feed(&b), 7), "a 4 KB name is within the limit");
    let attack = big_block(9, &[0x40 | 62, 0x00], n / 2);
    let cpu = thread_cpu();
    let out = h.feed(&attack);
    let spent = thread_cpu() - cpu;
    assert_eq!(goaway_code(&out), Some(code::COMPRESSION_ERROR));
    assert!(
        spent < Duration::from_millis(10),
        "copies: {spent:?} of CPU"
    );
}

fn field_of(block: &[u8], name: &str) -> Option<String> {
    field(&fields(block), name).map(str::to_string)
}

/// Appends one frame of a flood.
type Writer = fn(&mut Vec<u8>);

#[test]
fn control_frame_flood_gets_goaway_enhance_your_calm() {
    let floods: [(&str, Writer); 5] = [
        ("PING", |b| frame::ping(b, false, [1; 8])),
        ("SETTINGS", |b| frame::settings(b, &[])),
        ("PRIORITY", |b| {
            frame::write(b, kind::PRIORITY, 0, 1, &[0, 0, 0, 0, 15])
        }),
        ("empty DATA", |b| frame::write(b, kind::DATA, 0, 1, &[])),
        ("unknown type", |b| frame::write(b, 0x42, 0, 0, &[])),
    ];
    for (what, one) in floods {
        let started = Instant::now();
        let mut h = Harness::open(config(), &[(INITIAL_WINDOW_SIZE, 0)]);
        let rate = h.config.h2_control_rate;
        h.feed(&get(1, "/big.bin", &[])); // stream 1 stays open for empty DATA
        let mut sent = 0u64;
        let mut code = None;
        while code.is_none() && sent < 20_000 {
            let mut b = Vec::new();
            for _ in 0..100 {
                one(&mut b);
            }
            code = goaway_code(&h.feed(&b));
            sent += 100;
        }
        assert_eq!(code, Some(code::ENHANCE_YOUR_CALM), "{what}: after {sent}");
        let allowed = u64::from(rate.burst)
            + (started.elapsed().as_secs_f64() * f64::from(rate.per_sec)) as u64
            + 100;
        assert!(sent <= allowed, "{what}: {sent} sent, {allowed} allowed");
    }
}
