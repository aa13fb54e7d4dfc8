//! What ran out at the knee: the vocabulary of a find-max report's `limit`. The load
//! engine only carries it; the evidence is gathered and judged where the host is
//! watched (crate workloads' knee module, from telemetry probes sampled around each
//! step), in a fixed order of candidates so that a generator that could not keep up
//! is never blamed on the server.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The resource that limited the rate at the knee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitResource {
    /// The load generator itself saturated (its threads on CPU, or late).
    Generator,
    /// The service's CPU time reached what its cpuset allows.
    ServiceCpu,
    /// Runnable tasks waited for a CPU (PSI cpu, run delay).
    CpuPressure,
    /// The listen queue of the service's port overflowed.
    ListenQueue,
    /// A CPU spent its time in softirq.
    Softirq,
    /// TCP retransmitted.
    Retransmits,
    /// The disk was busy (utilisation, await).
    Disk,
    /// Memory pressure or swapping.
    Memory,
    /// Nothing measured ran out.
    Unknown,
}

impl LimitResource {
    pub fn as_str(self) -> &'static str {
        match self {
            LimitResource::Generator => "generator",
            LimitResource::ServiceCpu => "service_cpu",
            LimitResource::CpuPressure => "cpu_pressure",
            LimitResource::ListenQueue => "listen_queue",
            LimitResource::Softirq => "softirq",
            LimitResource::Retransmits => "retransmits",
            LimitResource::Disk => "disk",
            LimitResource::Memory => "memory",
            LimitResource::Unknown => "unknown",
        }
    }
}

impl LimitResource {
    /// The resource in words, for the line after the max rate ("limited by the
    /// listen queue: ...").
    pub fn phrase(self) -> &'static str {
        match self {
            LimitResource::Generator => "the load generator",
            LimitResource::ServiceCpu => "the service's CPU",
            LimitResource::CpuPressure => "CPU pressure",
            LimitResource::ListenQueue => "the listen queue",
            LimitResource::Softirq => "softirq",
            LimitResource::Retransmits => "retransmits",
            LimitResource::Disk => "the disk",
            LimitResource::Memory => "memory",
            LimitResource::Unknown => "nothing measured",
        }
    }
}

impl fmt::Display for LimitResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The limit named at the knee, with the numbers that name it
/// (`"1,427 listen-queue overflows on :8080 during the step at 24,000 req/s"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    pub resource: LimitResource,
    pub evidence: String,
}
