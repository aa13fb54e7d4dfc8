//! The client's bounds against a hostile server, frame by frame on [`H2`] with no
//! socket: the header block (bytes and frames), the control replies queued for a socket
//! that does not drain, and windows taken past 2^31-1. Each asserts the bound itself
//! (the block held, the bytes queued) as well as the error kind.

use super::*;
use crate::request::prepare;
use crate::spec::{HttpVersion, LoadSpec};
use std::time::Instant;

fn prepared() -> Prepared {
    let spec = LoadSpec {
        http: HttpVersion::Http2,
        ..LoadSpec::new("http://127.0.0.1:1/")
    };
    prepare(&spec).expect("a valid spec")
}

/// A settled connection with `n` requests in flight on streams 1, 3, ...
fn conn(p: &Prepared, n: usize) -> H2 {
    let mut h = H2::new(10, perflab_h2::DEFAULT_WINDOW);
    let mut settings = Vec::new();
    frame::settings(&mut settings, &[]);
    feed(&mut h, p, &settings).expect("the server's SETTINGS");
    let now = Instant::now();
    for _ in 0..n {
        let sent = Sent {
            intended: now,
            sendable: now,
            written: now,
            record: true,
            head: false,
            target: 0,
        };
        h.send(p, 0, sent);
    }
    h.flush(|b| Ok(b.len())).expect("writes all");
    h
}

/// What one read of `bytes` does: handled like the connection handles a read.
fn feed(h: &mut H2, p: &Prepared, bytes: &[u8]) -> Result<Vec<(Sent, ErrorKind)>, ErrorKind> {
    let (mut done, mut failed) = (Vec::new(), Vec::new());
    h.start = 0;
    (h.start, h.end) = (0, bytes.len());
    h.process(bytes, p, &mut done, &mut failed)?;
    Ok(failed)
}

fn frame_bytes(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::write(&mut out, kind, flags, stream, payload);
    out
}

/// The GOAWAY a connection error queued carries `code`.
fn goaway_queued(h: &H2, code: u32) -> bool {
    h.goaway_code == Some(code) && h.has_output()
}

#[test]
fn endless_continuation_is_a_header_block_too_large_connection_error() {
    let p = prepared();
    let mut h = conn(&p, 1);
    let mut bytes = frame_bytes(kind::HEADERS, 0, 1, &[0x88]);
    let part = vec![0x88u8; 8 * 1024];
    let mut err = None;
    for _ in 0..10_000 {
        bytes.extend(frame_bytes(kind::CONTINUATION, 0, 1, &part));
        match feed(&mut h, &p, &bytes) {
            Ok(_) => bytes.clear(),
            Err(k) => {
                err = Some(k);
                break;
            }
        }
        assert!(h.block.len() <= MAX_HEADER_LIST as usize);
    }
    assert_eq!(err, Some(ErrorKind::HeaderBlockTooLarge));
    assert!(
        h.block.len() <= MAX_HEADER_LIST as usize,
        "{}",
        h.block.len()
    );
    assert!(goaway_queued(&h, perflab_h2::code::ENHANCE_YOUR_CALM));
}

#[test]
fn empty_continuations_are_counted_in_frames() {
    let p = prepared();
    let mut h = conn(&p, 1);
    let mut bytes = frame_bytes(kind::HEADERS, 0, 1, &[0x88]);
    for _ in 0..MAX_BLOCK_FRAMES * 4 {
        bytes.extend(frame_bytes(kind::CONTINUATION, 0, 1, &[]));
    }
    assert_eq!(
        feed(&mut h, &p, &bytes).err(),
        Some(ErrorKind::HeaderBlockTooLarge)
    );
    assert!(h.block_frames <= MAX_BLOCK_FRAMES + 1);
}

/// A 60 KiB response head in 15 frames is within the bounds and completes.
#[test]
fn a_large_header_block_within_the_bounds_completes() {
    let p = prepared();
    let mut h = conn(&p, 1);
    let mut block = vec![0x88u8]; // :status 200
    let value = vec![b'v'; 60 * 1024];
    hpack::encode_field(&mut block, b"x-big", &value);
    let chunks: Vec<&[u8]> = block.chunks(4096).collect();
    let mut bytes = frame_bytes(kind::HEADERS, flag::END_STREAM, 1, chunks[0]);
    for (i, c) in chunks.iter().enumerate().skip(1) {
        let end = if i + 1 == chunks.len() {
            flag::END_HEADERS
        } else {
            0
        };
        bytes.extend(frame_bytes(kind::CONTINUATION, end, 1, c));
    }
    let (mut done, mut failed) = (Vec::new(), Vec::new());
    (h.start, h.end) = (0, bytes.len());
    h.process(&bytes, &p, &mut done, &mut failed)
        .expect("accepted");
    assert_eq!((done.len(), failed.len()), (1, 0));
    assert_eq!(done[0].1.status, 200);
}

#[test]
fn the_client_advertises_its_header_list_bound() {
    let h = H2::new(1, perflab_h2::DEFAULT_WINDOW);
    let settings = &h.out[perflab_h2::PREFACE.len() + HEAD_LEN..];
    let mut peer = Settings::default();
    peer.apply(&settings[..settings.len().min(18)]).unwrap();
    assert_eq!(peer.max_header_list_size, Some(MAX_HEADER_LIST));
}

/// A PING flood with a socket that takes nothing: the queue of ACKs stops at the
/// bound, and stays over it, which the connection turns into `OutputQueueFull`.
#[test]
fn a_ping_flood_stops_at_the_control_queue_bound() {
    let p = prepared();
    let mut h = conn(&p, 1);
    let mut bytes = Vec::new();
    for i in 0..20_000u64 {
        bytes.extend(frame_bytes(kind::PING, 0, 0, &i.to_be_bytes()));
    }
    let (mut done, mut failed) = (Vec::new(), Vec::new());
    (h.start, h.end) = (0, bytes.len());
    h.process(&bytes, &p, &mut done, &mut failed).unwrap();
    assert!(h.control_over_bound());
    assert!(h.start < h.end, "frames are left unhandled");
    let queued = h.out.len() - h.out_pos;
    assert!(queued <= MAX_CONTROL_QUEUE + 64, "{queued} bytes queued");
    let blocked = h.flush(|_| Err(io::ErrorKind::WouldBlock.into()));
    assert!(blocked.is_err() && h.control_over_bound());
    // A socket that drains brings it back: the rest is handled.
    h.flush(|b| Ok(b.len())).unwrap();
    assert!(!h.control_over_bound());
    h.process(&bytes, &p, &mut done, &mut failed).unwrap();
}

#[test]
fn connection_window_past_the_maximum_is_a_flow_control_error() {
    let p = prepared();
    let mut h = conn(&p, 1);
    let inc = perflab_h2::MAX_WINDOW.to_be_bytes();
    let bytes = frame_bytes(kind::WINDOW_UPDATE, 0, 0, &inc);
    assert_eq!(feed(&mut h, &p, &bytes).err(), Some(ErrorKind::FlowControl));
    assert!(goaway_queued(&h, perflab_h2::code::FLOW_CONTROL_ERROR));
}

#[test]
fn stream_window_past_the_maximum_resets_only_that_stream() {
    let p = prepared();
    let mut h = conn(&p, 2);
    let inc = perflab_h2::MAX_WINDOW.to_be_bytes();
    let bytes = frame_bytes(kind::WINDOW_UPDATE, 0, 3, &inc);
    let failed = feed(&mut h, &p, &bytes).expect("a stream error");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].1, ErrorKind::FlowControl);
    assert_eq!(h.in_flight(), 1);
    let out = &h.out[h.out_pos..];
    let head = Head::parse(out);
    assert_eq!((head.kind, head.stream), (kind::RST_STREAM, 3));
    assert_eq!(
        frame::rst_code(&out[HEAD_LEN..HEAD_LEN + 4]).ok(),
        Some(perflab_h2::code::FLOW_CONTROL_ERROR)
    );
    // Up to the maximum is fine.
    let room = (perflab_h2::MAX_WINDOW - perflab_h2::DEFAULT_WINDOW).to_be_bytes();
    let bytes = frame_bytes(kind::WINDOW_UPDATE, 0, 1, &room);
    assert!(feed(&mut h, &p, &bytes).unwrap().is_empty());
}

#[test]
fn initial_window_growth_past_the_maximum_is_a_flow_control_error() {
    let p = prepared();
    let mut h = conn(&p, 1);
    let room = (perflab_h2::MAX_WINDOW - perflab_h2::DEFAULT_WINDOW).to_be_bytes();
    feed(&mut h, &p, &frame_bytes(kind::WINDOW_UPDATE, 0, 1, &room)).unwrap();
    let mut bytes = Vec::new();
    frame::settings(&mut bytes, &[(settings::INITIAL_WINDOW_SIZE, 65_536)]);
    assert_eq!(feed(&mut h, &p, &bytes).err(), Some(ErrorKind::FlowControl));
}
