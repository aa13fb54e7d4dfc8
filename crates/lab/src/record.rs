//! Recording a measurement made outside the runner into the store: one run, one config
//! (the command's options), one trial — the same tables as experiments, so `show`,
//! `compare` and `export` work on them too.
//!
//! What is left of the single-shot path: only a distributed load (`perflab http
//! --agents`, `--engine slurm`), which is its own controller over hosts and so not one
//! trial. Every other single-shot command — `perflab http`, `disk`, `doctor`,
//! `profile` — is a one-trial run through the runner ([`crate::single`]); when the
//! distributed load becomes a trial too (as `[workload] agents` already is in an
//! experiment), this module goes.
//!
//! The run's times are its own: it is recorded after it ran, so it started
//! `duration_s` before now (not when it was written down), and its state says how it
//! ended — `interrupted`, `gate_failed` (a threshold failed), or complete.

use perflab_store::{NewRun, Params, Result, RunId, RunStatus, Store, TrialRecord, TrialStatus};
use perflab_workloads::Measurement;

/// A finished single-shot measurement.
pub struct OneShot<'a> {
    /// `http`, `disk`, `profile`, ...
    pub kind: &'a str,
    /// Shown in `perflab runs` (e.g. the URL or path).
    pub name: String,
    /// The options, as the config's parameters.
    pub params: Params,
    /// Anything else about the environment worth keeping.
    pub environment: serde_json::Value,
    pub measurement: Measurement,
    pub duration_s: f64,
    /// `None` when it succeeded; the problem otherwise (the measurement is kept).
    pub error: Option<String>,
    /// Stopped by Ctrl-C before its planned end (what ran is kept).
    pub interrupted: bool,
}

/// Whether a measurement judged thresholds and one failed (its `thresholds_failed`
/// metric, perflab_workloads::http::add_thresholds).
pub fn gate_failed(m: &Measurement) -> bool {
    m.metrics
        .iter()
        .any(|x| x.name == "thresholds_failed" && x.value > 0.0)
}

/// Stores a single-shot measurement as a one-trial run and returns its id.
pub fn one_shot(store: &Store, shot: OneShot) -> Result<RunId> {
    let host = store.upsert_host(&crate::env::host())?;
    let started_at = perflab_store::rfc3339(
        std::time::SystemTime::now() - std::time::Duration::from_secs_f64(shot.duration_s.max(0.0)),
    );
    let run = store.create_run(
        &NewRun {
            name: shot.name,
            kind: shot.kind.to_string(),
            environment: shot.environment,
            started_at: Some(started_at.clone()),
            ..Default::default()
        },
        host,
    )?;
    let config = store.ensure_config(run, 0, &shot.params)?;
    let failed = shot.error.is_some();
    let gate = gate_failed(&shot.measurement);
    store.record_trial(
        run,
        &TrialRecord {
            config_id: config,
            repetition: 1,
            ordinal: 1,
            started_at,
            duration_s: shot.duration_s,
            status: if shot.interrupted {
                TrialStatus::Interrupted
            } else if failed {
                TrialStatus::Failed
            } else {
                TrialStatus::Ok
            },
            error: shot.error,
            method: shot.measurement.method,
            metrics: shot.measurement.metrics,
            histograms: shot.measurement.histograms,
            series: shot.measurement.series,
            artifacts: shot.measurement.artifacts,
        },
    )?;
    store.finish_run(
        run,
        if shot.interrupted {
            RunStatus::Interrupted
        } else if gate {
            RunStatus::GateFailed
        } else if failed {
            RunStatus::CompleteWithFailures
        } else {
            RunStatus::Complete
        },
    )?;
    Ok(run)
}
