//! One-trial runs: what a single-shot command (`perflab http`, `disk`, `doctor`,
//! `profile`) is. The command's workload spec becomes an experiment of one config (its
//! options as the config's parameters), one repetition and no warm-up, run through the
//! ordinary runner ([`runner::run_on`]) — so it is recorded as every trial is (same
//! tables, Ctrl-C → `interrupted`, a failure kept with its error), and with `on` it runs
//! on another host through the same worker as `perflab run --on` (the trial's `host`
//! parameter says where).
//!
//! A trial that judged thresholds (`perflab http --threshold`) and failed one makes the
//! run `gate_failed`, as the command's exit status 3 says.
//!
//! The runner records; the command still prints its own report. So the trial's
//! workload is wrapped ([`Capture`]) to keep what it returned — its [`Measurement`], the
//! partial one of a failed trial — and [`run`] hands it back with the trial's status.
//!
//! The experiment is a value built here from typed parts; its stored text is those
//! parts serialised (lab's `Draft`), not a file anyone wrote. It is not read back from
//! that text: a one-trial run keeps its options as they are (braces included) and its
//! parameters as the command always stored them (`urls` is a list).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use perflab_store::{Params, RunId, Store, TrialStatus};
use perflab_workloads::spec::{Kind, KindSpec, TrialSpec, WorkloadFactory};
use perflab_workloads::{Measurement, TrialContext, Workload, WorkloadError};

use crate::experiment::{Draft, Experiment, Order, Param, Repetitions, WorkloadSpec};
use crate::runner::{self, RunContext, RunError, RunOptions, RunOutcome};

/// A single-shot command's measurement, as one trial.
#[derive(Debug, Clone)]
pub struct OneTrial {
    /// The run's kind in the store: `http`, `disk`, ...
    pub kind: String,
    /// Shown in `perflab runs` (e.g. `disk write /var/tmp`).
    pub name: String,
    /// What the trial runs (`KindSpec::Disk(..)`, `KindSpec::Http(..)`).
    pub workload: KindSpec,
    /// The command's options, as the config's parameters.
    pub params: Params,
    /// More fields for the run's stored environment.
    pub environment: serde_json::Value,
    /// The inventory host the trial runs on (`--on HOST`; its `host` parameter), or
    /// here.
    pub on: Option<String>,
}

/// What came of a one-trial run.
#[derive(Debug, Clone)]
pub struct Shot {
    pub outcome: RunOutcome,
    /// The trial's status, as recorded.
    pub status: TrialStatus,
    /// Why it failed (or `interrupted`), as recorded.
    pub error: Option<String>,
    /// What the workload returned (a failed trial's partial measurement), if it ran.
    pub measurement: Option<Measurement>,
}

impl OneTrial {
    /// The experiment of this one trial: one config, one repetition, no warm-up, no
    /// noise check; with `on`, the `host` parameter (as `perflab run --on` adds it).
    pub fn experiment(&self) -> Result<Experiment, RunError> {
        let kind = self.workload.kind();
        if kind == Kind::Command {
            return Err(RunError::Refused(
                "a command workload is run by `perflab run` or `perflab bench`".into(),
            ));
        }
        let table = options_table(&self.workload)?;
        let mut matrix: Vec<Param> = self
            .params
            .iter()
            .filter(|(k, v)| k.as_str() != "host" && !v.is_null())
            .map(|(k, v)| Param {
                name: k.clone(),
                values: vec![v.clone()],
            })
            .collect();
        if let Some(h) = &self.on {
            matrix.push(Param {
                name: "host".into(),
                values: vec![serde_json::Value::String(h.clone())],
            });
        }
        Ok(Experiment {
            name: self.name.clone(),
            description: None,
            text: self.text(&matrix, &table)?,
            path: PathBuf::from(format!("perflab-{}.toml", self.kind)),
            repetitions: Repetitions::Fixed(1),
            stop: Default::default(),
            primary: Vec::new(),
            noise_check: false,
            warmup: 0,
            order: Order::Interleaved,
            seed: None,
            timeout: None,
            cpus: None,
            prepare: None,
            cleanup: None,
            setup: None,
            teardown: None,
            matrix,
            on: self.on.iter().cloned().collect(),
            service: None,
            monitor: None,
            profile: None,
            workload: WorkloadSpec::Options { kind, table },
            workload_host: None,
            requires: Default::default(),
        })
    }

    /// The stored text of the experiment: its parts serialised ([`Draft::to_toml`],
    /// with `on` when it runs on a host). A parameter whose value is a list (`urls`)
    /// is written as it is stored, though an experiment file's matrix takes scalars.
    fn text(&self, matrix: &[Param], table: &toml::Table) -> Result<String, RunError> {
        let draft = Draft {
            repetitions: Some(Repetitions::Fixed(1)),
            warmup: Some(0),
            noise_check: Some(false),
            matrix: matrix
                .iter()
                .filter(|p| p.name != "host")
                .map(|p| {
                    (
                        p.name.clone(),
                        p.values.iter().filter_map(toml_value).collect(),
                    )
                })
                .collect(),
            ..Draft::with_options(&self.name, self.workload.kind(), table.clone())
        };
        let bad = |e: String| RunError::Io(format!("cannot write the one-trial experiment: {e}"));
        let text = draft.to_toml().map_err(|e| bad(e.to_string()))?;
        let Some(h) = &self.on else {
            return Ok(text);
        };
        let mut doc: toml::Table = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if let Some(toml::Value::Table(e)) = doc.get_mut("experiment") {
            e.insert("on".into(), vec![toml::Value::from(h.clone())].into());
        }
        toml::to_string(&doc).map_err(|e| bad(e.to_string()))
    }
}

/// The workload's options as the table an experiment file would hold.
fn options_table(k: &KindSpec) -> Result<toml::Table, RunError> {
    let json = serde_json::to_value(k)
        .map_err(|e| RunError::Io(format!("cannot write the workload's options: {e}")))?;
    match json.get("options").and_then(toml_value).map(literal) {
        Some(toml::Value::Table(t)) => Ok(t),
        _ => Err(RunError::Io(format!(
            "the {} workload's options are not a table",
            k.kind()
        ))),
    }
}

/// Every string of `v` as a literal: the runner renders a table workload's strings as
/// templates, and a command's options (a body `{"a": 1}`, a URL with `{port}`) mean
/// what they say — so braces are doubled, which rendering undoes.
fn literal(v: toml::Value) -> toml::Value {
    match v {
        toml::Value::String(s) => toml::Value::String(s.replace('{', "{{").replace('}', "}}")),
        toml::Value::Array(a) => toml::Value::Array(a.into_iter().map(literal).collect()),
        toml::Value::Table(t) => {
            toml::Value::Table(t.into_iter().map(|(k, v)| (k, literal(v))).collect())
        }
        other => other,
    }
}

/// A JSON value as TOML, nulls (TOML has none) left out.
fn toml_value(v: &serde_json::Value) -> Option<toml::Value> {
    use serde_json::Value as J;
    Some(match v {
        J::Null => return None,
        J::Bool(b) => toml::Value::Boolean(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64()?),
        },
        J::String(s) => toml::Value::String(s.clone()),
        J::Array(a) => toml::Value::Array(a.iter().filter_map(toml_value).collect()),
        J::Object(o) => toml::Value::Table(
            o.iter()
                .filter_map(|(k, v)| Some((k.clone(), toml_value(v)?)))
                .collect(),
        ),
    })
}

/// Runs the one trial through the runner with `ctx` (its factory wrapped to keep the
/// workload's result) and hands back what came of it. `opts` gives the run's kind and
/// environment; its scratch directory is a temporary one, removed afterwards.
pub fn run(
    one: &OneTrial,
    exp: &Experiment,
    store: &Store,
    ctx: &RunContext<'_>,
) -> Result<Shot, RunError> {
    let scratch = std::env::temp_dir().join(format!("perflab-{}-{}", one.kind, std::process::id()));
    let opts = RunOptions {
        kind: Some(one.kind.clone()),
        scratch: Some(scratch.clone()),
        environment: Some(one.environment.clone()),
        ..Default::default()
    };
    let capture = Capture {
        inner: ctx.factory,
        kept: Arc::default(),
    };
    let outcome = runner::run_on(
        exp,
        store,
        &opts,
        &RunContext {
            factory: &capture,
            ..ctx.clone()
        },
    );
    let _ = std::fs::remove_dir_all(&scratch);
    let mut outcome = outcome?;
    let (status, error) = recorded(store, outcome.run_id)?;
    let measurement = capture.kept.lock().ok().and_then(|mut k| k.take());
    // The trial judged its thresholds; a failed one is the run's gate.
    if measurement.as_ref().is_some_and(crate::record::gate_failed) {
        store.mark_gate_failed(outcome.run_id)?;
        outcome.status = store.run(outcome.run_id)?.status_enum();
    }
    Ok(Shot {
        outcome,
        status,
        error,
        measurement,
    })
}

/// The recorded trial's status and error (`interrupted` when none was recorded).
fn recorded(store: &Store, run: RunId) -> Result<(TrialStatus, Option<String>), RunError> {
    let trials = store.trials(run)?;
    Ok(match trials.first() {
        Some(t) => (
            match t.status.as_str() {
                "ok" => TrialStatus::Ok,
                "failed" => TrialStatus::Failed,
                _ => TrialStatus::Interrupted,
            },
            t.error.clone(),
        ),
        None => (TrialStatus::Interrupted, Some("interrupted".into())),
    })
}

/// A factory that builds what `inner` builds, and keeps the measurement each workload
/// returns (a failed one's partial measurement too).
pub struct Capture<'a> {
    pub inner: &'a dyn WorkloadFactory,
    pub kept: Arc<Mutex<Option<Measurement>>>,
}

impl WorkloadFactory for Capture<'_> {
    fn build(&self, trial: &TrialSpec) -> Result<Box<dyn Workload>, WorkloadError> {
        Ok(Box::new(Kept {
            inner: self.inner.build(trial)?,
            kept: self.kept.clone(),
        }))
    }
}

struct Kept {
    inner: Box<dyn Workload>,
    kept: Arc<Mutex<Option<Measurement>>>,
}

impl Workload for Kept {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        let result = self.inner.run(ctx);
        let m = match &result {
            Ok(m) => Some(m.clone()),
            Err(WorkloadError::Failed { partial, .. }) => Some((**partial).clone()),
            Err(_) => None,
        };
        if let (Some(m), Ok(mut k)) = (m, self.kept.lock()) {
            *k = Some(m);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_workloads::disk::DiskSpec;

    fn disk(on: Option<&str>) -> OneTrial {
        let spec = DiskSpec::new("/var/tmp");
        OneTrial {
            kind: "disk".into(),
            name: "disk write /var/tmp".into(),
            params: spec.params(),
            workload: KindSpec::Disk(spec),
            environment: serde_json::json!({}),
            on: on.map(str::to_string),
        }
    }

    #[test]
    fn a_one_trial_experiment_is_one_config_once_and_its_text_reads_back() {
        let one = disk(None);
        let exp = one.experiment().unwrap();
        let configs = crate::plan::configs(&exp);
        assert_eq!(configs.len(), 1);
        assert_eq!(configs[0].params_map(), one.params);
        assert_eq!(crate::plan::plan(&exp, 1, 7).len(), 1);
        let back = Experiment::parse(&exp.path, &exp.text).unwrap();
        assert_eq!(back.name, exp.name);
        assert_eq!(back.matrix, exp.matrix);
        assert_eq!(back.workload.kind(), Kind::Disk);
    }

    #[test]
    fn the_options_render_back_as_given_braces_and_all() {
        let options = serde_json::json!({
            "url": "http://127.0.0.1:1/{port}",
            "body": "{\"a\": {{1}}}",
            "duration": "1s",
        });
        let one = OneTrial {
            kind: "http".into(),
            name: "http".into(),
            params: Params::new(),
            workload: Kind::Http.options(options.clone()).unwrap(),
            environment: serde_json::json!({}),
            on: None,
        };
        let WorkloadSpec::Options { table, .. } = one.experiment().unwrap().workload else {
            panic!("not a table kind")
        };
        let vars = [("port".to_string(), "8080".to_string())].into();
        let back = crate::workload::rendered(Kind::Http, &table, &vars).unwrap();
        assert_eq!(back, one.workload);
    }

    #[test]
    fn on_a_host_the_trial_has_the_host_parameter() {
        let exp = disk(Some("b")).experiment().unwrap();
        assert_eq!(exp.on, vec!["b".to_string()]);
        let configs = crate::plan::configs(&exp);
        assert_eq!(configs[0].params_map()["host"], "b");
        let back = Experiment::parse(&exp.path, &exp.text).unwrap();
        assert_eq!(back.on, exp.on);
        assert_eq!(back.matrix, exp.matrix);
    }
}
