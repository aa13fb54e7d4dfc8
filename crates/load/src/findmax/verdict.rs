//! One step's verdict: whether it met the SLO, and whether it was close enough to
//! the bound that one run of it cannot be trusted. A step is *near* when any
//! condition's value lies within ±[`NEAR`] of its bound (p99 18.5 ms under
//! `p99<20ms`): such a step is run again before the bisection moves on (module
//! `search`), since step-to-step noise of that size is common and would otherwise
//! move the knee by a whole bisection interval.

use crate::slo::{Slo, Statistic};
use hdrhistogram::Histogram;

/// A step within this fraction of an SLO bound is retested.
pub const NEAR: f64 = 0.10;

/// What one step came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub passed: bool,
    pub near: bool,
}

/// Judges a step: the SLO on its corrected latency `hist` (µs), and `others` (its
/// error rate and achieved rate within bounds).
pub fn judge(slo: &Slo, hist: &Histogram<u64>, others: bool) -> Verdict {
    let passed = others && slo.holds(hist);
    let near = !hist.is_empty()
        && slo.conditions.iter().any(|c| {
            let us = match c.stat {
                Statistic::Percentile(p) => hist.value_at_quantile(p / 100.0) as f64,
                Statistic::Mean => hist.mean(),
                Statistic::Max => hist.max() as f64,
            };
            let bound = c.limit.as_secs_f64() * 1e6;
            (us - bound).abs() <= NEAR * bound
        });
    Verdict { passed, near }
}

/// The outcome of a step run up to three times: two of three (the third is run only
/// when the first two disagree).
pub fn majority(runs: &[bool]) -> bool {
    runs.iter().filter(|p| **p).count() * 2 > runs.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(us: u64) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 60_000_000, 3).unwrap();
        h.record_n(us, 1_000).unwrap();
        h
    }

    #[test]
    fn a_step_within_ten_percent_of_the_bound_is_near() {
        let slo = Slo::parse("p99<20ms").unwrap();
        let v = |us| judge(&slo, &hist(us), true);
        assert_eq!(
            v(10_000),
            Verdict {
                passed: true,
                near: false
            }
        );
        assert_eq!(
            v(18_500),
            Verdict {
                passed: true,
                near: true
            }
        );
        assert_eq!(
            v(21_500),
            Verdict {
                passed: false,
                near: true
            }
        );
        assert_eq!(
            v(30_000),
            Verdict {
                passed: false,
                near: false
            }
        );
        assert!(!judge(&slo, &hist(10_000), false).passed);
    }

    #[test]
    fn two_of_three_decide() {
        assert!(majority(&[true, true]));
        assert!(!majority(&[false, false]));
        assert!(majority(&[true, false, true]));
        assert!(!majority(&[true, false, false]));
        assert!(majority(&[true]));
    }
}
