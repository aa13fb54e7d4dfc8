//! The four accept strategies: which listening sockets exist and how each worker
//! watches them.
//!
//! - `reuseport`: one `SO_REUSEPORT` socket per worker, all bound to the same address;
//!   the kernel hashes each new connection to one socket, so exactly one worker wakes.
//! - `shared`: one socket in every worker's epoll, level-triggered: every worker wakes
//!   for every connection and all but one get `EAGAIN` (the thundering herd).
//! - `exclusive`: the same socket added with `EPOLLEXCLUSIVE`: the kernel wakes one
//!   (or a few) of the waiting workers.
//! - `mutex`: one socket, registered only in the epoll of the worker that holds the
//!   [`AcceptLock`], as nginx's `accept_mutex` does: a worker takes the lock before
//!   waiting (and holds it while it waits), others poll for it every
//!   [`MUTEX_RETRY`] and deregister the socket while they don't hold it; a worker
//!   that already carries 7/8 of its share of connections stops competing.
//!
//! **A port in use is an error, not a group to join.** Linux lets a socket bind a port
//! that other sockets hold when all of them set `SO_REUSEPORT` and share the effective
//! uid; a second server that set it before `bind` would silently take part of the
//! first one's connections. So the first socket of a server binds with `SO_REUSEPORT`
//! off — the kernel's bind is the check, atomic, so two servers starting at once can't
//! both pass it (a probe bind followed by a real one could) — and gets `SO_REUSEPORT`
//! only between `bind` and `listen`, so that this server's own later sockets (one per
//! worker under `reuseport`) can join it. `EADDRINUSE` from that first bind is
//! [`ServeError::PortInUse`]. `Config::reuse_port` asks for the old behaviour: every
//! socket sets `SO_REUSEPORT` before `bind` and joins whatever group holds the port.
//! What this cannot stop: a program of the same user that sets `SO_REUSEPORT` itself
//! can still join a multi-worker `reuseport` server's group (the kernel has no way to
//! close a group); a one-worker server, or another strategy, never sets the option.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, Strategy};
use crate::error::ServeError;
use crate::sys::{self, PortReuse, EV_EXCLUSIVE, EV_IN};

/// How often a worker without the accept lock tries to take it.
pub const MUTEX_RETRY: Duration = Duration::from_millis(50);

/// The lock of the `mutex` strategy.
#[derive(Debug, Default)]
pub(crate) struct AcceptLock {
    held: AtomicBool,
}

impl AcceptLock {
    pub fn try_acquire(&self) -> bool {
        self.held
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }
    pub fn release(&self) {
        self.held.store(false, Ordering::Release);
    }
}

/// The listening sockets of one server start: one entry per worker.
#[derive(Debug)]
pub(crate) struct Listeners {
    pub per_worker: Vec<Arc<OwnedFd>>,
    pub local_addr: SocketAddr,
}

/// Opens the sockets for `config.accept`.
pub(crate) fn open(config: &Config) -> Result<Listeners, ServeError> {
    if let Some(path) = &config.unix_socket {
        // One socket for every worker (SO_REUSEPORT does not spread unix connections);
        // `Config::validate` has made `reuseport` mean `exclusive` here.
        let fd = sys::listen_unix(path, config.backlog).map_err(|source| ServeError::BindUnix {
            path: path.clone(),
            source,
        })?;
        let fd = Arc::new(fd);
        return Ok(Listeners {
            per_worker: vec![fd; config.workers],
            local_addr: SocketAddr::from(([0, 0, 0, 0], 0)),
        });
    }
    let reuseport = config.accept == Strategy::Reuseport && config.workers > 1;
    let bind_err = |addr, source| ServeError::Bind { addr, source };
    let first_reuse = match (config.reuse_port, reuseport) {
        (true, _) => PortReuse::BeforeBind,
        (false, true) => PortReuse::AfterBind,
        (false, false) => PortReuse::No,
    };
    let first = sys::listen(&config.bind, first_reuse, config.backlog).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            ServeError::PortInUse { addr: config.bind }
        } else {
            bind_err(config.bind, e)
        }
    })?;
    let local_addr = sys::local_addr(first.as_raw_fd()).map_err(|e| bind_err(config.bind, e))?;
    let first = Arc::new(first);
    let mut per_worker = vec![first.clone()];
    for _ in 1..config.workers {
        if reuseport {
            let fd = sys::listen(&local_addr, PortReuse::BeforeBind, config.backlog)
                .map_err(|e| bind_err(local_addr, e))?;
            per_worker.push(Arc::new(fd));
        } else {
            per_worker.push(first.clone());
        }
    }
    Ok(Listeners {
        per_worker,
        local_addr,
    })
}

/// The epoll flags a worker registers its listener with (`None`: not up front).
pub(crate) fn initial_interest(strategy: Strategy) -> Option<u32> {
    match strategy {
        Strategy::Reuseport | Strategy::Shared => Some(EV_IN),
        Strategy::Exclusive => Some(EV_IN | EV_EXCLUSIVE),
        Strategy::Mutex => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuseport_opens_one_socket_per_worker_on_one_port() {
        let mut c = Config {
            bind: "127.0.0.1:0".parse().unwrap(),
            workers: 3,
            ..Config::default()
        };
        let l = open(&c).unwrap();
        assert_eq!(l.per_worker.len(), 3);
        assert_ne!(l.per_worker[0].as_raw_fd(), l.per_worker[1].as_raw_fd());
        for fd in &l.per_worker {
            assert_eq!(sys::local_addr(fd.as_raw_fd()).unwrap(), l.local_addr);
        }
        c.accept = Strategy::Shared;
        let s = open(&c).unwrap();
        assert_eq!(s.per_worker[0].as_raw_fd(), s.per_worker[2].as_raw_fd());
    }

    /// The kernel spreads connections over the workers' sockets: they form one group.
    #[test]
    fn reuseport_workers_share_connections() {
        let c = Config {
            bind: "127.0.0.1:0".parse().unwrap(),
            workers: 2,
            ..Config::default()
        };
        let l = open(&c).unwrap();
        let clients: Vec<_> = (0..64)
            .map(|_| std::net::TcpStream::connect(l.local_addr).unwrap())
            .collect();
        let mut per_socket = [0, 0];
        // Loopback handshakes complete at connect; the bound only covers a slow kernel.
        let end = std::time::Instant::now() + Duration::from_secs(10);
        while per_socket[0] + per_socket[1] < clients.len() && std::time::Instant::now() < end {
            for (i, fd) in l.per_worker.iter().enumerate() {
                while sys::accept(fd.as_raw_fd()).is_ok() {
                    per_socket[i] += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            per_socket[0] + per_socket[1],
            clients.len(),
            "{per_socket:?}"
        );
        assert!(per_socket.iter().all(|&n| n > 0), "{per_socket:?}");
    }

    #[test]
    fn a_second_server_on_a_busy_port_is_refused_unless_it_asks_to_share() {
        for (strategy, workers) in [
            (Strategy::Reuseport, 2),
            (Strategy::Reuseport, 1),
            (Strategy::Shared, 2),
        ] {
            let first = Config {
                bind: "127.0.0.1:0".parse().unwrap(),
                workers,
                accept: strategy,
                ..Config::default()
            };
            let l = open(&first).unwrap();
            let second = Config {
                bind: l.local_addr,
                workers: 2,
                ..Config::default()
            };
            let err = open(&second).unwrap_err();
            assert!(
                matches!(err, ServeError::PortInUse { addr } if addr == l.local_addr),
                "{err}"
            );
            assert!(err.to_string().contains("address already in use"), "{err}");
        }
        let sharing = Config {
            bind: "127.0.0.1:0".parse().unwrap(),
            workers: 2,
            reuse_port: true,
            ..Config::default()
        };
        let l = open(&sharing).unwrap();
        let joined = open(&Config {
            bind: l.local_addr,
            ..sharing
        });
        assert_eq!(joined.unwrap().local_addr, l.local_addr);
    }

    #[test]
    fn lock_is_exclusive() {
        let l = AcceptLock::default();
        assert!(l.try_acquire());
        assert!(!l.try_acquire());
        l.release();
        assert!(l.try_acquire());
    }
}
