//! The runner: turns a checked experiment into stored trials.
//!
//! For each planned trial: (re)start the service when the config changes, run
//! `prepare`, run the workload, check the service survived, run `cleanup`, stop the
//! service when the next trial belongs to another config, and commit the trial — one
//! transaction, the moment it ends. A failed trial is recorded with its error and the
//! run goes on. An interrupt stops the current trial and service and marks the run
//! `interrupted`; `--resume` later runs what is missing under the same run id.
//!
//! Every measuring command comes through here: an experiment file, an experiment a
//! command built as a value, and a single-shot command's one-trial run
//! ([`crate::single`]). What builds each trial's workload (perflab's own, or the
//! fleet's remote trials), who opens sessions on hosts and who watches are handed in
//! with a [`RunContext`].

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use perflab_store::{
    rfc3339, NewRun, RunId, RunStatus, Store, StoreError, TrialRecord, TrialStatus,
};
use perflab_workloads::spec::{Builtin, WorkloadFactory};
use perflab_workloads::Measurement;

use crate::experiment::{Experiment, Order, WorkloadSpec};
use crate::observe::Observer;
use crate::plan::{self, Config, PlannedTrial};
use crate::service::free_port;
use crate::site::{Site, Sites};

mod auto;
mod heartbeat;
mod lanes;

pub use auto::{decisions, Compared, Interval};
pub use perflab_stats::Decision;
mod placed;
mod trial;

/// Errors that stop a run from starting or continuing.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    File(#[from] crate::FileError),
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Io(String),
}

/// How the run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub run_id: RunId,
    pub status: RunStatus,
    pub trials_ok: usize,
    pub trials_failed: usize,
}

/// Options of `perflab run`.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Resume this run instead of starting a new one.
    pub resume: Option<RunId>,
    /// With `resume`: also re-run failed trials.
    pub retry_failed: bool,
    /// The run's kind in the store (default `experiment`): `perflab scimark` and
    /// `perflab bench` store their experiments under their own name.
    pub kind: Option<String>,
    /// Where runs' scratch directories go (`<this>/runs/ID`); default: beside the store.
    pub scratch: Option<PathBuf>,
    /// More fields for a new run's stored environment (a one-trial command's own,
    /// e.g. `perflab http`'s arguments).
    pub environment: Option<serde_json::Value>,
}

/// Runs (or resumes) an experiment with perflab's own workloads.
pub fn run(
    exp: &Experiment,
    store: &Store,
    opts: &RunOptions,
    interrupted: Arc<AtomicBool>,
    obs: &dyn Observer,
) -> Result<RunOutcome, RunError> {
    run_with(exp, store, opts, interrupted, obs, &Builtin)
}

/// Runs (or resumes) an experiment whose trials' workloads `factory` builds from each
/// trial's [`TrialSpec`](perflab_workloads::spec::TrialSpec).
pub fn run_with(
    exp: &Experiment,
    store: &Store,
    opts: &RunOptions,
    interrupted: Arc<AtomicBool>,
    obs: &dyn Observer,
    factory: &dyn WorkloadFactory,
) -> Result<RunOutcome, RunError> {
    let ctx = RunContext {
        interrupted,
        observer: obs,
        factory,
        sites: None,
    };
    run_on(exp, store, opts, &ctx)
}

/// What a run works with besides its experiment, store and options: the Ctrl-C flag,
/// who watches, who builds the workloads, and who opens sessions with hosts.
#[derive(Clone)]
pub struct RunContext<'a> {
    /// Set by Ctrl-C: the current trial stops, the run ends `interrupted`.
    pub interrupted: Arc<AtomicBool>,
    pub observer: &'a dyn Observer,
    /// Builds each trial's workload from its spec ([`Builtin`], or the fleet's).
    pub factory: &'a dyn WorkloadFactory,
    /// Opens the sessions with the hosts the experiment's `[service] host`, `[monitor]
    /// host` and `[profile] host` name (crate fleet, over ssh); `None`: no inventory.
    pub sites: Option<&'a dyn Sites>,
}

/// [`run_with`], with the context's `sites` for the hosts the experiment places its
/// service, monitor or profile on.
pub fn run_on(
    exp: &Experiment,
    store: &Store,
    opts: &RunOptions,
    ctx: &RunContext<'_>,
) -> Result<RunOutcome, RunError> {
    refuse_unplaceable(exp, ctx.sites.is_some())?;
    let _ = perflab_workloads::tree::become_subreaper();
    let configs = plan::configs(exp);
    // Before a resume claims its run: what it left behind when abandoned goes too.
    for p in crate::service::reap_leftovers(store) {
        ctx.observer.warn(&format!(
            "stopped a {} (pid {}) that abandoned run {} left running",
            p.what, p.pid, p.run
        ));
    }
    let (run_id, seed, done) = match opts.resume {
        Some(id) => reopen(store, id, opts.retry_failed)?,
        None => {
            let noise = noise(exp, ctx.observer);
            create(exp, store, opts, noise)?
        }
    };
    // Stamps the run alive until this function returns, however it returns.
    let _heartbeat = heartbeat::start(store, run_id);
    if exp.order == Order::Sequential {
        ctx.observer.warn("order = \"sequential\": all trials of one config run back to back, so machine drift (thermal, background load) can look like a difference between configs; prefer \"interleaved\" or \"random\"");
    }
    let run_dir = match &opts.scratch {
        Some(base) => make_run_dir(base, run_id)?,
        None => run_dir_for(store, run_id)?,
    };
    let config_ids = configs
        .iter()
        .map(|c| store.ensure_config(run_id, c.ordinal, &c.params_map()))
        .collect::<Result<Vec<_>, _>>()?;
    let todo = todo(exp, &configs, seed, &done);
    let port = free_port().map_err(|e| RunError::Io(format!("cannot find a free port: {e}")))?;
    let mut r = Runner {
        exp,
        store,
        run_id,
        run_dir,
        port,
        configs: &configs,
        config_ids,
        interrupted: ctx.interrupted.clone(),
        obs: ctx.observer,
        service: None,
        sites: ctx.sites,
        sessions: BTreeMap::new(),
        factory: ctx.factory,
        doctor: crate::doctor::TrialDoctor::live(),
        missing_said: Default::default(),
        ok: 0,
        failed: 0,
    };
    ctx.observer.started(run_id, todo.len());
    let status = r.execute(&todo, seed);
    store.finish_run(run_id, status)?;
    let row = store.run(run_id)?;
    Ok(RunOutcome {
        run_id,
        status,
        trials_ok: row.trials_ok as usize,
        trials_failed: row.trials_failed as usize,
    })
}

/// A service, monitor or profile placed on a host needs an inventory to find it in.
fn refuse_unplaceable(exp: &Experiment, have_sites: bool) -> Result<(), RunError> {
    let placed = [
        exp.service.as_ref().and_then(|s| s.host.as_ref()),
        exp.monitor.as_ref().and_then(|m| m.host.as_ref()),
        exp.profile.as_ref().and_then(|p| p.host.as_ref()),
    ];
    match placed.iter().flatten().next() {
        Some(h) if !have_sites => Err(RunError::Refused(
            h.error(format!(
                "host {:?}: this run has no inventory of hosts to find it in",
                h.name
            ))
            .to_string(),
        )),
        _ => Ok(()),
    }
}

/// The machine's noise before a new run (`noise_check`), with a warning when it is high.
fn noise(exp: &Experiment, obs: &dyn Observer) -> Option<f64> {
    if !exp.noise_check {
        return None;
    }
    let cv = crate::noise::measure();
    let limit = crate::noise::threshold();
    if cv > limit {
        obs.noisy(&crate::noise::Noisy { cv, limit });
    }
    Some(cv)
}

/// A run opened for trials: its id, its seed, and the (config ordinal, repetition)
/// pairs that need no re-run.
type Opened = (RunId, u64, HashSet<(u32, u32)>);

/// A stored run to resume on this host: its id, seed and the (config ordinal,
/// repetition) pairs that need no re-run.
fn reopen(store: &Store, id: RunId, retry_failed: bool) -> Result<Opened, RunError> {
    let host = crate::env::host();
    let row = store.run(id)?;
    let here = store.upsert_host(&host)?;
    if row.host_id != here {
        let theirs = store.host(row.host_id)?;
        return Err(RunError::Refused(format!(
            "run {id} was measured on host {:?}, this is {:?}: a resumed run must stay on one machine (start a new run here)",
            theirs.hostname, host.hostname
        )));
    }
    // Refused while another live process runs it; taken over (ours now) otherwise.
    store.claim_run(id)?;
    let seed = row.seed.unwrap_or(0);
    let stored = store.configs(id)?;
    let mut done = HashSet::new();
    for t in store.trials(id)? {
        let keep = t.status == "ok" || (t.status == "failed" && !retry_failed);
        if let (true, Some(c)) = (keep, stored.iter().find(|c| c.id == t.config_id)) {
            done.insert((c.ordinal, t.repetition));
        }
    }
    Ok((id, seed, done))
}

/// A new run in the store: its id, seed and nothing done yet. Its environment is the
/// host, the tools the experiment names, the order and pinning, and the caller's own
/// fields ([`RunOptions::environment`]).
fn create(
    exp: &Experiment,
    store: &Store,
    opts: &RunOptions,
    noise: Option<f64>,
) -> Result<Opened, RunError> {
    let host = crate::env::host();
    let seed = exp.seed.unwrap_or_else(plan::fresh_seed);
    let host_id = store.upsert_host(&host)?;
    let tools = crate::env::tool_versions(&programs_named(exp));
    let mut environment = serde_json::json!({
        "tools": tools,
        "perflab": env!("CARGO_PKG_VERSION"),
        "order": exp.order.as_str(),
        "cwd": std::env::current_dir().ok(),
        "noise_cv": noise,
        // The host as it was for this run (the hosts table keeps the newest
        // description) and the CPUs the run was pinned to.
        "host": host,
        "cpus": exp.cpus.as_ref().map(|c| c.to_string()),
    });
    if let (Some(all), Some(extra)) = (
        environment.as_object_mut(),
        opts.environment.as_ref().and_then(|e| e.as_object()),
    ) {
        all.extend(extra.clone());
    }
    let id = store.create_run(
        &NewRun {
            name: exp.name.clone(),
            kind: opts.kind.clone().unwrap_or_else(|| "experiment".into()),
            file_path: Some(exp.path.display().to_string()),
            file_text: Some(exp.text.clone()),
            seed: Some(seed),
            environment,
            started_at: None,
        },
        host_id,
    )?;
    Ok((id, seed, HashSet::new()))
}

/// The trials still to run: warm-ups only when there is recorded work left.
fn todo(
    exp: &Experiment,
    configs: &[Config],
    seed: u64,
    done: &HashSet<(u32, u32)>,
) -> Vec<PlannedTrial> {
    let todo: Vec<PlannedTrial> = plan::plan(exp, configs.len(), seed)
        .into_iter()
        .filter(|t| t.warmup || !done.contains(&(configs[t.config].ordinal, t.repetition)))
        .collect();
    if todo.iter().any(|t| !t.warmup) {
        todo
    } else {
        Vec::new()
    }
}

/// The scratch directory of a run, beside the store.
pub fn run_dir_for(store: &Store, run: RunId) -> Result<PathBuf, RunError> {
    let base = store
        .path()
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    make_run_dir(&base, run)
}

fn make_run_dir(base: &Path, run: RunId) -> Result<PathBuf, RunError> {
    let dir = base.join("runs").join(run.to_string());
    std::fs::create_dir_all(&dir).map_err(|e| {
        RunError::Io(format!(
            "cannot create run directory {}: {e}",
            dir.display()
        ))
    })?;
    dir.canonicalize()
        .map_err(|e| RunError::Io(format!("run directory {}: {e}", dir.display())))
}

fn programs_named(exp: &Experiment) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |s: &str| {
        for part in s.split(['|', ';', '&']) {
            if let Some(p) = crate::env::program_of(part) {
                out.push(p);
            }
        }
    };
    if let Some(s) = &exp.service {
        add(s.command.source());
    }
    if let WorkloadSpec::Command(c) = &exp.workload {
        add(c.command.source());
    }
    for p in exp.workload.kind().programs() {
        add(p);
    }
    for t in [&exp.prepare, &exp.cleanup, &exp.setup, &exp.teardown]
        .into_iter()
        .flatten()
    {
        add(t.source());
    }
    out.retain(|p| !p.contains('{'));
    out
}

struct Runner<'a> {
    exp: &'a Experiment,
    store: &'a Store,
    run_id: RunId,
    run_dir: PathBuf,
    port: u16,
    configs: &'a [Config],
    config_ids: Vec<i64>,
    interrupted: Arc<AtomicBool>,
    obs: &'a dyn Observer,
    service: Option<placed::Service>,
    /// Opens sessions with the hosts of `[service] host` and `[monitor] host`.
    sites: Option<&'a dyn Sites>,
    /// One session per host, for the whole run.
    sessions: BTreeMap<String, Box<dyn Site>>,
    /// Builds each trial's workload from its spec.
    factory: &'a dyn WorkloadFactory,
    /// Doctor observations around each recorded trial's workload.
    doctor: crate::doctor::TrialDoctor,
    /// Counters already warned about as missing (once per run, not per trial).
    missing_said: std::cell::RefCell<std::collections::BTreeSet<String>>,
    ok: usize,
    failed: usize,
}

/// Outcome of one trial before it is recorded.
struct Done {
    status: TrialStatus,
    error: Option<String>,
    m: Measurement,
}

/// The absolute directory of the experiment file (`{experiment_dir}`), so an example can
/// name the files that ship beside it wherever perflab is started from.
fn experiment_dir(path: &std::path::Path) -> String {
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        std::path::Path::new(".")
    } else {
        dir
    };
    std::fs::canonicalize(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string()
}

impl Runner<'_> {
    fn is_interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    fn vars(&self, t: &PlannedTrial) -> BTreeMap<String, String> {
        let mut v: BTreeMap<String, String> = self.configs[t.config]
            .params
            .iter()
            .map(|(k, val)| (k.clone(), perflab_store::value_text(val)))
            .collect();
        v.insert("repetition".into(), t.repetition.to_string());
        v.insert("trial".into(), t.ordinal.to_string());
        v.insert("run_dir".into(), self.run_dir.display().to_string());
        v.insert("port".into(), self.port.to_string());
        v.insert("perflab".into(), crate::exe::perflab_exe());
        v.insert("experiment_dir".into(), experiment_dir(&self.exp.path));
        v.insert("service_host".into(), self.service_host());
        v
    }

    fn execute(&mut self, todo: &[PlannedTrial], seed: u64) -> RunStatus {
        let mut interrupted = false;
        let first = todo.first().copied();
        if !todo.is_empty() {
            if let Some(setup) = &self.exp.setup {
                let vars = self.vars(&todo[0]);
                if let Err(e) = self.hook(trial::Hook::Setup, &setup.render(&vars)) {
                    self.obs
                        .warn(&format!("setup failed, nothing was run: {e}"));
                    // Undo what the setup did before it failed or was interrupted.
                    if let Some(td) = &self.exp.teardown {
                        if let Err(e) = self.hook(trial::Hook::Teardown, &td.render(&vars)) {
                            self.obs.warn(&format!("teardown failed: {e}"));
                        }
                    }
                    return if self.is_interrupted() {
                        RunStatus::Interrupted
                    } else {
                        RunStatus::Failed
                    };
                }
            }
        }
        if first.is_some() {
            interrupted = self.run_trials(todo);
        }
        if !interrupted {
            interrupted = self.adaptive(seed);
        }
        let mut sink = Measurement::default();
        self.stop_service(&mut sink);
        self.close_sites();
        if let (Some(td), Some(t)) = (&self.exp.teardown, first) {
            let vars = self.vars(&t);
            if let Err(e) = self.hook(trial::Hook::Teardown, &td.render(&vars)) {
                self.obs.warn(&format!("teardown failed: {e}"));
            }
        }
        if interrupted || self.is_interrupted() {
            return RunStatus::Interrupted;
        }
        let all = self.store.run(self.run_id);
        match all {
            Ok(r) if r.trials_failed > 0 => RunStatus::CompleteWithFailures,
            Ok(r) if r.trials_interrupted > 0 => RunStatus::Interrupted,
            _ => RunStatus::Complete,
        }
    }

    /// Runs trials in order — or, on several hosts, each host's in order and the hosts
    /// in parallel ([`lanes`]); true when interrupted.
    fn run_trials(&mut self, todo: &[PlannedTrial]) -> bool {
        if let Some(lanes) = self.lanes(todo) {
            return self.run_lanes(todo, lanes);
        }
        let mut interrupted = false;
        for (i, t) in todo.iter().enumerate() {
            if self.is_interrupted() {
                interrupted = true;
                break;
            }
            let label = self.configs[t.config].label();
            self.obs.trial_started(i, todo.len(), &label, t.warmup);
            let started = SystemTime::now();
            let clock = Instant::now();
            let mut done = self.trial(t);
            // Stop the service when the next trial belongs to another config — or, in
            // interleaved rounds of several configs, always: a shuffle that puts one
            // config last in a round and first in the next must not hand that trial a
            // warm service the others never get (each trial starts its own, as when
            // rounds ran A B A B).
            let fresh_each = self.exp.order == Order::Interleaved && self.configs.len() > 1;
            let next_same = !fresh_each && todo.get(i + 1).is_some_and(|n| n.config == t.config);
            if !next_same || done.status == TrialStatus::Interrupted || self.is_interrupted() {
                self.stop_service(&mut done.m);
            }
            let duration = clock.elapsed().as_secs_f64();
            if self.finish(i, t, done, started, duration) {
                interrupted = true;
                break;
            }
        }
        interrupted
    }

    /// Reports trial `t` (the `i`th of this batch) as finished and records it (a
    /// warm-up is not recorded); true when it was interrupted.
    fn finish(
        &mut self,
        i: usize,
        t: &PlannedTrial,
        mut done: Done,
        started: SystemTime,
        duration: f64,
    ) -> bool {
        if self.is_interrupted() && done.status != TrialStatus::Failed {
            done.status = TrialStatus::Interrupted;
            done.error.get_or_insert_with(|| "interrupted".into());
        }
        let label = self.configs[t.config].label();
        self.obs.trial_finished(i, &label, done.error.as_deref());
        let interrupted = done.status == TrialStatus::Interrupted;
        if t.warmup {
            return interrupted;
        }
        let rec = TrialRecord {
            config_id: self.config_ids[t.config],
            repetition: t.repetition,
            ordinal: t.ordinal,
            started_at: rfc3339(started),
            duration_s: duration,
            status: done.status,
            error: done.error.clone(),
            method: done.m.method.clone(),
            metrics: done.m.metrics,
            histograms: done.m.histograms,
            series: done.m.series,
            artifacts: done.m.artifacts,
        };
        if done.status != TrialStatus::Interrupted {
            let _ =
                self.store
                    .delete_unsuccessful_trials(self.run_id, rec.config_id, rec.repetition);
        }
        if let Err(e) = self.store.record_trial(self.run_id, &rec) {
            self.obs
                .warn(&format!("could not record trial {}: {e}", t.ordinal));
        }
        match done.status {
            TrialStatus::Ok => self.ok += 1,
            TrialStatus::Failed => self.failed += 1,
            TrialStatus::Interrupted => {}
        }
        interrupted
    }
}
