//! Parsing of the human units used in flags and experiment files: durations ("10s",
//! "500ms", "1m30s"), rates ("400", "2.5k") and fractions ("0.1%", "0.001").
//!
//! Hand-written because the forms are tiny and the error messages must name the field
//! and the expected form (CONVENTIONS: never a silent default).

use crate::error::SpecError;
use std::time::Duration;

/// Parses a duration: a sequence of `<number><unit>` with units `h`, `m`, `s`, `ms`,
/// `us`, `ns`; a bare number means seconds. Negative or non-finite values are rejected.
pub fn parse_duration(field: &'static str, s: &str) -> Result<Duration, SpecError> {
    const EXPECTED: &str = "a duration like 10s, 500ms, 1m30s or a number of seconds";
    let err = || SpecError::value(field, s, EXPECTED);
    let t = s.trim();
    if t.is_empty() {
        return Err(err());
    }
    if let Ok(secs) = t.parse::<f64>() {
        return secs_to_duration(secs).ok_or_else(err);
    }
    let mut total = 0f64;
    let mut rest = t;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(err());
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| err())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" | "min" => 60.0,
            "s" | "sec" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return Err(err()),
        };
        rest = &rest[unit_len..];
        total += value * scale;
    }
    secs_to_duration(total).ok_or_else(err)
}

fn secs_to_duration(secs: f64) -> Option<Duration> {
    if secs.is_finite() && (0.0..1e9).contains(&secs) {
        Some(Duration::from_secs_f64(secs))
    } else {
        None
    }
}

/// Parses a positive request rate in requests per second; `k` and `M` suffixes allowed.
pub fn parse_rate(field: &'static str, s: &str) -> Result<f64, SpecError> {
    let err = || {
        SpecError::value(
            field,
            s,
            "a positive number of requests per second, like 400 or 2.5k",
        )
    };
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix('k') {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix('M') {
        (n, 1e6)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.parse().map_err(|_| err())?;
    check_rate(field, v * scale).map_err(|_| err())
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
    let err = || SpecError::value(field, s, "a percentage like 0.1% or a fraction like 0.001");
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map_err(|_| err())? / 100.0,
        None => t.parse::<f64>().map_err(|_| err())?,
    };
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(err())
    }
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
