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
    let phase = crate::series::PhaseResult {
        hist: crate::record::new_histogram(),
        hist_uncorrected: None,
        series: Vec::new(),
        totals: crate::record::Totals::default(),
        elapsed: std::time::Duration::from_secs(1),
    };
    let mut r = Report::from_phases(&[&phase], Mode::FindMax, 1, 1);
    let spread = knees(&[15_000.0, 25_000.0, 18_000.0, 22_000.0, 20_000.0]);
    conclude(&mut r, &spread, Some(0.1));
    assert_eq!(r.max_rate, Some(20_000.0));
    assert_eq!(r.max_rate_ci_level, Some(0.97));
    assert_eq!(r.max_rate_precision, Some(0.1));
    assert_eq!(r.max_rate_precision_met, Some(false));
    let note = precision_note(&r).expect("a target not met is said");
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
    assert_eq!(precision_note(&r), None);
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
