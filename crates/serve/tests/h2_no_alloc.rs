//! Over HTTP/2 too, a cached file is answered without a heap allocation per request:
//! the request block is decoded, turned into the HTTP/1.1 head, answered from the
//! cache, and its response head's HPACK block comes from the worker's memo — all in
//! buffers that have stopped growing. A counting global allocator sees no more
//! allocations over thousands of requests than the worker's housekeeping makes (as in
//! `no_alloc.rs`, alone in its binary). The client is a few lines of raw frames.

mod alloc_count;
use alloc_count::ALLOCS;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Duration;

use perflab_h2::frame::{self, Head};
use perflab_h2::{flag, hpack, kind, HEAD_LEN, PREFACE};
use perflab_serve::{FileCacheConfig, Server};

/// Reads frames until one ends stream `id`; returns the bytes read (learning a
/// response's length, outside the counted part).
fn learn_length(s: &mut TcpStream, id: u32) -> usize {
    let mut total = 0;
    loop {
        let mut head = [0u8; HEAD_LEN];
        s.read_exact(&mut head).unwrap();
        let h = Head::parse(&head);
        let mut payload = vec![0; h.len as usize];
        s.read_exact(&mut payload).unwrap();
        total += HEAD_LEN + payload.len();
        if h.stream == id && h.has(flag::END_STREAM) {
            return total;
        }
        assert!(
            h.stream == id && matches!(h.kind, kind::HEADERS | kind::DATA),
            "unexpected {h:?}"
        );
    }
}

#[test]
fn a_cached_file_is_answered_over_h2_without_allocating() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.html"), "<h1>It works!</h1>\n").unwrap();
    std::fs::write(dir.path().join("four.bin"), vec![7u8; 4096]).unwrap();
    std::fs::write(dir.path().join("large.bin"), vec![9u8; 100_000]).unwrap();
    std::fs::write(dir.path().join("huge.bin"), vec![5u8; 300_000]).unwrap();
    let mut server = Server::builder()
        .root(dir.path())
        .workers(1)
        .file_cache(Some(FileCacheConfig::default()))
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // Windows as large as they go, so the server never waits for us.
    let mut hello = PREFACE.to_vec();
    let max = perflab_h2::MAX_WINDOW;
    frame::settings(
        &mut hello,
        &[(perflab_h2::settings::INITIAL_WINDOW_SIZE, max)],
    );
    frame::window_update(&mut hello, 0, max - perflab_h2::DEFAULT_WINDOW);
    s.write_all(&hello).unwrap();
    // The server's SETTINGS, WINDOW_UPDATE and its ACK of ours.
    for _ in 0..3 {
        let mut head = [0u8; HEAD_LEN];
        s.read_exact(&mut head).unwrap();
        let mut p = vec![0; Head::parse(&head).len as usize];
        s.read_exact(&mut p).unwrap();
    }
    let paths = ["/small.html", "/four.bin", "/large.bin", "/huge.bin"];
    let blocks: Vec<Vec<u8>> = paths
        .iter()
        .map(|p| {
            hpack::encode([
                (&b":method"[..], &b"GET"[..]),
                (b":scheme", b"http"),
                (b":path", p.as_bytes()),
                (b":authority", b"t"),
            ])
        })
        .collect();
    let mut id = 1u32;
    let mut req = Vec::with_capacity(256);
    let mut request = |s: &mut TcpStream, block: &[u8], id: u32| {
        req.clear();
        frame::headers(&mut req, id, block, true, 16_384);
        s.write_all(&req).unwrap();
    };
    let mut lens = Vec::new();
    for b in &blocks {
        request(&mut s, b, id);
        lens.push(learn_length(&mut s, id));
        id += 2;
    }
    let mut buf = vec![0u8; 512 << 10];
    let mut round = |s: &mut TcpStream, id: &mut u32| {
        for (b, &n) in blocks.iter().zip(&lens) {
            request(s, b, *id);
            s.read_exact(&mut buf[..n]).unwrap();
            *id += 2;
        }
    };
    for _ in 0..200 {
        round(&mut s, &mut id);
    }
    let rounds = 1_000;
    let before = ALLOCS.load(Ordering::Relaxed);
    for _ in 0..rounds {
        round(&mut s, &mut id);
    }
    let allocs = ALLOCS.load(Ordering::Relaxed) - before;
    let requests = rounds * paths.len() as u64;
    drop(s);
    let stats = server.stats();
    server.stop().unwrap();
    assert!(stats.file_cache_hits >= requests, "{stats:?}");
    assert!(
        allocs * 100 < requests,
        "{allocs} allocations over {requests} cached requests"
    );
}
