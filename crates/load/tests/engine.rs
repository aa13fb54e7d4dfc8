//! The engine against scripted local servers: framing, closes, errors, timeouts.
mod common;

use common::{ok, refused_addr, status, Reply, TestServer};
use perflab_load::{run, LoadSpec};
use std::time::{Duration, Instant};

fn spec(url: String, connections: usize, requests: u64) -> LoadSpec {
    LoadSpec {
        connections,
        requests: Some(requests),
        timeout: Duration::from_secs(5),
        ..LoadSpec::new(url)
    }
}

#[test]
fn keepalive_reuses_connections() {
    let srv = TestServer::start(|_| Reply::Send(ok("hello")));
    let r = run(&spec(srv.url("/"), 2, 300)).unwrap();
    assert_eq!(r.requests, 300);
    assert_eq!(r.status.get("200"), Some(&300));
    assert_eq!(r.errors.total, 0);
    assert_eq!(r.connections_opened, 2);
    assert_eq!(r.reconnects, 0);
    assert_eq!(r.bytes, 300 * ok("hello").len() as u64);
    assert_eq!(r.failed(), 0);
    assert!(r.latency_ms.p50 > 0.0 && r.latency_ms.max >= r.latency_ms.p99);
}

#[test]
fn connection_close_reconnects_without_errors() {
    let srv = TestServer::start(|_| {
        Reply::SendClose(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok".to_vec(),
        )
    });
    let r = run(&spec(srv.url("/"), 2, 50)).unwrap();
    assert_eq!((r.requests, r.errors.total), (50, 0));
    assert!(r.reconnects >= 45, "reconnects {}", r.reconnects);
}

#[test]
fn body_until_close_is_a_complete_response() {
    let srv = TestServer::start(|_| {
        Reply::SendClose(b"HTTP/1.0 200 OK\r\n\r\nbody runs to the close".to_vec())
    });
    let r = run(&spec(srv.url("/"), 1, 20)).unwrap();
    assert_eq!((r.requests, r.errors.total), (20, 0));
}

#[test]
fn chunked_responses() {
    let body = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n".to_vec();
    let len = body.len() as u64;
    let srv = TestServer::start(move |_| Reply::Send(body.clone()));
    let r = run(&spec(srv.url("/"), 2, 100)).unwrap();
    assert_eq!((r.requests, r.errors.total, r.bytes), (100, 0, 100 * len));
}

#[test]
fn head_204_304_have_no_body() {
    let srv = TestServer::start(|req| match req.method {
        "HEAD" => Reply::Send(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".to_vec()),
        _ if req.path == "/204" => Reply::Send(b"HTTP/1.1 204 No Content\r\n\r\n".to_vec()),
        _ => Reply::Send(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n".to_vec()),
    });
    let mut s = spec(srv.url("/"), 1, 30);
    s.method = "HEAD".into();
    let r = run(&s).unwrap();
    assert_eq!((r.requests, r.errors.total), (30, 0));
    let s = LoadSpec {
        urls: vec![srv.url("/204"), srv.url("/304")],
        ..spec(String::new(), 1, 40)
    };
    let r = run(&s).unwrap();
    assert_eq!(
        (r.status.get("204"), r.status.get("304"), r.errors.total),
        (Some(&20), Some(&20), 0)
    );
}

#[test]
fn statuses_counted_and_failed_in_siege_sense() {
    let srv = TestServer::start(|req| {
        Reply::Send(if req.path == "/a" {
            status(404)
        } else {
            status(500)
        })
    });
    let s = LoadSpec {
        urls: vec![srv.url("/a"), srv.url("/b")],
        // One connection: its round-robin alternates exactly.
        ..spec(String::new(), 1, 100)
    };
    let r = run(&s).unwrap();
    assert_eq!(
        (r.status.get("404"), r.status.get("500")),
        (Some(&50), Some(&50))
    );
    assert_eq!(r.errors.total, 0);
    assert_eq!(
        (r.siege.failed_transactions, r.siege.successful_transactions),
        (100, 0)
    );
    assert_eq!(r.siege.availability, 100.0);
}

#[test]
fn reset_mid_response_is_counted() {
    let srv = TestServer::start(|_| {
        Reply::SendReset(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial".to_vec())
    });
    let r = run(&spec(srv.url("/"), 2, 20)).unwrap();
    assert_eq!(r.requests, 0);
    assert_eq!(r.errors.total, 20, "{:?}", r.error_kinds);
    assert!(r.errors.reset + r.errors.closed == 20);
    assert!(r.errors.reset > 0, "{:?}", r.error_kinds);
}

#[test]
fn silent_server_times_out_and_run_ends_on_time() {
    let srv = TestServer::start(|_| Reply::Silent);
    let s = LoadSpec {
        connections: 2,
        duration: Some(Duration::from_millis(800)),
        timeout: Duration::from_millis(200),
        ..LoadSpec::new(srv.url("/"))
    };
    let t = Instant::now();
    let r = run(&s).unwrap();
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(r.requests, 0);
    assert!(r.errors.timeout >= 4, "{:?}", r.errors);
    assert_eq!(r.errors.timeout, r.error_kinds.read_timeout);
}

#[test]
fn in_flight_at_end_is_cancelled_not_failed() {
    let srv = TestServer::start(|_| Reply::Silent);
    let s = LoadSpec {
        connections: 3,
        duration: Some(Duration::from_millis(300)),
        ..LoadSpec::new(srv.url("/"))
    };
    let r = run(&s).unwrap();
    assert_eq!((r.cancelled_at_end, r.errors.total), (3, 0));
}

#[test]
fn connection_refused_counts_errors_and_ends() {
    let addr = refused_addr();
    let s = LoadSpec {
        connections: 2,
        duration: Some(Duration::from_millis(400)),
        ..LoadSpec::new(format!("http://{addr}/"))
    };
    let t = Instant::now();
    let r = run(&s).unwrap();
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_eq!(r.requests, 0);
    assert!(
        r.errors.connect > 0 && r.errors.connect == r.errors.total,
        "{:?}",
        r.errors
    );
    assert!(r.failed() > 0);
}

#[test]
fn no_keepalive_opens_a_connection_per_request() {
    let srv = TestServer::start(|req| {
        let close = req.head.to_ascii_lowercase().contains("connection: close");
        Reply::SendClose(if close { ok("x") } else { status(400) })
    });
    let mut s = spec(srv.url("/"), 2, 30);
    s.keepalive = false;
    let r = run(&s).unwrap();
    assert_eq!(
        (r.requests, r.status.get("200"), r.errors.total),
        (30, Some(&30), 0)
    );
    assert!(r.connections_opened >= 30);
}

#[test]
fn pipelining_keeps_depth_requests_in_flight() {
    let srv = TestServer::start(|_| Reply::Send(ok("p")));
    let mut s = spec(srv.url("/"), 1, 100);
    s.pipeline = 4;
    let r = run(&s).unwrap();
    assert_eq!((r.requests, r.errors.total), (100, 0));
    assert_eq!(srv.requests.load(std::sync::atomic::Ordering::SeqCst), 100);
}

#[test]
fn warmup_is_not_recorded() {
    let srv = TestServer::start(|_| Reply::Send(ok("w")));
    let s = LoadSpec {
        connections: 1,
        warmup: Duration::from_millis(200),
        duration: Some(Duration::from_millis(200)),
        ..LoadSpec::new(srv.url("/"))
    };
    let r = run(&s).unwrap();
    let served = srv.requests.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        r.requests > 0 && served > r.requests + 10,
        "served {served} recorded {}",
        r.requests
    );
    assert!((0.15..0.4).contains(&r.duration_s), "{}", r.duration_s);
}

#[test]
fn post_body_and_headers_are_sent() {
    let srv = TestServer::start(|req| {
        let good = req.method == "POST"
            && req.head.contains("X-Test: 1")
            && req.head.contains("Content-Length: 4");
        Reply::Send(if good { ok("y") } else { status(400) })
    });
    let mut s = spec(srv.url("/"), 1, 10);
    s.method = "POST".into();
    s.headers = vec![("X-Test".into(), "1".into())];
    s.body = Some(b"data".to_vec());
    let r = run(&s).unwrap();
    assert_eq!(r.status.get("200"), Some(&10));
}

#[test]
fn malformed_response_is_an_error() {
    let srv = TestServer::start(|_| Reply::Send(b"NOT HTTP AT ALL\r\n\r\n".to_vec()));
    let r = run(&spec(srv.url("/"), 1, 10)).unwrap();
    assert_eq!((r.requests, r.errors.malformed), (0, 10));
}

#[test]
fn many_header_lines_are_accepted() {
    let mut resp = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n".to_vec();
    for i in 0..2000 {
        resp.extend_from_slice(format!("X-Header-{i}: value\r\n").as_bytes());
    }
    resp.extend_from_slice(b"\r\nz");
    let srv = TestServer::start(move |_| Reply::Send(resp.clone()));
    let r = run(&spec(srv.url("/"), 1, 5)).unwrap();
    assert_eq!((r.requests, r.errors.total), (5, 0));
}
