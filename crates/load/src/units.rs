//! The load engine's view of perflab's one unit grammar (`perflab-units`): durations,
//! rates and fractions, with errors that name the spec field they were given for.

use crate::error::SpecError;
use std::time::Duration;

fn spec_error(field: &'static str, e: perflab_units::UnitError) -> SpecError {
    SpecError::value(field, e.value, e.expected)
}

/// Parses a duration (see [`perflab_units::parse_duration`]).
pub fn parse_duration(field: &'static str, s: &str) -> Result<Duration, SpecError> {
    perflab_units::parse_duration(s).map_err(|e| spec_error(field, e))
}

/// Parses a positive request rate in requests per second; `k` and `M` suffixes allowed.
pub fn parse_rate(field: &'static str, s: &str) -> Result<f64, SpecError> {
    perflab_units::parse_rate(s).map_err(|e| spec_error(field, e))
}

/// Checks that a rate is finite and positive.
pub fn check_rate(field: &'static str, v: f64) -> Result<f64, SpecError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(SpecError::value(
            field,
            v.to_string(),
            "a positive number of requests per second",
        ))
    }
}

/// Parses a fraction: `0.1%` is 0.001, a bare `0.001` is 0.001. Must lie in [0, 1].
pub fn parse_fraction(field: &'static str, s: &str) -> Result<f64, SpecError> {
    perflab_units::parse_fraction(s).map_err(|e| spec_error(field, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let d = |s| parse_duration("duration", s).unwrap();
        assert_eq!(d("10s"), Duration::from_secs(10));
        assert_eq!(d("500ms"), Duration::from_millis(500));
        assert_eq!(d("1m30s"), Duration::from_secs(90));
        assert_eq!(d("2"), Duration::from_secs(2));
        assert_eq!(d("1.5s"), Duration::from_millis(1500));
        assert_eq!(d("250us"), Duration::from_micros(250));
        for bad in ["", "-1s", "ten", "10x", "s", "1e400"] {
            assert!(parse_duration("duration", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rates_and_fractions() {
        assert_eq!(parse_rate("rate", "400").unwrap(), 400.0);
        assert_eq!(parse_rate("rate", "2.5k").unwrap(), 2500.0);
        for bad in ["-1", "0", "abc", "inf", "NaN"] {
            assert!(parse_rate("rate", bad).is_err(), "{bad}");
        }
        assert!((parse_fraction("f", "0.1%").unwrap() - 0.001).abs() < 1e-12);
        assert_eq!(parse_fraction("f", "0.5").unwrap(), 0.5);
        assert!(parse_fraction("f", "150%").is_err());
        assert!(parse_fraction("f", "x%").is_err());
    }
}
