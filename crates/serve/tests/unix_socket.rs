//! A server on a unix-domain socket: answers there, replaces a stale socket file,
//! refuses a live one or a file that is not a socket, and removes its file on stop.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Duration;

use perflab_serve::{ServeError, Server};

fn get(sock: &std::path::Path) -> String {
    let mut s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn serves_on_a_socket_and_removes_it_on_stop() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("s.sock");
    // A stale socket file (its listener is gone) is replaced.
    drop(UnixListener::bind(&sock).unwrap());
    assert!(sock.exists());
    let mut s = Server::builder()
        .hello(true)
        .workers(2)
        .unix_socket(&sock)
        .start()
        .unwrap();
    assert_eq!(s.unix_socket(), Some(sock.as_path()));
    for _ in 0..20 {
        assert!(get(&sock).starts_with("HTTP/1.1 200 OK"));
    }
    // A second server on a live socket is refused, and leaves it alone.
    let e = Server::builder()
        .hello(true)
        .unix_socket(&sock)
        .start()
        .unwrap_err();
    assert!(matches!(e, ServeError::BindUnix { .. }), "{e}");
    assert!(e.to_string().contains("another server"), "{e}");
    assert!(get(&sock).starts_with("HTTP/1.1 200 OK"));
    s.stop().unwrap();
    assert!(!sock.exists(), "the socket file is removed on stop");
}

#[test]
fn a_file_that_is_not_a_socket_is_never_removed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.txt");
    std::fs::write(&path, "keep me").unwrap();
    let e = Server::builder()
        .hello(true)
        .unix_socket(&path)
        .start()
        .unwrap_err();
    assert!(e.to_string().contains("not a socket"), "{e}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
}
