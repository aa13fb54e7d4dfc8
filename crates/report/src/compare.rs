//! Baseline versus candidates, metric by metric, with `perflab_stats::compare`: within
//! a run (every config against the baseline config) or across runs (each config of
//! the run against the same config of the other run). Which metrics can be compared,
//! and how, is `perflab_stats::compare_metric`, shared with `perflab compare`.

use perflab_stats::{compare_metric, CompareOptions, MetricSide};

use crate::data::{ConfigData, MetricSample};

pub use perflab_stats::Outcome;

/// One row of the comparison table.
#[derive(Debug, Clone)]
pub struct CompareRow {
    pub baseline: String,
    pub candidate: String,
    pub metric: String,
    pub unit: String,
    pub better: String,
    pub baseline_mean: f64,
    pub candidate_mean: f64,
    pub outcome: Outcome,
}

impl CompareRow {
    pub fn verdict(&self) -> String {
        match &self.outcome {
            Outcome::Compared(c) => c.verdict.as_str().to_string(),
            Outcome::TooFew => "too few trials".into(),
            Outcome::NotComparable(why) => format!("not comparable: {why}"),
        }
    }

    /// `better`, `worse` or `same` (significance included), for colouring.
    pub fn class(&self) -> &'static str {
        match &self.outcome {
            Outcome::Compared(c) => match c.verdict {
                perflab_stats::Verdict::Better => "better",
                perflab_stats::Verdict::Worse => "worse",
                perflab_stats::Verdict::NoDifference => "same",
            },
            _ => "na",
        }
    }
}

/// Every other config of the run against `configs[base]`.
pub fn within_run(configs: &[ConfigData], base: usize, confidence: f64) -> Vec<CompareRow> {
    let b = &configs[base];
    configs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != base)
        .flat_map(|(_, c)| pair(b, c, confidence))
        .collect()
}

/// Each config of `run` against the config of `other` with the same parameters (or
/// the only one, when both runs have a single config).
pub fn across_runs(other: &[ConfigData], run: &[ConfigData], confidence: f64) -> Vec<CompareRow> {
    let mut rows = Vec::new();
    for c in run {
        let b = other
            .iter()
            .find(|o| o.params == c.params)
            .or_else(|| (other.len() == 1 && run.len() == 1).then(|| &other[0]));
        if let Some(b) = b {
            rows.extend(pair(b, c, confidence));
        }
    }
    rows
}

fn pair(b: &ConfigData, c: &ConfigData, confidence: f64) -> Vec<CompareRow> {
    b.metrics
        .iter()
        .filter_map(|bm| {
            let cm = c.metric(&bm.name)?;
            // Zero on both sides (no errors, no iowait): nothing to compare, no row.
            let zero = |m: &MetricSample| m.values.iter().all(|v| *v == 0.0);
            if zero(bm) && zero(cm) {
                return None;
            }
            Some(row(b, c, bm, cm, confidence))
        })
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn row(
    b: &ConfigData,
    c: &ConfigData,
    bm: &MetricSample,
    cm: &MetricSample,
    confidence: f64,
) -> CompareRow {
    let opts = CompareOptions {
        confidence,
        ..CompareOptions::default()
    };
    let outcome = compare_metric(side(bm), side(cm), &opts, crate::format::num);
    CompareRow {
        baseline: b.label.clone(),
        candidate: c.label.clone(),
        metric: bm.name.clone(),
        unit: bm.unit.clone(),
        better: bm.better.clone(),
        baseline_mean: mean(&bm.values),
        candidate_mean: mean(&cm.values),
        outcome,
    }
}

fn side(m: &MetricSample) -> MetricSide<'_> {
    MetricSide {
        values: &m.values,
        unit: &m.unit,
        better: &m.better,
    }
}
