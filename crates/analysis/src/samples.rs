//! The samples of a stored run: per config, per metric, the values of its successful
//! trials in trial order, with the trial each came from. Everything else in this crate
//! (summaries, comparisons, ratio of ratios) starts from these, and they are gathered
//! by one function whether the run is read from the store ([`from_store`]) or from an
//! export document a report already holds ([`from_export`]) — so `perflab show`, `perflab
//! compare` and `perflab report` cannot disagree on which values a config has. Each
//! value keeps its round (repetition), so two configs of one run can be compared
//! round by round ([`paired_by_round`]).

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
    /// Each trial's round (its repetition number), parallel to `values`.
    pub rounds: Vec<u32>,
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
    round: u32,
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
                            rounds: Vec::new(),
                        });
                        metrics.len() - 1
                    }
                };
                metrics[i].values.push(v.value);
                metrics[i].trials.push(v.trial);
                metrics[i].rounds.push(v.round);
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
    let trial_of: HashMap<i64, (u32, u32)> = trials
        .iter()
        .map(|t| (t.id, (t.ordinal, t.repetition)))
        .collect();
    let values: Vec<Value> = metrics
        .iter()
        .map(|m| Value {
            config: ordinal_of.get(&m.config_id).copied().unwrap_or(u32::MAX),
            trial: trial_of.get(&m.trial_id).map_or(0, |t| t.0),
            round: trial_of.get(&m.trial_id).map_or(0, |t| t.1),
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
                round: t.repetition,
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

/// The values of `base` and `cand` paired by round — `(base, cand)`, rounds in
/// order — when the two configs ran in blocked rounds: only rounds where each side
/// has exactly one value (an ok trial), and only when those rounds do not overlap in
/// time (every trial of round k, on both sides, comes before every trial of round
/// k + 1). That holds for `interleaved` order however the configs are shuffled
/// within a round, and fails for `sequential` (all of A, then all of B) and a
/// whole-run shuffle, where a "round" is no block and pairing would cancel nothing.
/// None when fewer than 2 rounds pair.
pub fn paired_by_round(base: &MetricSamples, cand: &MetricSamples) -> Option<(Vec<f64>, Vec<f64>)> {
    let once = |m: &MetricSamples, r: u32| {
        let mut hits = m.rounds.iter().enumerate().filter(|(_, &x)| x == r);
        match (hits.next(), hits.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    };
    let mut rounds: Vec<u32> = base.rounds.clone();
    rounds.sort_unstable();
    rounds.dedup();
    // (round, base index, cand index, first ordinal, last ordinal)
    let pairs: Vec<(usize, usize, u32, u32)> = rounds
        .into_iter()
        .filter_map(|r| {
            let (i, j) = (once(base, r)?, once(cand, r)?);
            let (a, b) = (base.trials[i], cand.trials[j]);
            Some((i, j, a.min(b), a.max(b)))
        })
        .collect();
    let blocked = pairs.windows(2).all(|w| w[0].3 < w[1].2);
    (pairs.len() >= 2 && blocked).then(|| {
        pairs
            .iter()
            .map(|&(i, j, _, _)| (base.values[i], cand.values[j]))
            .unzip()
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn m(values: &[f64], trials: &[u32], rounds: &[u32]) -> MetricSamples {
        MetricSamples {
            name: "wall_s".into(),
            unit: "s".into(),
            better: "lower".into(),
            values: values.to_vec(),
            trials: trials.to_vec(),
            rounds: rounds.to_vec(),
        }
    }

    #[test]
    fn interleaved_rounds_pair_and_sequential_ones_do_not() {
        // interleaved, shuffled within rounds: B A | A B | B A
        let a = m(&[1.0, 2.0, 3.0], &[2, 3, 6], &[1, 2, 3]);
        let b = m(&[1.1, 2.2, 3.3], &[1, 4, 5], &[1, 2, 3]);
        let (x, y) = paired_by_round(&a, &b).unwrap();
        assert_eq!((x, y), (vec![1.0, 2.0, 3.0], vec![1.1, 2.2, 3.3]));
        // sequential: A A A B B B — the "rounds" overlap in time
        let b_seq = m(&[1.1, 2.2, 3.3], &[4, 5, 6], &[1, 2, 3]);
        let a_seq = m(&[1.0, 2.0, 3.0], &[1, 2, 3], &[1, 2, 3]);
        assert!(paired_by_round(&a_seq, &b_seq).is_none());
    }

    #[test]
    fn only_rounds_with_one_ok_trial_on_each_side_pair() {
        // round 2 failed on the candidate; round 3 has two values on the baseline
        let a = m(
            &[1.0, 2.0, 3.0, 3.5, 4.0],
            &[1, 3, 5, 6, 7],
            &[1, 2, 3, 3, 4],
        );
        let b = m(&[1.1, 3.3, 4.4], &[2, 6, 8], &[1, 3, 4]);
        let (x, y) = paired_by_round(&a, &b).unwrap();
        assert_eq!((x, y), (vec![1.0, 4.0], vec![1.1, 4.4]));
    }
}
