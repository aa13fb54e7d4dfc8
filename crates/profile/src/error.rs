//! Typed errors of the profiler. Each variant that a user can fix carries the fix in
//! its message, so the CLI can print it as is; [`ProfileError::is_bad_input`] tells
//! "you asked for something impossible" (exit 2) from "this machine could not do it"
//! (exit 1).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "`perf` was not found on PATH (or in PERFLAB_PERF); install it: \
         `apt-get install linux-perf` (Debian), `apt-get install linux-tools-$(uname -r)` \
         (Ubuntu) or `dnf install perf`"
    )]
    PerfMissing,

    #[error(
        "perf is not permitted to profile here (kernel.perf_event_paranoid = {paranoid}): {detail}; \
         fix: run as root, or `sysctl kernel.perf_event_paranoid=1` (0 for system-wide `-a`)"
    )]
    PermissionDenied { paranoid: String, detail: String },

    #[error(
        "the `cycles` event is not supported here (no hardware PMU, e.g. a virtual machine); \
         use `--event cpu-clock` or `--event auto`"
    )]
    EventUnsupported,

    #[error(
        "off-CPU profiling needs the sched:sched_switch tracepoint, which perf cannot use \
         here: {detail}; fix: as root, `mount -t tracefs nodev /sys/kernel/tracing` \
         (perflab mounts it itself when it runs as root), or profile without --off-cpu"
    )]
    TracepointsUnavailable { detail: String },

    #[error("no process with pid {0}")]
    NoSuchProcess(i32),

    #[error("command not found: {0}")]
    CommandNotFound(String),

    #[error("invalid profile setting: {0}")]
    BadInput(String),

    #[error("`{command}` failed ({status}): {stderr}")]
    PerfFailed {
        command: String,
        status: String,
        stderr: String,
    },

    #[error("no perf data at {0} (expected a perf.data file, a directory holding one, or `perf script` text)")]
    NoPerfData(PathBuf),

    #[error("no samples in `{0}` in this profile (the report lists the functions that have some)")]
    NoSuchRoutine(String),

    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot draw the flame graph: {0}")]
    FlameGraph(String),
}

impl ProfileError {
    /// True where the request itself was wrong (exit 2), not the machine.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            ProfileError::BadInput(_)
                | ProfileError::NoSuchProcess(_)
                | ProfileError::CommandNotFound(_)
                | ProfileError::NoPerfData(_)
                | ProfileError::NoSuchRoutine(_)
        )
    }

    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> ProfileError {
        ProfileError::Io {
            what: what.into(),
            source,
        }
    }
}

pub type Result<T, E = ProfileError> = std::result::Result<T, E>;
