//! The samples of a stored run: per config, per metric, the values of its successful
//! trials in trial order, with the trial each came from. Everything else in this crate
//! (summaries, comparisons, ratio of ratios) starts from these, and they are gathered
//! by one function whether the run is read from the store ([`from_store`]) or from an
//! export document a report already holds ([`from_export`]) — so `perflab show`, `perflab
//! compare` and `perflab report` cannot disagree on which values a config has.

use std::collections::HashMap;

use perflab_store::{ConfigRow, MetricValue, Params, Result, RunExport, RunId, Store};

/// One metric of one config: the values of its ok trials, in trial order.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSamples {
    pub name: String,
    pub unit: String,
    /// `higher` or `lower`.
    pub better: String,
    pub values: Vec<f64>,
    /// Trial ordinals, parallel to `values`.
    pub trials: Vec<u32>,
}

impl MetricSamples {
    /// Summary statistics of the values; None when the statistics refuse (no value).
    pub fn summarize(&self, confidence: f64) -> Option<perflab_stats::Summary> {
        perflab_stats::summarize(&self.values, confidence).ok()
    }

    /// Whether every value is exactly zero (no errors, no iowait).
    pub fn all_zero(&self) -> bool {
        self.values.iter().all(|v| *v == 0.0)
    }
}

/// One config of a run with its samples, metrics in first-seen order.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigSamples {
    /// The config's id in the store (0 when read from an export document).
    pub config_id: i64,
    pub ordinal: u32,
    pub params: Params,
    pub metrics: Vec<MetricSamples>,
}

impl ConfigSamples {
    pub fn metric(&self, name: &str) -> Option<&MetricSamples> {
        self.metrics.iter().find(|m| m.name == name)
    }
}

/// One metric value of an ok trial, as both sources give it.
#[derive(Clone, Copy)]
struct Value<'a> {
    config: u32,
    trial: u32,
    metric: &'a str,
    unit: &'a str,
    better: &'a str,
    value: f64,
}

/// The one gatherer: configs in the given order, metrics in first-seen order, values in
/// the order given (trial order); non-finite values are left out.
fn gather<'a>(
    configs: impl IntoIterator<Item = (i64, u32, Params)>,
    values: impl IntoIterator<Item = Value<'a>> + Clone,
) -> Vec<ConfigSamples> {
    configs
        .into_iter()
        .map(|(config_id, ordinal, params)| {
            let mut metrics: Vec<MetricSamples> = Vec::new();
            for v in values
                .clone()
                .into_iter()
                .filter(|v| v.config == ordinal && v.value.is_finite())
            {
                let i = match metrics.iter().position(|m| m.name == v.metric) {
                    Some(i) => i,
                    None => {
                        metrics.push(MetricSamples {
                            name: v.metric.to_string(),
                            unit: v.unit.to_string(),
                            better: v.better.to_string(),
                            values: Vec::new(),
                            trials: Vec::new(),
                        });
                        metrics.len() - 1
                    }
                };
                metrics[i].values.push(v.value);
                metrics[i].trials.push(v.trial);
            }
            ConfigSamples {
                config_id,
                ordinal,
                params,
                metrics,
            }
        })
        .collect()
}

/// The samples of every config of run `run`, read from the store.
pub fn from_store(store: &Store, run: RunId) -> Result<Vec<ConfigSamples>> {
    let configs: Vec<ConfigRow> = store.configs(run)?;
    let trials = store.trials(run)?;
    let metrics = store.metrics(run)?;
    let ordinal_of: HashMap<i64, u32> = configs.iter().map(|c| (c.id, c.ordinal)).collect();
    let trial_of: HashMap<i64, u32> = trials.iter().map(|t| (t.id, t.ordinal)).collect();
    let values: Vec<Value> = metrics
        .iter()
        .map(|m| Value {
            config: ordinal_of.get(&m.config_id).copied().unwrap_or(u32::MAX),
            trial: trial_of.get(&m.trial_id).copied().unwrap_or(0),
            metric: &m.name,
            unit: &m.unit,
            better: &m.better,
            value: m.value,
        })
        .collect();
    Ok(gather(
        configs.iter().map(|c| (c.id, c.ordinal, c.params.clone())),
        values.iter().copied(),
    ))
}

/// The samples of every config of an exported run (ok trials only).
pub fn from_export(export: &RunExport) -> Vec<ConfigSamples> {
    let values = export
        .trials
        .iter()
        .filter(|t| t.status == "ok")
        .flat_map(|t| {
            t.metrics.iter().map(move |m: &MetricValue| Value {
                config: t.config,
                trial: t.ordinal,
                metric: &m.name,
                unit: &m.unit,
                better: &m.better,
                value: m.value,
            })
        });
    gather(
        export
            .configs
            .iter()
            .map(|c| (0, c.ordinal, c.params.clone())),
        values,
    )
}

/// Metric names in first-seen order over all configs: (name, unit, better).
pub fn metric_names(configs: &[ConfigSamples]) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    for m in configs.iter().flat_map(|c| &c.metrics) {
        if !out.iter().any(|(n, _, _)| *n == m.name) {
            out.push((m.name.clone(), m.unit.clone(), m.better.clone()));
        }
    }
    out
}
