//! An http experiment's `thresholds`, judged on each config's interval: a ceiling
//! (`p99<20ms`) on the upper bound of the metric's CI, a floor (`rps>5000`) on the lower
//! bound — "the upper 95 % bound of p99 is under 20 ms". With one trial there is no
//! interval and the value itself is judged. Each trial's own verdicts are stored with
//! it (`thresholds.json`, `thresholds_failed`).

use perflab_analysis::summary::RunSummary;
use perflab_lab::experiment::Experiment;
use perflab_load::{Threshold, Verdict};
use perflab_workloads::spec::Kind;
use serde::Serialize;

/// One threshold on one config.
#[derive(Debug, Serialize)]
pub struct ConfigVerdict {
    pub params: perflab_store::Params,
    /// What was judged: `ci_high`, `ci_low`, or `value` (one trial).
    pub judged: &'static str,
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// The experiment's thresholds (none unless it is an http experiment with some).
pub fn of(exp: &Experiment) -> anyhow::Result<Vec<Threshold>> {
    let Some(table) = exp.workload.options_of(Kind::Http) else {
        return Ok(Vec::new());
    };
    let json = serde_json::to_value(table)?;
    perflab_workloads::http::thresholds(&json).map_err(anyhow::Error::msg)
}

/// Judges every threshold on every config of the run.
pub fn judge(thresholds: &[Threshold], summary: &RunSummary) -> Vec<ConfigVerdict> {
    let mut out = Vec::new();
    for c in &summary.configs {
        for t in thresholds {
            let m = c.metrics.iter().find(|m| m.name == t.metric());
            let (judged, value) = match m {
                None => ("value", f64::NAN),
                Some(m) if m.stats.n < 2 || !m.stats.ci_high.is_finite() => ("value", m.stats.mean),
                Some(m) if t.op.upper() => ("ci_high", m.stats.ci_high),
                Some(m) => ("ci_low", m.stats.ci_low),
            };
            out.push(ConfigVerdict {
                params: c.params.clone(),
                judged,
                verdict: Verdict::new(t, value),
            });
        }
    }
    out
}

/// The verdicts for people, one line each.
pub fn print(verdicts: &[ConfigVerdict], confidence: f64) {
    if verdicts.is_empty() {
        return;
    }
    println!(
        "\nThresholds (a ceiling on the upper, a floor on the lower bound of each config's {:.0} % CI):",
        confidence * 100.0
    );
    for v in verdicts {
        let label = perflab_store::vocab::params_label(&v.params);
        let what = match v.judged {
            "ci_high" => "upper bound",
            "ci_low" => "lower bound",
            _ => "the one value",
        };
        println!("  {label}  {} ({what})", v.verdict.line());
    }
}
