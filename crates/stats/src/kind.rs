//! What a metric measures, read from its unit: the verdict's words depend on it.
//!
//! "faster"/"slower" are right for a time or a rate and wrong for a size or a
//! compression ratio ("ratio ↑ … faster" reads as nonsense), which get
//! "better"/"worse"; a geometric mean never combines a size with a time. The unit is
//! the only thing every stored metric carries, so the classification is by unit,
//! spelled as perflab's workloads write them (`s`, `ms`, `us`, `req/s`, `MB/s`,
//! `MFLOPS`, `B`, `bytes`, ...).

use serde::Serialize;

/// The kind of quantity a metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricKind {
    /// A duration: wall, user or system time, a latency.
    Time,
    /// Something per unit of time: requests/s, MB/s, MFLOPS.
    Rate,
    /// An amount of memory or data: bytes, KiB, MB.
    Size,
    /// Anything else: counts, ratios, percentages, dimensionless values.
    Other,
}

impl MetricKind {
    /// Classifies a unit (case-sensitive where SI is: `ms` is a time, `Ms` nothing).
    pub fn of_unit(unit: &str) -> MetricKind {
        let u = unit.trim();
        const TIMES: &[&str] = &[
            "s", "ms", "us", "µs", "μs", "ns", "min", "h", "sec", "seconds", "cycles",
        ];
        const SIZES: &[&str] = &[
            "B", "bytes", "byte", "KB", "kB", "KiB", "MB", "MiB", "GB", "GiB", "TB", "TiB", "pages",
        ];
        if TIMES.contains(&u) {
            MetricKind::Time
        } else if u.ends_with("/s")
            || u.ends_with("/sec")
            || u.ends_with("bps")
            || u.eq_ignore_ascii_case("hz")
            || u.to_ascii_uppercase().ends_with("FLOPS")
        {
            MetricKind::Rate
        } else if SIZES.contains(&u) {
            MetricKind::Size
        } else {
            MetricKind::Other
        }
    }

    /// Whether "faster"/"slower" fit (times and rates).
    pub fn is_speed(&self) -> bool {
        matches!(self, MetricKind::Time | MetricKind::Rate)
    }

    /// `time`, `rate`, `size` or `other`.
    pub fn as_str(&self) -> &'static str {
        match self {
            MetricKind::Time => "time",
            MetricKind::Rate => "rate",
            MetricKind::Size => "size",
            MetricKind::Other => "other",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_units_are_classified() {
        // perf_event counters (perflab_telemetry::perfcount): task-clock is a time,
        // cycles too; counts, IPC and misses per 1k instructions are plain quantities
        // ("better"/"worse", never "faster"), whatever their direction.
        assert_eq!(MetricKind::of_unit("ms"), MetricKind::Time);
        assert_eq!(MetricKind::of_unit("cycles"), MetricKind::Time);
        for u in [
            "count",
            "instructions/cycle",
            "per 1k instructions",
            "count/req",
            "ms/req",
        ] {
            assert_eq!(MetricKind::of_unit(u), MetricKind::Other, "{u}");
        }
    }

    #[test]
    fn units_perflab_writes_are_classified() {
        for u in ["s", "ms", "us"] {
            assert_eq!(MetricKind::of_unit(u), MetricKind::Time, "{u}");
        }
        for u in ["req/s", "MB/s", "MFLOPS", "ops/s", "Gbps"] {
            assert_eq!(MetricKind::of_unit(u), MetricKind::Rate, "{u}");
        }
        for u in ["B", "bytes", "KiB"] {
            assert_eq!(MetricKind::of_unit(u), MetricKind::Size, "{u}");
        }
        for u in ["x", "ratio", "%", "1", "count", ""] {
            assert_eq!(MetricKind::of_unit(u), MetricKind::Other, "{u}");
        }
    }
}
