//! Which direction of a metric is an improvement.
//!
//! Every metric carries a direction (throughput: higher; latency: lower) so that a
//! comparison can say "faster"/"slower" rather than "bigger"/"smaller".

use serde::{Deserialize, Serialize};

/// Direction in which a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Higher is better (throughput, ops/s).
    Higher,
    /// Lower is better (latency, wall time, memory).
    Lower,
}

impl Better {
    /// `"higher"` or `"lower"`, the same spelling as the serde form.
    pub fn as_str(&self) -> &'static str {
        match self {
            Better::Higher => "higher",
            Better::Lower => "lower",
        }
    }

    /// Parses `"higher"`/`"lower"` (case-insensitive, surrounding spaces ignored).
    pub fn parse(s: &str) -> Option<Better> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("higher") {
            Some(Better::Higher)
        } else if s.eq_ignore_ascii_case("lower") {
            Some(Better::Lower)
        } else {
            None
        }
    }
}

impl std::fmt::Display for Better {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_str() {
        for b in [Better::Higher, Better::Lower] {
            assert_eq!(Better::parse(b.as_str()), Some(b));
        }
        assert_eq!(Better::parse(" Lower "), Some(Better::Lower));
        assert_eq!(Better::parse("faster"), None);
    }
}
