//! Judging thresholds on a finished run: reads each threshold's quantity from a
//! [`Report`] and turns it into a [`Verdict`].
//!
//! It sits after both `threshold` (what is asked, parsed with the spec) and `report`
//! (what a run gave), so neither needs the other: the spec holds thresholds, the report
//! is built from the spec's run, and only judging meets the two.

use crate::report::Report;
use crate::slo::Statistic;
use crate::threshold::{percentile_name, Quantity, Threshold, Verdict};

impl Threshold {
    /// The run's value of the quantity (NaN for a target the run does not have).
    pub fn value(&self, r: &Report) -> f64 {
        if let Some(name) = &self.target {
            let Some(t) = r.targets.iter().find(|t| &t.name == name) else {
                return f64::NAN;
            };
            let l = &t.latency_ms;
            return match self.quantity {
                Quantity::Latency(Statistic::Mean) => l.mean,
                Quantity::Latency(Statistic::Max) => l.max,
                Quantity::Latency(Statistic::Percentile(p)) => match percentile_name(p).as_str() {
                    "50" => l.p50,
                    "75" => l.p75,
                    "90" => l.p90,
                    "99" => l.p99,
                    "999" => l.p999,
                    "9999" => l.p9999,
                    _ => f64::NAN,
                },
                Quantity::Rps => t.rps,
                Quantity::Errors => t.errors as f64,
                Quantity::ErrorRate => t.errors as f64 / (t.requests.max(1)) as f64,
                Quantity::Mbps => f64::NAN,
            };
        }
        match self.quantity {
            Quantity::Latency(stat) => latency_ms(r.histogram(), stat),
            Quantity::Rps => r.rps,
            Quantity::ErrorRate => r.error_rate(),
            Quantity::Errors => r.failed() as f64,
            Quantity::Mbps => r.mbps,
        }
    }

    /// Judges the run.
    pub fn judge(&self, r: &Report) -> Verdict {
        let value = self.value(r);
        Verdict::new(self, value)
    }
}

/// A latency statistic of a histogram of microseconds, in milliseconds.
fn latency_ms(h: &hdrhistogram::Histogram<u64>, stat: Statistic) -> f64 {
    if h.is_empty() {
        return f64::NAN;
    }
    let us = match stat {
        Statistic::Percentile(p) => h.value_at_quantile(p / 100.0) as f64,
        Statistic::Mean => h.mean(),
        Statistic::Max => h.max() as f64,
    };
    us / 1e3
}
