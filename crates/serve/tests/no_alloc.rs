//! A cached file is answered without a heap allocation (copied after the head, sent
//! from the cache's copy, or with sendfile): a counting global allocator
//! sees no more allocations over thousands of requests than the worker's periodic
//! housekeeping makes (deadline sweeps, the per-second Date line), nowhere near one
//! per request. Alone in its binary, so no other test allocates meanwhile; the client
//! writes and reads with buffers made before counting starts.

mod alloc_count;
use alloc_count::ALLOCS;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Duration;

use perflab_serve::{FileCacheConfig, Server};

/// Reads exactly `buf.len()` bytes (one whole response of known length).
fn read_full(s: &mut TcpStream, buf: &mut [u8]) {
    s.read_exact(buf).expect("a whole response");
}

/// Sends a request and reads one response whose length is learned on the first call.
fn exchange(s: &mut TcpStream, req: &[u8], buf: &mut [u8], len: usize) {
    s.write_all(req).unwrap();
    read_full(s, &mut buf[..len]);
}

/// The length of the response to `req` (head + body), read with a fresh parse.
fn learn_length(s: &mut TcpStream, req: &[u8]) -> usize {
    s.write_all(req).unwrap();
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        got.push(byte[0]);
    }
    let head = String::from_utf8(got.clone()).unwrap();
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    let body: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    let mut rest = vec![0; body];
    s.read_exact(&mut rest).unwrap();
    got.len() + body
}

#[test]
fn a_cached_file_is_answered_without_allocating() {
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
    let reqs: Vec<Vec<u8>> = ["/small.html", "/four.bin", "/large.bin", "/huge.bin"]
        .iter()
        .map(|p| format!("GET {p} HTTP/1.1\r\nHost: t\r\n\r\n").into_bytes())
        .collect();
    let lens: Vec<usize> = reqs.iter().map(|r| learn_length(&mut s, r)).collect();
    let mut buf = vec![0u8; 512 << 10];
    for _ in 0..200 {
        for (r, &n) in reqs.iter().zip(&lens) {
            exchange(&mut s, r, &mut buf, n);
        }
    }
    let rounds = 2_000;
    let before = ALLOCS.load(Ordering::Relaxed);
    for _ in 0..rounds {
        for (r, &n) in reqs.iter().zip(&lens) {
            exchange(&mut s, r, &mut buf, n);
        }
    }
    let allocs = ALLOCS.load(Ordering::Relaxed) - before;
    let requests = rounds * reqs.len() as u64;
    assert_eq!(&buf[lens[3] - 3..lens[3]], &[5, 5, 5]);
    drop(s);
    let stats = server.stats();
    server.stop().unwrap();
    assert!(stats.file_cache_hits >= requests, "{stats:?}");
    // Housekeeping allocates a few times a second; a per-request allocation would
    // show as at least `requests`.
    assert!(
        allocs * 100 < requests,
        "{allocs} allocations over {requests} cached requests"
    );
}
