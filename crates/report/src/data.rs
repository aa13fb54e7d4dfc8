//! Everything a report shows, gathered once: the run with every trial (failed and
//! interrupted ones too), and what `perflab-analysis` says about it — per-config samples
//! and summaries of each metric, the comparison rows and their why blocks, the doctor
//! findings per trial.
//! Output formats only lay this out.

use perflab_analysis::doctor::{self, TrialFindings};
use perflab_analysis::samples::{self, ConfigSamples};
use perflab_analysis::select::{matches, parse_selector};
use perflab_analysis::{format, CompareOptions, Summary};
use perflab_store::{params_label, ExportedTrial, RunExport, RunId, Store};

use crate::compare::{self, CompareRow};
use crate::why::{self as why_rows, WhyRow};
use crate::{Options, ReportError, Result};

/// One metric of one config: the values of its ok trials and their summary.
#[derive(Debug, Clone)]
pub struct MetricSample {
    pub name: String,
    pub unit: String,
    pub better: String,
    pub values: Vec<f64>,
    /// Trial ordinals, parallel to `values`.
    pub trials: Vec<u32>,
    /// None when the statistics refuse (no finite values).
    pub summary: Option<Summary>,
}

/// One config of a run.
#[derive(Debug, Clone)]
pub struct ConfigData {
    pub ordinal: u32,
    /// The parameters that differ between the run's configs (`workers=2`), or the
    /// full set when short, or `all trials` (one config with many parameters).
    pub label: String,
    /// Every parameter, `k=v,k=v`.
    pub params: String,
    pub metrics: Vec<MetricSample>,
}

impl ConfigData {
    pub fn metric(&self, name: &str) -> Option<&MetricSample> {
        self.metrics.iter().find(|m| m.name == name)
    }
}

/// The whole report's data.
#[derive(Debug, Clone)]
pub struct ReportData {
    pub export: RunExport,
    /// The samples of each config, as the analysis gathered them.
    pub samples: Vec<ConfigSamples>,
    pub configs: Vec<ConfigData>,
    /// Metric names in first-seen order over all configs: (name, unit, better).
    pub metric_names: Vec<(String, String, String)>,
    pub confidence: f64,
    /// What the comparison is against, in words (`config level=1`, `run 3`).
    pub compare_title: Option<String>,
    pub comparisons: Vec<CompareRow>,
    /// The why block of each comparison (`crate::why`).
    pub whys: Vec<WhyRow>,
    /// The ordinal of the config the run's other configs are compared with (None: a
    /// comparison with another run, or none).
    pub baseline: Option<u32>,
    /// The doctor findings of each trial that has a `doctor.json`, in execution order.
    pub doctor: Vec<TrialFindings>,
    /// One row per http threshold over the trials that stored verdicts.
    pub thresholds: Vec<perflab_analysis::thresholds::ThresholdRow>,
}

impl ReportData {
    /// Reads run `id` (and the `--compare` run) from the store.
    pub fn load(store: &Store, id: RunId, opts: &Options) -> Result<ReportData> {
        let export = store.export_run(id)?;
        let samples = samples::from_export(&export);
        let configs = configs_of(&export, &samples, opts.confidence);
        let cmp = CompareOptions {
            confidence: opts.confidence,
            ..CompareOptions::default()
        };
        let level = opts.confidence;
        let mut baseline = None;
        let (compare_title, comparisons, whys) = match (opts.compare_run, &opts.baseline) {
            (Some(other), _) => {
                let o = store.export_run(other)?;
                let os = samples::from_export(&o);
                let ol = configs_of(&o, &os, opts.confidence);
                (
                    Some(format!("run {} ({}) as baseline", other, o.run.name)),
                    compare::across_runs((&os, &ol), (&samples, &configs), &cmp),
                    why_rows::across_runs((&o, &ol), (&export, &configs), level),
                )
            }
            (None, given) => match pick_baseline(&samples, given.as_deref(), id)? {
                Some(b) => {
                    baseline = Some(configs[b].ordinal);
                    (
                        Some(format!("config {} as baseline", configs[b].label)),
                        compare::within_run(&samples, &configs, b, &cmp),
                        why_rows::within_run(&export, &configs, samples[b].ordinal, level),
                    )
                }
                None => (None, Vec::new(), Vec::new()),
            },
        };
        let doctor = doctor::per_trial(&export);
        let thresholds = perflab_analysis::thresholds::rows(&export);
        Ok(ReportData {
            metric_names: samples::metric_names(&samples),
            export,
            samples,
            configs,
            confidence: opts.confidence,
            compare_title,
            comparisons,
            whys,
            baseline,
            doctor,
            thresholds,
        })
    }

    /// The config a trial belongs to.
    pub fn config_label(&self, ordinal: u32) -> &str {
        self.configs
            .iter()
            .find(|c| c.ordinal == ordinal)
            .map(|c| c.label.as_str())
            .unwrap_or("?")
    }

    /// Trials with this status.
    pub fn trials_with(&self, status: &str) -> impl Iterator<Item = &ExportedTrial> {
        let status = status.to_string();
        self.export
            .trials
            .iter()
            .filter(move |t| t.status == status)
    }

    /// Seconds from start to end of the run, when it ended.
    pub fn duration_s(&self) -> Option<f64> {
        let start = humantime::parse_rfc3339_weak(&self.export.run.started_at).ok()?;
        let end = humantime::parse_rfc3339_weak(self.export.run.ended_at.as_deref()?).ok()?;
        Some(end.duration_since(start).ok()?.as_secs_f64())
    }

    /// `95%`.
    pub fn level(&self) -> String {
        format::level(self.confidence)
    }
}

fn configs_of(export: &RunExport, samples: &[ConfigSamples], confidence: f64) -> Vec<ConfigData> {
    samples
        .iter()
        .map(|c| ConfigData {
            ordinal: c.ordinal,
            label: short_label(export, &c.params),
            params: params_label(&c.params),
            metrics: c
                .metrics
                .iter()
                .map(|m| MetricSample {
                    name: m.name.clone(),
                    unit: m.unit.clone(),
                    better: m.better.clone(),
                    values: m.values.clone(),
                    trials: m.trials.clone(),
                    summary: m.summarize(confidence),
                })
                .collect(),
        })
        .collect()
}

/// The parameters of `p` that vary across the run's configs, as `k=v,...`.
fn short_label(export: &RunExport, p: &perflab_store::Params) -> String {
    let full = params_label(p);
    if full.len() <= 40 {
        return full;
    }
    let varying: perflab_store::Params = p
        .iter()
        .filter(|(k, v)| export.configs.iter().any(|c| c.params.get(*k) != Some(*v)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if varying.is_empty() {
        "all trials".into()
    } else {
        params_label(&varying)
    }
}

/// Index of the baseline config: the first that `--baseline key=value,...` names, else
/// the first config; None when the run has fewer than two configs (nothing to compare).
fn pick_baseline(
    configs: &[ConfigSamples],
    given: Option<&str>,
    run: RunId,
) -> Result<Option<usize>> {
    let Some(given) = given else {
        return Ok((configs.len() > 1).then_some(0));
    };
    let sel = parse_selector(given).map_err(|_| ReportError::BadBaseline(given.to_string()))?;
    match configs.iter().position(|c| matches(&c.params, &sel)) {
        Some(i) => Ok(Some(i)),
        None => Err(ReportError::NoSuchBaseline {
            given: given.to_string(),
            run,
            configs: configs
                .iter()
                .map(|c| params_label(&c.params))
                .collect::<Vec<_>>()
                .join("; "),
        }),
    }
}
