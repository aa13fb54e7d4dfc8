//! How precise a run is so far: per config, per metric, the summary of the values of
//! its successful trials — what the runner's adaptive repetitions (`repetitions =
//! "auto"`) read to decide whether another round is needed.
//!
//! It is computed here from the store's rows and `perflab-stats`, not through
//! `perflab-analysis`: analysis reads finished runs for people and sits after lab in
//! the one-way flow (store → analysis → cli), so the runner must not call into it. The
//! numbers agree with analysis's summaries: the same rows (ok trials, finite values),
//! the same statistics.

use perflab_stats::Summary;
use perflab_store::{Params, Result, RunId, Store};

/// One metric of one config, summarized.
#[derive(Debug, Clone)]
pub struct MetricPrecision {
    pub name: String,
    pub stats: Summary,
}

/// All metrics of one config (a metric the statistics refuse is left out).
#[derive(Debug, Clone)]
pub struct ConfigPrecision {
    pub params: Params,
    pub metrics: Vec<MetricPrecision>,
}

/// Every config of a run, in the store's order.
#[derive(Debug, Clone)]
pub struct RunPrecision {
    pub configs: Vec<ConfigPrecision>,
}

/// Summarizes every config and metric of run `run` (ok trials only) at `confidence`.
pub fn summarize_run(store: &Store, run: RunId, confidence: f64) -> Result<RunPrecision> {
    let configs = store.configs(run)?;
    let metrics = store.metrics(run)?;
    let configs = configs
        .into_iter()
        .map(|c| {
            // Metric names in first-seen order, each with its finite values.
            let mut values: Vec<(&str, Vec<f64>)> = Vec::new();
            for m in metrics
                .iter()
                .filter(|m| m.config_id == c.id && m.value.is_finite())
            {
                match values.iter_mut().find(|(name, _)| *name == m.name) {
                    Some((_, v)) => v.push(m.value),
                    None => values.push((&m.name, vec![m.value])),
                }
            }
            let metrics = values
                .into_iter()
                .filter_map(|(name, v)| {
                    Some(MetricPrecision {
                        name: name.to_string(),
                        stats: perflab_stats::summarize(&v, confidence).ok()?,
                    })
                })
                .collect();
            ConfigPrecision {
                params: c.params,
                metrics,
            }
        })
        .collect();
    Ok(RunPrecision { configs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_store::{HostInfo, MetricValue, NewRun, TrialRecord, TrialStatus};

    fn trial(config_id: i64, ordinal: u32, status: TrialStatus, wall: f64) -> TrialRecord {
        TrialRecord {
            config_id,
            repetition: ordinal,
            ordinal,
            started_at: perflab_store::now_rfc3339(),
            duration_s: 1.0,
            error: None,
            status,
            method: None,
            metrics: vec![MetricValue::new("wall_s", "s", wall, "lower")],
            histograms: vec![],
            series: vec![],
            artifacts: vec![],
        }
    }

    #[test]
    fn summarizes_the_ok_trials_of_each_config() {
        let store = Store::in_memory().unwrap();
        let host = store.upsert_host(&HostInfo::default()).unwrap();
        let run = store.create_run(&NewRun::default(), host).unwrap();
        let a = store.ensure_config(run, 0, &Params::default()).unwrap();
        let mut p = Params::default();
        p.insert("n".into(), serde_json::json!(2));
        let b = store.ensure_config(run, 1, &p).unwrap();
        for (i, (config, status, wall)) in [
            (a, TrialStatus::Ok, 1.0),
            (b, TrialStatus::Ok, 5.0),
            (a, TrialStatus::Failed, 100.0),
            (a, TrialStatus::Ok, 2.0),
            (a, TrialStatus::Ok, 3.0),
        ]
        .into_iter()
        .enumerate()
        {
            store
                .record_trial(run, &trial(config, i as u32 + 1, status, wall))
                .unwrap();
        }
        let r = summarize_run(&store, run, 0.95).unwrap();
        assert_eq!(r.configs.len(), 2);
        let want = perflab_stats::summarize(&[1.0, 2.0, 3.0], 0.95).unwrap();
        let got = &r.configs[0].metrics[0];
        assert_eq!((got.name.as_str(), got.stats.n), ("wall_s", 3));
        assert_eq!(got.stats.mean, want.mean);
        assert_eq!(got.stats.ci_half_width(), want.ci_half_width());
        assert_eq!(r.configs[1].params, p);
        assert_eq!(r.configs[1].metrics[0].stats.n, 1);
        assert!(summarize_run(&store, run + 1, 0.95)
            .unwrap()
            .configs
            .is_empty());
    }
}
