//! perflab-units: the one grammar for the human units in flags and experiment files —
//! durations (`10s`, `500ms`, `2.5s`, `1m30s`, a bare number of seconds), rates
//! (`400`, `2.5k`, `1M`) and fractions (`0.1%`, `0.001`).
//!
//! Every crate and every flag parses these through here, so `--duration 1m30s`,
//! `duration = "1m30s"` in an experiment file and `perflab doctor --watch 1m30s` mean
//! the same thing. Hand-written because the forms are tiny and the error must carry the
//! value and the expected form; callers add the field or flag name (a library names the
//! field, the CLI its flag). [`Phrase`] carries those field names through a message,
//! for every library that checks options (the grammar's neighbour: both are how a
//! value given by a person is read and talked about).

mod phrase;
pub use phrase::{flag_for, Part, Phrase};

use std::fmt;
use std::time::Duration;

/// The expected form of a duration, for messages.
pub const DURATION_FORM: &str = "a duration like 10s, 500ms, 2.5s, 1m30s or a number of seconds";
/// The expected form of a rate, for messages.
pub const RATE_FORM: &str = "a positive number per second, like 400, 2.5k or 1M";
/// The expected form of a fraction, for messages.
pub const FRACTION_FORM: &str = "a percentage like 0.1% or a fraction like 0.001";

/// A value that does not have the expected form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    /// The text as given.
    pub value: String,
    /// What was expected instead (one of the `*_FORM` constants).
    pub expected: &'static str,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: expected {}", self.value, self.expected)
    }
}

impl std::error::Error for UnitError {}

impl UnitError {
    fn new(value: &str, expected: &'static str) -> Self {
        UnitError {
            value: value.to_string(),
            expected,
        }
    }

    /// The message with the field (or flag) it was given for: "invalid duration
    /// `ten`: expected …".
    pub fn for_field(&self, field: &str) -> String {
        format!(
            "invalid {field} `{}`: expected {}",
            self.value, self.expected
        )
    }
}

/// Parses a duration: one or more `<number><unit>` with units `h`, `m`/`min`,
/// `s`/`sec`, `ms`, `us`/`µs`, `ns` (`1m30s`, `2.5s`, `500ms`); a bare number means
/// seconds. Negative, non-finite or absurd (≥ 10⁹ s) values are rejected. Zero is
/// accepted: callers that need a positive duration say so with their own message.
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    let err = || UnitError::new(s, DURATION_FORM);
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
        rest = rest[num_len..].trim_start();
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.' || c == ' ')
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
        rest = rest[unit_len..].trim_start();
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

/// Parses a positive rate per second; `k` and `M` suffixes allowed (`2.5k` = 2500).
pub fn parse_rate(s: &str) -> Result<f64, UnitError> {
    let err = || UnitError::new(s, RATE_FORM);
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix('k') {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix('M') {
        (n, 1e6)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| err())?;
    let v = v * scale;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(err())
    }
}

/// Parses a fraction: `0.1%` is 0.001, a bare `0.001` is 0.001. Must lie in [0, 1].
pub fn parse_fraction(s: &str) -> Result<f64, UnitError> {
    let err = || UnitError::new(s, FRACTION_FORM);
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
        let d = |s| parse_duration(s).unwrap();
        assert_eq!(d("10s"), Duration::from_secs(10));
        assert_eq!(d("500ms"), Duration::from_millis(500));
        assert_eq!(d("1m30s"), Duration::from_secs(90));
        assert_eq!(d("1m 30s"), Duration::from_secs(90));
        assert_eq!(d("2"), Duration::from_secs(2));
        assert_eq!(d("0"), Duration::ZERO);
        assert_eq!(d("2.5s"), Duration::from_millis(2500));
        assert_eq!(d("1.5"), Duration::from_millis(1500));
        assert_eq!(d("250us"), Duration::from_micros(250));
        assert_eq!(d("2min"), Duration::from_secs(120));
        assert_eq!(d("1h"), Duration::from_secs(3600));
        for bad in ["", "-1s", "ten", "10x", "s", "1e400", "1..5s", "nan"] {
            let e = parse_duration(bad).unwrap_err();
            assert_eq!(e.expected, DURATION_FORM, "{bad}");
        }
        assert_eq!(
            parse_duration("ten").unwrap_err().for_field("duration"),
            "invalid duration `ten`: expected a duration like 10s, 500ms, 2.5s, 1m30s or a number of seconds"
        );
    }

    #[test]
    fn rates_and_fractions() {
        assert_eq!(parse_rate("400").unwrap(), 400.0);
        assert_eq!(parse_rate("2.5k").unwrap(), 2500.0);
        assert_eq!(parse_rate("1M").unwrap(), 1e6);
        for bad in ["-1", "0", "abc", "inf", "NaN", ""] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        assert!((parse_fraction("0.1%").unwrap() - 0.001).abs() < 1e-12);
        assert_eq!(parse_fraction("0.5").unwrap(), 0.5);
        assert!(parse_fraction("150%").is_err());
        assert!(parse_fraction("x%").is_err());
    }
}
