//! The precision rule of repeated searches: how many run, when they stop, what the
//! report says.

use super::*;

fn spec(n: u32, precision: Option<f64>) -> LoadSpec {
    LoadSpec {
        find_max: true,
        find_max_repetitions: n,
        find_max_precision: precision,
        ..LoadSpec::default()
    }
}

fn knees(k: &[f64]) -> Vec<Outcome> {
    k.iter()
        .map(|&m| Outcome {
            max_rate: Some(m),
            broke_at: Some(m * 1.05),
            interrupted: false,
        })
        .collect()
}

#[test]
fn a_precision_target_runs_at_least_five_and_at_most_four_times_as_many() {
    assert_eq!(searches(&spec(5, None)), (5, 5));
    assert_eq!(searches(&spec(1, Some(0.1))), (5, 20));
    assert_eq!(searches(&spec(8, Some(0.1))), (8, 32));
    assert_eq!(searches(&spec(40, Some(0.1))), (40, 100));
    assert_eq!(searches(&spec(100, Some(0.1))), (100, 100));
}

#[test]
fn searches_stop_when_the_interval_at_97_percent_is_within_the_target() {
    // Five knees around 20,000 with sd √(500,000 / 4) = 353.6: t(0.985, 4) =
    // 3.297629727890704 (scipy 1.17.1, `scipy.stats.t.ppf(0.985, 4)`), half-width
    // 3.2976 · 353.6 / √5 = 521.4 = 2.61 % of the mean.
    let five = knees(&[19_500.0, 20_000.0, 20_500.0, 20_000.0, 20_000.0]);
    let sd = (500_000.0_f64 / 4.0).sqrt();
    let half = 3.297_629_727_890_704 * sd / 5f64.sqrt();
    let mean = 20_000.0;
    assert!(precise(&spec(5, Some(half / mean + 0.001)), &five));
    assert!(!precise(&spec(5, Some(half / mean - 0.001)), &five));
    assert!(!precise(&spec(5, None), &five), "no target: never precise");
    assert!(
        !precise(&spec(5, Some(0.5)), &five[..1]),
        "one knee has no interval"
    );
}

#[test]
fn the_report_says_the_target_whether_it_was_met_and_the_level() {
    let mut r = crate::report::empty_find_max();
    let spread = knees(&[15_000.0, 25_000.0, 18_000.0, 22_000.0, 20_000.0]);
    conclude(&mut r, &spread, Some(0.1));
    assert_eq!(r.max_rate, Some(20_000.0));
    assert_eq!(r.max_rate_ci_level, Some(0.97));
    assert_eq!(r.max_rate_precision, Some(0.1));
    assert_eq!(r.max_rate_precision_met, Some(false));
    let cut = precision_note(&r, true).expect("an interrupted run says so");
    assert!(
        cut.contains("the run was interrupted before it got there"),
        "{cut}"
    );
    let note = precision_note(&r, false).expect("a target not met is said");
    assert!(note.contains("the knee moved between searches"), "{note}");
    assert!(
        note.contains("after 5 searches, short of the ±10.0 % asked"),
        "{note}"
    );
    conclude(&mut r, &spread, None);
    assert_eq!(r.max_rate_ci_level, Some(0.95));
    assert_eq!(
        (r.max_rate_precision, r.max_rate_precision_met),
        (None, None)
    );
    assert_eq!(precision_note(&r, false), None);
}

#[test]
fn a_precision_target_out_of_range_or_without_find_max_is_refused() {
    for bad in [0.0, 1.0, 1.5, -0.1, f64::NAN] {
        let e = check_spec(&spec(5, Some(bad))).unwrap_err().to_string();
        assert!(e.contains("find_max_precision"), "{bad}: {e}");
    }
    let mut s = spec(1, Some(0.1));
    s.find_max = false;
    let e = check_spec(&s).unwrap_err().to_string();
    assert!(
        e.contains("find_max_precision") && e.contains("find_max"),
        "{e}"
    );
    assert!(check_spec(&spec(5, Some(0.1))).is_ok());
}

/// Knees that climb search after search are said to have moved; steady ones (the same
/// spread, shuffled) are not. The first: slope 999.4 req/s per search, intercept 14,008.9,
/// p = 3.17e-10 (scipy 1.17.1, `scipy.stats.linregress(range(1, 9), knees)`); the
/// shuffled ones: p = 0.68.
#[test]
fn knees_that_trend_over_the_searches_are_said_to_have_moved() {
    let climbing = [
        15_000.0, 16_100.0, 16_900.0, 18_050.0, 19_000.0, 19_900.0, 21_100.0, 22_000.0,
    ];
    let note = drift_note(&climbing).expect("a climbing knee is said");
    assert!(note.contains("from about 15008 req/s"), "{note}");
    assert!(note.contains("to 22004 in the last"), "{note}");
    assert!(note.contains("8 searches, p = 3.2e-10"), "{note}");
    let steady = [
        19_000.0, 21_100.0, 15_000.0, 22_000.0, 16_900.0, 18_050.0, 16_100.0, 19_900.0,
    ];
    assert_eq!(drift_note(&steady), None);
    assert_eq!(drift_note(&climbing[..4]), None, "too few searches to tell");
    assert_eq!(drift_note(&[20_000.0; 6]), None, "no spread, no trend");
}

/// The note's false alarms: knees of a steady server (independent normal, cv 10 %),
/// 4,000 runs of 5 to 20 searches with a fixed seed — about one run in a hundred says
/// the knee moved (binomial SE at 1 %: 0.16 %).
#[test]
fn a_steady_knee_is_said_to_move_in_about_one_run_in_a_hundred() {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(33);
    let mut normal = move || {
        let u1: f64 = 1.0 - rng.random::<f64>();
        let u2: f64 = rng.random::<f64>();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    };
    let runs = 4_000;
    let mut said = 0;
    for r in 0..runs {
        let n = 5 + r % 16;
        let knees: Vec<f64> = (0..n).map(|_| 20_000.0 * (1.0 + 0.1 * normal())).collect();
        said += usize::from(drift_note(&knees).is_some());
    }
    let rate = said as f64 / runs as f64;
    eprintln!(
        "steady knees said to move in {said} of {runs} runs ({:.2} %)",
        rate * 100.0
    );
    assert!((0.004..=0.018).contains(&rate), "false alarms {rate}");
}
