//! Load models against local servers: open loop and coordinated omission, ramps, the
//! knee search, the interval log and the JSON contract.
mod common;

use common::{ok, run_on, Reply, TestServer};
use perflab_load::{run, Io, IoChoice, LoadSpec, Mode, Ramp, RampOver, Slo};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[test]
fn open_loop_keeps_its_rate() {
    let srv = TestServer::start(|_| Reply::Send(ok("o")));
    let s = LoadSpec {
        connections: 2,
        rate: Some(200.0),
        duration: Some(Duration::from_secs(1)),
        ..LoadSpec::new(srv.url("/"))
    };
    let r = run(&s).unwrap();
    assert_eq!(r.mode, Mode::Open);
    assert_eq!(r.io, Io::Epoll, "--io auto runs the open loop on epoll");
    // The rate is what the loop schedules: each request answered or still pending at
    // the end (a loaded machine leaves more pending, and answers fewer).
    let scheduled = r.requests + r.cancelled_at_end;
    assert!(
        (180..=202).contains(&scheduled),
        "requests {}, pending at the end {}",
        r.requests,
        r.cancelled_at_end
    );
    assert!(r.requests > 0);
    assert!(r.latency_uncorrected_ms.is_some());
    assert_eq!(r.errors.total, 0);
}

/// The schedule is kept to the microsecond, not to the poll timeout's millisecond:
/// against a server that answers at once, latency from the intended send time differs
/// from latency from the write by the wake-up delay only (it was ~0.5 ms of rounding).
#[test]
fn open_loop_sends_on_time() {
    let srv = TestServer::start(|_| Reply::Send(ok("t")));
    let s = LoadSpec {
        connections: 1,
        max_connections: Some(1),
        rate: Some(1000.0),
        duration: Some(Duration::from_secs(1)),
        ..LoadSpec::new(srv.url("/"))
    };
    // Millisecond rounding delays every send by 0-1 ms, the median by ~500 µs, in every
    // run; a loaded machine delays sends too, so the best of three runs is judged (a
    // busy second can push the median past 500 µs: 544 µs was seen beside a CPU hog).
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let r = run(&s).unwrap();
        let unc = r.latency_uncorrected_ms.clone().unwrap();
        // The generator's own lateness on a free connection (issue 33: no longer part of
        // the corrected latency, which now adds only the wait for a busy connection — a
        // test server slowed by a loaded machine, 3 ms a reply, made that wait 0.3 s and
        // failed this test of the generator's timer once).
        let gen = r
            .generator_late_ms
            .clone()
            .expect("open loop reports its lateness");
        let gap_us = gen.p50 * 1000.0;
        eprintln!(
            "corrected p50 {} ms, uncorrected p50 {} ms, generator late p50 {} ms: schedule \
             lag {gap_us:.0} µs, late {}",
            r.latency_ms.p50, unc.p50, gen.p50, r.late
        );
        assert!(
            r.requests + r.cancelled_at_end >= 900,
            "requests {}, pending at the end {}",
            r.requests,
            r.cancelled_at_end
        );
        best = best.min(gap_us);
        if best < 300.0 {
            break;
        }
    }
    assert!(
        best < 450.0,
        "schedule lag {best:.0} µs at p50 in the best of 3 runs"
    );
}

/// The issue's coordinated-omission test: 400 req/s on one connection against a
/// server that stalls every reply for 200 ms once per second.
#[test]
fn open_loop_corrects_coordinated_omission() {
    let start = Instant::now();
    let srv = TestServer::start(move |_| {
        let phase = Duration::from_nanos((start.elapsed().as_nanos() % 1_000_000_000) as u64);
        if phase < Duration::from_millis(200) {
            Reply::Delay(Duration::from_millis(200) - phase, ok("s"))
        } else {
            Reply::Send(ok("s"))
        }
    });
    let s = LoadSpec {
        connections: 1,
        max_connections: Some(1),
        rate: Some(400.0),
        duration: Some(Duration::from_millis(2500)),
        ..LoadSpec::new(srv.url("/"))
    };
    let r = run(&s).unwrap();
    let unc = r.latency_uncorrected_ms.clone().unwrap();
    eprintln!(
        "corrected p99 {} ms, uncorrected p99 {} ms, late {}",
        r.latency_ms.p99, unc.p99, r.late
    );
    assert!(
        r.latency_ms.p99 >= 150.0,
        "corrected p99 {} ms",
        r.latency_ms.p99
    );
    assert!(
        unc.p99 < 0.8 * r.latency_ms.p99,
        "uncorrected p99 {} vs corrected {}",
        unc.p99,
        r.latency_ms.p99
    );
    assert!(r.late > 50, "late {}", r.late);
    assert_eq!(r.connections_opened, 1);
}

#[test]
fn ramp_reports_each_step() {
    let srv = TestServer::start(|_| Reply::Send(ok("r")));
    let s = LoadSpec {
        connections: 2,
        ramp: Some(Ramp::parse("100:300:3", RampOver::Rate).unwrap()),
        step_duration: Some(Duration::from_millis(400)),
        ..LoadSpec::new(srv.url("/"))
    };
    let r = run(&s).unwrap();
    assert_eq!(r.mode, Mode::Ramp);
    let targets: Vec<f64> = r.steps.iter().map(|s| s.target).collect();
    assert_eq!(targets, vec![100.0, 200.0, 300.0]);
    for st in &r.steps {
        assert!(
            st.rps > 0.8 * st.target && st.rps < 1.1 * st.target,
            "{st:?}"
        );
    }
}

/// A ramp over connections is closed-loop: it runs on either engine.
fn ramp_over_connections(io: IoChoice) {
    let srv = TestServer::start(|_| Reply::Send(ok("r")));
    let s = LoadSpec {
        ramp: Some(Ramp::parse("1:3:2", RampOver::Connections).unwrap()),
        step_duration: Some(Duration::from_millis(200)),
        io,
        ..LoadSpec::new(srv.url("/"))
    };
    let r = run_on(&s);
    assert_eq!(r.steps.len(), 2);
    assert!(r.steps.iter().all(|s| s.requests > 0));
}

on_both_engines!(ramp_over_connections);

/// `--io auto` takes io_uring for a plain-http closed loop where the kernel allows it,
/// and says so; `--io uring` refuses the open loop before anything is sent.
#[test]
fn auto_picks_the_engine_and_uring_refuses_the_open_loop() {
    let srv = TestServer::start(|_| Reply::Send(ok("a")));
    let r = run(&LoadSpec {
        requests: Some(50),
        ..LoadSpec::new(srv.url("/"))
    })
    .unwrap();
    let want = match perflab_load::uring_support() {
        Ok(()) => Io::Uring,
        Err(_) => Io::Epoll,
    };
    assert_eq!(r.io, want);
    assert_eq!(serde_json::to_value(&r).unwrap()["io"], want.name());
    let open = LoadSpec {
        rate: Some(100.0),
        io: IoChoice::Uring,
        ..LoadSpec::new(srv.url("/"))
    };
    let err = run(&open).unwrap_err().to_string();
    assert!(err.contains("closed-loop"), "{err}");
    assert_eq!(srv.requests.load(std::sync::atomic::Ordering::SeqCst), 50);
}

/// A server with a capacity of `capacity` req/s: one virtual worker that spends
/// `1/capacity` s on each request, so a queue (and latency) grows above that rate.
fn capacity_server(capacity: f64) -> TestServer {
    let service = Duration::from_secs_f64(1.0 / capacity);
    let free_at = Arc::new(Mutex::new(Instant::now()));
    TestServer::start(move |_| {
        let now = Instant::now();
        let done = {
            let mut f = free_at.lock().unwrap();
            *f = (*f).max(now) + service;
            *f
        };
        Reply::Delay(done.saturating_duration_since(now), ok("k"))
    })
}

#[test]
fn find_max_finds_the_knee_within_20_percent() {
    let srv = capacity_server(400.0);
    let s = LoadSpec {
        connections: 4,
        find_max: true,
        // Generous SLO: queueing above capacity blows far past it, while scheduling
        // jitter on a busy 2-core machine stays well below it.
        slo: Some(Slo::parse("p99<50ms").unwrap()),
        max_error_rate: 0.01,
        step_duration: Some(Duration::from_millis(500)),
        ..LoadSpec::new(srv.url("/"))
    };
    let r = run(&s).unwrap();
    let max = r.max_rate.expect("a rate met the SLO");
    for st in &r.steps {
        eprintln!(
            "step {:.0} req/s: {:.0} req/s, p99 {:.2} ms, passed {:?}",
            st.target, st.rps, st.latency_ms.p99, st.passed
        );
    }
    assert!(
        (320.0..=480.0).contains(&max),
        "max_rate {max}, steps {:#?}",
        r.steps
    );
    assert!(r.broke_at.unwrap() > max);
    assert!(r.steps.iter().any(|s| s.passed == Some(false)));
}

#[test]
fn hdr_log_and_json_contract() {
    let srv = TestServer::start(|_| Reply::Send(ok("j")));
    let dir = std::env::temp_dir().join(format!("perflab-load-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("run.hlog");
    let s = LoadSpec {
        connections: 2,
        rate: Some(300.0),
        duration: Some(Duration::from_millis(1500)),
        hdr_log: Some(log.clone()),
        ..LoadSpec::new(srv.url("/"))
    };
    let r = run(&s).unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("#[StartTime: "));
    let intervals = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('"'))
        .count();
    assert!(intervals >= 2, "{text}");
    assert!(text.contains("Tag=uncorrected,"));
    assert_eq!(r.series.len(), 2);
    let v = serde_json::to_value(&r).unwrap();
    for key in [
        "requests",
        "duration_s",
        "rps",
        "mbps",
        "errors",
        "status",
        "latency_ms",
        "latency_uncorrected_ms",
        "client_cpu_per_req_us",
        "client_saturated",
        "siege",
        "steps",
        "max_rate",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    for key in [
        "total",
        "connect",
        "timeout",
        "reset",
        "malformed",
        "closed",
    ] {
        assert!(v["errors"][key].is_u64(), "errors.{key}");
    }
    for key in [
        "mean", "sd", "p50", "p75", "p90", "p99", "p999", "p9999", "max",
    ] {
        assert!(v["latency_ms"][key].is_number(), "latency_ms.{key}");
        assert!(
            v["latency_uncorrected_ms"][key].is_number(),
            "latency_uncorrected_ms.{key}"
        );
    }
    assert!(v["status"]["200"].is_u64());
    assert!(v["client_saturated"].is_boolean());
    assert!(v["max_rate"].is_null());
    for key in [
        "transactions",
        "availability",
        "elapsed_time_s",
        "concurrency",
        "longest_transaction_s",
    ] {
        assert!(v["siege"].get(key).is_some(), "siege.{key}");
    }
    let bytes = r.histogram_bytes();
    let back: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .unwrap();
    assert_eq!(back.len(), r.requests);
    let _ = std::fs::remove_dir_all(&dir);
}
