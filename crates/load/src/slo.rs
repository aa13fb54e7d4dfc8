//! Service-level objectives for `--find-max`: `p99<20ms`, `p50<5ms,p99.9<=50ms`,
//! `mean<10ms`. A step "meets the SLO" when every condition holds on its corrected
//! latency and its error rate is within `--max-error-rate`.

use crate::error::SpecError;
use crate::units::parse_duration;
use std::fmt;
use std::time::Duration;

/// Which statistic of the latency distribution a condition is about.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Statistic {
    /// A percentile in (0, 100].
    Percentile(f64),
    /// The arithmetic mean.
    Mean,
    /// The largest value.
    Max,
}

/// One condition `STAT < LIMIT` (or `<=`).
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// The statistic.
    pub stat: Statistic,
    /// The bound.
    pub limit: Duration,
    /// `<=` rather than `<`.
    pub inclusive: bool,
}

/// A conjunction of conditions.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    /// All must hold.
    pub conditions: Vec<Condition>,
}

const EXPECTED: &str = "conditions like p99<20ms or p50<5ms,p99.9<=50ms or mean<10ms";

impl Slo {
    /// Parses an SLO expression.
    pub fn parse(s: &str) -> Result<Slo, SpecError> {
        let err = || SpecError::value("slo", s, EXPECTED);
        let mut conditions = Vec::new();
        for part in s.split([',', '&']).map(str::trim).filter(|p| !p.is_empty()) {
            let (lhs, rhs, inclusive) = if let Some((l, r)) = part.split_once("<=") {
                (l, r, true)
            } else if let Some((l, r)) = part.split_once('<') {
                (l, r, false)
            } else {
                return Err(err());
            };
            let lhs = lhs.trim().to_ascii_lowercase();
            let stat = match lhs.as_str() {
                "mean" | "avg" => Statistic::Mean,
                "max" => Statistic::Max,
                _ => {
                    let p: f64 = lhs
                        .strip_prefix('p')
                        .and_then(|p| p.parse().ok())
                        .ok_or_else(err)?;
                    if !(p > 0.0 && p <= 100.0) {
                        return Err(err());
                    }
                    Statistic::Percentile(p)
                }
            };
            let limit = parse_duration("SLO limit", rhs.trim()).map_err(|_| err())?;
            conditions.push(Condition {
                stat,
                limit,
                inclusive,
            });
        }
        if conditions.is_empty() {
            return Err(err());
        }
        Ok(Slo { conditions })
    }

    /// Whether the histogram (values in microseconds) meets every condition.
    pub fn holds(&self, hist: &hdrhistogram::Histogram<u64>) -> bool {
        if hist.is_empty() {
            return false;
        }
        self.conditions.iter().all(|c| {
            let us = match c.stat {
                Statistic::Percentile(p) => hist.value_at_quantile(p / 100.0) as f64,
                Statistic::Mean => hist.mean(),
                Statistic::Max => hist.max() as f64,
            };
            let limit = c.limit.as_secs_f64() * 1e6;
            if c.inclusive {
                us <= limit
            } else {
                us < limit
            }
        })
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.conditions.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match c.stat {
                Statistic::Percentile(p) => write!(f, "p{p}")?,
                Statistic::Mean => f.write_str("mean")?,
                Statistic::Max => f.write_str("max")?,
            }
            let op = if c.inclusive { "<=" } else { "<" };
            write!(f, "{op}{}ms", c.limit.as_secs_f64() * 1e3)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_evaluates() {
        let slo = Slo::parse("p99<20ms, mean<=5ms").unwrap();
        assert_eq!(slo.conditions.len(), 2);
        assert_eq!(slo.conditions[0].stat, Statistic::Percentile(99.0));
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for _ in 0..100 {
            h.record(1_000).unwrap();
        }
        assert!(slo.holds(&h));
        h.record_n(30_000, 5).unwrap();
        assert!(!slo.holds(&h));
        assert_eq!(Slo::parse("p99.9<50ms").unwrap().to_string(), "p99.9<50ms");
        for bad in ["", "p99", "p99>20ms", "q99<1ms", "p0<1ms", "p99<abc"] {
            assert!(Slo::parse(bad).is_err(), "{bad}");
        }
    }
}
