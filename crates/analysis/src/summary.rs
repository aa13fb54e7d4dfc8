//! Per-config, per-metric summaries of a stored run: what `perflab run` prints at the
//! end, `perflab show` prints later and `perflab export --format markdown` writes — the
//! same numbers, from the store. (The lab's adaptive repetitions compute theirs from
//! the same rows in `perflab_lab::precision`: lab comes before analysis.)

use perflab_stats::Summary;
use perflab_store::{Params, Result, RunId, RunRow, Store};
use serde::Serialize;

use crate::samples::{self, ConfigSamples};

/// Summary of one metric of one config.
#[derive(Debug, Clone, Serialize)]
pub struct MetricSummary {
    pub name: String,
    pub unit: String,
    pub better: String,
    #[serde(flatten)]
    pub stats: Summary,
}

/// All metrics of one config.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigSummary {
    pub params: Params,
    #[serde(skip)]
    pub ordinal: u32,
    #[serde(skip)]
    pub config_id: i64,
    pub metrics: Vec<MetricSummary>,
}

impl ConfigSummary {
    /// Summarizes every metric of a config's samples (a metric the statistics refuse
    /// is left out).
    pub fn of(c: &ConfigSamples, confidence: f64) -> ConfigSummary {
        ConfigSummary {
            params: c.params.clone(),
            ordinal: c.ordinal,
            config_id: c.config_id,
            metrics: c
                .metrics
                .iter()
                .filter_map(|m| {
                    Some(MetricSummary {
                        name: m.name.clone(),
                        unit: m.unit.clone(),
                        better: m.better.clone(),
                        stats: m.summarize(confidence)?,
                    })
                })
                .collect(),
        }
    }
}

/// A run and its summaries.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub run: RunRow,
    pub configs: Vec<ConfigSummary>,
}

impl RunSummary {
    /// The confidence level of the intervals (0.95 when nothing was summarized).
    pub fn confidence(&self) -> f64 {
        self.configs
            .iter()
            .flat_map(|c| c.metrics.first())
            .map(|m| m.stats.confidence)
            .next()
            .unwrap_or(0.95)
    }
}

/// Summarizes every config and metric of a run from the store (ok trials only).
pub fn summarize_run(store: &Store, run: RunId, confidence: f64) -> Result<RunSummary> {
    let row = store.run(run)?;
    let configs = samples::from_store(store, run)?
        .iter()
        .map(|c| ConfigSummary::of(c, confidence))
        .collect();
    Ok(RunSummary { run: row, configs })
}
