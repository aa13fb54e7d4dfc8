//! `perflab http --targets`: request mixes in vegeta's HTTP and JSON formats and
//! siege's, reaching a recording server exactly as written (method, headers, body),
//! in the chosen order and weights, with per-target statistics; a bad line is an error
//! with its line number.

mod common;
use common::*;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// A keep-alive server that records every request, answering 200 (or 404 under /missing).
fn recording_server() -> (SocketAddr, Arc<Mutex<Vec<Seen>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let log = log.clone();
            std::thread::spawn(move || serve(s, &log));
        }
    });
    (addr, seen)
}

fn serve(mut s: std::net::TcpStream, log: &Mutex<Vec<Seen>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let mut lines = head.split("\r\n");
            let mut first = lines.next().unwrap_or_default().split(' ');
            let (method, path) = (
                first.next().unwrap_or_default(),
                first.next().unwrap_or_default(),
            );
            let headers: Vec<(String, String)> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect();
            let len: usize = headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                .map_or(0, |(_, v)| v.parse().unwrap());
            if buf.len() < end + 4 + len {
                break;
            }
            let body = buf[end + 4..end + 4 + len].to_vec();
            log.lock().unwrap().push(Seen {
                method: method.to_string(),
                path: path.to_string(),
                headers,
                body,
            });
            let reply: &[u8] = if path.starts_with("/missing") {
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno"
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            };
            buf.drain(..end + 4 + len);
            if s.write_all(reply).is_err() {
                return;
            }
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn header<'a>(s: &'a Seen, name: &str) -> Option<&'a str> {
    s.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[test]
fn a_vegeta_file_reaches_the_server_as_written_in_order() {
    let (addr, seen) = recording_server();
    let lab = Lab::new();
    std::fs::write(lab.path("body.json"), b"{\"user\": \"ada\", \"n\": 1}").unwrap();
    let file = lab.write(
        "targets.txt",
        &format!(
            "# name: list\nGET http://{addr}/items\n\n\
             # name: create\nPOST http://{addr}/items\nContent-Type: application/json\n@body.json\n\n\
             PUT http://{addr}/items/7\nX-Token: secret-7\n"
        ),
    );
    let out = lab.run(&[
        "http",
        "--targets",
        file.to_str().unwrap(),
        "-n",
        "6",
        "-c",
        "1",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen = seen.lock().unwrap().clone();
    let order: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str()))
        .collect();
    assert_eq!(
        order,
        [
            ("GET", "/items"),
            ("POST", "/items"),
            ("PUT", "/items/7"),
            ("GET", "/items"),
            ("POST", "/items"),
            ("PUT", "/items/7")
        ]
    );
    assert_eq!(seen[1].body, b"{\"user\": \"ada\", \"n\": 1}");
    assert_eq!(header(&seen[1], "content-type"), Some("application/json"));
    assert_eq!(header(&seen[2], "x-token"), Some("secret-7"));
    assert!(seen[0].body.is_empty() && header(&seen[0], "x-token").is_none());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let targets = v["targets"].as_array().unwrap();
    let names: Vec<&str> = targets
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[..2], ["list", "create"]);
    assert!(names[2].starts_with("PUT http://"));
    for t in targets {
        assert_eq!(t["requests"], 2, "{t}");
        assert!(t["latency_ms"]["p99"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn weights_and_json_lines_and_per_target_errors() {
    let (addr, seen) = recording_server();
    let lab = Lab::new();
    let file = lab.write(
        "t.jsonl",
        &format!(
            "# name: often weight: 3\n{{\"method\":\"GET\",\"url\":\"http://{addr}/a\"}}\n\
             # name: rare weight: 1\n{{\"method\":\"POST\",\"url\":\"http://{addr}/missing\",\"body\":\"aGVsbG8=\"}}\n"
        ),
    );
    let out = lab.run(&[
        "http",
        "--targets",
        file.to_str().unwrap(),
        "--order",
        "weighted",
        "-n",
        "4000",
        "-c",
        "4",
        "--json",
    ]);
    // The 404s of the rare target are failed requests: exit 4.
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = v["targets"].as_array().unwrap();
    let (often, rare) = (
        t[0]["requests"].as_f64().unwrap(),
        t[1]["requests"].as_f64().unwrap(),
    );
    assert_eq!(often + rare, 4000.0);
    let share = rare / 4000.0;
    assert!((0.2..0.3).contains(&share), "rare share {share}");
    assert_eq!(t[1]["errors"].as_f64().unwrap(), rare);
    assert_eq!(t[0]["errors"], 0);
    assert_eq!(t[1]["status"]["404"].as_f64().unwrap(), rare);
    let posts: Vec<Seen> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.method == "POST")
        .cloned()
        .collect();
    assert!(posts.iter().all(|s| s.body == b"hello"));
    // Per-target thresholds: the rare target's 404s fail its own, not the other's.
    let f = file.to_str().unwrap();
    let out = lab.run(&[
        "http",
        "--targets",
        f,
        "-n",
        "200",
        "--threshold",
        "target=often:errors<1",
        "--threshold",
        "target=rare:error_rate<50%",
        "--threshold",
        "target=rare:p99<10s",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("ok    target=often:errors<1"), "{text}");
    assert!(text.contains("FAIL  target=rare:error_rate<50%"), "{text}");
    assert!(text.contains("ok    target=rare:p99<10s"), "{text}");
}

#[test]
fn a_siege_file_sends_its_bodies_and_variables() {
    let (addr, seen) = recording_server();
    let lab = Lab::new();
    let file = lab.write(
        "urls.siege",
        &format!("HOST={addr}\nhttp://$(HOST)/login POST user=ada&pass=x\nhttp://${{HOST}}/home\n"),
    );
    let out = lab.run(&[
        "http",
        "--targets",
        file.to_str().unwrap(),
        "-n",
        "4",
        "-c",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("Target"), "{}", stdout(&out));
    let seen = seen.lock().unwrap();
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("POST", "/login")
    );
    assert_eq!(seen[0].body, b"user=ada&pass=x");
    assert_eq!(
        (seen[1].method.as_str(), seen[1].path.as_str()),
        ("GET", "/home")
    );
}

#[test]
fn a_bad_line_is_an_error_with_its_line_number() {
    let lab = Lab::new();
    for (name, text, line) in [
        (
            "a.txt",
            "GET http://127.0.0.1:1/\nthis is no header\n",
            ":2:",
        ),
        (
            "b.jsonl",
            "{\"method\":\"GET\",\"url\":\"http://127.0.0.1:1/\"}\n{\"method\": 1}\n",
            ":2:",
        ),
        ("c.siege", "http://127.0.0.1:1/ DELETE\n", ":1:"),
    ] {
        let f = lab.write(name, text);
        let out = lab.run(&["http", "--targets", f.to_str().unwrap(), "-n", "1"]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        assert!(stderr(&out).contains(line), "{name}: {}", stderr(&out));
    }
}
