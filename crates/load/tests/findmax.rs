//! The knee search's own rules, against small local servers: a step near the SLO is
//! retested, a step too short for its percentile is lengthened, repeated searches give
//! a mean with an interval and tag their steps, and the flags' bounds are checked.

mod common;

use common::{ok, Reply, TestServer};
use perflab_load::{run, LoadSpec, Ramp, RampOver, Slo};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A knee search held at one rate: the ramp's START and END are both `rate`.
fn at_one_rate(url: String, rate: f64, slo: &str) -> LoadSpec {
    LoadSpec {
        connections: 4,
        find_max: true,
        slo: Some(Slo::parse(slo).unwrap()),
        max_error_rate: 0.01,
        ramp: Some(Ramp::parse(&format!("{rate}:{rate}:1"), RampOver::Rate).unwrap()),
        step_duration: Some(Duration::from_millis(200)),
        ..LoadSpec::new(url)
    }
}

#[test]
fn a_step_within_ten_percent_of_the_slo_is_run_again() {
    // The first step's responses take 48 ms: its median lands within 10 % of the 50 ms
    // bound (a busy machine adds a few ms, and the median is not its tail), whether it
    // passes or not. Later ones take 5 ms (a clear pass), so the rate
    // passes two of three and the search ends at the ramp's END, bounded.
    let served = AtomicU64::new(0);
    let srv = TestServer::start(move |_| {
        let ms = if served.fetch_add(1, Ordering::Relaxed) < 600 {
            48
        } else {
            5
        };
        Reply::Delay(Duration::from_millis(ms), ok("n"))
    });
    // 2 s steps: a shorter one would lose a larger share of its requests to the 48 ms
    // still in flight at its end, and break on the achieved rate instead.
    let spec = LoadSpec {
        connections: 20,
        step_duration: Some(Duration::from_secs(2)),
        ..at_one_rate(srv.url("/"), 300.0, "p50<50ms")
    };
    let t = Instant::now();
    let r = run(&spec).unwrap();
    for s in &r.steps {
        eprintln!(
            "step {:.0} req/s: p50 {:.2} ms, passed {:?}, retest {}",
            s.target, s.latency_ms.p50, s.passed, s.retest
        );
    }
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    assert!(r.steps.len() >= 2, "no retest: {:#?}", r.steps);
    assert_eq!(r.max_rate, Some(300.0), "two of three passed");
    assert!(!r.steps[0].retest && r.steps[1..].iter().all(|s| s.retest));
    assert!(r.steps.len() <= 3);
    assert!(r.steps.iter().all(|s| s.target == 300.0));
}

#[test]
fn a_step_too_short_for_its_percentile_is_lengthened() {
    let srv = TestServer::start(|_| Reply::Send(ok("s")));
    // 200 ms at 2,000 req/s holds 400 samples; p99 needs 1,000: a 0.5 s step.
    let spec = at_one_rate(srv.url("/"), 2000.0, "p99<100ms");
    let r = run(&spec).unwrap();
    let step = &r.steps[0];
    eprintln!(
        "step: {:.3} s, {} requests; warnings {:?}",
        step.duration_s, step.requests, r.warnings
    );
    assert!(step.duration_s >= 0.45, "{step:#?}");
    assert!(step.requests >= 900, "{step:#?}");
    assert!(
        r.warnings.iter().any(|w| w.contains("1000 samples")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn repeated_searches_give_a_mean_with_an_interval_and_tag_their_steps() {
    let srv = TestServer::start(|_| Reply::Send(ok("r")));
    let spec = LoadSpec {
        find_max_repetitions: 3,
        ..at_one_rate(srv.url("/"), 1000.0, "p99<200ms")
    };
    let r = run(&spec).unwrap();
    let reps: Vec<Option<u32>> = r.steps.iter().map(|s| s.repetition).collect();
    eprintln!(
        "max_rate {:?} [{:?}, {:?}], repetitions {:?}, steps {reps:?}",
        r.max_rate, r.max_rate_ci_low, r.max_rate_ci_high, r.repetitions
    );
    assert_eq!(r.repetitions, Some(3));
    assert_eq!(r.max_rate, Some(1000.0));
    assert_eq!(r.max_rate_ci_low, Some(1000.0));
    assert_eq!(r.max_rate_ci_high, Some(1000.0));
    for k in 1..=3 {
        assert!(reps.contains(&Some(k)), "{reps:?}");
    }
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["steps"][0]["repetition"], 1);
    assert!(v["max_rate_ci_low"].is_number() && v["repetitions"] == 3);
}

#[test]
fn repetitions_and_step_duration_are_bounded() {
    let base = || LoadSpec {
        find_max: true,
        slo: Some(Slo::parse("p99<20ms").unwrap()),
        ..LoadSpec::new("http://127.0.0.1:9/")
    };
    for (spec, field) in [
        (
            LoadSpec {
                find_max_repetitions: 0,
                ..base()
            },
            "find_max_repetitions",
        ),
        (
            LoadSpec {
                find_max_repetitions: 101,
                ..base()
            },
            "find_max_repetitions",
        ),
        (
            LoadSpec {
                find_max_repetitions: 5,
                find_max: false,
                slo: None,
                ..base()
            },
            "find_max_repetitions",
        ),
        (
            LoadSpec {
                step_duration: Some(Duration::ZERO),
                ..base()
            },
            "step_duration",
        ),
    ] {
        let e = spec.validate().expect_err("refused");
        assert_eq!(e.field(), Some(field), "{e}");
    }
    assert!(base().validate().is_ok());
}

#[test]
fn an_experiment_file_sets_the_repetitions() {
    let spec: LoadSpec = toml::from_str(
        "url = \"http://h/\"\nfind_max = true\nslo = \"p99<20ms\"\nfind_max_repetitions = 5\n",
    )
    .unwrap();
    assert_eq!(spec.find_max_repetitions, 5);
    let spec: LoadSpec = toml::from_str("url = \"http://h/\"\n").unwrap();
    assert_eq!(spec.find_max_repetitions, 1, "the default");
}
