//! The latency clock is the same on both I/O engines. A test binary of its own: it
//! compares two timings within 2 %, and the engine behaviour tests (`engine.rs`), run
//! in parallel in one binary, load the machine enough to blur that.
mod common;

use common::{ok, run_on, Reply, TestServer};
use perflab_load::{IoChoice, LoadSpec};
use std::time::Duration;

/// Both engines take latency on the same clock (`LATENCY_CLOCK`): against a server with
/// a fixed 20 ms service time, their medians agree within 2 %. (io_uring used to take
/// it from kernel receive timestamps and epoll from the user-space clock.) The two
/// engines run at the same time, against the same server, so that a busy machine delays
/// both alike, in [`ROUNDS`] rounds; the median of the rounds' p50 ratios is compared
/// (paired by round, so that a burst of load on the machine cancels rather than decides).
const ROUNDS: usize = 7;

#[test]
fn both_engines_time_a_20ms_server_alike() {
    if !common::uring_or_skip() {
        return;
    }
    let srv = TestServer::start(|_| Reply::Delay(Duration::from_millis(20), ok("x")));
    let run = |io| {
        let s = LoadSpec {
            io,
            connections: 6,
            threads: Some(1),
            duration: Some(Duration::from_millis(800)),
            timeout: Duration::from_secs(5),
            ..LoadSpec::new(srv.url("/"))
        };
        let r = run_on(&s);
        assert_eq!(r.errors.total, 0, "{:?}", r.error_kinds);
        assert!(r.requests >= 100, "{} requests", r.requests);
        assert_eq!(r.latency_clock, perflab_load::LATENCY_CLOCK);
        r.latency_ms.p50
    };
    let (mut epoll, mut uring) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let (e, u) = std::thread::scope(|s| {
            let e = s.spawn(|| run(IoChoice::Epoll));
            let u = s.spawn(|| run(IoChoice::Uring));
            (e.join().unwrap(), u.join().unwrap())
        });
        epoll.push(e);
        uring.push(u);
    }
    eprintln!("round p50s: epoll {epoll:?} ms, uring {uring:?} ms");
    assert!(
        epoll.iter().chain(&uring).all(|&p50| p50 >= 20.0),
        "a p50 below the service time"
    );
    let mut ratios: Vec<f64> = uring.iter().zip(&epoll).map(|(u, e)| u / e).collect();
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ROUNDS / 2];
    assert!(
        (median - 1.0).abs() <= 0.02,
        "p50 uring / epoll: median of the rounds {median:.3} (rounds {ratios:?})"
    );
}
