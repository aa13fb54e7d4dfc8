//! The crate's typed errors.
//!
//! Two kinds, because callers treat them differently: a [`ParseError`] says one file did
//! not have the shape its parser expects (the sampler reports it as a warning and goes
//! on without that probe for that interval), a [`TelemetryError`] says the monitor could
//! not be set up at all (bad interval, unknown probe, no such pid) and is for the caller
//! to print.

use std::time::Duration;

/// A /proc file that does not have the expected shape.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}{}: {what}", line.map(|l| format!(" line {l}")).unwrap_or_default())]
pub struct ParseError {
    /// The file as the kernel names it, e.g. `/proc/diskstats`.
    pub file: String,
    /// 1-based line number, where one applies.
    pub line: Option<usize>,
    /// What was expected and what was found.
    pub what: String,
}

impl ParseError {
    pub(crate) fn new(file: &str, line: Option<usize>, what: impl Into<String>) -> ParseError {
        ParseError {
            file: file.to_string(),
            line,
            what: what.into(),
        }
    }
}

/// The monitor or sampler could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// An interval that is not a duration (`1s`, `250ms`, `1m30s`).
    #[error("invalid interval `{0}`: expected a duration such as 1s, 250ms or 1m30s")]
    BadInterval(String),
    /// The interval is shorter than [`crate::MIN_INTERVAL`].
    #[error("interval {0:?} is too short: the shortest is 50ms")]
    IntervalTooShort(Duration),
    /// A probe name that is not one of [`crate::Probe::ALL`].
    #[error(
        "unknown probe `{0}`: expected one of cpu, sched, memory, disk, net, sockets, nfs, pressure, process"
    )]
    UnknownProbe(String),
    /// The `process` probe was asked for without a pid to follow.
    #[error("probe `process` needs a pid to follow")]
    ProcessProbeWithoutPid,
    /// The pid to follow does not exist (or /proc is not mounted).
    #[error("no process with pid {0}")]
    NoSuchProcess(i32),
    /// A file every sample needs (e.g. /proc/stat for `cpu`) could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A file every sample needs could not be parsed.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The sampling thread could not be started.
    #[error("cannot start the sampling thread: {0}")]
    Thread(std::io::Error),
}

/// Parses a decimal counter, naming the file and line when it is not one.
pub(crate) fn num(file: &str, line: usize, s: &str) -> Result<u64, ParseError> {
    s.parse::<u64>()
        .map_err(|_| ParseError::new(file, Some(line), format!("expected a number, found `{s}`")))
}
