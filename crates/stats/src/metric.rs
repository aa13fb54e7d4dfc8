//! One stored metric, baseline against candidate: the decision both `perflab compare`
//! and the reports make before any statistics — are there enough values, do the two
//! sides describe the same metric, is the direction known — and then [`compare_rounds`],
//! with the verdict's words chosen by the unit ([`MetricKind`]).

use crate::{compare_rounds, Better, CompareOptions, Comparison, MetricKind, StatsError};

/// One side of a metric comparison: its values, unit and direction as stored.
#[derive(Debug, Clone, Copy)]
pub struct MetricSide<'a> {
    pub values: &'a [f64],
    pub unit: &'a str,
    /// `higher` or `lower`.
    pub better: &'a str,
}

/// What became of one metric.
#[derive(Debug, Clone)]
pub enum Outcome {
    Compared(Box<Comparison>),
    /// Fewer than two values on a side: no interval, no test.
    TooFew,
    /// The sides cannot be compared, or the statistics refused (why).
    NotComparable(String),
}

/// Compares a metric's candidate values with its baseline values; `fmt` prints a
/// number in the messages (the baseline mean when the statistics refuse a mean ≤ 0).
pub fn compare_metric(
    b: MetricSide<'_>,
    c: MetricSide<'_>,
    opts: &CompareOptions,
    fmt: impl Fn(f64) -> String,
) -> Outcome {
    compare_metric_rounds(b, c, None, opts, fmt)
}

/// As [`compare_metric`], with the values paired by round (`(base, cand)`, same
/// length) when the trials ran in rounds: see [`compare_rounds`].
pub fn compare_metric_rounds(
    b: MetricSide<'_>,
    c: MetricSide<'_>,
    rounds: Option<(&[f64], &[f64])>,
    opts: &CompareOptions,
    fmt: impl Fn(f64) -> String,
) -> Outcome {
    if b.values.len() < 2 || c.values.len() < 2 {
        return Outcome::TooFew;
    }
    if b.better != c.better || b.unit != c.unit {
        return Outcome::NotComparable(format!(
            "the sides disagree on the metric: {} {} vs {} {}",
            b.unit, b.better, c.unit, c.better
        ));
    }
    let Some(dir) = Better::parse(b.better) else {
        return Outcome::NotComparable(format!(
            "direction {:?} is neither higher nor lower",
            b.better
        ));
    };
    match compare_rounds(b.values, c.values, rounds, dir, opts) {
        Ok(mut cmp) => {
            cmp.kind = MetricKind::of_unit(b.unit);
            Outcome::Compared(Box::new(cmp))
        }
        Err(StatsError::NonPositiveMean { mean, .. }) => {
            Outcome::NotComparable(format!("baseline mean is {}", fmt(mean)))
        }
        Err(e) => Outcome::NotComparable(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side<'a>(values: &'a [f64], unit: &'a str, better: &'a str) -> MetricSide<'a> {
        MetricSide {
            values,
            unit,
            better,
        }
    }

    #[test]
    fn each_refusal_says_why() {
        let o = CompareOptions::default();
        let f = |v: f64| format!("{v}");
        let two = [1.0, 2.0];
        assert!(matches!(
            compare_metric(side(&[1.0], "s", "lower"), side(&two, "s", "lower"), &o, f),
            Outcome::TooFew
        ));
        let Outcome::NotComparable(why) =
            compare_metric(side(&two, "s", "lower"), side(&two, "ms", "lower"), &o, f)
        else {
            panic!("units differ")
        };
        assert!(why.contains("s lower vs ms lower"), "{why}");
        let Outcome::NotComparable(why) =
            compare_metric(side(&two, "s", "up"), side(&two, "s", "up"), &o, f)
        else {
            panic!("bad direction")
        };
        assert!(why.contains("\"up\""), "{why}");
        let Outcome::NotComparable(why) = compare_metric(
            side(&[0.0, 0.0], "", "lower"),
            side(&two, "", "lower"),
            &o,
            f,
        ) else {
            panic!("zero baseline")
        };
        assert_eq!(why, "baseline mean is 0");
    }

    #[test]
    fn compares_when_everything_agrees() {
        let b = [10.0, 11.0, 9.0, 10.0];
        let c = [5.0, 5.5, 4.5, 5.0];
        let o = CompareOptions::default();
        let Outcome::Compared(cmp) =
            compare_metric(side(&b, "s", "lower"), side(&c, "s", "lower"), &o, |v| {
                v.to_string()
            })
        else {
            panic!("should compare")
        };
        assert!((cmp.ratio - 0.5).abs() < 1e-12);
    }
}
