//! The fleet's wire: every message that crosses between perflab and `perflab worker`
//! on a host, one JSON value per line each way. A worker's first line says which
//! conversation it is in — a [`TrialSpec`](perflab_workloads::spec::TrialSpec) (one
//! remote trial, answered with [`Event`]s), a session [`Request`] (the service under
//! test, its monitor and profile on that host, each answered with a [`Reply`]), or
//! [`Order::Agent`] (an agent of a distributed load, answered with what it [`Said`]).
//!
//! The types live here, apart from the code on either end, so that both ends import
//! them and neither imports the other: the controller's side (`remote`, `session`,
//! `agents`) and the worker's (`worker`, `session::serve`, `agent`) depend on this
//! module, not on each other.

use std::time::{SystemTime, UNIX_EPOCH};

use perflab_lab::site::{ProfileResult, ServiceRequest, ServiceStarted};
use perflab_telemetry::Recording;
use perflab_workloads::spec::{MonitorAttachment, ProfileAttachment};
use perflab_workloads::{Measurement, WorkloadError};
use serde::{Deserialize, Serialize};

// ---- a remote trial (`crate::worker`)

/// What the worker says, one JSON object per line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The spec was read and the trial starts now, by this host's clock.
    Started {
        unix_ns: u64,
        perflab: String,
        /// The host's facts (`perflab_store::HostInfo` as JSON).
        host: serde_json::Value,
    },
    Measurement {
        measurement: Measurement,
    },
    Error {
        /// `failed` (partial kept), `setup` or `interrupted`.
        kind: String,
        message: String,
        #[serde(default)]
        partial: Option<Measurement>,
    },
}

impl Event {
    pub fn of(result: Result<Measurement, WorkloadError>) -> Event {
        match result {
            Ok(m) => Event::Measurement { measurement: m },
            Err(WorkloadError::Failed { message, partial }) => Event::Error {
                kind: "failed".into(),
                message,
                partial: Some(*partial),
            },
            Err(WorkloadError::Interrupted) => Event::Error {
                kind: "interrupted".into(),
                message: "interrupted".into(),
                partial: None,
            },
            Err(WorkloadError::Setup(message)) => Event::Error {
                kind: "setup".into(),
                message,
                partial: None,
            },
        }
    }

    /// Back into the workload's answer.
    pub fn into_result(self) -> Option<Result<Measurement, WorkloadError>> {
        match self {
            Event::Started { .. } => None,
            Event::Measurement { measurement } => Some(Ok(measurement)),
            Event::Error {
                kind,
                message,
                partial,
            } => Some(Err(match kind.as_str() {
                "failed" => WorkloadError::Failed {
                    message,
                    partial: Box::new(partial.unwrap_or_default()),
                },
                "interrupted" => WorkloadError::Interrupted,
                _ => WorkloadError::Setup(message),
            })),
        }
    }
}

/// This host's clock, ns since the epoch (the controller's offset estimate uses it).
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

// ---- a session (`crate::session`)

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
    Profile { profile: Box<ProfileResult> },
    /// The request could not be done, and why.
    Failed { message: String },
}

// ---- an agent (`crate::agent`, `crate::agents`)

/// What the controller sends an agent, one JSON value per line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The first line: be an agent (answered with [`Said::Hello`]).
    Agent,
    /// This agent's segment, in `LoadSpec`'s table form (`LoadSpec::to_table`).
    Spec(serde_json::Value),
    /// The whole load and how it is shared (Slurm: one broadcast for every task); each
    /// task runs `segments(spec, weights)` at its position in `tasks` ([`segment_of`](crate::agent::segment_of)).
    Share {
        spec: serde_json::Value,
        tasks: Vec<usize>,
        weights: Vec<f64>,
    },
    /// The barrier is passed: start now.
    Go,
}

/// Which Slurm task this agent is (`SLURM_PROCID`, `SLURM_NTASKS`, `SLURMD_NODENAME`);
/// None outside `srun`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub id: usize,
    pub count: usize,
    #[serde(default)]
    pub node: Option<String>,
}

impl Task {
    /// From the environment `var` reads (`std::env::var` in the agent).
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Option<Task> {
        let num = |k: &str| var(k).and_then(|v| v.trim().parse::<usize>().ok());
        let (id, count) = (num("SLURM_PROCID")?, num("SLURM_NTASKS")?);
        (id < count).then(|| Task {
            id,
            count,
            node: var("SLURMD_NODENAME").filter(|n| !n.trim().is_empty()),
        })
    }
}

/// What an agent says, one JSON object per line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Said {
    /// This host's clock now, ns since the epoch, and its facts (`HostInfo`).
    Hello {
        unix_ns: u64,
        cores: Option<u32>,
        host: serde_json::Value,
        /// Under `srun`: which task this is (the controller names the agent by its node).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task: Option<Task>,
    },
    /// The segment is checked and ready to start; this host's clock when the order
    /// arrived and now (the controller's offset: the exchange's round trip, less the
    /// checking in between — an agent that omits them keeps its hello's offset).
    Armed {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        received_ns: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unix_ns: Option<u64>,
    },
    /// The load starts now, by this host's clock.
    Running { unix_ns: u64 },
    /// One recorded second: its latency histogram (µs), compressed V2 in base64.
    Second { second: u64, histogram: String },
    /// The segment's result: the report (its JSON form) and its latency histograms.
    Report {
        report: serde_json::Value,
        histogram: String,
        #[serde(default)]
        histogram_uncorrected: Option<String>,
    },
    /// The segment could not run, and why.
    Failed { message: String },
}
