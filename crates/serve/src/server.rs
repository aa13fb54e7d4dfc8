//! Starting, stopping and restarting a server: [`Server`], [`ServerHandle`], [`Stats`].
//!
//! `start` does everything that can fail (canonicalize the root, bind, create each
//! worker's epoll and eventfd) before the first thread runs, so an error comes back
//! from `start` instead of a half-started server. `stop` sets a flag, wakes every
//! worker through its eventfd and joins them: workers close their listeners at once,
//! close idle connections, let in-flight responses finish for `shutdown_grace`, then
//! close the rest. `restart` stops and starts again with a new configuration on the
//! same port (a new config with port 0 keeps the old port).

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::accept::{self, AcceptLock};
use crate::config::{Builder, Config, Strategy};
use crate::error::ServeError;
use crate::sys::{Epoll, EventFd, EV_IN};
use crate::worker::{self, Setup, LISTENER_TOKEN, WAKE_TOKEN};

/// Live counters of a server (cumulative over restarts, except `active`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Connections accepted (including ones refused by `max_connections`).
    pub accepted: u64,
    /// Connections open now.
    pub active: u64,
    /// Requests answered.
    pub requests: u64,
    /// Open-file cache: entries held now, over all workers.
    pub file_cache_entries: u64,
    /// Open-file cache: bytes held now (keys, heads, small bodies), over all workers.
    pub file_cache_bytes: u64,
    /// Open-file cache: requests answered from it.
    pub file_cache_hits: u64,
    /// Open-file cache: GET/HEAD requests that found nothing in it.
    pub file_cache_misses: u64,
}

/// One worker's counters, alone on its cache line so workers never share one.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct WorkerCounters {
    pub accepted: AtomicU64,
    pub requests: AtomicU64,
    pub cache_entries: AtomicU64,
    pub cache_bytes: AtomicU64,
    pub cache_hits: AtomicU64,
    pub cache_misses: AtomicU64,
}

/// State shared by the workers of one start and the handle.
#[derive(Debug)]
pub(crate) struct Shared {
    pub stop: AtomicBool,
    pub active: AtomicUsize,
    pub lock: AcceptLock,
    pub counters: Box<[WorkerCounters]>,
}

impl Shared {
    fn snapshot(&self) -> Stats {
        let sum = |f: fn(&WorkerCounters) -> u64| self.counters.iter().map(f).sum();
        Stats {
            accepted: sum(|c| c.accepted.load(Ordering::Relaxed)),
            active: self.active.load(Ordering::Relaxed) as u64,
            requests: sum(|c| c.requests.load(Ordering::Relaxed)),
            file_cache_entries: sum(|c| c.cache_entries.load(Ordering::Relaxed)),
            file_cache_bytes: sum(|c| c.cache_bytes.load(Ordering::Relaxed)),
            file_cache_hits: sum(|c| c.cache_hits.load(Ordering::Relaxed)),
            file_cache_misses: sum(|c| c.cache_misses.load(Ordering::Relaxed)),
        }
    }
}

/// Entry point: `Server::builder()...start()` or `Server::start(config)`.
#[derive(Debug)]
pub struct Server;

impl Server {
    /// A builder with default settings.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Starts serving with `config`.
    pub fn start(config: Config) -> Result<ServerHandle, ServeError> {
        let running = Running::launch(&config)?;
        Ok(ServerHandle {
            local_addr: running.local_addr,
            config,
            running: Some(running),
            previous: Stats::default(),
        })
    }
}

/// A running (or stopped) server. Dropping it stops the server.
#[derive(Debug)]
pub struct ServerHandle {
    config: Config,
    running: Option<Running>,
    local_addr: SocketAddr,
    previous: Stats,
}

#[derive(Debug)]
struct Running {
    shared: Arc<Shared>,
    wakes: Vec<Arc<EventFd>>,
    threads: Vec<JoinHandle<std::io::Result<()>>>,
    local_addr: SocketAddr,
    /// The unix socket's file, removed when the server stops.
    unix_socket: Option<PathBuf>,
}

impl Running {
    fn launch(config: &Config) -> Result<Running, ServeError> {
        config.validate()?;
        // One unix socket serves every worker: `reuseport` (the default) becomes
        // `exclusive`, which wakes one worker per connection as reuseport would.
        let adjusted;
        let config = if config.unix_socket.is_some() && config.accept == Strategy::Reuseport {
            adjusted = Config {
                accept: Strategy::Exclusive,
                ..config.clone()
            };
            &adjusted
        } else {
            config
        };
        let root = config.root.as_deref().map(canonical_root).transpose()?;
        let tls = match &config.tls {
            Some(files) => Some(crate::tls::server_config(&files.cert, &files.key)?),
            None => None,
        };
        let listeners = accept::open(config)?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            lock: AcceptLock::default(),
            counters: (0..config.workers)
                .map(|_| WorkerCounters::default())
                .collect(),
        });
        let mut running = Running {
            shared: shared.clone(),
            wakes: Vec::new(),
            threads: Vec::new(),
            local_addr: listeners.local_addr,
            unix_socket: config.unix_socket.clone(),
        };
        let cfg = Arc::new(config.clone());
        for (index, listener) in listeners.per_worker.into_iter().enumerate() {
            let epoll = Epoll::new().map_err(|e| ServeError::os("epoll_create1", e))?;
            let wake = Arc::new(EventFd::new().map_err(|e| ServeError::os("eventfd", e))?);
            epoll
                .add(wake.raw(), EV_IN, WAKE_TOKEN)
                .map_err(|e| ServeError::os("epoll_ctl", e))?;
            if let Some(flags) = accept::initial_interest(config.accept) {
                epoll
                    .add(listener.as_raw_fd(), flags, LISTENER_TOKEN)
                    .map_err(|e| ServeError::os("epoll_ctl", e))?;
            }
            let setup = Setup {
                index,
                config: cfg.clone(),
                root: root.clone(),
                listener,
                epoll,
                wake: wake.clone(),
                shared: shared.clone(),
                tls: tls.clone(),
            };
            let thread = std::thread::Builder::new()
                .name(format!("perflab-serve-{index}"))
                .spawn(move || worker::run(setup))
                .map_err(|e| ServeError::os("spawn worker thread", e))?;
            running.wakes.push(wake);
            running.threads.push(thread);
        }
        Ok(running)
    }

    /// Stops the workers and returns the final counters.
    fn shutdown(self) -> Result<Stats, ServeError> {
        self.shared.stop.store(true, Ordering::Release);
        for w in &self.wakes {
            w.wake();
        }
        let mut result = Ok(());
        for t in self.threads {
            match t.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => result = Err(ServeError::os("worker event loop", e)),
                Err(_) => result = Err(ServeError::State("a worker thread panicked")),
            }
        }
        if let Some(path) = &self.unix_socket {
            let _ = std::fs::remove_file(path);
        }
        let mut stats = self.shared.snapshot();
        stats.active = 0;
        result.map(|()| stats)
    }
}

/// A canonical root directory, or why it can't be served.
fn canonical_root(p: &Path) -> Result<Arc<PathBuf>, ServeError> {
    let canon = p.canonicalize().map_err(|source| ServeError::Root {
        path: p.to_path_buf(),
        source,
    })?;
    if !canon.is_dir() {
        return Err(ServeError::RootNotDir(p.to_path_buf()));
    }
    Ok(Arc::new(canon))
}

impl ServerHandle {
    /// The address the server listens on (with the OS-chosen port, if port 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The unix-domain socket the server listens on, when it was started with one.
    pub fn unix_socket(&self) -> Option<&Path> {
        self.config.unix_socket.as_deref()
    }

    /// The configuration of the current (or last) run.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Whether workers are running.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Live counters.
    pub fn stats(&self) -> Stats {
        let now = self
            .running
            .as_ref()
            .map(|r| r.shared.snapshot())
            .unwrap_or_default();
        Stats {
            accepted: self.previous.accepted + now.accepted,
            active: now.active,
            requests: self.previous.requests + now.requests,
            file_cache_hits: self.previous.file_cache_hits + now.file_cache_hits,
            file_cache_misses: self.previous.file_cache_misses + now.file_cache_misses,
            ..now
        }
    }

    /// Graceful stop: no new connections, in-flight responses finish (up to
    /// `shutdown_grace`), then all threads are joined. Stopping twice is harmless.
    pub fn stop(&mut self) -> Result<(), ServeError> {
        let Some(running) = self.running.take() else {
            return Ok(());
        };
        let last = running.shutdown()?;
        self.previous.accepted += last.accepted;
        self.previous.requests += last.requests;
        self.previous.file_cache_hits += last.file_cache_hits;
        self.previous.file_cache_misses += last.file_cache_misses;
        Ok(())
    }

    /// Stops (if running) and starts again with `config`. If `config.bind` has port 0,
    /// the previous port is kept, so clients find the server where it was.
    pub fn restart(&mut self, mut config: Config) -> Result<(), ServeError> {
        self.stop()?;
        if config.bind.port() == 0 {
            config.bind.set_port(self.local_addr.port());
        }
        let running = Running::launch(&config)?;
        self.local_addr = running.local_addr;
        self.config = config;
        self.running = Some(running);
        Ok(())
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
