//! The smallest effect a comparison could have detected, and the rounds a target needs.
//!
//! "No significant difference" from a run that could only have seen a 20 % change is
//! not "no difference"; every comparison therefore states its minimum detectable
//! effect (MDE): the true log-ratio δ that a two-sided test at level α detects with
//! probability `power`, δ = (t_{1−α/2, df} + t_{power, df})·se (the usual
//! normal-theory power formula with t quantiles; Cohen 1988, ch. 2). It is printed as
//! ±(e^δ − 1)·100 %. For a target effect the same formula is solved for the number of
//! rounds n, with se = s/√n and the degrees of freedom of that n.

use crate::tdist::t_quantile;

/// Power the MDE is stated at.
pub const DEFAULT_POWER: f64 = 0.8;

/// Above this many rounds a target is reported as out of reach (None).
pub const MAX_ROUNDS: u64 = 1_000_000;

/// How the degrees of freedom grow with the number of rounds n.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// Per-round differences: n − 1.
    Paired,
    /// Two independent samples of n each (Welch, equal spread): 2(n − 1).
    Independent,
}

impl Design {
    fn df(self, n: u64) -> f64 {
        match self {
            Design::Paired => (n - 1) as f64,
            Design::Independent => 2.0 * (n - 1) as f64,
        }
    }
}

/// δ on the log scale detectable with `power` by a two-sided level-`alpha` test whose
/// estimate has standard error `se` with `df` degrees of freedom. NaN when se or df
/// is not usable.
pub fn detectable_log_effect(se: f64, df: f64, alpha: f64, power: f64) -> f64 {
    if se.is_nan() || se < 0.0 || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    (t_quantile(1.0 - 0.5 * alpha, df) + t_quantile(power, df)) * se
}

/// The MDE in % of the baseline, (e^δ − 1)·100.
pub fn mde_pct(se: f64, df: f64, alpha: f64, power: f64) -> f64 {
    detectable_log_effect(se, df, alpha, power).exp_m1() * 100.0
}

/// Rounds needed so that an effect of `target_pct` % is detectable, given `sd_round`,
/// the spread of one round's contribution (the sd of the per-round log-ratios when
/// paired; se·√n of a Welch comparison of n per side). None when the spread is not
/// known or the answer exceeds [`MAX_ROUNDS`].
pub fn rounds_needed(
    sd_round: f64,
    target_pct: f64,
    design: Design,
    alpha: f64,
    power: f64,
) -> Option<u64> {
    if !sd_round.is_finite() || sd_round < 0.0 || target_pct.is_nan() || target_pct <= 0.0 {
        return None;
    }
    let target = (target_pct / 100.0).ln_1p();
    let reached = |n: u64| {
        let df = design.df(n);
        let k = t_quantile(1.0 - 0.5 * alpha, df) + t_quantile(power, df);
        k * sd_round / (n as f64).sqrt() <= target
    };
    // Start from the normal-theory answer (a lower bound), then step up with t.
    let z = t_quantile(1.0 - 0.5 * alpha, f64::INFINITY) + t_quantile(power, f64::INFINITY);
    let n0 = (z * sd_round / target).powi(2).ceil();
    if n0 > MAX_ROUNDS as f64 {
        return None;
    }
    let mut n = (n0 as u64).max(2);
    while !reached(n) {
        n += 1 + n / 50;
        if n > MAX_ROUNDS {
            return None;
        }
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mde_shrinks_with_the_square_root_of_rounds() {
        let sd = 0.02;
        let at = |n: f64| mde_pct(sd / n.sqrt(), n - 1.0, 0.05, 0.8);
        assert!(at(40.0) < at(10.0) * 0.55 && at(40.0) > at(10.0) * 0.45);
        // large n: the normal formula, (1.96 + 0.8416)·se
        let se = sd / 10_000f64.sqrt();
        let want = ((1.959963984540054 + 0.8416212335729143) * se).exp_m1() * 100.0;
        assert!((at(10_000.0) - want).abs() < 1e-3 * want);
    }

    #[test]
    fn rounds_needed_reaches_the_target_and_no_fewer_would() {
        let sd = 0.02;
        let n = rounds_needed(sd, 1.0, Design::Paired, 0.05, 0.8).unwrap();
        let mde = |n: u64| mde_pct(sd / (n as f64).sqrt(), (n - 1) as f64, 0.05, 0.8);
        assert!(mde(n) <= 1.0, "{n}: {}", mde(n));
        assert!(mde(n - 1) > 1.0 || n == 2, "{n}");
        assert_eq!(rounds_needed(0.0, 1.0, Design::Paired, 0.05, 0.8), Some(2));
        assert_eq!(rounds_needed(10.0, 0.01, Design::Paired, 0.05, 0.8), None);
        assert_eq!(
            rounds_needed(f64::NAN, 1.0, Design::Paired, 0.05, 0.8),
            None
        );
    }
}
