//! Where a trial's service, monitor and profile run: here, or on an inventory host
//! (`[service] host = "b"`, `[monitor] host = "b"`, `[profile] host = "b"`;
//! docs/fleet.md).
//!
//! The lab cannot reach other hosts itself — crate fleet does, over ssh, and depends on
//! this crate — so the runner speaks to a host through two small traits: [`Sites`]
//! opens a [`Site`], one session with perflab on one host, and the session starts,
//! checks and stops the service, the monitor and the profiler there.
//!
//! What crosses is data, and the far end runs it with the code a local trial uses:
//! - a [`ServiceRequest`] is the `[service]` table as written (its templates' sources)
//!   with the trial's values, rendered *on the host* — so `{run_dir}` and `{perflab}`
//!   name the host's own directory and binary, and `{port}` a port free there — and
//!   started there by [`RunningService`](crate::service::RunningService), in its own
//!   process group, with its log file and readiness check, as here;
//! - a monitor is the trial's [`MonitorAttachment`], started by [`start_monitor`] (the
//!   function the runner calls for a local monitor) following the service's pid as the
//!   host sees it, and its [`Recording`] comes back whole, to be stored as a local one is;
//! - a profile is the trial's [`ProfileAttachment`], recorded with perf by
//!   [`start_profile_here`] (the local [`start_profile`] with perf's stdout kept off the
//!   session's) on the service's pid as the host sees it, else on every CPU there, and
//!   reduced there to what a trial stores — a [`ProfileResult`]: report, folded stacks,
//!   flame graph, top functions — so what crosses back is small and is stored as a
//!   local profile is. A host that cannot profile (no perf, not permitted) answers so
//!   ([`SiteError::Refused`]) and the session, with its service, goes on; a session
//!   that fails ([`SiteError::Link`]) is dropped, which stops what it ran there.
//!
//! What the far end could not do it reports as a [`HereError`] (the runner, doing the
//! same for a local trial, gets the same); what crosses back is its message.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use perflab_profile::{CommandOutput, ProfileSpec, Profiler, ReportOptions, Running, Target};
use perflab_telemetry::{Monitor, MonitorHandle, MonitorSpec, Probe, Recording};
use perflab_workloads::cpuset::CpuSet;
use perflab_workloads::spec::{MonitorAttachment, ProfileAttachment};
use serde::{Deserialize, Serialize};

use crate::experiment::{Ready, ServiceSpec};
use crate::service::RunningService;
use crate::template::Template;

/// Why a host did not do what the runner asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SiteError {
    /// The run cannot reach this host at all (no inventory, or none by that name).
    #[error("{0}")]
    NoHost(String),
    /// The session failed — the host could not be reached, the connection dropped, an
    /// answer did not come in time, or the far end answered out of turn. The runner
    /// drops the session, which stops what it ran there.
    #[error("{0}")]
    Link(String),
    /// The host answered no (no perf there, a service that would not start), and the
    /// session itself is intact. Whether it goes on is the runner's call: a host that
    /// cannot profile keeps its session and its service.
    #[error("{0}")]
    Refused(String),
}

/// Why a part of a trial could not be started or stopped on this machine — by the
/// runner for a local trial, or by a host's worker at the far end of a session (whose
/// reply carries the message).
#[derive(Debug, thiserror::Error)]
pub enum HereError {
    /// The request does not read back as a service (a template, `cpus`, `ready`, a
    /// duration).
    #[error("{0}")]
    Request(String),
    #[error("cannot find a free port: {0}")]
    Port(std::io::Error),
    /// The service would not start or get ready.
    #[error("{0}")]
    Service(String),
    /// The monitor would not start.
    #[error("{0}")]
    Monitor(String),
    /// perf would not start, or its recording could not be read back.
    #[error("{0}")]
    Profile(String),
}

/// Opens sessions with hosts (crate fleet: one ssh connection each).
pub trait Sites {
    /// The address a workload reaches `host` at (`{service_host}`).
    fn address(&self, host: &str) -> Result<String, SiteError>;
    /// A session with perflab on `host`.
    fn open(&self, host: &str) -> Result<Box<dyn Site>, SiteError>;
}

/// One session with perflab on a host. Dropping it ends the session, and the host
/// stops whatever it still runs for it.
pub trait Site {
    /// Starts the service and waits until it is ready (a service already running for
    /// this session is stopped first).
    fn start_service(&mut self, req: &ServiceRequest) -> Result<ServiceStarted, SiteError>;
    /// Ok while the service runs; why not (its exit and log tail) once it has ended.
    fn check_service(&mut self) -> Result<(), SiteError>;
    /// Stops the service (its stop signal, SIGKILL after the grace) and returns its log.
    fn stop_service(&mut self) -> Result<String, SiteError>;
    /// Starts sampling; the process probe follows this session's service.
    fn start_monitor(&mut self, monitor: &MonitorAttachment) -> Result<(), SiteError>;
    /// Stops sampling and returns what was recorded.
    fn stop_monitor(&mut self) -> Result<Recording, SiteError>;
    /// Starts recording a profile: this session's service when the profile targets it
    /// (the host refuses when none runs), else every CPU of the host. The pid
    /// profiled (None: the whole host).
    fn start_profile(&mut self, profile: &ProfileAttachment) -> Result<Option<i32>, SiteError>;
    /// Stops recording and returns the profile, reduced there.
    fn stop_profile(&mut self) -> Result<ProfileResult, SiteError>;
}

/// How a service tells it is ready, as data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadyRequest {
    Started,
    Tcp(String),
    Http(String),
    Log(String),
}

/// `[service]` of one trial, as written, with the values its templates take.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceRequest {
    pub command: String,
    pub shell: bool,
    pub files: Vec<(String, String)>,
    pub cpus: Option<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
    pub ready: ReadyRequest,
    pub ready_timeout_s: f64,
    pub stop_signal: i32,
    pub grace_s: f64,
    /// The trial's template values; the host replaces `run_dir`, `perflab` and `port`
    /// with its own.
    pub vars: BTreeMap<String, String>,
    /// The config (0-based) and trial it starts for (the log file's name).
    pub config: usize,
    pub trial: u32,
}

/// A service started on a host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceStarted {
    /// Its pid as the host sees it.
    pub pid: i32,
    /// `{port}` as rendered there.
    pub port: u16,
    /// Its network namespace (`readlink /proc/PID/ns/net` there), when readable.
    pub netns: Option<String>,
}

impl ServiceSpec {
    /// The request that starts this service for a trial with `vars`.
    pub fn request(
        &self,
        vars: &BTreeMap<String, String>,
        config: usize,
        trial: u32,
    ) -> ServiceRequest {
        let src = |t: &Template| t.source().to_string();
        ServiceRequest {
            command: src(&self.command),
            shell: self.shell,
            files: self
                .files
                .iter()
                .map(|(n, t)| (n.clone(), src(t)))
                .collect(),
            cpus: self.cpus.as_ref().map(|c| c.to_string()),
            env: self.env.iter().map(|(k, t)| (k.clone(), src(t))).collect(),
            cwd: self.cwd.as_ref().map(src),
            ready: match &self.ready {
                Ready::Started => ReadyRequest::Started,
                Ready::Tcp(t) => ReadyRequest::Tcp(src(t)),
                Ready::Http(t) => ReadyRequest::Http(src(t)),
                Ready::Log(r) => ReadyRequest::Log(r.as_str().to_string()),
            },
            ready_timeout_s: self.ready_timeout.as_secs_f64(),
            stop_signal: self.stop_signal,
            grace_s: self.grace.as_secs_f64(),
            vars: vars.clone(),
            config,
            trial,
        }
    }
}

impl ServiceRequest {
    /// The service spec again (templates parsed back, CPUs checked on this host).
    pub fn spec(&self) -> Result<ServiceSpec, HereError> {
        self.spec_or_why().map_err(HereError::Request)
    }

    fn spec_or_why(&self) -> Result<ServiceSpec, String> {
        let t = |s: &str| Template::parse(s, &|_| true).map_err(|u| u.name);
        let secs = |s: f64, what: &str| {
            Duration::try_from_secs_f64(s).map_err(|e| format!("service {what}: {e}"))
        };
        let cpus = self
            .cpus
            .as_deref()
            .map(|c| {
                let set = CpuSet::parse(c)?;
                set.check_online()?;
                Ok::<_, String>(set)
            })
            .transpose()
            .map_err(|e| format!("[service] cpus: {e}"))?;
        Ok(ServiceSpec {
            host: None,
            command: t(&self.command)?,
            shell: self.shell,
            files: self
                .files
                .iter()
                .map(|(n, b)| Ok((n.clone(), t(b)?)))
                .collect::<Result<_, String>>()?,
            cpus,
            env: self
                .env
                .iter()
                .map(|(k, v)| Ok((k.clone(), t(v)?)))
                .collect::<Result<_, String>>()?,
            cwd: self.cwd.as_deref().map(t).transpose()?,
            ready: match &self.ready {
                ReadyRequest::Started => Ready::Started,
                ReadyRequest::Tcp(s) => Ready::Tcp(t(s)?),
                ReadyRequest::Http(s) => Ready::Http(t(s)?),
                ReadyRequest::Log(r) => {
                    Ready::Log(regex::Regex::new(r).map_err(|e| format!("ready.log: {e}"))?)
                }
            },
            ready_timeout: secs(self.ready_timeout_s, "ready timeout")?,
            stop_signal: self.stop_signal,
            grace: secs(self.grace_s, "grace")?,
            // A service on another host is not counted (refused when the file is read).
            counters: Vec::new(),
        })
    }

    /// Starts the service here, in `dir`, as the far end of a [`Site`]: the request's
    /// values with this host's `run_dir`, `perflab` and a `port` free here.
    pub fn start_here(&self, dir: &Path) -> Result<(ServiceSpec, RunningService, u16), HereError> {
        let spec = self.spec()?;
        let port = crate::service::free_port().map_err(HereError::Port)?;
        let mut vars = self.vars.clone();
        vars.insert("run_dir".into(), dir.display().to_string());
        vars.insert("perflab".into(), crate::exe::perflab_exe());
        vars.insert("port".into(), port.to_string());
        let svc = RunningService::start(&spec, &vars, dir, self.config, self.trial)
            .map_err(HereError::Service)?;
        Ok((spec, svc, port))
    }
}

/// Starts a trial's monitor, the process probe following `service` (a pid on this
/// host) — for a local monitor (the runner) and a remote one (the worker) alike.
pub fn start_monitor(
    cfg: &MonitorAttachment,
    service: Option<i32>,
) -> Result<MonitorHandle, HereError> {
    let probes = Probe::parse_list(&cfg.probes).map_err(|e| HereError::Monitor(e.to_string()))?;
    let follow = probes.contains(&Probe::Process);
    let mut m = MonitorSpec::new(Duration::from_secs_f64(cfg.interval_s), probes);
    if follow {
        m.pid = service;
    }
    Monitor::start(m).map_err(|e| HereError::Monitor(e.to_string()))
}

/// A trial's profile reduced to what the trial stores (`profile.json`,
/// `stacks.folded`, `flamegraph.svg`, the `fn:` metrics), whether it was recorded here
/// or on a host (it is what comes back over a session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileResult {
    /// The reduced report (the `perflab profile --json` document).
    pub report: perflab_profile::Report,
    /// Folded stacks of the non-idle samples, the process name as the root frame.
    pub folded: String,
    /// The flame graph (SVG), when it could be drawn.
    pub flamegraph: Option<String>,
    /// The top functions, with their shares of all non-idle samples in percent.
    pub top: Vec<(String, f64)>,
    /// The process profiled, as its host sees it (None: every CPU).
    pub pid: Option<i32>,
    /// perf's sampling frequency (samples per CPU-second): a sample's CPU time, which
    /// the differential profile needs. 0: not known (an older worker's answer).
    #[serde(default)]
    pub frequency: u32,
    /// With `off_cpu = true`: the blocked time and its shares, and the wall-clock
    /// folded stacks (boxed: a reply over a session stays small without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_cpu: Option<Box<OffCpuResult>>,
    /// The flags given for JIT frames and the perf maps kept (None: `jit` off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jit: Option<perflab_profile::JitInfo>,
    /// Why JIT frames may be unnamed (a JVM profiled by pid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jit_note: Option<String>,
    /// How call chains were recorded: the mode `auto` chose and why, the DWARF stack
    /// copy size. None: not known (an older worker's answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_graph: Option<perflab_profile::CallGraphChoice>,
}

/// A trial's off-CPU profile: the report and the wall-clock folded stacks
/// (microseconds, the off-CPU ones ending in `[off-cpu]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffCpuResult {
    pub report: perflab_profile::OffCpuReport,
    pub wall_folded: String,
}

impl ProfileResult {
    /// Reduces a recorded profile, keeping the `top` functions.
    pub fn of(p: &perflab_profile::Profile, top: usize, pid: Option<i32>) -> ProfileResult {
        ProfileResult {
            report: p.report(&ReportOptions::default()),
            folded: p.folded(),
            flamegraph: p
                .flamegraph_svg()
                .ok()
                .and_then(|svg| String::from_utf8(svg).ok()),
            top: p.top_functions(top),
            pid,
            frequency: p.frequency.unwrap_or(0),
            off_cpu: p.off_cpu_report(&ReportOptions::default()).map(|report| {
                Box::new(OffCpuResult {
                    report,
                    wall_folded: p.wall_folded(&ReportOptions::default()).unwrap_or_default(),
                })
            }),
            jit: p.jit.clone(),
            jit_note: p.jit_note.clone(),
            call_graph: p.call_graph_choice.clone(),
        }
    }
}

/// A trial's profile being recorded. Dropped without [`ProfileRun::stop`], its perf
/// is killed.
#[derive(Debug)]
pub struct ProfileRun {
    running: Running,
    pid: Option<i32>,
    top: usize,
    dir: PathBuf,
}

impl ProfileRun {
    /// The process profiled (None: every CPU).
    pub fn pid(&self) -> Option<i32> {
        self.pid
    }

    /// Where perf writes its recording.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops recording and reduces the profile.
    pub fn stop(self) -> Result<ProfileResult, HereError> {
        let (top, pid) = (self.top, self.pid);
        let p = self
            .running
            .stop()
            .map_err(|e| HereError::Profile(e.to_string()))?;
        Ok(ProfileResult::of(&p, top, pid))
    }
}

/// Starts a trial's profile here, perf.data in `dir`: the process `service` (a pid on
/// this host) when the profile targets the service, else every CPU.
pub fn start_profile(
    cfg: &ProfileAttachment,
    service: Option<i32>,
    dir: PathBuf,
) -> Result<ProfileRun, HereError> {
    profile(cfg, service, dir, CommandOutput::Inherit)
}

/// [`start_profile`] at the far end of a session, whose stdout carries its replies:
/// perf writes nothing there.
pub fn start_profile_here(
    cfg: &ProfileAttachment,
    service: Option<i32>,
    dir: PathBuf,
) -> Result<ProfileRun, HereError> {
    profile(cfg, service, dir, CommandOutput::Stderr)
}

/// Starts a trial's profile of its own process tree here (`target = "workload"`):
/// perf on `root`, the process the workload started and holds before its `exec`
/// ([`perflab_workloads::TrialContext::attach`]), following every process it starts.
pub fn start_profile_of_workload(
    cfg: &ProfileAttachment,
    root: i32,
    dir: PathBuf,
) -> Result<ProfileRun, HereError> {
    record(cfg, Some(root), dir, CommandOutput::Inherit)
}

fn profile(
    cfg: &ProfileAttachment,
    service: Option<i32>,
    dir: PathBuf,
    command_output: CommandOutput,
) -> Result<ProfileRun, HereError> {
    let pid = service.filter(|_| cfg.service);
    record(cfg, pid, dir, command_output)
}

/// perf on `pid` and what it starts, else on every CPU.
fn record(
    cfg: &ProfileAttachment,
    pid: Option<i32>,
    dir: PathBuf,
    command_output: CommandOutput,
) -> Result<ProfileRun, HereError> {
    let target = pid.map_or(Target::System, Target::Pid);
    let spec = ProfileSpec {
        target,
        frequency: cfg.frequency,
        call_graph: cfg.call_graph,
        dwarf_stack_bytes: cfg.dwarf_stack_bytes,
        off_cpu: cfg.off_cpu,
        jit: cfg.jit,
        output_dir: Some(dir.clone()),
        command_output,
        ..Default::default()
    };
    let running = Profiler::start(&spec).map_err(|e| HereError::Profile(e.to_string()))?;
    Ok(ProfileRun {
        running,
        pid,
        top: cfg.top,
        dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Experiment;

    #[test]
    fn a_service_request_carries_the_table_as_written() {
        let exp = Experiment::parse(
            Path::new("e.toml"),
            "[experiment]\nname = \"x\"\n\n[service]\nhost = \"b\"\ncommand = \"{perflab} serve --port {port} {run_dir}\"\nfiles.\"a.conf\" = \"listen {port};\"\nready = { http = \"http://{service_host}:{port}/\", timeout = \"3s\" }\nstop_signal = \"INT\"\n\n[workload]\nkind = \"command\"\ncommand = \"true\"\n",
        )
        .unwrap();
        let spec = exp.service.unwrap();
        assert_eq!(spec.host.as_ref().unwrap().name, "b");
        assert_eq!(spec.host.as_ref().unwrap().line, 5);
        let vars: BTreeMap<String, String> = [("service_host", "10.0.0.2"), ("port", "1")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .into();
        let req = spec.request(&vars, 0, 3);
        assert_eq!(req.command, "{perflab} serve --port {port} {run_dir}");
        assert_eq!(
            req.ready,
            ReadyRequest::Http("http://{service_host}:{port}/".into())
        );
        // Through JSON and back: the same spec.
        let back: ServiceRequest =
            serde_json::from_str(&serde_json::to_string(&req).unwrap()).unwrap();
        assert_eq!(back, req);
        let again = back.spec().unwrap();
        assert_eq!(again.stop_signal, libc::SIGINT);
        assert_eq!(again.ready_timeout, Duration::from_secs(3));
        assert_eq!(again.files[0].1.render(&vars), "listen 1;");
    }

    #[test]
    fn a_service_started_here_from_a_request_is_ready_and_stops() {
        let dir = tempfile::tempdir().unwrap();
        let req = ServiceRequest {
            command: "sh -c 'echo up on {port}; exec sleep 30'".into(),
            shell: false,
            files: vec![("f.txt".into(), "in {run_dir}".into())],
            cpus: None,
            env: vec![],
            cwd: None,
            ready: ReadyRequest::Log("up on".into()),
            ready_timeout_s: 5.0,
            stop_signal: libc::SIGTERM,
            grace_s: 1.0,
            vars: BTreeMap::new(),
            config: 0,
            trial: 1,
        };
        let (spec, mut svc, port) = req.start_here(dir.path()).unwrap();
        assert!(
            svc.log().contains(&format!("up on {port}")),
            "{}",
            svc.log()
        );
        let f = std::fs::read_to_string(dir.path().join("f.txt")).unwrap();
        assert_eq!(f, format!("in {}", dir.path().display()));
        let pid = svc.pid();
        svc.stop(&spec);
        // SAFETY: signal 0 only asks whether the pid exists.
        assert_ne!(unsafe { libc::kill(pid, 0) }, 0, "the service is gone");
    }
}
