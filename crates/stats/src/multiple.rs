//! Multiple-comparison control: adjusted p-values for a family of tests.
//!
//! The "why" block of a comparison tests dozens of quantities at once (every counter,
//! every telemetry figure, every profiled function); at α = 5 % each, a comparison of a
//! config with itself would "explain" something in almost every run. Adjusting the
//! p-values over everything checked fixes that:
//!
//! * [`holm`] (Holm 1979, step-down Bonferroni) controls the family-wise error rate —
//!   the chance that *anything* in an A/A comparison passes is at most α, under any
//!   dependence between the tests. The why block's default.
//! * [`benjamini_hochberg`] (Benjamini & Hochberg 1995) controls the false discovery
//!   rate — the expected share of false reasons among those listed — and is more
//!   powerful when many quantities truly differ; under an A/A comparison (all nulls
//!   true) it too keeps the family-wise rate at α, for independent or positively
//!   dependent tests.
//!
//! Both return adjusted p-values in the order given (as statsmodels' `multipletests`
//! does), so "adjusted p < α" is the decision. A NaN p-value (a test that could not be
//! computed) is treated as 1: no evidence, and it still counts in the family.

/// Holm's step-down adjusted p-values: with p sorted ascending, p̃₍ₖ₎ =
/// maxⱼ≤ₖ min(1, (m − j + 1)·p₍ⱼ₎). Order preserved.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut out = vec![0.0; m];
    let mut running = 0.0f64;
    for (k, i) in ascending(p).into_iter().enumerate() {
        running = running.max(((m - k) as f64 * clean(p[i])).min(1.0));
        out[i] = running;
    }
    out
}

/// Benjamini–Hochberg step-up adjusted p-values: with p sorted ascending, p̃₍ₖ₎ =
/// minⱼ≥ₖ min(1, m/j·p₍ⱼ₎). Order preserved.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut out = vec![0.0; m];
    let mut running = 1.0f64;
    let order = ascending(p);
    for (k, &i) in order.iter().enumerate().rev() {
        running = running.min(m as f64 / (k + 1) as f64 * clean(p[i]));
        out[i] = running.min(1.0);
    }
    out
}

/// Indices of `p` by ascending p-value (NaN as 1; ties keep their order).
fn ascending(p: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&a, &b| clean(p[a]).total_cmp(&clean(p[b])));
    order
}

/// A p-value as the procedures read it: NaN is 1, the rest clamped to [0, 1].
fn clean(p: f64) -> f64 {
    if p.is_nan() {
        1.0
    } else {
        p.clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SeededRng;
    use crate::welch_t_test;

    // Reference values computed from the definitions (Holm 1979; Benjamini & Hochberg
    // 1995) with a few lines of plain python3 — statsmodels and scipy were not
    // installed where these were written; `multipletests(p, method="holm")` and
    // `method="fdr_bh"` define the same quantities.
    const P: [f64; 7] = [0.01, 0.04, 0.03, 0.005, 0.2, 0.5, 0.04];
    const HOLM: [f64; 7] = [0.06, 0.16, 0.15, 0.035, 0.4, 0.5, 0.16];
    const BH: [f64; 7] = [
        0.035,
        0.055999999999999994,
        0.055999999999999994,
        0.035,
        0.23333333333333336,
        0.5,
        0.055999999999999994,
    ];

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn holm_matches_the_reference_in_the_given_order() {
        close(&holm(&P), &HOLM);
    }

    #[test]
    fn benjamini_hochberg_matches_the_reference_in_the_given_order() {
        close(&benjamini_hochberg(&P), &BH);
    }

    #[test]
    fn edge_cases_stay_in_bounds() {
        assert!(holm(&[]).is_empty() && benjamini_hochberg(&[]).is_empty());
        close(&holm(&[0.03]), &[0.03]);
        close(&holm(&[0.9, 0.8]), &[1.0, 1.0]);
        close(&holm(&[f64::NAN, 0.01]), &[1.0, 0.02]);
        close(&benjamini_hochberg(&[f64::NAN, 0.01]), &[1.0, 0.02]);
    }

    /// 2,000 families of 30 Welch tests on null data (10 normal values a side): Holm
    /// at α = 5 % lists something in at most ~5 % of the families; unadjusted, at α
    /// = 5 % nearly every family would (1 − 0.95³⁰ ≈ 79 %).
    #[test]
    fn holm_keeps_the_family_wise_error_under_alpha_on_null_data() {
        let mut rng = SeededRng::new(31);
        let (families, tests, n, alpha) = (2_000, 30, 10, 0.05);
        let (mut holm_hits, mut raw_hits) = (0, 0);
        for _ in 0..families {
            let p: Vec<f64> = (0..tests)
                .map(|_| {
                    let a: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
                    let b: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
                    welch_t_test(&a, &b).unwrap().p
                })
                .collect();
            holm_hits += usize::from(holm(&p).iter().any(|&q| q < alpha));
            raw_hits += usize::from(p.iter().any(|&q| q < alpha));
        }
        let fwer = holm_hits as f64 / families as f64;
        // One binomial standard error at 5 % over 2,000 families is 0.5 %.
        assert!(fwer <= 0.06, "Holm's family-wise error {fwer}");
        assert!(
            raw_hits as f64 / families as f64 > 0.7,
            "unadjusted {raw_hits}"
        );
    }
}
