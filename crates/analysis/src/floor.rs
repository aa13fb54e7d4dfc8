//! The noise floor of a comparison across runs or hosts, and the one rule that uses it
//! — shared by `perflab suite compare` ([`crate::suite`]) and `perflab compare A B`
//! ([`crate::across`]), so the two cannot call the same difference two names.
//!
//! Two runs are two samples of a machine's mood as well as of the thing compared: a
//! difference a host shows against itself is no difference between runs. So per metric
//! the floor is the larger of the two sides' own spread — the coefficient of variation
//! of its values on each side — and of the CPU-loop noise each run measured before it
//! started (`noise_cv` in the run's environment, `noise_check`). A ratio is a
//! difference only when its interval excludes 1 *and* it differs from 1 by more than
//! that floor ([`Floor::beyond`]); otherwise it is "within noise".

use serde_json::Value;

/// The word for a difference inside the floor, in text and JSON alike.
pub const WITHIN_NOISE: &str = "within noise";

/// Coefficient of variation of `values` (NaN for fewer than two).
pub fn cv(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    if values.len() < 2 {
        return f64::NAN;
    }
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    var.sqrt() / mean.abs()
}

/// The CPU-loop noise a run measured before it started (a run's environment), when
/// it did.
pub fn noise_cv(environment: &Value) -> Option<f64> {
    environment.get("noise_cv")?.as_f64()
}

/// The noise of two runs: each one's CPU-loop CV, when measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunNoise {
    pub a: Option<f64>,
    pub b: Option<f64>,
}

impl RunNoise {
    /// The noise of two runs from their environments.
    pub fn of(a: &Value, b: &Value) -> RunNoise {
        RunNoise {
            a: noise_cv(a),
            b: noise_cv(b),
        }
    }

    /// The floor of one metric whose values on the two sides are `a` and `b`: the
    /// largest of both sides' CV and both runs' CPU-loop noise (unknowns left out; 0
    /// when nothing is known).
    pub fn floor(&self, a: &[f64], b: &[f64]) -> Floor {
        let cv = [cv(a), cv(b), self.a.unwrap_or(0.0), self.b.unwrap_or(0.0)]
            .into_iter()
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        Floor(cv)
    }
}

/// A noise floor, as a fraction (0.02: ratios within 2 % of 1 are noise).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Floor(pub f64);

impl Floor {
    /// Whether a ratio with interval [lo, hi] is a difference: the interval excludes 1
    /// and the ratio is farther from 1 than the floor.
    pub fn beyond(&self, ratio: f64, lo: f64, hi: f64) -> bool {
        (lo > 1.0 || hi < 1.0) && !self.holds(ratio)
    }

    /// Whether a ratio lies within the floor of 1.
    pub fn holds(&self, ratio: f64) -> bool {
        (ratio - 1.0).abs() <= self.0
    }

    /// `±2.0%`.
    pub fn text(&self) -> String {
        format!("±{:.1}%", self.0 * 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_of_one_value_is_unknown() {
        assert!(cv(&[1.0]).is_nan());
        assert!((cv(&[1.0, 1.0, 1.0])).abs() < 1e-12);
    }

    #[test]
    fn the_floor_is_the_largest_known_noise() {
        let noise = RunNoise::of(
            &serde_json::json!({"noise_cv": 0.02}),
            &serde_json::json!({"noise_cv": null}),
        );
        assert_eq!(
            noise,
            RunNoise {
                a: Some(0.02),
                b: None
            }
        );
        // Tight sides: the run's CPU loop decides.
        let f = noise.floor(&[100.0, 100.1, 99.9], &[101.0, 101.1, 100.9]);
        assert!((f.0 - 0.02).abs() < 1e-12);
        // A side that varies 10 %: its own spread decides.
        let f = noise.floor(&[90.0, 110.0, 100.0], &[100.0]);
        assert!((f.0 - 0.1).abs() < 1e-12, "{f:?}");
        // Nothing known: no floor.
        assert_eq!(RunNoise::default().floor(&[1.0], &[2.0]), Floor(0.0));
    }

    #[test]
    fn a_difference_needs_an_interval_off_one_and_a_ratio_past_the_floor() {
        let f = Floor(0.02);
        assert!(f.beyond(1.05, 1.03, 1.07));
        assert!(f.beyond(0.95, 0.93, 0.97));
        assert!(!f.beyond(1.01, 1.005, 1.015), "inside the floor");
        assert!(!f.beyond(1.05, 0.99, 1.11), "the interval holds 1");
        assert!(f.holds(0.985) && !f.holds(0.97));
        assert_eq!(f.text(), "±2.0%");
    }
}
