//! The trial's service, monitor and profile, wherever they run. A [`Service`] is local
//! (a [`RunningService`], this process's child) or remote (started by a [`Site`]
//! session on an inventory host: `[service] host = "b"`); a [`Monitoring`] and a
//! [`Profiling`] likewise (`[monitor] host`, `[profile] host`); a profile of the
//! workload (`target = "workload"`) is started by the workload itself, through the
//! attach hook it is given, on the process it starts for the trial. The runner
//! keeps one session per host for the whole run, opened the first time a host is
//! needed and dropped when it fails (the next trial opens a new one) or the run ends —
//! and the host stops what the session started when it goes.
//!
//! Only a local service has a pid that means something here: the command workload's
//! leftovers, the hooks, the doctor and the profiler see [`Service::local_pid`], and a
//! remote service is followed by the monitor and the profiler on its own host. A
//! remote service is recorded with each trial as the `service.json` artifact (host,
//! address, pid there, port, network namespace), a remote monitor as `monitor.json`,
//! and a remote profile carries its host and pid in its `profile.json`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use perflab_store::vocab::{ARTIFACT_MONITOR, ARTIFACT_SERVICE, ARTIFACT_SERVICE_LOG};
use perflab_store::ArtifactData;
use perflab_telemetry::{MonitorHandle, Recording};
use perflab_workloads::spec::{ProfileAttachment, TrialSpec};
use perflab_workloads::{AttachHook, Measurement};

use super::Runner;
use crate::experiment::ServiceSpec;
use crate::plan::PlannedTrial;
use crate::service::RunningService;
use crate::site::{HereError, ProfileResult, ProfileRun, ServiceStarted, Site, SiteError};

/// The service under test of the current config.
pub(super) enum Service {
    Local(RunningService),
    Remote {
        host: String,
        address: String,
        config: usize,
        started: ServiceStarted,
    },
}

impl Service {
    pub(super) fn config(&self) -> usize {
        match self {
            Service::Local(s) => s.config,
            Service::Remote { config, .. } => *config,
        }
    }

    /// Its pid when it is this process's child.
    pub(super) fn local_pid(&self) -> Option<i32> {
        match self {
            Service::Local(s) => Some(s.pid()),
            Service::Remote { .. } => None,
        }
    }

    /// This process's children that belong to the service — it and its watchdog: a
    /// workload's or hook's process tree (perflab's other children) must leave them be.
    pub(super) fn own_children(&self) -> Vec<i32> {
        match self {
            Service::Local(s) => std::iter::once(s.pid())
                .chain(s.watchdog_pid().map(|p| p as i32))
                .collect(),
            Service::Remote { .. } => Vec::new(),
        }
    }
}

/// A trial's monitor.
pub(super) enum Monitoring {
    Local(MonitorHandle),
    /// Sampling on this host, in its session.
    Remote(String),
}

/// A trial's profile being recorded.
pub(super) enum Profiling {
    /// Boxed: a recording in progress holds perf's child, paths and what it records.
    Local(Box<ProfileRun>),
    /// Recording on this host, in its session.
    Remote(String),
    /// `target = "workload"`: started by the workload's attach hook on the process it
    /// starts for the trial (None in the slot until then).
    Workload {
        slot: WorkloadSlot,
        hook: AttachHook,
    },
}

/// Where the attach hook leaves the profile it started, or why it could not.
type WorkloadSlot = Arc<Mutex<Option<Result<ProfileRun, HereError>>>>;

impl Profiling {
    /// A workload profile, and the hook that starts it on the trial's root process
    /// (the first one: a workload that starts several profiles only the first).
    fn of_workload(cfg: &ProfileAttachment, dir: PathBuf) -> Profiling {
        let slot: WorkloadSlot = Arc::new(Mutex::new(None));
        let (cfg, into) = (cfg.clone(), slot.clone());
        let hook = AttachHook(Arc::new(move |root| {
            let Ok(mut s) = into.lock() else { return };
            if s.is_none() {
                *s = Some(crate::site::start_profile_of_workload(
                    &cfg,
                    root,
                    dir.clone(),
                ));
            }
        }));
        Profiling::Workload { slot, hook }
    }

    /// The hook the workload calls with its root process (a workload profile's).
    pub(super) fn attach_hook(&self) -> Option<AttachHook> {
        match self {
            Profiling::Workload { hook, .. } => Some(hook.clone()),
            _ => None,
        }
    }
}

/// The last 256 KiB of a service log, as the trial's artifact.
fn log_artifact(log: &str) -> ArtifactData {
    let bytes = log.as_bytes();
    ArtifactData {
        name: ARTIFACT_SERVICE_LOG.into(),
        media_type: "text/plain".into(),
        content: bytes[bytes.len().saturating_sub(256 << 10)..].to_vec(),
    }
}

fn json_artifact(name: &str, v: serde_json::Value) -> ArtifactData {
    ArtifactData {
        name: name.into(),
        media_type: "application/json".into(),
        content: serde_json::to_vec_pretty(&v).unwrap_or_default(),
    }
}

impl Runner<'_> {
    /// The session with `host`, opened if there is none.
    fn site(&mut self, host: &str) -> Result<&mut Box<dyn Site>, SiteError> {
        if !self.sessions.contains_key(host) {
            let sites = self.sites.ok_or_else(|| {
                SiteError::NoHost(format!("host {host:?}: this run has no inventory of hosts"))
            })?;
            let s = sites.open(host)?;
            self.sessions.insert(host.to_string(), s);
        }
        Ok(self.sessions.get_mut(host).expect("inserted above"))
    }

    /// Runs `f` on `host`'s session (opened first when `open`); a session that failed,
    /// or whose host refused, is dropped (ending it: the host stops what it ran for it),
    /// so a later start opens a new one — but a service is never looked for in a
    /// session other than its own.
    fn on_site<T>(
        &mut self,
        host: &str,
        open: bool,
        f: impl FnOnce(&mut dyn Site) -> Result<T, SiteError>,
    ) -> Result<T, SiteError> {
        let r = self.on_site_may_refuse(host, open, f);
        if r.is_err() {
            self.sessions.remove(host);
        }
        r
    }

    /// [`Runner::on_site`], but a refusal leaves the session as it is (a host that
    /// cannot profile keeps its service); only a failed session is dropped.
    fn on_site_may_refuse<T>(
        &mut self,
        host: &str,
        open: bool,
        f: impl FnOnce(&mut dyn Site) -> Result<T, SiteError>,
    ) -> Result<T, SiteError> {
        let r = if open || self.sessions.contains_key(host) {
            self.site(host).and_then(|s| f(s.as_mut()))
        } else {
            Err(SiteError::Link(
                "its session with the host ended (the host stopped what it ran)".into(),
            ))
        };
        if matches!(r, Err(SiteError::Link(_) | SiteError::NoHost(_))) {
            self.sessions.remove(host);
        }
        r
    }

    /// Ends every session (the hosts stop what they still run for this run).
    pub(super) fn close_sites(&mut self) {
        self.sessions.clear();
    }

    /// `{service_host}`: the service host's address, else 127.0.0.1.
    pub(super) fn service_host(&self) -> String {
        self.exp
            .service
            .as_ref()
            .and_then(|s| s.host.as_ref())
            .and_then(|h| self.sites.map(|s| s.address(&h.name)))
            .and_then(Result::ok)
            .unwrap_or_else(|| "127.0.0.1".into())
    }

    /// Starts the service of trial `t`, here or on its host.
    pub(super) fn start_service(
        &mut self,
        spec: &ServiceSpec,
        vars: &BTreeMap<String, String>,
        t: &PlannedTrial,
    ) -> Result<(), String> {
        let Some(host) = &spec.host else {
            let s = RunningService::start(spec, vars, &self.run_dir, t.config, t.ordinal)?;
            // Written down until stopped, for the reaper if this run is abandoned
            // (crate::service::reap_leftovers); not being able to write it is no reason
            // not to measure.
            let _ = self
                .store
                .add_run_process(self.run_id, s.pid() as u32, "service");
            self.service = Some(Service::Local(s));
            return Ok(());
        };
        let name = host.name.clone();
        let req = spec.request(vars, t.config, t.ordinal);
        let started = self
            .on_site(&name, true, |s| s.start_service(&req))
            .map_err(|e| format!("on host {name}: {e}"))?;
        self.service = Some(Service::Remote {
            address: vars.get("service_host").cloned().unwrap_or_default(),
            host: name,
            config: t.config,
            started,
        });
        Ok(())
    }

    /// What the service changes in the trial's values: a remote service's `{port}` is
    /// the one free on its host.
    pub(super) fn service_vars(&self, vars: &mut BTreeMap<String, String>) {
        if let Some(Service::Remote { started, .. }) = &self.service {
            vars.insert("port".into(), started.port.to_string());
        }
    }

    /// Ok while the service runs.
    pub(super) fn check_service(&mut self) -> Result<(), String> {
        match &mut self.service {
            None => Ok(()),
            Some(Service::Local(s)) => s.check_alive(),
            Some(Service::Remote { host, .. }) => {
                let host = host.clone();
                self.on_site(&host, false, |s| s.check_service())
                    .map_err(|e| format!("the service on host {host}: {e}"))
            }
        }
    }

    /// Stops the service, wherever it runs, and adds its log to `m`.
    pub(super) fn stop_service(&mut self, m: &mut Measurement) {
        match self.service.take() {
            None => {}
            Some(Service::Local(mut s)) => {
                if let Some(spec) = &self.exp.service {
                    s.stop(spec);
                }
                let _ = self.store.remove_run_process(self.run_id, s.pid() as u32);
                m.artifacts.push(log_artifact(&s.log()));
            }
            Some(Service::Remote { host, .. }) => {
                match self.on_site(&host, false, |s| s.stop_service()) {
                    Ok(log) => m.artifacts.push(log_artifact(&log)),
                    Err(e) => self.obs.warn(&format!(
                        "the service on host {host} could not be stopped in order ({e}); its session was closed, which stops it there"
                    )),
                }
            }
        }
    }

    /// Where the trial's remote service is, as its `service.json` artifact.
    pub(super) fn service_artifact(&self) -> Option<ArtifactData> {
        let Some(Service::Remote {
            host,
            address,
            started,
            ..
        }) = &self.service
        else {
            return None;
        };
        Some(json_artifact(
            ARTIFACT_SERVICE,
            serde_json::json!({
                "host": host,
                "address": address,
                "pid": started.pid,
                "port": started.port,
                "netns": started.netns,
            }),
        ))
    }

    /// Starts `[monitor]` sampling for a trial, here or on its host (following the
    /// service's process where it runs).
    pub(super) fn start_monitor(&mut self, spec: &TrialSpec) -> Option<Monitoring> {
        let cfg = spec.attachments.monitor.as_ref()?;
        let host = self.exp.monitor.as_ref().and_then(|m| m.host.clone());
        let started = match &host {
            None => {
                let pid = self.service.as_ref().and_then(Service::local_pid);
                crate::site::start_monitor(cfg, pid)
                    .map(Monitoring::Local)
                    .map_err(|e| e.to_string())
            }
            Some(h) => self
                .on_site(&h.name, true, |s| s.start_monitor(cfg))
                .map(|()| Monitoring::Remote(h.name.clone()))
                .map_err(|e| format!("on host {}: {e}", h.name)),
        };
        match started {
            Ok(m) => Some(m),
            Err(e) => {
                self.obs
                    .warn(&format!("monitor not started for this trial: {e}"));
                None
            }
        }
    }

    /// Stops a trial's monitor: its recording, and for a remote one the
    /// `monitor.json` artifact that says where it was taken.
    pub(super) fn stop_monitor(
        &mut self,
        m: Monitoring,
    ) -> Option<(Recording, Option<ArtifactData>)> {
        match m {
            Monitoring::Local(h) => Some((h.stop(), None)),
            Monitoring::Remote(host) => match self.on_site(&host, false, |s| s.stop_monitor()) {
                Ok(rec) => {
                    let pid = match &self.service {
                        Some(Service::Remote {
                            host: h, started, ..
                        }) if *h == host => Some(started.pid),
                        _ => None,
                    };
                    let cfg = self.exp.monitor.as_ref();
                    let tag = json_artifact(
                        ARTIFACT_MONITOR,
                        serde_json::json!({
                            "host": host,
                            "pid": pid,
                            "interval_s": cfg.map(|c| c.interval.as_secs_f64()),
                            "probes": cfg.map(|c| c.probes.iter().map(|p| p.name()).collect::<Vec<_>>()),
                            "warnings": rec.warnings,
                        }),
                    );
                    Some((rec, Some(tag)))
                }
                Err(e) => {
                    self.obs
                        .warn(&format!("the monitor on host {host} was lost: {e}"));
                    None
                }
            },
        }
    }

    /// Starts `[profile]` recording for a trial, here or on its host (of the service's
    /// process where it runs, when the profile targets it). Not started: a warning.
    pub(super) fn start_profile(&mut self, spec: &TrialSpec) -> Option<Profiling> {
        let cfg = spec.attachments.profile.as_ref()?;
        let dir = self.run_dir.join(format!("profile-t{}", spec.ordinal));
        if cfg.workload {
            return Some(Profiling::of_workload(cfg, dir));
        }
        let Some(host) = self.exp.profile.as_ref().and_then(|p| p.host.clone()) else {
            let pid = self.service.as_ref().and_then(Service::local_pid);
            return match crate::site::start_profile(cfg, pid, dir) {
                Ok(r) => Some(Profiling::Local(Box::new(r))),
                Err(e) => {
                    self.obs.warn(&format!(
                        "profile not started for trial {}: {e}",
                        spec.ordinal
                    ));
                    None
                }
            };
        };
        // A profile of the service needs the session that runs it: a new one has none.
        let started = self.on_site_may_refuse(&host.name, !cfg.service, |s| s.start_profile(cfg));
        match started {
            Ok(_) => Some(Profiling::Remote(host.name)),
            Err(e) => {
                self.obs.warn(&format!(
                    "profile not started for trial {} on host {}: {e}",
                    spec.ordinal, host.name
                ));
                None
            }
        }
    }

    /// Stops a trial's profile: the profile and, for a remote one, its host. Lost: a
    /// warning.
    pub(super) fn stop_profile(
        &mut self,
        p: Profiling,
        trial: u32,
    ) -> Option<(ProfileResult, Option<String>)> {
        let p = match p {
            Profiling::Workload { slot, .. } => {
                let started = slot.lock().ok().and_then(|mut s| s.take());
                match started {
                    Some(Ok(run)) => Profiling::Local(Box::new(run)),
                    Some(Err(e)) => {
                        self.obs
                            .warn(&format!("profile not started for trial {trial}: {e}"));
                        return None;
                    }
                    None => {
                        self.obs.warn(&format!(
                            "profile of trial {trial} lost: the workload started no process here to profile (target = \"workload\" profiles a command workload's process tree)"
                        ));
                        return None;
                    }
                }
            }
            p => p,
        };
        match p {
            Profiling::Workload { .. } => None,
            Profiling::Local(r) => match r.stop() {
                Ok(p) => Some((p, None)),
                Err(e) => {
                    self.obs
                        .warn(&format!("profile of trial {trial} lost: {e}"));
                    None
                }
            },
            Profiling::Remote(host) => {
                match self.on_site_may_refuse(&host, false, |s| s.stop_profile()) {
                    Ok(p) => Some((p, Some(host))),
                    Err(e) => {
                        self.obs.warn(&format!(
                            "profile of trial {trial} on host {host} lost: {e}"
                        ));
                        None
                    }
                }
            }
        }
    }
}
