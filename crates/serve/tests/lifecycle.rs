//! The embedding API: stop then restart on the same port, restart with a new
//! configuration, every accept strategy serving, handler answers and fallback, a
//! panicking handler, the max-connections limit, and a stop that doesn't wait for
//! idle keep-alive clients.

mod common;

use common::get;
use perflab_serve::{Response, Server, Strategy};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[test]
fn stop_then_restart_serves_on_the_same_port() {
    let mut h = Server::builder()
        .hello(true)
        .workers(2)
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let addr = h.local_addr();
    assert_eq!(get(addr, "/").text(), "Hello, world!\n");
    h.stop().unwrap();
    assert!(!h.is_running());
    assert!(
        TcpStream::connect_timeout(&addr, common::TIMEOUT).is_err(),
        "still listening after stop"
    );
    h.stop().unwrap(); // twice is harmless
    let config = h.config().clone();
    h.restart(config).unwrap();
    assert_eq!(h.local_addr(), addr);
    assert_eq!(get(addr, "/").text(), "Hello, world!\n");
    assert!(
        common::wait_until(common::TIMEOUT, || h.stats().requests == 2),
        "{:?}",
        h.stats()
    );
}

#[test]
fn restart_while_running_applies_a_new_config() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "from disk").unwrap();
    let mut h = Server::builder()
        .hello(true)
        .workers(1)
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let addr = h.local_addr();
    let mut c = h.config().clone();
    c.hello = false;
    c.root = Some(dir.path().to_path_buf());
    c.accept = Strategy::Exclusive;
    c.workers = 2;
    c.bind.set_port(0);
    h.restart(c).unwrap();
    assert_eq!(h.local_addr(), addr);
    assert_eq!(get(addr, "/a.txt").text(), "from disk");
}

#[test]
fn every_accept_strategy_serves() {
    for strategy in Strategy::ALL {
        let h = Server::builder()
            .hello(true)
            .workers(3)
            .accept(strategy)
            .bind("127.0.0.1:0")
            .start()
            .unwrap();
        for _ in 0..40 {
            assert_eq!(get(h.local_addr(), "/").status, 200, "{strategy}");
        }
        assert!(
            common::wait_until(common::TIMEOUT, || h.stats().accepted == 40
                && h.stats().requests == 40),
            "{strategy}: {:?}",
            h.stats()
        );
    }
}

#[test]
fn handler_answers_or_falls_back_to_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("static.txt"), "static").unwrap();
    let h = Server::builder()
        .root(dir.path())
        .workers(1)
        .handler(|req| match req.path() {
            "/hi" => Some(
                Response::text(format!("hi {} {:?}", req.method(), req.query()))
                    .header("X-Handler", "yes"),
            ),
            "/boom" => panic!("handler bug"),
            "/created" => Some(Response::new(201).body("made")),
            _ => None,
        })
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let a = h.local_addr();
    let r = get(a, "/hi?x=1");
    assert_eq!(
        (r.text().as_str(), r.header("x-handler")),
        ("hi GET Some(\"x=1\")", Some("yes"))
    );
    assert_eq!(get(a, "/static.txt").text(), "static");
    assert_eq!(get(a, "/created").status, 201);
    assert_eq!(get(a, "/boom").status, 500);
    assert_eq!(
        get(a, "/hi").status,
        200,
        "a panicking handler leaves the worker alive"
    );
}

#[test]
fn max_connections_refuses_the_excess() {
    let h = Server::builder()
        .hello(true)
        .workers(1)
        .max_connections(2)
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let a = h.local_addr();
    let _c1 = common::connect(a);
    let _c2 = common::connect(a);
    assert!(common::wait_until(common::TIMEOUT, || h.stats().active == 2));
    let mut c3 = common::connect(a);
    let answer = String::from_utf8(common::read_to_end(&mut c3)).unwrap();
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    drop((_c1, _c2));
    assert!(common::wait_until(common::TIMEOUT, || h.stats().active == 0));
    assert_eq!(get(a, "/").status, 200);
}

#[test]
fn stop_closes_idle_keep_alive_connections_at_once() {
    let mut h = Server::builder()
        .hello(true)
        .workers(2)
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let mut idle = common::connect(h.local_addr());
    idle.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut r = std::io::BufReader::new(idle.try_clone().unwrap());
    assert_eq!(common::read_response(&mut r, false).status, 200);
    let t = Instant::now();
    h.stop().unwrap();
    // Not the 5 s shutdown grace nor the 30 s idle timeout (room for a loaded machine).
    assert!(
        t.elapsed() < Duration::from_millis(4500),
        "stop took {:?}",
        t.elapsed()
    );
    assert!(common::read_to_end(&mut idle).is_empty());
}

#[test]
fn bad_settings_are_errors_not_panics() {
    assert!(Server::builder()
        .root("/definitely/not/here")
        .bind("127.0.0.1:0")
        .start()
        .is_err());
    assert!(Server::builder().workers(0).start().is_err());
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let err = Server::builder()
        .bind(taken.local_addr().unwrap())
        .start()
        .unwrap_err();
    assert!(err.to_string().contains("cannot listen"), "{err}");
}
