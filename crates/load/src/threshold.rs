//! Pass/fail thresholds on a finished run (k6's `thresholds`): `p99<20ms`,
//! `mean<=5ms`, `max<1s`, `error_rate<0.1%`, `errors<1`, `rps>5000`, `mbps>=100`, and
//! on one target of a request mix, `target=NAME:p99<20ms`.
//!
//! A latency limit needs its unit (`p99<200ms`, `max<1s`): a bare `p99<200` is refused
//! with a hint ([`SpecError::NeedsUnit`]), because k6 reads it as milliseconds and the
//! duration grammar as seconds, and a gate that can never fail is worse than an error.
//! Counts, rates and fractions (`errors<1`, `rps>5000`, `error_rate<0.001`) stay
//! unitless. The verdict prints the limit back with its unit.
//!
//! The latency statistics use the same words as `--slo` (`pNN`, `mean`, `max`) and are
//! read from the run's merged histogram, so any percentile works; in the open loop that
//! histogram is the coordinated-omission-corrected one. A threshold is judged once, on
//! the whole recorded run; an experiment also judges it on a config's interval (the
//! `lab` side reads the stored metric named by [`Threshold::metric`]).
//!
//! This module knows thresholds and verdicts only, not the [`Report`](crate::Report):
//! the report is built from the spec, which holds thresholds, so reading a report's
//! value lives after both, in `judge`.

use std::fmt;

use serde::Serialize;

use crate::error::SpecError;
use crate::slo::Statistic;
use crate::units;

/// What a threshold is about.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Quantity {
    /// A latency statistic, in milliseconds.
    Latency(Statistic),
    /// Responses per second.
    Rps,
    /// Failed / attempted requests, a fraction.
    ErrorRate,
    /// Failed requests, a count.
    Errors,
    /// Megabytes (10^6 bytes) per second received.
    Mbps,
}

/// The comparison a threshold asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Lt => value < limit,
            Op::Le => value <= limit,
            Op::Gt => value > limit,
            Op::Ge => value >= limit,
        }
    }

    /// Whether lower values are the good side (`<`, `<=`).
    pub fn upper(self) -> bool {
        matches!(self, Op::Lt | Op::Le)
    }
}

/// One threshold, as written and as understood.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The expression as given (trimmed).
    pub text: String,
    pub quantity: Quantity,
    pub op: Op,
    /// In the quantity's unit: ms for latency, a fraction for `error_rate`.
    pub limit: f64,
    /// `target=NAME:`: judged on one target of a request mix.
    pub target: Option<String>,
}

const EXPECTED: &str = "a threshold like p99<20ms, mean<=5ms, max<1s, error_rate<0.1%, \
                        errors<1, rps>5000 or mbps>=100";

impl Threshold {
    /// Parses one threshold expression.
    pub fn parse(s: &str) -> Result<Threshold, SpecError> {
        let text = s.trim();
        let err = || SpecError::value("thresholds", text, EXPECTED);
        let (at, op) = [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)]
            .iter()
            .find_map(|(t, op)| text.find(t).map(|i| ((i, t.len()), *op)))
            .ok_or_else(err)?;
        let (lhs, rhs) = (text[..at.0].trim(), text[at.0 + at.1..].trim());
        // `target=NAME:p99<20ms`: the name may hold anything but the last `:`.
        let (target, lhs) = match lhs.strip_prefix("target=") {
            Some(rest) => {
                let (name, stat) = rest.rsplit_once(':').ok_or_else(err)?;
                if name.is_empty() {
                    return Err(err());
                }
                (Some(name.to_string()), stat.trim())
            }
            None => (None, lhs),
        };
        let quantity = match lhs.to_ascii_lowercase().as_str() {
            "mean" | "avg" => Quantity::Latency(Statistic::Mean),
            "max" => Quantity::Latency(Statistic::Max),
            "rps" => Quantity::Rps,
            "error_rate" => Quantity::ErrorRate,
            "errors" => Quantity::Errors,
            "mbps" => Quantity::Mbps,
            l => {
                let p: f64 = l
                    .strip_prefix('p')
                    .and_then(|p| p.parse().ok())
                    .filter(|p| *p > 0.0 && *p <= 100.0)
                    .ok_or_else(err)?;
                Quantity::Latency(Statistic::Percentile(p))
            }
        };
        let limit = match quantity {
            // A bare number is refused: k6 reads `p99<200` as milliseconds, the duration
            // grammar as seconds, so either reading would surprise someone.
            Quantity::Latency(_) if rhs.parse::<f64>().is_ok() => {
                return Err(SpecError::NeedsUnit {
                    field: "thresholds",
                    value: text.to_string(),
                    what: "a latency",
                    example: format!("{}ms", text.trim_end()),
                })
            }
            Quantity::Latency(_) => {
                units::parse_duration("thresholds", rhs)
                    .map_err(|_| err())?
                    .as_secs_f64()
                    * 1e3
            }
            Quantity::ErrorRate => units::parse_fraction("thresholds", rhs).map_err(|_| err())?,
            Quantity::Rps => units::parse_rate("thresholds", rhs).map_err(|_| err())?,
            Quantity::Errors | Quantity::Mbps => rhs
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(err)?,
        };
        if target.is_some() && !per_target(quantity) {
            return Err(SpecError::value(
                "thresholds",
                text,
                "a per-target threshold on p50, p75, p90, p99, p99.9, p99.99, mean, max, rps, \
                 errors or error_rate",
            ));
        }
        Ok(Threshold {
            text: text.to_string(),
            quantity,
            op,
            limit,
            target,
        })
    }

    /// The stored metric this threshold reads in an experiment (`latency_p99_ms`, `rps`,
    /// ...), the name the http workload records it under.
    pub fn metric(&self) -> String {
        let base = match self.quantity {
            Quantity::Latency(Statistic::Mean) => "latency_mean_ms".into(),
            Quantity::Latency(Statistic::Max) => "latency_max_ms".into(),
            Quantity::Latency(Statistic::Percentile(p)) => {
                format!("latency_p{}_ms", percentile_name(p))
            }
            Quantity::Rps => "rps".into(),
            Quantity::ErrorRate => "error_rate".into(),
            Quantity::Errors => "errors".into(),
            Quantity::Mbps => "mbps".into(),
        };
        match &self.target {
            Some(t) => format!("target.{t}.{base}"),
            None => base,
        }
    }

    /// The unit of `limit` and of the judged value.
    pub fn unit(&self) -> &'static str {
        match self.quantity {
            Quantity::Latency(_) => "ms",
            Quantity::Rps => "req/s",
            Quantity::ErrorRate => "",
            Quantity::Errors => "",
            Quantity::Mbps => "MB/s",
        }
    }

    /// Whether `value` meets the threshold.
    pub fn holds(&self, value: f64) -> bool {
        value.is_finite() && self.op.holds(value, self.limit)
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// What a per-target threshold can read: the target report's fixed percentiles and
/// counts.
fn per_target(q: Quantity) -> bool {
    match q {
        Quantity::Latency(Statistic::Percentile(p)) => {
            ["50", "75", "90", "99", "999", "9999"].contains(&percentile_name(p).as_str())
        }
        Quantity::Mbps => false,
        _ => true,
    }
}

/// `99` → `99`, `99.9` → `999`, `99.99` → `9999`: the stored metric names' spelling.
pub(crate) fn percentile_name(p: f64) -> String {
    let s = format!("{p}");
    s.replace('.', "")
}

/// Four significant digits, no exponent: `5.213`, `20`, `12346`.
fn sig(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// How one threshold came out.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Verdict {
    pub threshold: String,
    pub metric: String,
    pub value: f64,
    pub limit: f64,
    pub unit: &'static str,
    pub passed: bool,
    /// How far past the limit, relative to it (0.5 = 50 % over a `<` limit or under a
    /// `>` one); 0 when it passed.
    pub by: f64,
    /// A `<` / `<=` threshold (a ceiling).
    #[serde(skip)]
    pub upper: bool,
}

impl Verdict {
    /// The verdict of `value` against `t`.
    pub fn new(t: &Threshold, value: f64) -> Verdict {
        let passed = t.holds(value);
        let by = if passed || t.limit == 0.0 || !value.is_finite() {
            0.0
        } else if t.op.upper() {
            (value - t.limit) / t.limit
        } else {
            (t.limit - value) / t.limit
        };
        Verdict {
            threshold: t.text.clone(),
            metric: t.metric(),
            value,
            limit: t.limit,
            unit: t.unit(),
            passed,
            by,
            upper: t.op.upper(),
        }
    }

    /// One line for people: `✗ p99<1ms: 5.21 ms, 421 % over the limit`.
    pub fn line(&self) -> String {
        let shown = |v: f64| match self.unit {
            "" if self.metric == "error_rate" => format!("{:.3} %", v * 100.0),
            "" => format!("{v}"),
            u => format!("{} {u}", sig(v)),
        };
        if self.passed {
            format!("ok    {}: {}", self.threshold, shown(self.value))
        } else if !self.value.is_finite() {
            format!("FAIL  {}: no value (no request completed)", self.threshold)
        } else {
            format!(
                "FAIL  {}: {}, {:.0} % {} the limit {}",
                self.threshold,
                shown(self.value),
                self.by * 100.0,
                if self.upper { "over" } else { "under" },
                shown(self.limit)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_quantity() {
        let t = Threshold::parse(" p99<20ms ").unwrap();
        assert_eq!(t.quantity, Quantity::Latency(Statistic::Percentile(99.0)));
        assert_eq!(
            (t.op, t.limit, t.metric().as_str()),
            (Op::Lt, 20.0, "latency_p99_ms")
        );
        assert_eq!(
            Threshold::parse("p99.9<=1s").unwrap().metric(),
            "latency_p999_ms"
        );
        assert_eq!(Threshold::parse("p99.9<=1s").unwrap().limit, 1000.0);
        let e = Threshold::parse("error_rate<0.1%").unwrap();
        assert!((e.limit - 0.001).abs() < 1e-12);
        assert_eq!(Threshold::parse("rps>5k").unwrap().limit, 5000.0);
        assert_eq!(Threshold::parse("rps>=5000").unwrap().op, Op::Ge);
        assert_eq!(Threshold::parse("errors<1").unwrap().limit, 1.0);
        assert_eq!(
            Threshold::parse("mean<=5ms").unwrap().metric(),
            "latency_mean_ms"
        );
        for bad in [
            "",
            "p99",
            "p99=20ms",
            "q99<1ms",
            "p0<1ms",
            "p99<abc",
            "rps>x",
            "errors<-1",
            "p99<200",
        ] {
            let e = Threshold::parse(bad).unwrap_err().to_string();
            assert!(e.contains("threshold"), "{bad}: {e}");
        }
        let t = Threshold::parse("target=login:p99<20ms").unwrap();
        assert_eq!(t.target.as_deref(), Some("login"));
        assert_eq!(t.metric(), "target.login.latency_p99_ms");
        let t = Threshold::parse("target=GET http://h:1/a:errors<1").unwrap();
        assert_eq!(t.target.as_deref(), Some("GET http://h:1/a"));
        for bad in ["target=x:p95<1ms", "target=x:mbps>1", "target=:p99<1ms"] {
            assert!(Threshold::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_latency_threshold_without_its_unit_is_refused_with_a_hint() {
        for bare in ["p99<200", "mean<=5", "max < 1.5", "target=a:p50<3"] {
            let e = Threshold::parse(bare).unwrap_err();
            assert!(matches!(e, SpecError::NeedsUnit { .. }), "{bare}: {e:?}");
            assert!(e.to_string().contains("needs a unit, e.g."), "{e}");
        }
        let e = Threshold::parse("p99<200").unwrap_err().to_string();
        assert!(e.contains("e.g. p99<200ms"), "{e}");
        // Counts and rates have no unit to forget.
        assert!(Threshold::parse("errors<1").is_ok());
        assert!(Threshold::parse("rps>5000").is_ok());
        assert!(Threshold::parse("error_rate<0.01").is_ok());
    }

    #[test]
    fn verdicts_say_by_how_much() {
        let t = Threshold::parse("p99<1ms").unwrap();
        let v = Verdict::new(&t, 5.0);
        assert!(!v.passed);
        assert!((v.by - 4.0).abs() < 1e-9);
        assert!(v.line().contains("400 % over"), "{}", v.line());
        let r = Threshold::parse("rps>5000").unwrap();
        let v = Verdict::new(&r, 4000.0);
        assert!(!v.passed && (v.by - 0.2).abs() < 1e-9);
        assert!(v.line().contains("20 % under"), "{}", v.line());
        assert!(Verdict::new(&r, 6000.0).passed);
        assert!(!Verdict::new(&t, f64::NAN).passed);
    }
}
