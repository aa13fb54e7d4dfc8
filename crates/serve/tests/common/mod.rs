//! A minimal blocking HTTP/1.1 client for the tests: exact bytes out, framing by
//! Content-Length in, every read bounded by a timeout.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

pub const TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, TIMEOUT).expect("connect");
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s.set_write_timeout(Some(TIMEOUT)).unwrap();
    s
}

/// Reads one response; `head_only` for answers to HEAD (no body despite Content-Length).
pub fn read_response(r: &mut impl BufRead, head_only: bool) -> Resp {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        let n = r.read_line(&mut line).expect("read head");
        assert!(
            n > 0,
            "connection closed before a full response head: {head:?}"
        );
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let status = head[9..12].parse().expect("status");
    let mut resp = Resp {
        status,
        head,
        body: Vec::new(),
    };
    let len: usize = resp
        .header("content-length")
        .map_or(0, |v| v.parse().unwrap());
    if !head_only && status != 304 && status / 100 != 1 {
        resp.body = vec![0; len];
        r.read_exact(&mut resp.body).expect("read body");
    }
    resp
}

/// Sends raw bytes on a new connection and reads one response.
pub fn raw(addr: SocketAddr, request: &[u8]) -> Resp {
    let mut s = connect(addr);
    s.write_all(request).unwrap();
    let head_only = request.starts_with(b"HEAD ");
    read_response(&mut BufReader::new(s), head_only)
}

pub fn get(addr: SocketAddr, target: &str) -> Resp {
    raw(
        addr,
        format!("GET {target} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

/// Reads until EOF (or the timeout), returning everything.
pub fn read_to_end(s: &mut TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    all
}

/// Polls `cond` every 10 ms until true or `limit` passes.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}
