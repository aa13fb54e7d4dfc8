//! Slowloris: clients that send one header byte per second are cut off by the
//! request timeout (408, then closed) even though they keep sending, while the single
//! worker goes on serving everyone else. Idle keep-alive connections are closed too.

mod common;

use perflab_serve::Server;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

#[test]
fn slow_clients_are_cut_off_while_others_are_served() {
    let timeout = Duration::from_millis(1500);
    let h = Server::builder()
        .hello(true)
        .workers(1)
        .request_timeout(timeout)
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let addr = h.local_addr();
    let started = Instant::now();
    let slow: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut s = common::connect(addr);
                let mut w = s.try_clone().unwrap();
                // The pause between bytes is a channel wait, so the writer stops as
                // soon as the reader is done (the sender is dropped).
                let (done, pause) = std::sync::mpsc::channel::<()>();
                let writer = std::thread::spawn(move || {
                    for b in b"GET / HTTP/1.1\r\nHost: slow\r\nX: y\r\n".iter() {
                        if w.write_all(&[*b]).is_err() {
                            return;
                        }
                        let next = pause.recv_timeout(Duration::from_secs(1));
                        if next != Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                            return;
                        }
                    }
                });
                let mut got = Vec::new();
                let _ = s.read_to_end(&mut got);
                let cut_after = started.elapsed();
                drop(done);
                let _ = writer.join();
                (String::from_utf8_lossy(&got).into_owned(), cut_after)
            })
        })
        .collect();
    // Meanwhile, ordinary clients are answered promptly by the same worker.
    let mut served = 0;
    while started.elapsed() < timeout {
        let t = Instant::now();
        assert_eq!(common::get(addr, "/").status, 200);
        // Under the request timeout (a worker stuck on a slow client would hold it
        // that long), with room for a loaded machine.
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "a fast client waited {:?}",
            t.elapsed()
        );
        served += 1;
    }
    assert!(served > 5);
    for t in slow {
        let (answer, cut_after) = t.join().unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 408 "),
            "slow client got {answer:?}"
        );
        assert!(cut_after >= timeout, "cut too early: {cut_after:?}");
        // Timeout + sweep granularity + 2 s lingering, with room for a loaded machine:
        // far below the 35 s the slow client would take to send its request.
        assert!(
            cut_after < timeout + Duration::from_secs(6),
            "cut after {cut_after:?}"
        );
    }
}

#[test]
fn idle_keep_alive_connections_are_closed_silently() {
    let h = Server::builder()
        .hello(true)
        .workers(1)
        .timeout(Duration::from_millis(400))
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let mut s = common::connect(h.local_addr());
    s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let t = Instant::now();
    let got = common::read_to_end(&mut s);
    let text = String::from_utf8_lossy(&got);
    assert_eq!(text.matches("HTTP/1.1").count(), 1, "{text}");
    assert!(text.starts_with("HTTP/1.1 200"));
    // Closed after the 400 ms idle timeout, not the default 30 s (room for a loaded
    // machine).
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(common::wait_until(common::TIMEOUT, || h.stats().active == 0));
}
