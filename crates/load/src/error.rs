//! Typed errors of the load engine.
//!
//! Two families, because callers treat them differently: a [`SpecError`] means the
//! *input* is wrong (bad URL, bad duration, unreadable body file) and is always raised
//! before a single byte is sent, so a CLI maps it to "usage error" (exit 2); a
//! [`LoadError`] means the engine could not run (no epoll, no threads, cannot write the
//! interval log) and maps to "could not run" (exit 1). Failed *requests* are never
//! errors of this kind: they are counted in the [`crate::Report`].

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
    Conflict(String),
    /// The TLS set-up cannot be built (an unusable `--cacert` file).
    #[error("{0}")]
    Tls(String),
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
    /// `--io uring` was asked for and this kernel (or sandbox) does not allow it.
    #[error(
        "io_uring is not available: {0} (run with `io` epoll, or `io` auto to fall back to it)"
    )]
    Uring(String),
    /// A worker thread panicked (a bug: please report it).
    #[error("a load worker thread panicked")]
    WorkerPanicked,
}
