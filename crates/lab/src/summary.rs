//! Per-config, per-metric summaries of a stored run (what `run` prints at the end
//! and `show` prints later: the same numbers, from the store).

use perflab_stats::{summarize, Summary};
use perflab_store::{Params, Result, RunId, RunRow, Store};
use serde::Serialize;

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

/// A run and its summaries.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub run: RunRow,
    pub configs: Vec<ConfigSummary>,
}

/// Summarizes every config and metric of a run from the store (ok trials only).
pub fn summarize_run(store: &Store, run: RunId, confidence: f64) -> Result<RunSummary> {
    let row = store.run(run)?;
    let metrics = store.metrics(run)?;
    let mut configs = Vec::new();
    for c in store.configs(run)? {
        // Metrics in first-seen order, values in trial order.
        let mut names: Vec<(String, String, String)> = Vec::new();
        let mut values: Vec<Vec<f64>> = Vec::new();
        for m in metrics.iter().filter(|m| m.config_id == c.id) {
            let i = match names.iter().position(|(n, _, _)| *n == m.name) {
                Some(i) => i,
                None => {
                    names.push((m.name.clone(), m.unit.clone(), m.better.clone()));
                    values.push(Vec::new());
                    names.len() - 1
                }
            };
            values[i].push(m.value);
        }
        let metrics = names
            .into_iter()
            .zip(values)
            .filter_map(|((name, unit, better), v)| {
                Some(MetricSummary {
                    name,
                    unit,
                    better,
                    stats: summarize(&v, confidence).ok()?,
                })
            })
            .collect();
        configs.push(ConfigSummary {
            params: c.params,
            ordinal: c.ordinal,
            config_id: c.id,
            metrics,
        });
    }
    Ok(RunSummary { run: row, configs })
}

pub use perflab_store::params_label;
