//! Connection reuse: keep-alive for 1.1 and for 1.0 with `Connection: keep-alive`,
//! `Connection: close` honoured, pipelined requests answered in order (mixing
//! buffered answers and sendfile bodies, split across writes), and a request body
//! that arrives in pieces, with `Expect: 100-continue`.

mod common;

use common::{connect, read_response, read_to_end};
use perflab_serve::{Response, Server};
use std::io::{BufReader, Write};

fn server() -> (tempfile::TempDir, perflab_serve::ServerHandle) {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..5 {
        std::fs::write(
            dir.path().join(format!("f{i}.txt")),
            format!("file {i}").repeat(i + 1),
        )
        .unwrap();
    }
    let h = Server::builder()
        .root(dir.path())
        .workers(1)
        .handler(|req| match req.path() {
            "/echo" => Some(Response::text(req.body().to_vec())),
            p if p.starts_with("/dyn/") => Some(Response::text(p[5..].to_string())),
            _ => None,
        })
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    (dir, h)
}

#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let (_d, h) = server();
    let s = connect(h.local_addr());
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    for i in 0..20 {
        write!(w, "GET /f{} HTTP/1.1\r\nHost: t\r\n\r\n", i % 5).unwrap();
        let resp = read_response(&mut r, false);
        assert_eq!(resp.status, 404); // /fN has no .txt: still answered on the same connection
        write!(w, "GET /f{}.txt HTTP/1.1\r\nHost: t\r\n\r\n", i % 5).unwrap();
        let resp = read_response(&mut r, false);
        assert_eq!(resp.text(), format!("file {}", i % 5).repeat(i % 5 + 1));
        assert_eq!(resp.header("connection"), None);
    }
    // Counters are published once per event-loop turn, just after the write.
    let want = |s: perflab_serve::Stats| s.accepted == 1 && s.requests == 40 && s.active == 1;
    assert!(
        common::wait_until(common::TIMEOUT, || want(h.stats())),
        "{:?}",
        h.stats()
    );
}

#[test]
fn http10_keep_alive_and_close() {
    let (_d, h) = server();
    let s = connect(h.local_addr());
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    w.write_all(b"GET /f0.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        .unwrap();
    let resp = read_response(&mut r, false);
    assert_eq!(resp.header("connection"), Some("keep-alive"));
    w.write_all(b"GET /f0.txt HTTP/1.0\r\n\r\n").unwrap();
    let resp = read_response(&mut r, false);
    assert_eq!(resp.header("connection"), Some("close"));
    let mut s = r.into_inner();
    assert!(
        read_to_end(&mut s).is_empty(),
        "server closes after a 1.0 response"
    );
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let (_d, h) = server();
    let s = connect(h.local_addr());
    let mut w = s.try_clone().unwrap();
    let mut all = Vec::new();
    let mut expected = Vec::new();
    for i in 0..30 {
        match i % 3 {
            0 => {
                all.extend(format!("GET /f{}.txt HTTP/1.1\r\nHost: t\r\n\r\n", i % 5).bytes());
                expected.push(format!("file {}", i % 5).repeat(i % 5 + 1));
            }
            1 => {
                all.extend(format!("GET /dyn/{i} HTTP/1.1\r\nHost: t\r\n\r\n").bytes());
                expected.push(i.to_string());
            }
            _ => {
                all.extend(
                    format!("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nb{i:03}")
                        .bytes(),
                );
                expected.push(format!("b{i:03}"));
            }
        }
    }
    // Send in odd-sized pieces so requests straddle reads.
    for chunk in all.chunks(37) {
        w.write_all(chunk).unwrap();
    }
    let mut r = BufReader::new(s);
    for want in &expected {
        assert_eq!(&read_response(&mut r, false).text(), want);
    }
}

#[test]
fn connection_close_is_honoured() {
    let (_d, h) = server();
    let mut s = connect(h.local_addr());
    s.write_all(b"GET /f1.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nGET /f2.txt HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let text = String::from_utf8(read_to_end(&mut s)).unwrap();
    assert_eq!(text.matches("HTTP/1.1 200").count(), 1, "{text}");
    assert!(text.ends_with("file 1file 1"));
}

#[test]
fn body_in_pieces_with_expect_continue() {
    let (_d, h) = server();
    let s = connect(h.local_addr());
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    w.write_all(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n",
    )
    .unwrap();
    let cont = read_response(&mut r, false);
    assert_eq!(cont.status, 100);
    w.write_all(b"01234").unwrap();
    w.write_all(b"56789").unwrap();
    assert_eq!(read_response(&mut r, false).text(), "0123456789");
}
