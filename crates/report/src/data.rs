//! Everything a report shows, gathered once from the store: the run with every trial
//! (failed and interrupted ones too), per-config samples and summaries of each metric,
//! the comparison rows, and the doctor findings stored with the trials. Output formats
//! only lay this out.

use perflab_lab::summary::params_label;
use perflab_stats::{summarize, Summary};
use perflab_store::{ExportedTrial, RunExport, RunId, Store};

use crate::compare::{self, CompareRow};
use crate::doctor::TrialFindings;
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
    pub configs: Vec<ConfigData>,
    /// Metric names in first-seen order over all configs: (name, unit, better).
    pub metric_names: Vec<(String, String, String)>,
    pub confidence: f64,
    /// What the comparison is against, in words (`config level=1`, `run 3`).
    pub compare_title: Option<String>,
    pub comparisons: Vec<CompareRow>,
    /// The doctor findings of each trial that has a `doctor.json`, in execution order.
    pub doctor: Vec<TrialFindings>,
}

impl ReportData {
    /// Reads run `id` (and the `--compare` run) from the store.
    pub fn load(store: &Store, id: RunId, opts: &Options) -> Result<ReportData> {
        let export = store.export_run(id)?;
        let configs = configs_of(&export, opts.confidence);
        let metric_names = metric_names(&configs);
        let (compare_title, comparisons) = match (opts.compare_run, &opts.baseline) {
            (Some(other), _) => {
                let o = store.export_run(other)?;
                let oc = configs_of(&o, opts.confidence);
                (
                    Some(format!("run {} ({}) as baseline", other, o.run.name)),
                    compare::across_runs(&oc, &configs, opts.confidence),
                )
            }
            (None, baseline) => {
                let b = pick_baseline(&configs, baseline.as_deref(), id)?;
                match b {
                    Some(b) => (
                        Some(format!("config {} as baseline", configs[b].label)),
                        compare::within_run(&configs, b, opts.confidence),
                    ),
                    None => (None, Vec::new()),
                }
            }
        };
        let doctor = doctor_findings(&export);
        Ok(ReportData {
            export,
            configs,
            metric_names,
            confidence: opts.confidence,
            compare_title,
            comparisons,
            doctor,
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
        format!("{}%", crate::format::num(self.confidence * 100.0))
    }
}

fn configs_of(export: &RunExport, confidence: f64) -> Vec<ConfigData> {
    export
        .configs
        .iter()
        .map(|c| {
            let mut metrics: Vec<MetricSample> = Vec::new();
            for t in export
                .trials
                .iter()
                .filter(|t| t.config == c.ordinal && t.status == "ok")
            {
                for m in t.metrics.iter().filter(|m| m.value.is_finite()) {
                    let i = match metrics.iter().position(|x| x.name == m.name) {
                        Some(i) => i,
                        None => {
                            metrics.push(MetricSample {
                                name: m.name.clone(),
                                unit: m.unit.clone(),
                                better: m.better.clone(),
                                values: Vec::new(),
                                trials: Vec::new(),
                                summary: None,
                            });
                            metrics.len() - 1
                        }
                    };
                    metrics[i].values.push(m.value);
                    metrics[i].trials.push(t.ordinal);
                }
            }
            for m in &mut metrics {
                m.summary = summarize(&m.values, confidence).ok();
            }
            ConfigData {
                ordinal: c.ordinal,
                label: short_label(export, &c.params),
                params: params_label(&c.params),
                metrics,
            }
        })
        .collect()
}

/// The findings of every trial that stored a `doctor.json` (`perflab doctor` runs, and
/// experiment trials during which the doctor saw a warning or worse).
fn doctor_findings(export: &RunExport) -> Vec<TrialFindings> {
    export
        .trials
        .iter()
        .filter_map(|t| {
            let a = t
                .artifacts
                .iter()
                .find(|a| a.name == perflab_lab::doctor::ARTIFACT)?;
            Some(TrialFindings {
                trial: t.ordinal,
                config: t.config,
                findings: crate::doctor::parse(&a.content),
            })
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

fn metric_names(configs: &[ConfigData]) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    for m in configs.iter().flat_map(|c| &c.metrics) {
        if !out.iter().any(|(n, _, _)| *n == m.name) {
            out.push((m.name.clone(), m.unit.clone(), m.better.clone()));
        }
    }
    out
}

/// Index of the baseline config: the one `--baseline key=value,...` names, else the
/// first; None when the run has fewer than two configs (nothing to compare).
fn pick_baseline(configs: &[ConfigData], given: Option<&str>, run: RunId) -> Result<Option<usize>> {
    let Some(given) = given else {
        return Ok((configs.len() > 1).then_some(0));
    };
    let mut wanted = Vec::new();
    for part in given.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| ReportError::BadBaseline(given.to_string()))?;
        wanted.push(format!("{}={}", k.trim(), v.trim()));
    }
    if wanted.is_empty() {
        return Err(ReportError::BadBaseline(given.to_string()));
    }
    let found = configs.iter().position(|c| {
        let have: Vec<&str> = c.params.split(',').collect();
        wanted.iter().all(|w| have.contains(&w.as_str()))
    });
    match found {
        Some(i) => Ok(Some(i)),
        None => Err(ReportError::NoSuchBaseline {
            given: given.to_string(),
            run,
            configs: configs
                .iter()
                .map(|c| c.params.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        }),
    }
}
