//! Typed errors of the server library.
//!
//! Only configuration and start-up can fail in a way the caller must handle; once
//! running, per-connection problems (bad requests, resets, timeouts) are answered on
//! the wire and counted, never surfaced as errors, so a bad client can't stop a server.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Everything that can go wrong when configuring, starting or stopping a server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The document root does not exist or is not a directory.
    #[error("document root {path}: {source}")]
    Root {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The document root exists but is not a directory.
    #[error("document root {0} is not a directory")]
    RootNotDir(PathBuf),
    /// The bind address could not be resolved.
    #[error("bind address {addr:?}: {reason}")]
    Address { addr: String, reason: String },
    /// Creating, binding or listening on the socket failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    /// Another socket already listens on the port (and `reuse_port` was not asked for).
    #[error("cannot listen on {addr}: address already in use (another socket holds port {port})", port = addr.port())]
    PortInUse { addr: SocketAddr },
    /// Creating, binding or listening on the unix socket failed.
    #[error("cannot listen on {}: {source}", path.display())]
    BindUnix {
        path: std::path::PathBuf,
        #[source]
        source: io::Error,
    },
    /// A TLS certificate or key file that can't be read or used (`--tls-cert`, `--tls-key`).
    #[error("TLS file {}: {reason}", path.display())]
    Tls { path: PathBuf, reason: String },
    /// An unknown accept strategy name (expected reuseport, shared, exclusive or mutex).
    #[error("unknown accept strategy {0:?} (expected reuseport, shared, exclusive or mutex)")]
    Strategy(String),
    /// An invalid setting (zero workers, zero timeout, ...).
    #[error("invalid setting {name}: {reason}")]
    Invalid { name: &'static str, reason: String },
    /// The operating system refused a resource the server needs (epoll, eventfd, threads).
    #[error("{what}: {source}")]
    Os {
        what: &'static str,
        #[source]
        source: io::Error,
    },
    /// `start` on a running server, `stop` on a stopped one, or a worker thread panicked.
    #[error("{0}")]
    State(&'static str),
}

impl ServeError {
    pub(crate) fn os(what: &'static str, source: io::Error) -> Self {
        ServeError::Os { what, source }
    }
}
