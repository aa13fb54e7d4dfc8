//! Server configuration: the [`Config`] value, the accept [`Strategy`] and the
//! [`Builder`] that `Server::builder()` returns.
//!
//! A `Config` is plain data (cloneable, with public fields and documented defaults) so
//! that `ServerHandle::restart` can take a modified copy; the builder is only sugar
//! over it. Validation happens once, in [`Config::validate`], at start.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::error::ServeError;
use crate::filecache::FileCacheConfig;
use crate::request::{Handler, Request};
use crate::response::Response;

/// How worker threads get new connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Strategy {
    /// One `SO_REUSEPORT` listener per worker; the kernel spreads connections (default).
    #[default]
    Reuseport,
    /// One listener registered in every worker's epoll: every worker wakes for every
    /// connection (the thundering herd).
    Shared,
    /// One listener registered with `EPOLLEXCLUSIVE`: the kernel wakes one worker.
    Exclusive,
    /// One listener, watched only by the worker that holds a lock (nginx's
    /// `accept_mutex`, Apache's accept serialization).
    Mutex,
}

impl Strategy {
    /// All strategies, in documentation order.
    pub const ALL: [Strategy; 4] = [
        Strategy::Reuseport,
        Strategy::Shared,
        Strategy::Exclusive,
        Strategy::Mutex,
    ];

    /// The lower-case name used on the command line and in the C ABI.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Reuseport => "reuseport",
            Strategy::Shared => "shared",
            Strategy::Exclusive => "exclusive",
            Strategy::Mutex => "mutex",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Strategy {
    type Err = ServeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Strategy::ALL
            .into_iter()
            .find(|st| st.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ServeError::Strategy(s.to_string()))
    }
}

/// Everything a server needs to run. `Config::default()` serves nothing but 404s on
/// 127.0.0.1:8080; set `root`, `hello` or `handler`.
#[derive(Clone)]
pub struct Config {
    /// Directory served as static files; `None` serves no files.
    pub root: Option<PathBuf>,
    /// Address to listen on; port 0 lets the OS choose.
    pub bind: SocketAddr,
    /// Listen on this unix-domain socket instead of `bind` (the file is created, a
    /// stale one replaced, and removed when the server stops); one socket for all
    /// workers, so `reuseport` acts as `exclusive`.
    pub unix_socket: Option<PathBuf>,
    /// Worker threads, each with its own epoll loop (default: logical cores).
    pub workers: usize,
    /// How workers accept connections.
    pub accept: Strategy,
    /// Share the port with other servers already listening on it (`SO_REUSEPORT`
    /// before `bind`, same user only), splitting connections with them. Off by
    /// default: a port in use is `ServeError::PortInUse`, while the workers of this
    /// server still share their own port under `reuseport`.
    pub reuse_port: bool,
    /// Answer every request with a fixed small page (precomputed).
    pub hello: bool,
    /// Dynamic requests: `Some(response)` answers, `None` falls back to static files.
    pub handler: Option<Handler>,
    /// Log one line per request to stderr.
    pub access_log: bool,
    /// Connections open at once, over all workers; more are answered 503 and closed.
    pub max_connections: usize,
    /// Time allowed to receive a whole request (line, headers, body); then 408 and close.
    pub request_timeout: Duration,
    /// Time an idle keep-alive connection is kept open.
    pub idle_timeout: Duration,
    /// Limit of request line + headers in bytes (431 beyond).
    pub max_header_bytes: usize,
    /// Limit of a request body in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// Serve symlinks whose target lies outside the root (default: refused, 404).
    pub follow_outside_symlinks: bool,
    /// Generate HTML listings for directories without an index file.
    pub listings: bool,
    /// `listen()` backlog.
    pub backlog: u32,
    /// How long `stop()` lets in-flight responses finish before closing them.
    pub shutdown_grace: Duration,
    /// The open-file cache (per worker; see [`FileCacheConfig`]); `None` opens and
    /// `stat`s every file on every request.
    pub file_cache: Option<FileCacheConfig>,
    /// TLS: a PEM certificate chain and its PEM private key. With them every
    /// connection is TLS, with ALPN `h2` then `http/1.1`.
    pub tls: Option<TlsFiles>,
    /// HTTP/2: SETTINGS_MAX_CONCURRENT_STREAMS, the streams one connection may have
    /// open at once; more are refused with RST_STREAM(REFUSED_STREAM).
    pub h2_max_streams: u32,
    /// HTTP/2: streams one connection may have reset — by the client's RST_STREAM, or
    /// by ours for a stream error it caused — as a burst and a rate per second; beyond it
    /// the connection gets GOAWAY(ENHANCE_YOUR_CALM) (the rapid-reset attack).
    pub h2_reset_rate: Rate,
    /// HTTP/2: frames that are no request — PING, SETTINGS, PRIORITY, empty DATA,
    /// HEADERS or CONTINUATION that end nothing, unknown frame types — one connection
    /// may send, as a burst and a rate per second; beyond it GOAWAY(ENHANCE_YOUR_CALM).
    pub h2_control_rate: Rate,
    /// HTTP/2: CONTINUATION frames one header block may use (empty ones count); more
    /// is GOAWAY(ENHANCE_YOUR_CALM). Its bytes are bounded by `max_header_bytes`.
    pub h2_max_continuations: u32,
}

/// A budget of events: `burst` at once, refilled at `per_sec` per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Events allowed at once.
    pub burst: u32,
    /// Events allowed per second once the burst is spent.
    pub per_sec: u32,
}

impl Rate {
    /// No limit in practice (for tests that show what a limit guards).
    pub const UNLIMITED: Rate = Rate {
        burst: u32::MAX,
        per_sec: u32::MAX,
    };
}

/// The PEM files of `Config::tls`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, leaf first (`-----BEGIN CERTIFICATE-----`).
    pub cert: PathBuf,
    /// The private key of the leaf certificate (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            root: None,
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            unix_socket: None,
            workers: default_workers(),
            accept: Strategy::Reuseport,
            reuse_port: false,
            hello: false,
            handler: None,
            access_log: false,
            max_connections: 65_536,
            request_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            max_header_bytes: 16 * 1024,
            max_body_bytes: 1024 * 1024,
            follow_outside_symlinks: false,
            listings: true,
            backlog: 1024,
            shutdown_grace: Duration::from_secs(5),
            file_cache: Some(FileCacheConfig::default()),
            tls: None,
            h2_max_streams: crate::h2::DEFAULT_MAX_STREAMS,
            h2_reset_rate: crate::h2::DEFAULT_RESET_RATE,
            h2_control_rate: crate::h2::DEFAULT_CONTROL_RATE,
            h2_max_continuations: crate::h2::DEFAULT_MAX_CONTINUATIONS,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("root", &self.root)
            .field("bind", &self.bind)
            .field("unix_socket", &self.unix_socket)
            .field("workers", &self.workers)
            .field("accept", &self.accept)
            .field("reuse_port", &self.reuse_port)
            .field("hello", &self.hello)
            .field("handler", &self.handler.as_ref().map(|_| "<fn>"))
            .field("access_log", &self.access_log)
            .field("max_connections", &self.max_connections)
            .field("request_timeout", &self.request_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_header_bytes", &self.max_header_bytes)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("follow_outside_symlinks", &self.follow_outside_symlinks)
            .field("listings", &self.listings)
            .field("backlog", &self.backlog)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("file_cache", &self.file_cache)
            .field("tls", &self.tls)
            .field("h2_max_streams", &self.h2_max_streams)
            .field("h2_reset_rate", &self.h2_reset_rate)
            .field("h2_control_rate", &self.h2_control_rate)
            .field("h2_max_continuations", &self.h2_max_continuations)
            .finish()
    }
}

/// Logical cores, or 1 when they can't be counted.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Config {
    /// Checks the settings that have no sensible meaning at zero or out of range.
    pub fn validate(&self) -> Result<(), ServeError> {
        let bad = |name, reason: &str| {
            Err(ServeError::Invalid {
                name,
                reason: reason.to_string(),
            })
        };
        if self.workers == 0 || self.workers > 1024 {
            return bad("workers", "must be between 1 and 1024");
        }
        if self.max_connections == 0 {
            return bad("max_connections", "must be at least 1");
        }
        if self.request_timeout.is_zero() || self.idle_timeout.is_zero() {
            return bad("timeout", "must be longer than zero");
        }
        if self.max_header_bytes < 256 {
            return bad("max_header_bytes", "must be at least 256");
        }
        if self.backlog == 0 {
            return bad("backlog", "must be at least 1");
        }
        if self.h2_max_streams == 0 {
            return bad("h2_max_streams", "must be at least 1");
        }
        for (name, r) in [
            ("h2_reset_rate", self.h2_reset_rate),
            ("h2_control_rate", self.h2_control_rate),
        ] {
            if r.burst == 0 {
                return bad(name, "burst must be at least 1");
            }
        }
        if self.h2_max_continuations == 0 {
            return bad("h2_max_continuations", "must be at least 1");
        }
        Ok(())
    }
}

/// Builds a [`Config`] and starts a server: `Server::builder().root(dir).start()`.
#[derive(Debug, Default)]
pub struct Builder {
    config: Config,
    error: Option<ServeError>,
}

impl Builder {
    /// Serves files from `dir`.
    pub fn root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.root = Some(dir.into());
        self
    }
    /// Number of worker threads.
    pub fn workers(mut self, n: usize) -> Self {
        self.config.workers = n;
        self
    }
    /// Accept strategy.
    pub fn accept(mut self, strategy: Strategy) -> Self {
        self.config.accept = strategy;
        self
    }
    /// Join a port other servers of this user already listen on, instead of failing
    /// with [`ServeError::PortInUse`] (see [`Config::reuse_port`]).
    pub fn reuse_port(mut self, on: bool) -> Self {
        self.config.reuse_port = on;
        self
    }
    /// Answer every request with the fixed hello page.
    pub fn hello(mut self, on: bool) -> Self {
        self.config.hello = on;
        self
    }
    /// Dynamic handler: return `Some(response)` to answer, `None` to fall back to files.
    pub fn handler<F>(mut self, f: F) -> Self
    where
        F: Fn(&Request<'_>) -> Option<Response> + Send + Sync + 'static,
    {
        self.config.handler = Some(Arc::new(f));
        self
    }
    /// Listen address (`"127.0.0.1:0"`, `([0, 0, 0, 0], 8080)`, `"[::1]:8080"`, ...).
    pub fn bind(mut self, addr: impl ToSocketAddrs + fmt::Debug) -> Self {
        let text = format!("{addr:?}");
        match addr.to_socket_addrs().map(|mut it| it.next()) {
            Ok(Some(a)) => self.config.bind = a,
            Ok(None) => self.fail(ServeError::Address {
                addr: text,
                reason: "resolves to no address".into(),
            }),
            Err(e) => self.fail(ServeError::Address {
                addr: text,
                reason: e.to_string(),
            }),
        }
        self
    }
    /// Log one line per request to stderr.
    pub fn access_log(mut self, on: bool) -> Self {
        self.config.access_log = on;
        self
    }
    /// Connections open at once.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.config.max_connections = n;
        self
    }
    /// Sets both the request timeout and the idle keep-alive timeout.
    pub fn timeout(mut self, d: Duration) -> Self {
        self.config.request_timeout = d;
        self.config.idle_timeout = d;
        self
    }
    /// Time allowed to receive one whole request.
    pub fn request_timeout(mut self, d: Duration) -> Self {
        self.config.request_timeout = d;
        self
    }
    /// Time an idle keep-alive connection is kept.
    pub fn idle_timeout(mut self, d: Duration) -> Self {
        self.config.idle_timeout = d;
        self
    }
    /// Listen on a unix-domain socket at `path` instead of a TCP address.
    pub fn unix_socket(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.unix_socket = Some(path.into());
        self
    }
    /// The open-file cache's settings, or `None` to turn it off.
    pub fn file_cache(mut self, cache: Option<FileCacheConfig>) -> Self {
        self.config.file_cache = cache;
        self
    }
    /// Serve symlinks that point outside the root.
    pub fn follow_outside_symlinks(mut self, on: bool) -> Self {
        self.config.follow_outside_symlinks = on;
        self
    }
    /// Serves TLS with this PEM certificate chain and PEM private key (HTTP/2 by
    /// ALPN `h2`, else HTTP/1.1). The files are read when the server starts.
    pub fn tls(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.config.tls = Some(TlsFiles {
            cert: cert.into(),
            key: key.into(),
        });
        self
    }
    /// HTTP/2 streams one connection may have open at once (default 128).
    pub fn h2_max_streams(mut self, n: u32) -> Self {
        self.config.h2_max_streams = n;
        self
    }

    /// HTTP/2: the stream resets one connection may cause (see [`Config::h2_reset_rate`]).
    pub fn h2_reset_rate(mut self, rate: Rate) -> Self {
        self.config.h2_reset_rate = rate;
        self
    }

    /// HTTP/2: the control frames one connection may send (see [`Config::h2_control_rate`]).
    pub fn h2_control_rate(mut self, rate: Rate) -> Self {
        self.config.h2_control_rate = rate;
        self
    }

    /// HTTP/2: CONTINUATION frames per header block (see [`Config::h2_max_continuations`]).
    pub fn h2_max_continuations(mut self, n: u32) -> Self {
        self.config.h2_max_continuations = n;
        self
    }
    /// Replace the whole configuration (the builder's other calls still apply after).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }
    /// The finished, validated configuration.
    pub fn build(self) -> Result<Config, ServeError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.config.validate()?;
        Ok(self.config)
    }
    /// Builds the configuration and starts serving.
    pub fn start(self) -> Result<crate::ServerHandle, ServeError> {
        crate::Server::start(self.build()?)
    }

    fn fail(&mut self, e: ServeError) {
        self.error.get_or_insert(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategy_names_round_trip() {
        for s in Strategy::ALL {
            assert_eq!(s.name().parse::<Strategy>().unwrap(), s);
        }
        assert!("herd".parse::<Strategy>().is_err());
    }

    #[test]
    fn builder_reports_bad_address_at_build() {
        let err = Builder::default()
            .bind("not an address")
            .build()
            .unwrap_err();
        assert!(matches!(err, ServeError::Address { .. }), "{err}");
    }

    #[test]
    fn zero_workers_is_invalid() {
        assert!(Builder::default().workers(0).build().is_err());
    }

    #[test]
    fn h2_streams_and_tls_files_are_settings() {
        assert!(Builder::default().h2_max_streams(0).build().is_err());
        let c = Builder::default().h2_max_streams(7).tls("c", "k").build();
        let c = c.unwrap();
        assert_eq!(
            (c.h2_max_streams, c.tls.unwrap().key),
            (7, PathBuf::from("k"))
        );
    }
}
