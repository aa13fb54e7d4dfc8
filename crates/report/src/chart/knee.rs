//! The knee plot of a `--ramp` or `--find-max` load run: p99 latency against the
//! offered rate, one line through the steps that met the SLO and one through those
//! that broke it, so where response time breaks (SPECweb's question) is visible. A
//! repeated search (`--find-max-repetitions`) also draws its knee: the mean as a
//! vertical line and its 95 % interval as a box from the low to the high end, so how
//! sure the knee is shows beside the steps it came from; a find-max run's caption names
//! what ran out there ([`limit_caption`]).

use super::line::{render, LinePlot};
use super::{domain, labelled, nice_ticks};

/// One load step: offered rate (req/s), p99 (ms), whether it met the SLO.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub target: f64,
    pub p99_ms: f64,
    pub passed: Option<bool>,
}

/// What a knee plot draws: the steps, and the knee with its interval if it has one.
#[derive(Debug, Clone, Default)]
pub struct Knee {
    pub steps: Vec<Step>,
    pub max_rate: Option<f64>,
    /// The 95 % interval of `max_rate` (low, high) of a repeated search.
    pub ci: Option<(f64, f64)>,
    /// How many searches `max_rate` is the mean of.
    pub repetitions: Option<u64>,
}

/// The SVG, or None with fewer than two steps.
pub fn chart(knee: &Knee) -> Option<String> {
    let (steps, max_rate) = (&knee.steps, knee.max_rate);
    if steps.len() < 2 {
        return None;
    }
    let mut steps = steps.to_vec();
    steps.sort_by(|a, b| a.target.total_cmp(&b.target));
    let ci = knee.ci.filter(|(lo, hi)| lo.is_finite() && hi.is_finite());
    let ends = ci.iter().flat_map(|(lo, hi)| [*lo, *hi]);
    let x_range = domain(steps.iter().map(|s| s.target).chain(ends), true);
    let y_range = domain(steps.iter().map(|s| s.p99_ms), true);
    let line = |keep: fn(Option<bool>) -> bool| -> Vec<(f64, f64)> {
        steps
            .iter()
            .filter(|s| keep(s.passed))
            .map(|s| (s.target, s.p99_ms))
            .collect()
    };
    let mut lines = Vec::new();
    if steps.iter().any(|s| s.passed.is_some()) {
        lines.push(("met the SLO".to_string(), line(|p| p == Some(true))));
        lines.push(("broke the SLO".to_string(), line(|p| p == Some(false))));
    } else {
        lines.push(("p99".to_string(), line(|_| true)));
    }
    lines.retain(|(_, pts)| !pts.is_empty());
    let (y0, y1) = y_range;
    let title = match (max_rate, ci) {
        (Some(m), Some((lo, hi))) => {
            let n = knee.repetitions.unwrap_or(0);
            lines.push((
                format!("knee, mean of {n} searches: {m:.0} req/s"),
                vec![(m, y0), (m, y1)],
            ));
            lines.push((
                format!("its 95 % CI: {lo:.0}–{hi:.0} req/s"),
                vec![(lo, y0), (lo, y1), (hi, y1), (hi, y0), (lo, y0)],
            ));
            format!(
                "p99 latency by offered rate (highest rate meeting the SLO: {m:.0} ± {:.0} req/s)",
                (hi - lo) / 2.0
            )
        }
        (Some(m), None) => {
            format!("p99 latency by offered rate (highest rate meeting the SLO: {m:.0} req/s)")
        }
        (None, _) => "p99 latency by offered rate".to_string(),
    };
    Some(render(&LinePlot {
        title,
        x_label: "offered rate (req/s)".into(),
        y_label: "p99 latency (ms)".into(),
        x_range,
        y_range,
        x_ticks: labelled(nice_ticks(x_range.0, x_range.1, 8)),
        y_ticks: labelled(nice_ticks(y_range.0, y_range.1, 5)),
        lines,
    }))
}

/// The steps, max rate and its interval of a stored HTTP load report
/// (`http-report.json`).
pub fn from_report(json: &[u8]) -> Option<Knee> {
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    let steps: Vec<Step> = v["steps"]
        .as_array()?
        .iter()
        .filter_map(|s| {
            Some(Step {
                target: s["target"].as_f64()?,
                p99_ms: s["latency_ms"]["p99"].as_f64()?,
                passed: s["passed"].as_bool(),
            })
        })
        .collect();
    let ci = v["max_rate_ci_low"]
        .as_f64()
        .zip(v["max_rate_ci_high"].as_f64());
    Some(Knee {
        steps,
        max_rate: v["max_rate"].as_f64(),
        ci,
        repetitions: v["repetitions"].as_u64(),
    })
}

/// The caption under a find-max knee: what ran out, with its evidence, from the
/// report's `limit` (`{"resource": "listen_queue", "evidence": "..."}`); None without
/// one. Plain text: the caller escapes it.
pub fn limit_caption(json: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    let resource = v["limit"]["resource"].as_str()?;
    let evidence = v["limit"]["evidence"].as_str().unwrap_or("");
    let what = match resource {
        "generator" => "the load generator",
        "service_cpu" => "the service's CPU",
        "cpu_pressure" => "CPU pressure",
        "listen_queue" => "the listen queue",
        "softirq" => "softirq",
        "retransmits" => "retransmits",
        "disk" => "the disk",
        "memory" => "memory",
        _ => "nothing measured",
    };
    Some(format!("Limited by {what} ({resource}): {evidence}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_find_max_report_becomes_a_knee_plot_with_units() {
        let report = br#"{"max_rate": 400.0, "steps": [
            {"target": 100.0, "rps": 100.0, "latency_ms": {"p99": 2.0}, "error_rate": 0.0, "passed": true},
            {"target": 800.0, "rps": 420.0, "latency_ms": {"p99": 900.0}, "error_rate": 0.0, "passed": false},
            {"target": 400.0, "rps": 399.0, "latency_ms": {"p99": 9.0}, "error_rate": 0.0, "passed": true}]}"#;
        let knee = from_report(report).unwrap();
        assert_eq!((knee.steps.len(), knee.max_rate), (3, Some(400.0)));
        let svg = chart(&knee).unwrap();
        assert!(svg.contains("offered rate (req/s)") && svg.contains("p99 latency (ms)"));
        assert!(svg.contains("met the SLO") && svg.contains("broke the SLO"));
        assert!(svg.contains("400 req/s"));
        assert!(!svg.contains("95 % CI"));
        let one = Knee {
            steps: knee.steps[..1].to_vec(),
            ..Knee::default()
        };
        assert!(chart(&one).is_none());
    }

    #[test]
    fn a_repeated_search_draws_its_interval() {
        let report = br#"{"max_rate": 400.0, "max_rate_ci_low": 380.0,
            "max_rate_ci_high": 420.0, "repetitions": 5, "steps": [
            {"target": 100.0, "rps": 100.0, "latency_ms": {"p99": 2.0}, "error_rate": 0.0, "passed": true},
            {"target": 800.0, "rps": 420.0, "latency_ms": {"p99": 900.0}, "error_rate": 0.0, "passed": false}]}"#;
        let knee = from_report(report).unwrap();
        assert_eq!(knee.ci, Some((380.0, 420.0)));
        let svg = chart(&knee).unwrap();
        assert!(svg.contains("400 ± 20 req/s"), "{svg}");
        assert!(svg.contains("95 % CI: 380–420 req/s"));
        assert!(svg.contains("mean of 5 searches"));
        assert_eq!(svg.matches("<polyline").count(), 4);
    }

    #[test]
    fn the_limit_is_the_caption() {
        let report = br#"{"max_rate": 400.0, "steps": [], "limit": {"resource": "listen_queue",
            "evidence": "1,427 listen-queue overflows on :8080 during the step at 24,000 req/s"}}"#;
        assert_eq!(
            limit_caption(report).unwrap(),
            "Limited by the listen queue (listen_queue): 1,427 listen-queue overflows on :8080 during the step at 24,000 req/s"
        );
        assert!(limit_caption(br#"{"max_rate": 400.0, "steps": []}"#).is_none());
    }
}
