//! The one error type of the crate.
//!
//! Statistics never panic on bad input and never invent a default: an empty sample,
//! a NaN, or a confidence level outside (0, 1) is returned as a typed error that the
//! caller (store, report, CLI) turns into a message naming the metric or flag.

/// Why a statistic could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// The sample has no values.
    #[error("no values to summarize")]
    Empty,
    /// A value is NaN or infinite (index into the sample as given).
    #[error("value #{index} is not a finite number ({value})")]
    NonFinite { index: usize, value: f64 },
    /// The confidence level is not strictly between 0 and 1.
    #[error("confidence level {0} is not between 0 and 1 (exclusive); expected e.g. 0.95")]
    InvalidConfidence(f64),
    /// The significance level is not strictly between 0 and 1.
    #[error("significance level {0} is not between 0 and 1 (exclusive); expected e.g. 0.05")]
    InvalidAlpha(f64),
    /// The procedure needs more values than the sample has.
    #[error("{what} needs at least {needed} values per sample, got {got}")]
    TooFew {
        what: &'static str,
        needed: usize,
        got: usize,
    },
    /// A ratio or log-scale procedure needs a positive mean (e.g. a zero baseline).
    #[error("{what} needs a positive mean, got {mean}")]
    NonPositiveMean { what: &'static str, mean: f64 },
    /// Two samples that must be paired value by value have different lengths.
    #[error("{what} needs samples of equal length, got {left} and {right}")]
    LengthMismatch {
        what: &'static str,
        left: usize,
        right: usize,
    },
    /// A log-scale procedure met a value ≤ 0 (index into the sample as given).
    #[error("{what} needs positive values, got {value} at #{index}")]
    NonPositiveValue {
        what: &'static str,
        index: usize,
        value: f64,
    },
}

/// Checks a confidence level: strictly inside (0, 1).
pub(crate) fn check_confidence(confidence: f64) -> Result<(), StatsError> {
    if confidence > 0.0 && confidence < 1.0 {
        Ok(())
    } else {
        Err(StatsError::InvalidConfidence(confidence))
    }
}

/// Checks that a sample is non-empty and all finite.
pub(crate) fn check_sample(data: &[f64]) -> Result<(), StatsError> {
    if data.is_empty() {
        return Err(StatsError::Empty);
    }
    match data.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(StatsError::NonFinite {
            index,
            value: data[index],
        }),
        None => Ok(()),
    }
}

/// Checks a sample and that it has at least `needed` values.
pub(crate) fn check_min_len(
    data: &[f64],
    needed: usize,
    what: &'static str,
) -> Result<(), StatsError> {
    check_sample(data)?;
    if data.len() < needed {
        return Err(StatsError::TooFew {
            what,
            needed,
            got: data.len(),
        });
    }
    Ok(())
}
