//! A peer that closes is closed at once: after 1000 clients connect and go away
//! (silently, mid-request, or after sending a whole request without reading the
//! answer), no socket on the server's port is left in CLOSE_WAIT in /proc/net/tcp.

mod common;

use perflab_serve::Server;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

/// Sockets in CLOSE_WAIT (state 08) whose local port is `port`, from tcp and tcp6.
fn close_wait_on(port: u16) -> usize {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| t.lines().skip(1).map(str::to_string).collect::<Vec<_>>())
        .filter(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let local_port = cols.get(1).and_then(|a| a.rsplit(':').next());
            let local_port = local_port.and_then(|p| u16::from_str_radix(p, 16).ok());
            local_port == Some(port) && cols.get(3) == Some(&"08")
        })
        .count()
}

#[test]
fn no_close_wait_after_1000_clients_leave() {
    let h = Server::builder()
        .hello(true)
        .workers(2)
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let addr = h.local_addr();
    for i in 0..1000 {
        let mut s = TcpStream::connect_timeout(&addr, common::TIMEOUT).unwrap();
        match i % 4 {
            0 => {}
            1 => s.write_all(b"GET / HTTP/1.1\r\nHo").unwrap(),
            2 => s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap(),
            _ => {
                let _ = s.shutdown(std::net::Shutdown::Write);
            }
        }
        drop(s);
    }
    assert!(
        common::wait_until(Duration::from_secs(10), || h.stats().accepted == 1000),
        "{:?}",
        h.stats()
    );
    assert!(
        common::wait_until(Duration::from_secs(5), || close_wait_on(addr.port()) == 0
            && h.stats().active == 0),
        "CLOSE_WAIT sockets: {}, stats {:?}",
        close_wait_on(addr.port()),
        h.stats()
    );
}
