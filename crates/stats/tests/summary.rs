//! Summaries and t quantiles against scipy (values in `reference/mod.rs`, generated
//! by `tools/stats_reference.py`).

#[rustfmt::skip]
mod reference;
mod support;

use perflab_stats::{precision_reached, summarize, t_quantile, StatsError};
use support::assert_close;

#[test]
fn summaries_match_scipy() {
    for r in reference::SUMMARIES {
        let s = summarize(r.data, 0.95).unwrap();
        let c = |what: &str, got: f64, want: f64| {
            assert_close(&format!("{} {what}", r.name), got, want, 1e-9)
        };
        assert_eq!(s.n, r.data.len());
        c("mean", s.mean, r.mean);
        c("sd", s.sd, r.sd);
        c("se", s.se, r.se);
        c("ci_low", s.ci_low, r.ci_low);
        c("ci_high", s.ci_high, r.ci_high);
        c("median", s.median, r.median);
        c("median_ci_low", s.median_ci_low, r.median_ci_low);
        c("median_ci_high", s.median_ci_high, r.median_ci_high);
        c(
            "median_ci_conf",
            s.median_ci_confidence,
            r.median_ci_confidence,
        );
        c("min", s.min, r.min);
        c("max", s.max, r.max);
        c("cv", s.cv, r.cv);
        assert_eq!(s.outliers, r.outliers, "{} outliers", r.name);
        assert_eq!(s.confidence, 0.95);
    }
}

#[test]
fn t_quantiles_match_scipy() {
    for &(p, df, want) in reference::T_PPF {
        assert_close(&format!("t.ppf({p}, {df})"), t_quantile(p, df), want, 1e-9);
    }
}

#[test]
fn t_quantile_edges() {
    assert!(t_quantile(0.975, 0.0).is_nan());
    assert!(t_quantile(1.5, 3.0).is_nan());
    assert_eq!(t_quantile(0.5, 3.0), 0.0);
    assert_eq!(t_quantile(1.0, 3.0), f64::INFINITY);
    assert_close(
        "normal limit",
        t_quantile(0.975, f64::INFINITY),
        1.959963984540054,
        1e-12,
    );
}

#[test]
fn single_value_has_undefined_spread() {
    let s = summarize(&[42.0], 0.95).unwrap();
    assert_eq!(
        (s.n, s.mean, s.median, s.min, s.max),
        (1, 42.0, 42.0, 42.0, 42.0)
    );
    for v in [s.sd, s.se, s.cv, s.ci_low, s.ci_high] {
        assert!(v.is_nan());
    }
    assert_eq!((s.median_ci_low, s.median_ci_high), (42.0, 42.0));
    assert_eq!(s.median_ci_confidence, 0.0);
    assert!(!precision_reached(&s, 0.5));
}

#[test]
fn bad_input_is_an_error() {
    assert!(matches!(summarize(&[], 0.95), Err(StatsError::Empty)));
    assert!(matches!(
        summarize(&[1.0, f64::NAN], 0.95),
        Err(StatsError::NonFinite { index: 1, .. })
    ));
    assert!(matches!(
        summarize(&[1.0, 2.0], 1.0),
        Err(StatsError::InvalidConfidence(_))
    ));
}

#[test]
fn precision_rule_uses_half_width_over_mean() {
    let s = summarize(&[100.0, 101.0, 99.0, 100.5, 99.5], 0.95).unwrap();
    let rel = s.ci_half_width() / s.mean;
    assert!(precision_reached(&s, rel * 1.0001));
    assert!(!precision_reached(&s, rel * 0.9999));
}
