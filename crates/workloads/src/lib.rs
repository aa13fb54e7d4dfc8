//! perflab-workloads: the things a trial runs and measures.
//!
//! A [`Workload`] runs once per trial and returns a [`Measurement`]. The experiment
//! runner (`perflab-lab`) owns planning, services and storage; a workload only knows
//! how to do its job and what it measured. Workloads are plain values built from
//! rendered (placeholder-free) specifications, so they can also be used directly as a
//! library.
//!
//! [`spec`] is the seam: [`spec::Kind`] is the one list of workload kinds (name,
//! options, metrics, programs) that experiment files, the runner and the CLI all read,
//! and a [`spec::TrialSpec`] is one trial as data — run here by the runner, or on
//! another host by `perflab worker` (docs/architecture.md, "the trial seam").

pub mod command;
pub mod compress;
pub mod cpuset;
pub mod crypto;
pub mod disk;
pub mod doctor;
mod hold;
pub mod http;
pub mod knee;
pub mod mem;
pub mod metrics;
pub mod net;
pub mod parallel;
pub mod profile;
pub mod scimark;
pub mod spec;
pub mod suite;
pub mod tree;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub use perflab_store::{ArtifactData, HistogramData, MetricValue, SeriesData};

/// What a trial gives its workload.
#[derive(Debug, Clone)]
pub struct TrialContext {
    /// CPUs the workload is pinned to, if any.
    pub cpus: Option<cpuset::CpuSet>,
    /// Wall-clock limit of the trial.
    pub timeout: Option<Duration>,
    /// Set when the user interrupted the run; the workload stops as soon as it can.
    pub interrupted: Arc<AtomicBool>,
    /// Scratch directory of the run.
    pub run_dir: PathBuf,
    /// Called with the pid of the process the workload starts for the trial, after
    /// it is started and before it runs (`exec`): `[profile] target = "workload"`
    /// attaches perf there. None: nothing to attach.
    pub attach: Option<AttachHook>,
    /// The trial is profiled with JIT frames named (`[profile] jit`, on by default): a
    /// workload that starts a JVM or Node itself gives it the flags that write a perf
    /// map ([`perflab_profile::jit`]).
    pub jit: bool,
}

/// What [`TrialContext::attach`] calls: with the pid of the trial's root process,
/// held before its `exec` until the hook returns (crate lab's workload profile).
#[derive(Clone)]
pub struct AttachHook(pub Arc<dyn Fn(i32) + Send + Sync>);

impl std::fmt::Debug for AttachHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AttachHook")
    }
}

impl TrialContext {
    /// Pins the calling thread, and the threads it spawns, to the trial's `cpus` until
    /// the guard drops: for workloads that run in this process. None without `cpus`.
    pub fn pin_this_thread(&self) -> Result<Option<cpuset::PinnedThread>, WorkloadError> {
        self.cpus
            .as_ref()
            .map(cpuset::PinnedThread::pin)
            .transpose()
            .map_err(WorkloadError::Setup)
    }
}

/// What a workload measured in one trial (serialisable: the answer of a trial run
/// elsewhere comes back as JSON).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Measurement {
    pub metrics: Vec<MetricValue>,
    pub histograms: Vec<HistogramData>,
    pub series: Vec<SeriesData>,
    pub artifacts: Vec<ArtifactData>,
    /// How it was measured (e.g. `cgroup-v1`, `subreaper`).
    pub method: Option<String>,
}

/// Why a trial did not produce a measurement.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The workload ran and failed; the message says how. Partial measurements are kept.
    #[error("{message}")]
    Failed {
        message: String,
        partial: Box<Measurement>,
    },
    /// The user interrupted the trial.
    #[error("interrupted")]
    Interrupted,
    /// The workload could not be started at all.
    #[error("{0}")]
    Setup(String),
}

impl WorkloadError {
    pub fn failed(message: impl Into<String>) -> WorkloadError {
        WorkloadError::Failed {
            message: message.into(),
            partial: Box::default(),
        }
    }
}

/// One kind of load a trial can run.
pub trait Workload {
    /// Runs one trial.
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError>;
}
