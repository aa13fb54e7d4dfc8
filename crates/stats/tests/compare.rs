//! Tests, p-values, ratio intervals and verdicts against scipy and against the
//! independent implementations in `tools/stats_reference.py` (values checked in as
//! `reference/mod.rs`).

#[rustfmt::skip]
mod reference;
mod support;

use perflab_stats::{
    bootstrap_ratio_ci, compare, fieller_ratio_ci, geometric_mean_ratio, mann_whitney_u,
    ratio_of_ratios, welch_t_test, Better, CiMethod, CompareOptions, MwuMethod, Verdict,
    BOOTSTRAP_RESAMPLES, DEFAULT_SEED,
};
use support::assert_close;

#[test]
fn welch_matches_scipy_ttest_ind() {
    for &(name, a, b, t, df, p) in reference::WELCH {
        let r = welch_t_test(a, b).unwrap();
        assert_close(&format!("{name} t"), r.t, t, 1e-9);
        assert_close(&format!("{name} df"), r.df, df, 1e-9);
        assert_close(&format!("{name} p"), r.p, p, 1e-9);
    }
}

#[test]
fn mann_whitney_matches_scipy_defaults() {
    let mut exact = 0;
    for &(name, a, b, u, p) in reference::MWU {
        let r = mann_whitney_u(a, b).unwrap();
        assert_eq!(r.u, u, "{name} U");
        assert_close(&format!("{name} p ({:?})", r.method), r.p, p, 1e-9);
        exact += usize::from(r.method == MwuMethod::Exact);
    }
    assert!(exact >= 4, "the reference set must exercise the exact path");
}

#[test]
fn fieller_matches_independent_quadratic_solution() {
    for &(name, base, cand, want) in reference::FIELLER {
        let got = fieller_ratio_ci(base, cand, 0.95);
        match (got, want) {
            (Some((lo, hi)), Some((wlo, whi, _df))) => {
                assert_close(&format!("{name} low"), lo, wlo, 1e-9);
                assert_close(&format!("{name} high"), hi, whi, 1e-9);
            }
            (None, None) => {}
            _ => panic!("{name}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn log_contrast_matches_independent_implementation() {
    for &(name, xn, xd, yn, yd, (ror, lo, hi, df)) in reference::INTERACTIONS {
        let r = ratio_of_ratios(xn, xd, yn, yd, 0.95).unwrap();
        assert_close(&format!("{name} ror"), r.ratio_of_ratios, ror, 1e-9);
        assert_close(&format!("{name} low"), r.ci_low, lo, 1e-9);
        assert_close(&format!("{name} high"), r.ci_high, hi, 1e-9);
        assert_close(&format!("{name} df"), r.df, df, 1e-9);
        assert!(
            r.bootstrap_ci_low < ror && ror < r.bootstrap_ci_high,
            "{name}"
        );
    }
}

#[test]
fn compare_uses_fieller_and_scipy_welch() {
    let &(_, base, cand, want) = &reference::FIELLER[0]; // P5x5: candidate higher
    let (wlo, whi, _) = want.unwrap();
    let c = compare(base, cand, Better::Higher, &CompareOptions::default()).unwrap();
    assert_eq!(c.ci_method, CiMethod::Fieller);
    assert_close("low", c.ratio_ci_low, wlo, 1e-9);
    assert_close("high", c.ratio_ci_high, whi, 1e-9);
    assert_close("rel low", c.rel_diff_ci_low_pct, (wlo - 1.0) * 100.0, 1e-9);
    let welch = reference::WELCH.iter().find(|w| w.0 == "P5x5").unwrap();
    assert_close("p_welch", c.p_welch, welch.5, 1e-9);
    assert_close("welch_df", c.welch_df, welch.4, 1e-9);
    assert_close("welch_t", c.welch_t, -welch.3, 1e-9); // candidate − baseline
    let mwu = reference::MWU.iter().find(|w| w.0 == "P5x5").unwrap();
    assert_close("p_mwu", c.p_mwu, mwu.4, 1e-9);
}

#[test]
fn unbounded_fieller_falls_back_to_seeded_bootstrap() {
    let &(_, base, cand, want) = reference::FIELLER.iter().find(|f| f.0 == "PNOISY").unwrap();
    assert!(want.is_none());
    let c = compare(base, cand, Better::Lower, &CompareOptions::default()).unwrap();
    assert_eq!(c.ci_method, CiMethod::Bootstrap);
    let (lo, hi) = bootstrap_ratio_ci(base, cand, 0.95, BOOTSTRAP_RESAMPLES, DEFAULT_SEED);
    assert_eq!((c.ratio_ci_low, c.ratio_ci_high), (lo, hi));
    assert!(lo < c.ratio && c.ratio < hi);
    assert_eq!(c.verdict, Verdict::Undecided);
}

/// Baseline ~100, candidate ~110: a clear 10 % increase.
const LOW: [f64; 6] = [100.0, 101.5, 99.2, 100.8, 99.9, 100.4];
const HIGH: [f64; 6] = [110.2, 109.5, 111.0, 110.4, 109.9, 110.8];

#[test]
fn verdict_knows_direction_higher_is_better() {
    let opts = CompareOptions::default();
    let up = compare(&LOW, &HIGH, Better::Higher, &opts).unwrap();
    assert!(up.significant);
    assert_eq!(
        (up.verdict, up.verdict.as_str()),
        (Verdict::Better, "faster")
    );
    assert_eq!(up.regression_pct, None);
    let down = compare(&HIGH, &LOW, Better::Higher, &opts).unwrap();
    assert_eq!(
        (down.verdict, down.verdict.as_str()),
        (Verdict::Worse, "slower")
    );
    let pct = down.regression_pct.unwrap();
    assert_close("regression", pct, (1.0 - down.ratio) * 100.0, 1e-12);
    assert!(pct > 8.0 && pct < 10.0);
}

#[test]
fn verdict_knows_direction_lower_is_better() {
    let opts = CompareOptions::default();
    let slower = compare(&LOW, &HIGH, Better::Lower, &opts).unwrap();
    assert_eq!(slower.verdict, Verdict::Worse);
    assert_close(
        "regression",
        slower.regression_pct.unwrap(),
        slower.rel_diff_pct,
        1e-12,
    );
    let faster = compare(&HIGH, &LOW, Better::Lower, &opts).unwrap();
    assert_eq!(faster.verdict, Verdict::Better);
    assert!(faster.ratio < 1.0 && faster.regression_pct.is_none());
}

#[test]
fn overlapping_samples_are_no_difference() {
    let a = [100.0, 104.0, 97.0, 102.0, 99.0];
    let b = [101.0, 98.0, 103.0, 100.0, 99.5];
    for better in [Better::Higher, Better::Lower] {
        let c = compare(&a, &b, better, &CompareOptions::default()).unwrap();
        assert!(!c.significant);
        assert_eq!(c.verdict.as_str(), "undecided");
        assert!(c.ratio_ci_low < 1.0 && 1.0 < c.ratio_ci_high);
    }
}

#[test]
fn compare_rejects_bad_input() {
    let opts = CompareOptions::default();
    assert!(compare(&[1.0], &[1.0, 2.0], Better::Lower, &opts).is_err());
    assert!(compare(&[-1.0, -2.0], &[1.0, 2.0], Better::Lower, &opts).is_err());
    let bad = CompareOptions {
        confidence: 0.95,
        alpha: 0.0,
        ..CompareOptions::default()
    };
    assert!(compare(&LOW, &HIGH, Better::Lower, &bad).is_err());
}

#[test]
fn geometric_mean_of_ratios() {
    let opts = CompareOptions::default();
    let a = compare(&LOW, &HIGH, Better::Higher, &opts).unwrap();
    let b = compare(&HIGH, &LOW, Better::Higher, &opts).unwrap();
    let g = geometric_mean_ratio(&[&a, &b], 0.95).unwrap();
    // The two ratios are exact reciprocals: geometric mean 1.
    assert_close("geomean", g.ratio, 1.0, 1e-12);
    assert!(g.ci_low < 1.0 && 1.0 < g.ci_high && g.n_metrics == 2);
    let single = geometric_mean_ratio(&[&a], 0.95).unwrap();
    assert_close("single", single.ratio, a.ratio, 1e-12);
    let lat = compare(&LOW, &HIGH, Better::Lower, &opts).unwrap();
    assert!(
        geometric_mean_ratio(&[&a, &lat], 0.95).is_none(),
        "mixed directions"
    );
    assert!(geometric_mean_ratio(&[], 0.95).is_none());
}

#[test]
fn normal_tail_at_zero_is_one_half_not_a_panic() {
    // Regression: statrs' gamma_ur(0.5, 0) panics; Mann–Whitney reaches z = 0 with ties.
    assert_eq!(perflab_stats::normal_sf(0.0), 0.5);
    assert_eq!(perflab_stats::normal_sf(-0.0), 0.5);
}

#[test]
fn ratio_of_positive_values_never_gets_a_negative_bound() {
    // Regression: a very noisy candidate (SciMark under load) gave Fieller [-0.078, 1.57].
    let base = [2573.0 - 500.0, 2573.0, 2573.0 + 500.0];
    let cand = [400.0, 1619.0, 2838.0];
    let c = perflab_stats::compare(
        &base,
        &cand,
        perflab_stats::Better::Higher,
        &Default::default(),
    )
    .unwrap();
    assert!(
        c.ratio_ci_low > 0.0,
        "{} .. {}",
        c.ratio_ci_low,
        c.ratio_ci_high
    );
    assert!(c.ratio_ci_low <= c.ratio && c.ratio <= c.ratio_ci_high);
    assert!(
        matches!(c.ci_method, perflab_stats::CiMethod::Bootstrap),
        "Fieller reached below 0 here"
    );
    let f = perflab_stats::fieller_ratio_ci(&base, &cand, 0.95).unwrap();
    assert!(f.0 < 0.0, "the data set must exercise the fallback: {f:?}");
}
