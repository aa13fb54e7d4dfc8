//! The engine against scripted local servers: framing, closes, errors, timeouts — each
//! behaviour on both I/O engines (`epoll::*` and `uring::*`, see `on_both_engines!`).
mod common;

use common::{ok, refused_addr, run_on, run_within, status, Reply, TestServer};
use perflab_load::{IoChoice, LoadSpec};
use std::time::Duration;

fn spec(io: IoChoice, url: String, connections: usize, requests: u64) -> LoadSpec {
    LoadSpec {
        io,
        connections,
        requests: Some(requests),
        timeout: Duration::from_secs(5),
        ..LoadSpec::new(url)
    }
}

fn keepalive_reuses_connections(io: IoChoice) {
    let srv = TestServer::start(|_| Reply::Send(ok("hello")));
    let r = run_on(&spec(io, srv.url("/"), 2, 300));
    assert_eq!(r.requests, 300);
    assert_eq!(r.status.get("200"), Some(&300));
    assert_eq!(r.errors.total, 0);
    assert_eq!(r.connections_opened, 2);
    assert_eq!(r.reconnects, 0);
    assert_eq!(r.bytes, 300 * ok("hello").len() as u64);
    assert_eq!(r.failed(), 0);
    assert!(r.latency_ms.p50 > 0.0 && r.latency_ms.max >= r.latency_ms.p99);
}

fn connection_close_reconnects_without_errors(io: IoChoice) {
    let srv = TestServer::start(|_| {
        Reply::SendClose(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok".to_vec(),
        )
    });
    let r = run_on(&spec(io, srv.url("/"), 2, 50));
    assert_eq!((r.requests, r.errors.total), (50, 0));
    assert!(r.reconnects >= 45, "reconnects {}", r.reconnects);
}

fn body_until_close_is_a_complete_response(io: IoChoice) {
    let srv = TestServer::start(|_| {
        Reply::SendClose(b"HTTP/1.0 200 OK\r\n\r\nbody runs to the close".to_vec())
    });
    let r = run_on(&spec(io, srv.url("/"), 1, 20));
    assert_eq!((r.requests, r.errors.total), (20, 0));
}

fn chunked_responses(io: IoChoice) {
    let body = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n".to_vec();
    let len = body.len() as u64;
    let srv = TestServer::start(move |_| Reply::Send(body.clone()));
    let r = run_on(&spec(io, srv.url("/"), 2, 100));
    assert_eq!((r.requests, r.errors.total, r.bytes), (100, 0, 100 * len));
}

fn head_204_304_have_no_body(io: IoChoice) {
    let srv = TestServer::start(|req| match req.method {
        "HEAD" => Reply::Send(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".to_vec()),
        _ if req.path == "/204" => Reply::Send(b"HTTP/1.1 204 No Content\r\n\r\n".to_vec()),
        _ => Reply::Send(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n".to_vec()),
    });
    let mut s = spec(io, srv.url("/"), 1, 30);
    s.method = "HEAD".into();
    let r = run_on(&s);
    assert_eq!((r.requests, r.errors.total), (30, 0));
    let s = LoadSpec {
        urls: vec![srv.url("/204"), srv.url("/304")],
        ..spec(io, String::new(), 1, 40)
    };
    let r = run_on(&s);
    assert_eq!(
        (r.status.get("204"), r.status.get("304"), r.errors.total),
        (Some(&20), Some(&20), 0)
    );
}

fn statuses_counted_and_failed_in_siege_sense(io: IoChoice) {
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
        ..spec(io, String::new(), 1, 100)
    };
    let r = run_on(&s);
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

fn reset_mid_response_is_counted(io: IoChoice) {
    let srv = TestServer::start(|_| {
        Reply::SendReset(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial".to_vec())
    });
    let r = run_on(&spec(io, srv.url("/"), 2, 20));
    assert_eq!(r.requests, 0);
    assert_eq!(r.errors.total, 20, "{:?}", r.error_kinds);
    assert!(r.errors.reset + r.errors.closed == 20);
    assert!(r.errors.reset > 0, "{:?}", r.error_kinds);
}

fn silent_server_times_out_and_run_ends_on_time(io: IoChoice) {
    let srv = TestServer::start(|_| Reply::Silent);
    let s = LoadSpec {
        connections: 2,
        duration: Some(Duration::from_millis(800)),
        timeout: Duration::from_millis(200),
        io,
        ..LoadSpec::new(srv.url("/"))
    };
    let r = run_within(&s, Duration::from_millis(1500));
    assert_eq!(r.requests, 0);
    assert!(r.errors.timeout >= 4, "{:?}", r.errors);
    assert_eq!(r.errors.timeout, r.error_kinds.read_timeout);
}

fn in_flight_at_end_is_cancelled_not_failed(io: IoChoice) {
    let srv = TestServer::start(|_| Reply::Silent);
    let s = LoadSpec {
        connections: 3,
        duration: Some(Duration::from_millis(300)),
        io,
        ..LoadSpec::new(srv.url("/"))
    };
    let r = run_on(&s);
    assert_eq!((r.cancelled_at_end, r.errors.total), (3, 0));
}

fn connection_refused_counts_errors_and_ends(io: IoChoice) {
    let addr = refused_addr();
    let s = LoadSpec {
        connections: 2,
        duration: Some(Duration::from_millis(400)),
        io,
        ..LoadSpec::new(format!("http://{addr}/"))
    };
    let r = run_within(&s, Duration::from_secs(2));
    assert_eq!(r.requests, 0);
    assert!(
        r.errors.connect > 0 && r.errors.connect == r.errors.total,
        "{:?}",
        r.errors
    );
    assert!(r.failed() > 0);
}

/// `-n N` against a refused port: exactly N failed requests, whatever the number of
/// connections retrying in parallel.
fn refused_request_count_fails_exactly_that_many(io: IoChoice) {
    let addr = refused_addr();
    for (connections, n) in [(1, 5), (4, 7), (8, 3)] {
        let s = LoadSpec {
            connections,
            requests: Some(n),
            io,
            ..LoadSpec::new(format!("http://{addr}/"))
        };
        let r = run_on(&s);
        assert_eq!(r.requests, 0);
        assert_eq!(
            (r.errors.connect, r.errors.total),
            (n, n),
            "-c {connections} -n {n}: {:?}",
            r.errors
        );
    }
}

fn no_keepalive_opens_a_connection_per_request(io: IoChoice) {
    let srv = TestServer::start(|req| {
        let close = req.head.to_ascii_lowercase().contains("connection: close");
        Reply::SendClose(if close { ok("x") } else { status(400) })
    });
    let mut s = spec(io, srv.url("/"), 2, 30);
    s.keepalive = false;
    let r = run_on(&s);
    assert_eq!(
        (r.requests, r.status.get("200"), r.errors.total),
        (30, Some(&30), 0)
    );
    assert!(r.connections_opened >= 30);
}

fn pipelining_keeps_depth_requests_in_flight(io: IoChoice) {
    let srv = TestServer::start(|_| Reply::Send(ok("p")));
    let mut s = spec(io, srv.url("/"), 1, 100);
    s.pipeline = 4;
    let r = run_on(&s);
    assert_eq!((r.requests, r.errors.total), (100, 0));
    assert_eq!(srv.requests.load(std::sync::atomic::Ordering::SeqCst), 100);
}

fn warmup_is_not_recorded(io: IoChoice) {
    let srv = TestServer::start(|_| Reply::Send(ok("w")));
    let s = LoadSpec {
        connections: 1,
        warmup: Duration::from_millis(200),
        duration: Some(Duration::from_millis(200)),
        io,
        ..LoadSpec::new(srv.url("/"))
    };
    let r = run_on(&s);
    let served = srv.requests.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        r.requests > 0 && served > r.requests + 10,
        "served {served} recorded {}",
        r.requests
    );
    assert!((0.15..0.4).contains(&r.duration_s), "{}", r.duration_s);
}

fn post_body_and_headers_are_sent(io: IoChoice) {
    let srv = TestServer::start(|req| {
        let good = req.method == "POST"
            && req.head.contains("X-Test: 1")
            && req.head.contains("Content-Length: 4");
        Reply::Send(if good { ok("y") } else { status(400) })
    });
    let mut s = spec(io, srv.url("/"), 1, 10);
    s.method = "POST".into();
    s.headers = vec![("X-Test".into(), "1".into())];
    s.body = Some(b"data".to_vec());
    let r = run_on(&s);
    assert_eq!(r.status.get("200"), Some(&10));
}

fn malformed_response_is_an_error(io: IoChoice) {
    let srv = TestServer::start(|_| Reply::Send(b"NOT HTTP AT ALL\r\n\r\n".to_vec()));
    let r = run_on(&spec(io, srv.url("/"), 1, 10));
    assert_eq!((r.requests, r.errors.malformed), (0, 10));
}

fn many_header_lines_are_accepted(io: IoChoice) {
    let mut resp = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n".to_vec();
    for i in 0..2000 {
        resp.extend_from_slice(format!("X-Header-{i}: value\r\n").as_bytes());
    }
    resp.extend_from_slice(b"\r\nz");
    let srv = TestServer::start(move |_| Reply::Send(resp.clone()));
    let r = run_on(&spec(io, srv.url("/"), 1, 5));
    assert_eq!((r.requests, r.errors.total), (5, 0));
}

/// Latency is the server's delay plus loopback, on both engines: never shorter than the
/// delay, not much longer.
fn delayed_replies_measure_their_delay(io: IoChoice) {
    let srv = TestServer::start(|_| Reply::Delay(Duration::from_millis(50), ok("d")));
    let r = run_on(&spec(io, srv.url("/"), 4, 40));
    assert_eq!((r.requests, r.errors.total), (40, 0));
    let min_ms = r.histogram().min() as f64 / 1e3;
    eprintln!(
        "{:?}: min {min_ms} ms, p50 {} ms, max {} ms",
        r.io, r.latency_ms.p50, r.latency_ms.max
    );
    assert!(
        (50.0..=70.0).contains(&r.latency_ms.p50),
        "p50 {} ms",
        r.latency_ms.p50
    );
    assert!(
        min_ms >= 49.9,
        "min {min_ms} ms is below the server's delay"
    );
}

/// Responses far larger than a receive buffer (io_uring: than all of its provided
/// buffers together, so the kernel runs out and the receive is armed again).
fn large_bodies_are_read_whole(io: IoChoice) {
    let body = "b".repeat(1 << 20);
    let resp = ok(&body);
    let len = resp.len() as u64;
    let srv = TestServer::start(move |_| Reply::Send(resp.clone()));
    let r = run_on(&spec(io, srv.url("/"), 2, 10));
    assert_eq!((r.requests, r.errors.total), (10, 0), "{:?}", r.error_kinds);
    assert_eq!(r.bytes, 10 * len);
}

/// Connects that get no answer fail as connect timeouts, and the run still ends on time.
fn connect_timeouts_are_counted(io: IoChoice) {
    let (addr, _held, _listener) = common::unanswered_addr();
    let s = LoadSpec {
        connections: 2,
        duration: Some(Duration::from_millis(600)),
        connect_timeout: Duration::from_millis(100),
        io,
        ..LoadSpec::new(format!("http://{addr}/"))
    };
    let r = run_within(&s, Duration::from_millis(1500));
    assert_eq!(r.requests, 0);
    assert!(r.error_kinds.connect_timeout >= 4, "{:?}", r.error_kinds);
    assert_eq!(r.errors.total, r.error_kinds.connect_timeout);
}

/// A closed loop against a server that answers at once keeps its connections busy:
/// Little's law on the report (req/s × mean latency) gives about `c`, on both engines.
fn closed_loop_keeps_c_in_flight(io: IoChoice) {
    let srv = TestServer::start(|_| Reply::Send(ok("hello")));
    let s = LoadSpec {
        io,
        connections: 4,
        threads: Some(1),
        duration: Some(Duration::from_millis(800)),
        timeout: Duration::from_secs(5),
        ..LoadSpec::new(srv.url("/"))
    };
    let r = run_on(&s);
    assert_eq!(r.errors.total, 0, "{:?}", r.error_kinds);
    assert!(
        r.effective_concurrency >= 3.6,
        "{:?}: {} in flight of 4 ({} req/s, mean {} ms); warnings {:?}",
        r.io,
        r.effective_concurrency,
        r.rps,
        r.latency_ms.mean,
        r.warnings
    );
}

/// A response that is in frees its connection at once: it is not held until others
/// have arrived. One connection to a server that answers at once, two to servers that
/// take 20 ms, on one thread: the fast connection runs at its own pace (23-36k requests
/// a second here, debug build), not at the slow ones' (with the wait asking for two
/// completions, as the io_uring driver's old batching did here, it made 241). Little's
/// law on the report cannot see this: a held response counts as latency.
fn a_response_is_not_held_for_others(io: IoChoice) {
    let fast = TestServer::start(|_| Reply::Send(ok("f")));
    let slow = || TestServer::start(|_| Reply::Delay(Duration::from_millis(20), ok("s")));
    let (slow1, slow2) = (slow(), slow());
    let s = LoadSpec {
        io,
        urls: vec![fast.url("/"), slow1.url("/"), slow2.url("/")],
        connections: 3,
        threads: Some(1),
        duration: Some(Duration::from_secs(1)),
        timeout: Duration::from_secs(5),
        ..LoadSpec::new(fast.url("/"))
    };
    let r = run_on(&s);
    assert_eq!(r.errors.total, 0, "{:?}", r.error_kinds);
    let n = |srv: &TestServer| srv.requests.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        fast.connections.load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    eprintln!(
        "{:?}: fast {}, slow {} and {}",
        r.io,
        n(&fast),
        n(&slow1),
        n(&slow2)
    );
    assert!(
        n(&fast) >= 1000,
        "{:?}: the fast server saw {} requests in 1 s, the slow ones {} and {}",
        r.io,
        n(&fast),
        n(&slow1),
        n(&slow2)
    );
}

on_both_engines!(
    a_response_is_not_held_for_others,
    closed_loop_keeps_c_in_flight,
    connect_timeouts_are_counted,
    large_bodies_are_read_whole,
    delayed_replies_measure_their_delay,
    keepalive_reuses_connections,
    connection_close_reconnects_without_errors,
    body_until_close_is_a_complete_response,
    chunked_responses,
    head_204_304_have_no_body,
    statuses_counted_and_failed_in_siege_sense,
    reset_mid_response_is_counted,
    silent_server_times_out_and_run_ends_on_time,
    in_flight_at_end_is_cancelled_not_failed,
    connection_refused_counts_errors_and_ends,
    refused_request_count_fails_exactly_that_many,
    no_keepalive_opens_a_connection_per_request,
    pipelining_keeps_depth_requests_in_flight,
    warmup_is_not_recorded,
    post_body_and_headers_are_sent,
    malformed_response_is_an_error,
    many_header_lines_are_accepted,
);
