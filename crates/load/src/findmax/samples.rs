//! How long a find-max step must be to judge its SLO. A percentile read from too few
//! samples is one or two requests: p99 of 100 responses is the second-slowest, so one
//! connect or one scheduler hiccup decides the step (the 400 ms steps at
//! 275 req/s held 110 samples). A step at rate r therefore lasts
//! max(`--step-duration`, n / r), where n is the samples its strictest condition needs:
//! 10 / (1 − q) for the q-quantile (1,000 for p99, 10,000 for p99.9; at least
//! [`FLOOR`]: a p50 or a mean is judged on 100), and [`FOR_MAX`] for a max. A step is never lengthened past
//! [`MAX_STEP`]: rates below n / [`MAX_STEP`] are not tried at all (the search says
//! so). Lengthening, not refusing: a climb from 100 req/s keeps its first steps (a
//! second or ten each) instead of failing on them.

use crate::slo::{Slo, Statistic};
use std::time::Duration;

/// Fewest samples any step is judged on.
pub const FLOOR: u64 = 100;
/// Samples a `max` condition is judged on (the max of fewer says little).
pub const FOR_MAX: u64 = 1_000;
/// Longest a step is lengthened to.
pub const MAX_STEP: Duration = Duration::from_secs(60);

/// Samples a step needs to judge every condition of `slo`.
pub fn needed(slo: &Slo) -> u64 {
    slo.conditions
        .iter()
        .map(|c| match c.stat {
            Statistic::Percentile(p) if p < 100.0 => {
                (10.0 / (1.0 - p / 100.0) - 1e-6).ceil() as u64
            }
            Statistic::Mean => FLOOR,
            Statistic::Percentile(_) | Statistic::Max => FOR_MAX,
        })
        .max()
        .unwrap_or(FLOOR)
        .max(FLOOR)
}

/// The length of a step at `rate` that holds `need` samples, at least `step`
/// (`None`: longer than [`MAX_STEP`]).
pub fn length(step: Duration, need: u64, rate: f64) -> Option<Duration> {
    let secs = need as f64 / rate;
    if !secs.is_finite() || secs > MAX_STEP.as_secs_f64() + 1e-6 {
        return None;
    }
    Some(step.max(Duration::from_secs_f64(secs)))
}

/// The lowest rate a step can be judged at.
pub fn lowest_rate(need: u64) -> f64 {
    need as f64 / MAX_STEP.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentile_needs_ten_samples_beyond_it() {
        let n = |s: &str| needed(&Slo::parse(s).unwrap());
        assert_eq!(n("p99<20ms"), 1_000);
        assert_eq!(n("p99.9<20ms"), 10_000);
        assert_eq!(n("p50<1ms,p99.99<9ms"), 100_000);
        assert_eq!(n("p50<1ms"), FLOOR);
        assert_eq!(n("p90<1ms"), 100);
        assert_eq!(n("mean<1ms"), FLOOR);
        assert_eq!(n("p100<1ms"), FOR_MAX);
        assert_eq!(n("max<1ms,p50<1ms"), FOR_MAX);
    }

    #[test]
    fn a_slow_step_is_lengthened_up_to_the_bound() {
        let s = Duration::from_millis(500);
        assert_eq!(length(s, 1_000, 10_000.0), Some(s));
        assert_eq!(length(s, 1_000, 100.0), Some(Duration::from_secs(10)));
        assert_eq!(length(s, 1_000, 10.0), None);
        assert!((lowest_rate(1_000) - 16.67).abs() < 0.01);
    }
}
