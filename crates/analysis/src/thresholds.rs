//! Threshold verdicts per trial: what an http trial's `thresholds` said about it, from
//! its `thresholds.json` artifact ([`ARTIFACT_THRESHOLDS`]), gathered into one row per
//! threshold for the report — how many trials met it, and the worst value with its
//! trial and how far past the limit it was. Read loosely, like the doctor's documents.

use serde_json::Value;

use perflab_store::vocab::ARTIFACT_THRESHOLDS;
use perflab_store::RunExport;

/// One verdict as a trial stored it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredVerdict {
    pub threshold: String,
    pub metric: String,
    pub value: f64,
    pub limit: f64,
    pub unit: String,
    pub passed: bool,
    /// How far past the limit, relative to it.
    pub by: f64,
}

/// One row of the report: a threshold over the run's trials.
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdRow {
    pub threshold: String,
    pub unit: String,
    pub limit: f64,
    pub trials: usize,
    pub failed: usize,
    /// The trial furthest past the limit (or, when all passed, the first): its
    /// ordinal, config ordinal, value and `by`.
    pub worst_trial: u32,
    pub worst_config: u32,
    pub worst_value: f64,
    pub worst_by: f64,
}

fn parse(json: &[u8]) -> Vec<StoredVerdict> {
    let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(json) else {
        return Vec::new();
    };
    items
        .iter()
        .filter(|v| v["threshold"].is_string())
        .map(|v| StoredVerdict {
            threshold: v["threshold"].as_str().unwrap_or_default().to_string(),
            metric: v["metric"].as_str().unwrap_or_default().to_string(),
            value: v["value"].as_f64().unwrap_or(f64::NAN),
            limit: v["limit"].as_f64().unwrap_or(f64::NAN),
            unit: v["unit"].as_str().unwrap_or_default().to_string(),
            passed: v["passed"].as_bool().unwrap_or(false),
            by: v["by"].as_f64().unwrap_or(0.0),
        })
        .collect()
}

/// One row per threshold over the run's trials, in the order first seen; empty when no
/// trial stored verdicts.
pub fn rows(export: &RunExport) -> Vec<ThresholdRow> {
    let mut rows: Vec<ThresholdRow> = Vec::new();
    for t in &export.trials {
        let Some(a) = t.artifacts.iter().find(|a| a.name == ARTIFACT_THRESHOLDS) else {
            continue;
        };
        for v in parse(&a.content) {
            let i = match rows.iter().position(|r| r.threshold == v.threshold) {
                Some(i) => i,
                None => {
                    rows.push(ThresholdRow {
                        threshold: v.threshold.clone(),
                        unit: v.unit.clone(),
                        limit: v.limit,
                        trials: 0,
                        failed: 0,
                        worst_trial: t.ordinal,
                        worst_config: t.config,
                        worst_value: v.value,
                        worst_by: v.by,
                    });
                    rows.len() - 1
                }
            };
            let r = &mut rows[i];
            r.trials += 1;
            if !v.passed {
                r.failed += 1;
                if r.failed == 1 || v.by > r.worst_by {
                    r.worst_trial = t.ordinal;
                    r.worst_config = t.config;
                    r.worst_value = v.value;
                    r.worst_by = v.by;
                }
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_loosely() {
        let v = parse(br#"[{"threshold":"p99<1ms","metric":"latency_p99_ms","value":5.0,"limit":1.0,"unit":"ms","passed":false,"by":4.0},{"x":1}]"#);
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].value, v[0].by, v[0].passed), (5.0, 4.0, false));
        assert!(parse(b"not json").is_empty());
    }
}
