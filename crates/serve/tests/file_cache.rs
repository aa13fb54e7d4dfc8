//! The open-file cache: files changed, replaced, removed or retargeted while the
//! server runs are served fresh within the cache's validity; its memory stays under
//! its bound; cached answers are byte for byte the uncached ones; `off` is today.

mod common;

use std::io::{BufReader, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{connect, get, raw, read_response, Resp};
use perflab_serve::{FileCacheConfig, Server, ServerHandle};

/// The bound the issue sets: a change is served within 1 s by default.
const FRESH_WITHIN: Duration = Duration::from_secs(1);

fn start(root: &std::path::Path, cache: Option<FileCacheConfig>, workers: usize) -> ServerHandle {
    Server::builder()
        .root(root)
        .workers(workers)
        .file_cache(cache)
        .bind("127.0.0.1:0")
        .start()
        .unwrap()
}

/// Asks until `ok` holds, for at most `FRESH_WITHIN` after `since`; returns the last
/// answer and when it came.
fn poll(addr: SocketAddr, target: &str, since: Instant, ok: impl Fn(&Resp) -> bool) -> Resp {
    loop {
        let r = get(addr, target);
        if ok(&r) {
            return r;
        }
        assert!(
            since.elapsed() < FRESH_WITHIN,
            "{target} still stale {:?} after the change: {} {:?}",
            since.elapsed(),
            r.status,
            r.text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Serves `name` until both workers have it cached (hits counted).
fn warm(server: &ServerHandle, target: &str, body: &str) {
    for _ in 0..20 {
        let r = get(server.local_addr(), target);
        assert_eq!((r.status, r.text().as_str()), (200, body));
    }
    std::thread::sleep(Duration::from_millis(50)); // counters publish once per loop turn
    assert!(server.stats().file_cache_hits > 0, "{:?}", server.stats());
}

#[test]
fn a_file_modified_in_place_is_served_fresh() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "old\n").unwrap();
    let mut s = start(dir.path(), Some(FileCacheConfig::default()), 2);
    warm(&s, "/a.txt", "old\n");
    // Same length, same second: only the content, mtime's nanoseconds and ctime move.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("a.txt"))
        .unwrap();
    f.write_all(b"new\n").unwrap();
    drop(f);
    let t = Instant::now();
    poll(s.local_addr(), "/a.txt", t, |r| r.text() == "new\n");
    s.stop().unwrap();
}

#[test]
fn a_file_replaced_by_rename_is_served_fresh() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "first version\n").unwrap();
    let mut s = start(dir.path(), Some(FileCacheConfig::default()), 2);
    warm(&s, "/a.txt", "first version\n");
    std::fs::write(dir.path().join(".a.tmp"), "second\n").unwrap();
    std::fs::rename(dir.path().join(".a.tmp"), dir.path().join("a.txt")).unwrap();
    let t = Instant::now();
    let r = poll(s.local_addr(), "/a.txt", t, |r| r.text() == "second\n");
    assert_eq!(r.header("content-length"), Some("7"));
    s.stop().unwrap();
}

#[test]
fn a_removed_file_turns_404() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gone.txt"), "here\n").unwrap();
    let mut s = start(dir.path(), Some(FileCacheConfig::default()), 2);
    warm(&s, "/gone.txt", "here\n");
    std::fs::remove_file(dir.path().join("gone.txt")).unwrap();
    let t = Instant::now();
    poll(s.local_addr(), "/gone.txt", t, |r| r.status == 404);
    s.stop().unwrap();
}

#[test]
fn a_retargeted_symlink_is_followed_and_one_leading_outside_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("one.txt"), "one\n").unwrap();
    std::fs::write(dir.path().join("two.txt"), "two\n").unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    let link = dir.path().join("current.txt");
    std::os::unix::fs::symlink("one.txt", &link).unwrap();
    let mut s = start(dir.path(), Some(FileCacheConfig::default()), 2);
    warm(&s, "/current.txt", "one\n");

    let retarget = |to: &std::path::Path| {
        let tmp = dir.path().join(".link.tmp");
        std::os::unix::fs::symlink(to, &tmp).unwrap();
        std::fs::rename(&tmp, &link).unwrap();
    };
    retarget(std::path::Path::new("two.txt"));
    let t = Instant::now();
    poll(s.local_addr(), "/current.txt", t, |r| r.text() == "two\n");

    // A cached entry is no way around the root check: retargeted outside, it is 404.
    warm(&s, "/current.txt", "two\n");
    retarget(&outside.path().join("secret.txt"));
    let t = Instant::now();
    let r = poll(s.local_addr(), "/current.txt", t, |r| r.status != 200);
    assert_eq!(r.status, 404);
    assert!(!r.text().contains("secret"));
    s.stop().unwrap();
}

#[test]
fn memory_stays_under_the_bound_while_10_000_distinct_files_are_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..10_000 {
        let body = format!("{i:05} {}\n", "x".repeat(i % 700));
        std::fs::write(dir.path().join(format!("f{i}.txt")), body).unwrap();
    }
    let bound = 256 << 10;
    let cfg = FileCacheConfig {
        bytes: bound,
        entries: 1_000_000,
        ..FileCacheConfig::default()
    };
    let mut s = start(dir.path(), Some(cfg), 1);
    let mut conn = BufReader::new(connect(s.local_addr()));
    let mut peak = 0;
    for i in 0..10_000 {
        let req = format!("GET /f{i}.txt HTTP/1.1\r\nHost: t\r\n\r\n");
        conn.get_mut().write_all(req.as_bytes()).unwrap();
        let r = read_response(&mut conn, false);
        assert_eq!(r.status, 200, "/f{i}.txt");
        assert!(r.text().starts_with(&format!("{i:05} ")));
        if i % 250 == 249 {
            std::thread::sleep(Duration::from_millis(2)); // let the worker publish
            let st = s.stats();
            peak = peak.max(st.file_cache_bytes);
            assert!(
                st.file_cache_bytes <= bound as u64,
                "{st:?} after {i} files"
            );
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    let st = s.stats();
    assert!(st.file_cache_bytes <= bound as u64, "{st:?}");
    assert!(peak > bound as u64 / 2, "the cache was used: peak {peak}");
    assert!(st.file_cache_entries > 100, "{st:?}");
    assert!(st.file_cache_misses >= 10_000, "{st:?}");
    // The most recent files are still cached: asking again hits.
    let hits = st.file_cache_hits;
    for i in 9_990..10_000 {
        assert_eq!(get(s.local_addr(), &format!("/f{i}.txt")).status, 200);
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(s.stats().file_cache_hits, hits + 10);
    s.stop().unwrap();
}

/// A response without its `Date` line (the only part that may differ between two
/// servers answering the same request).
fn undated(r: &Resp) -> (String, Vec<u8>) {
    let head: String = r
        .head
        .lines()
        .filter(|l| !l.starts_with("Date:"))
        .map(|l| format!("{l}\n"))
        .collect();
    (head, r.body.clone())
}

#[test]
fn cached_answers_are_the_uncached_answers_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.txt"), "hello, cache\n").unwrap();
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.path().join("big.bin"), &big).unwrap();
    // Between the copy limit (16 KiB) and the in-memory limit: sent from the cache's copy.
    std::fs::write(dir.path().join("mid.bin"), &big[..50_000]).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/index.html"), "<p>index</p>\n").unwrap();
    std::fs::create_dir(dir.path().join("list")).unwrap();
    std::fs::write(dir.path().join("list/x.txt"), "x").unwrap();
    std::fs::write(dir.path().join("empty.txt"), "").unwrap();
    let mut cached = start(dir.path(), Some(FileCacheConfig::default()), 1);
    let mut plain = start(dir.path(), None, 1);
    let etag = get(plain.local_addr(), "/small.txt")
        .header("etag")
        .unwrap()
        .to_string();
    let lm = get(plain.local_addr(), "/big.bin")
        .header("last-modified")
        .unwrap()
        .to_string();
    let requests: Vec<String> = [
        "GET /small.txt",
        "HEAD /small.txt",
        "GET /big.bin",
        "HEAD /big.bin",
        "GET /mid.bin",
        "HEAD /mid.bin",
        "GET /empty.txt",
        "GET /sub/",
        "GET /sub",
        "GET /list/",
        "GET /nope.txt",
        "GET /../etc/passwd",
        "GET /%2e%2e/x",
        "GET /sm%61ll.txt",
        "POST /small.txt",
        "GET /small.txt?q=1",
    ]
    .iter()
    .map(|r| format!("{r} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"))
    .chain(
        [
            format!("If-None-Match: {etag}"),
            "If-None-Match: \"nope\"".to_string(),
            format!("If-Modified-Since: {lm}"),
            "Range: bytes=0-4".to_string(),
            "Range: bytes=-3".to_string(),
            "Range: bytes=999999-".to_string(),
            format!("Range: bytes=2-5\r\nIf-Range: {etag}"),
            "Range: bytes=2-5\r\nIf-Range: \"old\"".to_string(),
        ]
        .iter()
        .flat_map(|h| {
            ["/small.txt", "/big.bin"]
                .map(|p| format!("GET {p} HTTP/1.1\r\nHost: t\r\n{h}\r\nConnection: close\r\n\r\n"))
        }),
    )
    .collect();
    for req in &requests {
        let want = undated(&raw(plain.local_addr(), req.as_bytes()));
        // Three times: the first fills the cache, the next ones answer from it.
        for round in 0..3 {
            let got = undated(&raw(cached.local_addr(), req.as_bytes()));
            assert_eq!(got.0, want.0, "head of {req:?}, round {round}");
            assert!(got.1 == want.1, "body of {req:?}, round {round}");
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(cached.stats().file_cache_hits > 20, "{:?}", cached.stats());
    cached.stop().unwrap();
    plain.stop().unwrap();
}

#[test]
fn with_the_cache_off_every_request_sees_the_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = start(dir.path(), None, 2);
    for i in 0..20 {
        let body = format!("version {i}\n");
        std::fs::write(dir.path().join("v.txt"), &body).unwrap();
        let r = get(s.local_addr(), "/v.txt");
        assert_eq!((r.status, r.text()), (200, body));
    }
    std::fs::remove_file(dir.path().join("v.txt")).unwrap();
    assert_eq!(get(s.local_addr(), "/v.txt").status, 404);
    std::thread::sleep(Duration::from_millis(50));
    let st = s.stats();
    assert_eq!(
        (st.file_cache_hits, st.file_cache_entries),
        (0, 0),
        "{st:?}"
    );
    s.stop().unwrap();
}
