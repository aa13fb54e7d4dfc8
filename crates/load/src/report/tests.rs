//! Unit tests of report.rs: effective concurrency and its warning, and the stalled rule.

use super::*;

/// A report of `n` requests of `latency_us` each over `secs` seconds.
fn report(mode: Mode, n: usize, latency_us: u64, secs: f64) -> Report {
    let mut hist = new_histogram();
    for _ in 0..n {
        hist.record(latency_us).unwrap();
    }
    let phase = PhaseResult {
        hist,
        hist_uncorrected: None,
        series: Vec::new(),
        totals: Totals {
            requests: n as u64,
            ..Totals::default()
        },
        elapsed: std::time::Duration::from_secs_f64(secs),
    };
    Report::from_phases(&[&phase], mode, 10, 1)
}

fn warned(r: &Report) -> bool {
    r.warnings
        .iter()
        .any(|w| w.contains("the generator, not the server, limited"))
}

/// 1000 requests of 10 ms in 1 s: 10 in flight on average.
#[test]
fn effective_concurrency_is_littles_law_on_the_report() {
    let mut r = report(Mode::Closed, 1000, 10_000, 1.0);
    r.check_concurrency(10);
    assert!((r.effective_concurrency - 10.0).abs() < 0.05, "{r:?}");
    assert!(!warned(&r), "{:?}", r.warnings);
    assert_eq!(r.latency_clock, LATENCY_CLOCK);
}

/// 7 in flight of 10 asked (the old io_uring batching): warned; 9.1 of 10 is not.
#[test]
fn a_closed_loop_below_nine_tenths_of_c_warns() {
    let mut r = report(Mode::Closed, 700, 10_000, 1.0);
    r.check_concurrency(10);
    assert!((r.effective_concurrency - 7.0).abs() < 0.05);
    assert!(warned(&r), "{:?}", r.warnings);
    let w = r.warnings.last().unwrap();
    assert!(w.contains("7.00") && w.contains("10 requests"), "{w}");

    let mut r = report(Mode::Closed, 910, 10_000, 1.0);
    r.check_concurrency(10);
    assert!(!warned(&r), "{:?}", r.warnings);
}

/// A report of `n` requests of `latency_us` with `ages_us` still in flight at the
/// end.
fn cut_off(n: usize, latency_us: u64, ages_us: &[u64]) -> Report {
    let mut hist = new_histogram();
    let mut end_ages = new_histogram();
    for _ in 0..n {
        hist.record(latency_us).unwrap();
    }
    for a in ages_us {
        end_ages.record(*a).unwrap();
    }
    let phase = PhaseResult {
        hist,
        hist_uncorrected: None,
        series: Vec::new(),
        totals: Totals {
            requests: n as u64,
            cancelled_at_end: ages_us.len() as u64,
            end_ages,
            ..Totals::default()
        },
        elapsed: std::time::Duration::from_secs(5),
    };
    Report::from_phases(&[&phase], Mode::Closed, 10, 1)
}

/// p99 200 ms: the bound is 2 s; 3 s in flight stalled, 1.5 s only cancelled.
#[test]
fn requests_in_flight_past_ten_p99_are_stalled_errors() {
    let r = cut_off(100, 200_000, &[3_000_000, 1_500_000]);
    assert_eq!(r.error_kinds.stalled, 1);
    assert_eq!((r.errors.total, r.errors.timeout), (1, 1));
    assert_eq!(r.failed.transport_errors, 1);
    assert_eq!(r.cancelled_at_end, 1);
    assert_eq!(r.failed(), 1);
}

/// Nothing answered: the floor of 1 s holds; every request 4 s old stalled.
#[test]
fn with_no_answer_the_stalled_bound_is_one_second() {
    assert_eq!(stalled_after(0), std::time::Duration::from_secs(1));
    assert_eq!(stalled_after(20_000), std::time::Duration::from_secs(1));
    let r = cut_off(0, 0, &[4_000_000; 8]);
    assert_eq!((r.error_kinds.stalled, r.errors.total), (8, 8));
    assert_eq!(r.cancelled_at_end, 0);
    let r = cut_off(0, 0, &[900_000; 8]);
    assert_eq!((r.error_kinds.stalled, r.cancelled_at_end), (0, 8));
}

/// An open loop offers what its rate says, and a run with transport errors was
/// limited by the server: neither warns.
#[test]
fn only_an_error_free_closed_loop_warns() {
    let mut r = report(Mode::Open, 100, 10_000, 1.0);
    r.check_concurrency(10);
    assert!(!warned(&r));
    let mut r = report(Mode::Closed, 100, 10_000, 1.0);
    r.errors.total = 1;
    r.check_concurrency(10);
    assert!(!warned(&r));
}
