//! A session with perflab on a host, for the parts of a trial that run there while
//! the workload runs elsewhere: the service under test (`[service] host = "b"`), the
//! telemetry sampled beside it (`[monitor] host = "b"`) and its profile
//! (`[profile] host = "b"`).
//!
//! It is the same `ssh HOST perflab worker` as a remote trial, kept open for the whole
//! run: the controller writes one [`Request`] per line on the worker's stdin, the
//! worker answers each with one [`Reply`] per line on stdout ([`serve`] is its side,
//! [`HostSession`] the controller's). The worker does the work with the code a local
//! trial uses (`perflab_lab::site`): the service is rendered there and started by
//! `RunningService` — own process group, log file, readiness check — and the monitor
//! and the profiler (perf, started and stopped around each trial's workload) follow the
//! service's pid as that host sees it. The profile is reduced there, and what comes
//! back is what the trial stores (`perflab_lab::site::ProfileResult`); a host that
//! cannot profile answers `failed`, and the session goes on.
//!
//! Stopping is the end of stdin, as for a remote trial: when the controller ends the
//! run, is interrupted or dies, or the connection drops (no pty: no SIGHUP), the worker
//! reads the end of its stdin, kills perf, stops the monitor and the service (its stop
//! signal, then SIGKILL of its process group after the grace), removes its scratch
//! directory and exits. No service, and no perf, outlives its session.

use perflab_lab::site::{ProfileResult, ServiceRequest, ServiceStarted};
use perflab_telemetry::Recording;
use perflab_workloads::spec::{MonitorAttachment, ProfileAttachment};
use serde::{Deserialize, Serialize};

mod client;
mod serve;

pub use client::HostSession;
pub use serve::serve;

/// What the controller asks, one JSON value per line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// Start the service (stopping one this session still runs) and wait until ready.
    Service(ServiceRequest),
    /// Is the service still running?
    CheckService,
    /// Stop the service and send its log.
    StopService,
    /// Start sampling (the process probe follows this session's service).
    Monitor(MonitorAttachment),
    /// Stop sampling and send the recording.
    StopMonitor,
    /// Start recording a profile (of this session's service when it targets it).
    Profile(ProfileAttachment),
    /// Stop recording and send the profile, reduced.
    StopProfile,
}

/// What the worker answers, one JSON object per line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Reply {
    /// The service is ready.
    Ready { service: ServiceStarted },
    /// The service still runs.
    Alive,
    /// The service was stopped; the tail of its log.
    Stopped { log: String },
    /// Sampling started.
    Monitoring,
    /// Sampling stopped.
    Recording { recording: Recording },
    /// perf records; the pid it follows (None: every CPU).
    Profiling { pid: Option<i32> },
    /// perf stopped; the profile.
    Profile { profile: ProfileResult },
    /// The request could not be done, and why.
    Failed { message: String },
}
