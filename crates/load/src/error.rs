//! Typed errors of the load engine.
//!
//! Two families, because callers treat them differently: a [`SpecError`] means the
//! *input* is wrong (bad URL, bad duration, unreadable body file) and is always raised
//! before a single byte is sent, so a CLI maps it to "usage error" (exit 2); a
//! [`LoadError`] means the engine could not run (no epoll, no threads, cannot write the
//! interval log) and maps to "could not run" (exit 1). Failed *requests* are never
//! errors of this kind: they are counted in the [`crate::Report`].
//!
//! A [`SpecError`] names the options it is about as fields (`find_max`, as an
//! experiment file writes them), never as flags: [`SpecError::Conflict`] holds a
//! [`Phrase`], and [`SpecError::render`] lets the caller name each field its own way
//! (the CLI: its flag). The `Display` form is the experiment file's.

use crate::reach::ConnectCause;
use perflab_units::Phrase;
use std::io;
use std::path::PathBuf;

/// The load specification is invalid. Raised before anything is sent.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// A URL could not be parsed.
    #[error("invalid URL `{url}`: {reason} (expected http[s]://HOST[:PORT][/PATH])")]
    InvalidUrl { url: String, reason: String },
    /// A URL has a scheme the engine does not speak.
    #[error("unsupported scheme `{scheme}` in `{url}` (supported: http, https)")]
    UnsupportedScheme { url: String, scheme: String },
    /// A host name did not resolve.
    #[error("cannot resolve `{host}`: {source}")]
    Resolve {
        host: String,
        #[source]
        source: io::Error,
    },
    /// A value has the wrong form or is out of range.
    #[error("invalid {field} `{value}`: expected {expected}")]
    InvalidValue {
        /// The option, as an experiment file names it (`h2_window`).
        field: &'static str,
        value: String,
        expected: &'static str,
    },
    /// A file named in the spec (body file, URL file) cannot be read.
    #[error("cannot read {what} `{path}`: {source}")]
    File {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Options that cannot be combined, or a required option is missing.
    #[error("{0}")]
    Conflict(Phrase),
    /// The TLS set-up cannot be built (an unusable `--cacert` file).
    #[error("{0}")]
    Tls(String),
    /// A value that needs a unit was given as a bare number (a latency threshold,
    /// `p99<200`): refused rather than guessed, since k6 reads it as milliseconds and
    /// perflab's duration grammar as seconds.
    #[error("{field} `{value}`: {what} needs a unit, e.g. {example}")]
    NeedsUnit {
        /// The option, as an experiment file names it (`thresholds`).
        field: &'static str,
        value: String,
        /// What needs the unit: `a latency`.
        what: &'static str,
        /// The value with a unit added (`p99<200ms`).
        example: String,
    },
}

impl SpecError {
    pub(crate) fn value(
        field: &'static str,
        value: impl Into<String>,
        expected: &'static str,
    ) -> Self {
        SpecError::InvalidValue {
            field,
            value: value.into(),
            expected,
        }
    }

    /// The option this error is about, as an experiment file names it, if it is
    /// about one.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            SpecError::InvalidValue { field, .. } | SpecError::NeedsUnit { field, .. } => {
                Some(field)
            }
            SpecError::Conflict(p) => p.subject(),
            _ => None,
        }
    }

    /// The error as a [`Phrase`], its option kept as a field, for a caller that passes
    /// it on (a workload kind's options check).
    pub fn phrase(&self) -> Phrase {
        match self {
            SpecError::InvalidValue {
                field,
                value,
                expected,
            } => Phrase::text("invalid ")
                .and_field(field)
                .then(format!(" `{value}`: expected {expected}")),
            SpecError::Conflict(p) => p.clone(),
            other => Phrase::text(other.to_string()),
        }
    }

    /// The message with each option named by `name` (a command's flag for the field);
    /// the `Display` form names them as an experiment file does.
    pub fn render(&self, name: &dyn Fn(&str) -> String) -> String {
        match self {
            SpecError::InvalidValue {
                field,
                value,
                expected,
            } => format!("invalid {} `{value}`: expected {expected}", name(field)),
            SpecError::NeedsUnit {
                field,
                value,
                what,
                example,
            } => format!(
                "{} '{value}': {what} needs a unit, e.g. {example}",
                name(field)
            ),
            SpecError::Conflict(p) => p.render(name),
            other => other.to_string(),
        }
    }
}

/// The engine could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The specification is invalid (nothing was sent).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// An operating-system resource (epoll instance, thread) could not be created.
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        #[source]
        source: io::Error,
    },
    /// The HdrHistogram interval log could not be written.
    #[error("cannot write the interval log `{path}`: {reason}")]
    HdrLog { path: PathBuf, reason: String },
    /// `io` uring was asked for and this kernel (or sandbox) does not allow it; the
    /// option to change is `io` ([`LoadError::field`]).
    #[error(
        "io_uring is not available: {0} (run with `io` epoll, or `io` auto to fall back to it)"
    )]
    Uring(String),
    /// Not one connection could be made before the load started (see `reach`): the
    /// run stops at once, as wrk does, naming the cause.
    #[error("cannot connect to {addr}: {}: {detail}", cause.words())]
    Unreachable {
        addr: String,
        cause: ConnectCause,
        /// The operating system's or the TLS library's words, options as fields.
        detail: Phrase,
    },
    /// A worker thread panicked (a bug: please report it).
    #[error("a load worker thread panicked")]
    WorkerPanicked,
}

impl LoadError {
    /// The message with each option named by `name` (see [`SpecError::render`]).
    pub fn render(&self, name: &dyn Fn(&str) -> String) -> String {
        match self {
            LoadError::Spec(e) => e.render(name),
            LoadError::Uring(why) => format!(
                "io_uring is not available: {why} (run with {io} epoll, or {io} auto to fall \
                 back to it)",
                io = name("io")
            ),
            LoadError::Unreachable {
                addr,
                cause,
                detail,
            } => format!(
                "cannot connect to {addr}: {}: {}",
                cause.words(),
                detail.render(name)
            ),
            other => other.to_string(),
        }
    }
}
