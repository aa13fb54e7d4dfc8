//! The Rust examples, compiled into this test and run: `hello` answers, and `quiz`
//! walks a session through every question by form POST, keeping the score per
//! cookie (two sessions don't mix, a replayed answer doesn't count twice).

mod common;

#[path = "../examples/hello.rs"]
mod hello;
#[path = "../examples/quiz.rs"]
mod quiz;

use common::{raw, Resp};
use std::net::SocketAddr;

#[test]
fn hello_example_answers() {
    let h = hello::start(0).unwrap();
    let r = common::get(h.local_addr(), "/x%20y");
    assert_eq!(
        (r.status, r.text().as_str()),
        (200, "Hello from Rust! GET /x y\n")
    );
}

fn post(addr: SocketAddr, path: &str, cookie: &str, body: &str) -> Resp {
    raw(
        addr,
        format!(
            "POST {path} HTTP/1.1\r\nHost: t\r\nCookie: {cookie}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
}

fn page(addr: SocketAddr, cookie: &str) -> String {
    raw(
        addr,
        format!("GET / HTTP/1.1\r\nHost: t\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .text()
}

#[test]
fn quiz_keeps_score_per_session() {
    let h = quiz::start(0).unwrap();
    let a = h.local_addr();
    let first = common::get(a, "/");
    assert_eq!(first.status, 200);
    assert!(first.text().contains("Question 1 of 3"));
    let set = first.header("set-cookie").expect("session cookie");
    let cookie = set.split(';').next().unwrap().to_string();
    assert!(cookie.starts_with("quiz="));

    // Answer all: right, right, wrong; replay the first answer (ignored).
    for (q, &(_, _, right)) in quiz::QUESTIONS.iter().enumerate() {
        let a_idx = if q == 2 { (right + 1) % 3 } else { right };
        let r = post(a, "/answer", &cookie, &format!("q={q}&a={a_idx}"));
        assert_eq!((r.status, r.header("location")), (303, Some("/")));
        if q == 0 {
            assert!(page(a, &cookie).contains("Question 2 of 3"));
            post(a, "/answer", &cookie, &format!("q=0&a={right}"));
        }
    }
    assert!(
        page(a, &cookie).contains("Your score: 2/3"),
        "{}",
        page(a, &cookie)
    );

    // Another session starts from zero.
    let other = common::get(a, "/");
    let other_cookie = other
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert_ne!(other_cookie, cookie);
    assert!(page(a, &other_cookie).contains("Question 1 of 3"));
    assert!(page(a, &cookie).contains("Your score: 2/3"));

    post(a, "/reset", &cookie, "");
    assert!(page(a, &cookie).contains("Question 1 of 3"));
    assert_eq!(common::get(a, "/nope").status, 404);
}
