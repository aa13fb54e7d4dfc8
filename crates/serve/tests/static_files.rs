//! Static files over real sockets: content and MIME types, index.html, directory
//! redirect and listing, HEAD, validators and 304, single ranges (206/416), and the
//! status codes for methods and malformed requests.

mod common;

use common::{get, raw};
use perflab_serve::{Server, ServerHandle};
use std::fs;

fn site() -> (tempfile::TempDir, ServerHandle) {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    fs::write(r.join("hello.txt"), "hello, file\n").unwrap();
    fs::write(r.join("page.html"), "<p>page</p>").unwrap();
    fs::write(r.join("digits.bin"), "0123456789").unwrap();
    fs::write(r.join("empty.txt"), "").unwrap();
    fs::create_dir(r.join("docs")).unwrap();
    fs::write(r.join("docs/index.html"), "<h1>docs</h1>").unwrap();
    fs::create_dir(r.join("list")).unwrap();
    fs::write(r.join("list/b.txt"), "b").unwrap();
    fs::write(r.join("list/<a&b>.txt"), "a").unwrap();
    fs::write(r.join("list/sp ace#.txt"), "s").unwrap();
    fs::create_dir(r.join("list/sub")).unwrap();
    let h = Server::builder()
        .root(r)
        .workers(2)
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    (dir, h)
}

#[test]
fn files_with_mime_types() {
    let (_d, h) = site();
    let a = h.local_addr();
    let r = get(a, "/hello.txt");
    assert_eq!((r.status, r.text().as_str()), (200, "hello, file\n"));
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(r.header("accept-ranges"), Some("bytes"));
    assert_eq!(
        get(a, "/page.html").header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(
        get(a, "/digits.bin").header("content-type"),
        Some("application/octet-stream")
    );
    let e = get(a, "/empty.txt");
    assert_eq!((e.status, e.body.len()), (200, 0));
    assert_eq!(get(a, "/missing").status, 404);
    assert_eq!(get(a, "/hello%2Etxt").text(), "hello, file\n");
    assert_eq!(get(a, "/docs/../hello.txt?x=1").text(), "hello, file\n");
    assert_eq!(get(a, "http://t/hello.txt").text(), "hello, file\n");
}

#[test]
fn index_html_and_directory_redirect() {
    let (_d, h) = site();
    let a = h.local_addr();
    let r = get(a, "/docs/");
    assert_eq!((r.status, r.text().as_str()), (200, "<h1>docs</h1>"));
    let r = get(a, "/docs?q=1");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("location"), Some("/docs/?q=1"));
}

#[test]
fn directory_redirect_never_points_to_another_host() {
    let (d, h) = site();
    std::fs::create_dir(d.path().join("a b")).unwrap();
    let a = h.local_addr();
    // `//docs` as a Location would be a network-path reference to host "docs".
    assert_eq!(get(a, "//docs").header("location"), Some("/docs/"));
    assert_eq!(get(a, "/./docs").header("location"), Some("/docs/"));
    assert_eq!(get(a, "/a%20b").header("location"), Some("/a%20b/"));
}

#[test]
fn directory_listing_sorted_and_escaped() {
    let (_d, h) = site();
    let r = get(h.local_addr(), "/list/");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let html = r.text();
    let pos = |s: &str| {
        html.find(s)
            .unwrap_or_else(|| panic!("{s} missing in {html}"))
    };
    assert!(pos("&lt;a&amp;b&gt;.txt") < pos(">b.txt<"));
    assert!(pos(">b.txt<") < pos("sp ace#.txt"));
    assert!(pos("sp ace#.txt") < pos("href=\"sub/\""));
    assert!(html.contains("href=\"%3Ca%26b%3E.txt\""));
    assert!(html.contains("href=\"sp%20ace%23.txt\""));
    assert!(!html.contains("<a&b>"));
    // The escaped href leads back to the file.
    assert_eq!(get(h.local_addr(), "/list/sp%20ace%23.txt").text(), "s");
}

#[test]
fn head_has_headers_but_no_body() {
    let (_d, h) = site();
    let a = h.local_addr();
    // Keep-alive: a stray body after HEAD would corrupt the next response.
    let mut s = common::connect(a);
    use std::io::{BufReader, Write};
    s.write_all(
        b"HEAD /hello.txt HTTP/1.1\r\nHost: t\r\n\r\nGET /digits.bin HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let head = common::read_response(&mut r, true);
    assert_eq!(
        (head.status, head.header("content-length")),
        (200, Some("12"))
    );
    let next = common::read_response(&mut r, false);
    assert_eq!(next.text(), "0123456789");
}

#[test]
fn conditional_requests_answer_304() {
    let (_d, h) = site();
    let a = h.local_addr();
    let r = get(a, "/hello.txt");
    let etag = r.header("etag").unwrap().to_string();
    let lm = r.header("last-modified").unwrap().to_string();
    let cond = |hdr: &str| {
        raw(
            a,
            format!("GET /hello.txt HTTP/1.1\r\nHost: t\r\n{hdr}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
    };
    let r = cond(&format!("If-None-Match: {etag}"));
    assert_eq!((r.status, r.header("etag")), (304, Some(etag.as_str())));
    assert_eq!(cond(&format!("If-None-Match: \"x\", W/{etag}")).status, 304);
    assert_eq!(cond("If-None-Match: *").status, 304);
    assert_eq!(cond("If-None-Match: \"other\"").status, 200);
    assert_eq!(cond(&format!("If-Modified-Since: {lm}")).status, 304);
    assert_eq!(
        cond("If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT").status,
        200
    );
    // If-None-Match wins over If-Modified-Since.
    assert_eq!(
        cond(&format!(
            "If-None-Match: \"other\"\r\nIf-Modified-Since: {lm}"
        ))
        .status,
        200
    );
}

#[test]
fn single_ranges() {
    let (_d, h) = site();
    let a = h.local_addr();
    let range = |spec: &str| {
        raw(
            a,
            format!(
                "GET /digits.bin HTTP/1.1\r\nHost: t\r\nRange: {spec}\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
    };
    let r = range("bytes=2-4");
    assert_eq!((r.status, r.text().as_str()), (206, "234"));
    assert_eq!(r.header("content-range"), Some("bytes 2-4/10"));
    assert_eq!(range("bytes=7-").text(), "789");
    assert_eq!(range("bytes=-2").text(), "89");
    assert_eq!(range("bytes=8-100").text(), "89");
    let r = range("bytes=10-");
    assert_eq!(
        (r.status, r.header("content-range")),
        (416, Some("bytes */10"))
    );
    assert_eq!(range("bytes=0-1,4-5").status, 200);
    assert_eq!(range("bytes=5-1").status, 200);
    let etag = get(a, "/digits.bin").header("etag").unwrap().to_string();
    let r = raw(
        a,
        format!(
            "GET /digits.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=0-0\r\nIf-Range: {etag}\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 206);
    let r = raw(
        a,
        b"GET /digits.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=0-0\r\nIf-Range: \"stale\"\r\n\r\n",
    );
    assert_eq!((r.status, r.body.len()), (200, 10));
}

#[test]
fn methods_and_malformed_requests() {
    let (_d, h) = site();
    let a = h.local_addr();
    let r = raw(
        a,
        b"POST /hello.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc",
    );
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, HEAD")));
    assert_eq!(raw(a, b"BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n").status, 501);
    assert_eq!(
        raw(a, b"GET / HTTP/1.1\r\n\r\n").status,
        400,
        "1.1 without Host"
    );
    assert_eq!(raw(a, b"GET  / HTTP/1.1\r\nHost: t\r\n\r\n").status, 400);
    assert_eq!(raw(a, b"GET /\x01 HTTP/1.1\r\nHost: t\r\n\r\n").status, 400);
    assert_eq!(
        raw(
            a,
            b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        .status,
        501
    );
    let big = format!(
        "GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
        "x".repeat(17 * 1024)
    );
    let r = raw(a, big.as_bytes());
    assert_eq!((r.status, r.header("connection")), (431, Some("close")));
    let r = raw(a, b"GET /%zz HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 400);
}
