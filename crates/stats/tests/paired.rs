//! The paired comparison and Wilcoxon's signed-rank test against independent
//! computations: the log-ratio moments by hand (Python, double precision), the exact
//! signed-rank p-values by brute-force enumeration of all 2ⁿ sign patterns and the
//! tie-corrected normal approximation written out (values below, with the script in
//! the comments), as scipy.stats.wilcoxon's defaults define them.

mod support;

use perflab_stats::{
    paired_log_ratio, t_quantile, t_two_sided_p, wilcoxon_signed_rank, WilcoxonMethod,
};
use support::assert_close;

#[test]
fn paired_log_ratio_matches_the_formula() {
    let b = [10.0, 10.4, 9.8, 10.9, 10.1, 10.6, 9.9, 10.3];
    let c = [10.9, 11.0, 10.6, 11.9, 10.8, 11.7, 10.5, 11.2];
    // python: d = [log(y/x)]; mean, stdev(n-1), stdev/sqrt(n)
    let (m, sd, se) = (
        0.07710879040912724,
        0.015059184369501334,
        0.005324225693406428,
    );
    let p = paired_log_ratio(&b, &c, 0.95).unwrap();
    assert_eq!(p.n_pairs, 8);
    assert_close("mean_log", p.mean_log, m, 1e-12);
    assert_close("sd_log", p.sd_log, sd, 1e-12);
    assert_close("se_log", p.se_log, se, 1e-12);
    let t = t_quantile(0.975, 7.0);
    assert_close("ratio", p.ratio, m.exp(), 1e-12);
    assert_close("lo", p.lo, (m - t * se).exp(), 1e-12);
    assert_close("hi", p.hi, (m + t * se).exp(), 1e-12);
    assert_close("p_t", p.p_t, t_two_sided_p(m / se, 7.0), 1e-12);
    // every round is slower: W = 0 of n = 8, p = 2/256
    assert_close("p_wilcoxon", p.p_wilcoxon, 2.0 / 256.0, 1e-15);
    // the ratio is symmetric: swapping the sides inverts it
    let q = paired_log_ratio(&c, &b, 0.95).unwrap();
    assert_close("swapped", q.ratio * p.ratio, 1.0, 1e-12);
    assert_close("swapped lo", q.lo * p.hi, 1.0, 1e-12);
}

#[test]
fn wilcoxon_matches_enumeration_and_tie_corrected_normal() {
    // python: enumerate itertools.product([0,1], repeat=n), count W+ <= min(W+, W-)
    let cases: &[(&[f64], f64, f64, WilcoxonMethod)] = &[
        (
            &[0.8, -0.3, 1.2, 0.5, 0.9, -0.1, 1.5, 0.2],
            4.0,
            0.0546875,
            WilcoxonMethod::Exact,
        ),
        (
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            0.0,
            0.03125,
            WilcoxonMethod::Exact,
        ),
        (
            &[
                -0.05, 0.12, -0.31, 0.44, 0.02, -0.09, 0.27, 0.15, -0.2, 0.33, 0.06, -0.4,
            ],
            33.0,
            0.67724609375,
            WilcoxonMethod::Exact,
        ),
        // ties: average ranks, var = n(n+1)(2n+1)/24 - sum(t^3-t)/48, z = (W - n(n+1)/4)/sd,
        // p = erfc(|z|/sqrt 2)
        (
            &[1.0, 1.0, 2.0, 2.0, 2.0, -3.0, 4.0, 4.0, -5.0, 6.0, 7.0, 8.0],
            15.0,
            0.0591502761601031,
            WilcoxonMethod::Asymptotic,
        ),
    ];
    for &(d, w, p, method) in cases {
        let r = wilcoxon_signed_rank(d);
        assert_eq!(r.statistic, w, "{d:?}");
        assert_eq!(r.method, method, "{d:?}");
        assert_close(&format!("{d:?}"), r.p, p, 1e-12);
    }
}
