//! The store's record types: what goes in and what comes out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Integer id of a run, as users type it (`perflab show 3`).
pub type RunId = i64;

/// Parameter values of one configuration (a point of the matrix).
pub type Params = BTreeMap<String, serde_json::Value>;

/// The machine a run was measured on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub cpu_model: Option<String>,
    pub cores: Option<u32>,
    pub memory_bytes: Option<u64>,
    pub kernel: Option<String>,
    pub distribution: Option<String>,
    pub arch: Option<String>,
    pub governor: Option<String>,
    /// Server-relevant sysctls (somaxconn, file-max, ...), as read.
    #[serde(default)]
    pub sysctls: BTreeMap<String, String>,
    /// What else decides a machine's speed, where readable: cache sizes (`cache.l1d`,
    /// `cache.l2`, ...), `thp`, `smt`, `turbo`, `cpus_online`, `numa_nodes`,
    /// `max_mhz` — for the host-facts diff of a comparison across machines.
    #[serde(default)]
    pub facts: BTreeMap<String, String>,
}

impl HostInfo {
    /// What identifies a host across runs: same name, CPU, cores, memory, arch.
    pub fn fingerprint(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}",
            self.hostname,
            self.cpu_model.as_deref().unwrap_or("?"),
            self.cores.unwrap_or(0),
            self.memory_bytes.unwrap_or(0) / (64 << 20),
            self.arch.as_deref().unwrap_or("?"),
        )
    }
}

/// Lifecycle state of a run; the words and what each means are in [`crate::vocab`]
/// (`RUN_STATES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Complete,
    CompleteWithFailures,
    /// Every trial ran, and a gate the run was asked to pass (a threshold) failed.
    GateFailed,
    Interrupted,
    Failed,
    /// Stored `running`, but its owner is gone: derived when read (crate::owner),
    /// never written by the runner.
    Abandoned,
}

impl RunStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            RunStatus::Running => crate::vocab::RUNNING,
            RunStatus::Complete => crate::vocab::COMPLETE,
            RunStatus::CompleteWithFailures => crate::vocab::COMPLETE_WITH_FAILURES,
            RunStatus::GateFailed => crate::vocab::GATE_FAILED,
            RunStatus::Interrupted => crate::vocab::INTERRUPTED,
            RunStatus::Failed => crate::vocab::FAILED,
            RunStatus::Abandoned => crate::vocab::ABANDONED,
        }
    }
    pub fn parse(s: &str) -> Option<RunStatus> {
        [
            RunStatus::Running,
            RunStatus::Complete,
            RunStatus::CompleteWithFailures,
            RunStatus::GateFailed,
            RunStatus::Interrupted,
            RunStatus::Failed,
            RunStatus::Abandoned,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }
}

/// Outcome of one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrialStatus {
    Ok,
    Failed,
    Interrupted,
}

impl TrialStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            TrialStatus::Ok => "ok",
            TrialStatus::Failed => "failed",
            TrialStatus::Interrupted => "interrupted",
        }
    }
    pub fn parse(s: &str) -> Option<TrialStatus> {
        Some(match s {
            "ok" => TrialStatus::Ok,
            "failed" => TrialStatus::Failed,
            "interrupted" => TrialStatus::Interrupted,
            _ => return None,
        })
    }
}

/// A new run about to start.
#[derive(Debug, Clone, Default)]
pub struct NewRun {
    pub name: String,
    /// `experiment`, `http`, `scimark`, `disk`, `profile`, ...
    pub kind: String,
    pub file_path: Option<String>,
    /// The experiment file, verbatim.
    pub file_text: Option<String>,
    pub seed: Option<u64>,
    /// Anything else worth keeping about the environment (tool versions, ...).
    pub environment: serde_json::Value,
    /// When it started (RFC 3339), for a run recorded after it ran; default: now.
    pub started_at: Option<String>,
}

/// One scalar measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricValue {
    pub name: String,
    pub unit: String,
    pub value: f64,
    /// `higher` or `lower`.
    pub better: String,
}

impl MetricValue {
    pub fn new(name: &str, unit: &str, value: f64, better: &str) -> MetricValue {
        MetricValue {
            name: name.to_string(),
            unit: unit.to_string(),
            value,
            better: better.to_string(),
        }
    }
}

/// A whole distribution (HdrHistogram, V2 serialized).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramData {
    pub name: String,
    pub unit: String,
    pub data: Vec<u8>,
}

/// A time series: (seconds since trial start, value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesData {
    pub name: String,
    pub unit: String,
    pub points: Vec<(f64, f64)>,
}

/// A file kept with a trial or run: service logs, profiles, flame graphs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactData {
    pub name: String,
    pub media_type: String,
    pub content: Vec<u8>,
}

/// Everything measured in one trial, written in one transaction.
#[derive(Debug, Clone)]
pub struct TrialRecord {
    pub config_id: i64,
    pub repetition: u32,
    pub ordinal: u32,
    pub started_at: String,
    pub duration_s: f64,
    pub status: TrialStatus,
    pub error: Option<String>,
    /// How the process tree was measured (`cgroup-v2`, `cgroup-v1`, `subreaper`).
    pub method: Option<String>,
    pub metrics: Vec<MetricValue>,
    pub histograms: Vec<HistogramData>,
    pub series: Vec<SeriesData>,
    pub artifacts: Vec<ArtifactData>,
}

/// A stored run, as listed.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    pub id: RunId,
    pub uuid: String,
    pub name: String,
    pub kind: String,
    pub status: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub host_id: i64,
    pub host: String,
    pub file_path: Option<String>,
    #[serde(skip)]
    pub file_text: Option<String>,
    pub seed: Option<u64>,
    pub trials_ok: u64,
    pub trials_failed: u64,
    pub trials_interrupted: u64,
    /// The process that runs (or ran) it, where recorded.
    pub owner: Option<RunOwner>,
    /// The owner's last heartbeat (RFC 3339).
    pub heartbeat_at: Option<String>,
}

impl RunRow {
    /// The run's state as a [`RunStatus`] (`failed` for a word this build does not know).
    pub fn status_enum(&self) -> RunStatus {
        RunStatus::parse(&self.status).unwrap_or(RunStatus::Failed)
    }
}

/// A run's owner as stored (see crate::owner).
#[derive(Debug, Clone, Serialize)]
pub struct RunOwner {
    pub pid: u32,
    pub host: Option<String>,
}

/// A stored configuration.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigRow {
    pub id: i64,
    pub ordinal: u32,
    pub params: Params,
}

/// A stored trial.
#[derive(Debug, Clone, Serialize)]
pub struct TrialRow {
    pub id: i64,
    pub config_id: i64,
    pub repetition: u32,
    pub ordinal: u32,
    pub started_at: String,
    pub duration_s: f64,
    pub status: String,
    pub error: Option<String>,
    pub method: Option<String>,
}

/// A stored metric value with the trial and config it belongs to.
#[derive(Debug, Clone, Serialize)]
pub struct MetricRow {
    pub trial_id: i64,
    pub config_id: i64,
    pub name: String,
    pub unit: String,
    pub value: f64,
    pub better: String,
}
