//! One worker thread: an epoll loop that accepts (per the strategy), drives its
//! connections, enforces deadlines, and drains on stop.
//!
//! Deadlines are checked by a sweep over the worker's connections every
//! `sweep_every` (a quarter of the shortest timeout, at most 250 ms): O(connections)
//! a few times a second costs less than a timer heap updated on every request, and
//! the hot path (read → answer → send) never touches a timer. Counters are kept in
//! plain integers and published once per loop turn into this worker's cache line.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::accept::{self, MUTEX_RETRY};
use crate::clock::DateCache;
use crate::config::{Config, Strategy};
use crate::conn::{Conn, Io, Next};
use crate::dispatch::Env;
use crate::filecache::FileCache;
use crate::h2::Scratch;
use crate::hello::HelloPages;
use crate::log::AccessLog;
use crate::server::Shared;
use crate::slab::Slab;
use crate::sys::{self, Epoll, EventFd, EV_IN};
use crate::transport::Sock;

pub(crate) const WAKE_TOKEN: u64 = u64::MAX;
pub(crate) const LISTENER_TOKEN: u64 = u64::MAX - 1;
const ACCEPT_BATCH: usize = 64;
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
const BUSY_503: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// Everything a worker thread is started with.
pub(crate) struct Setup {
    pub index: usize,
    pub config: Arc<Config>,
    pub root: Option<Arc<PathBuf>>,
    pub listener: Arc<OwnedFd>,
    pub epoll: Epoll,
    pub wake: Arc<EventFd>,
    pub shared: Arc<Shared>,
    /// The TLS configuration, when the server has a certificate.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

struct Worker {
    s: Setup,
    listener: Option<Arc<OwnedFd>>,
    slab: Slab,
    listening: bool,
    holds_lock: bool,
    paused_until: Option<Instant>,
    date: DateCache,
    hello: HelloPages,
    log: Option<AccessLog>,
    cache: Option<FileCache>,
    scratch: Scratch,
    accepted: u64,
    requests: u64,
    draining: Option<Instant>,
    sweep_every: Duration,
    next_sweep: Instant,
}

/// Runs a worker until the server stops and its connections are done.
pub(crate) fn run(s: Setup) -> std::io::Result<()> {
    let c = &s.config;
    let shortest = c.request_timeout.min(c.idle_timeout);
    let sweep_every = (shortest / 4).clamp(Duration::from_millis(10), Duration::from_millis(250));
    let date = DateCache::new();
    let mut hello = HelloPages::default();
    hello.rebuild(date.line());
    let mut w = Worker {
        listener: Some(s.listener.clone()),
        listening: accept::initial_interest(c.accept).is_some(),
        log: c.access_log.then(AccessLog::default),
        cache: match (c.file_cache, &s.root, c.hello) {
            (Some(fc), Some(_), false) => Some(FileCache::new(fc)),
            _ => None,
        },
        s,
        scratch: Scratch::default(),
        slab: Slab::default(),
        holds_lock: false,
        paused_until: None,
        date,
        hello,
        accepted: 0,
        requests: 0,
        draining: None,
        sweep_every,
        next_sweep: Instant::now() + sweep_every,
    };
    let result = w.event_loop();
    w.close_all();
    w.publish();
    result
}

impl Worker {
    fn event_loop(&mut self) -> std::io::Result<()> {
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
        loop {
            self.mutex_before_wait();
            let timeout = self.timeout(Instant::now());
            let n = self.s.epoll.wait(&mut events, timeout)?;
            let now = Instant::now();
            if self.date.tick() {
                self.hello.rebuild(self.date.line());
            }
            for ev in &events[..n] {
                let (token, bits) = (ev.u64, ev.events);
                self.event(token, bits, now);
            }
            if self.holds_lock {
                self.s.shared.lock.release();
                self.holds_lock = false;
            }
            self.housekeeping(now);
            if let Some(grace_end) = self.draining {
                if self.slab.is_empty() || now >= grace_end {
                    return Ok(());
                }
            }
        }
    }

    fn housekeeping(&mut self, now: Instant) {
        if now >= self.next_sweep {
            self.sweep(now);
            self.next_sweep = now + self.sweep_every;
        }
        if self.paused_until.is_some_and(|t| now >= t) {
            self.paused_until = None;
            if self.s.config.accept != Strategy::Mutex {
                self.listen(true);
            }
        }
        self.publish();
        if let Some(log) = &mut self.log {
            log.flush();
        }
        if self.draining.is_none() && self.s.shared.stop.load(Ordering::Acquire) {
            self.begin_drain(now);
        }
    }

    fn timeout(&self, now: Instant) -> Option<Duration> {
        let mut t = None;
        if !self.slab.is_empty() || self.draining.is_some() {
            t = Some(self.next_sweep.saturating_duration_since(now));
        }
        let mut cap = |d: Duration| t = Some(t.map_or(d, |t: Duration| t.min(d)));
        if self.s.config.accept == Strategy::Mutex && !self.holds_lock && self.draining.is_none() {
            cap(MUTEX_RETRY);
        }
        if let Some(until) = self.paused_until {
            cap(until.saturating_duration_since(now));
        }
        t
    }

    /// Registers or deregisters this worker's listener.
    fn listen(&mut self, on: bool) {
        let Some(l) = &self.listener else { return };
        if on == self.listening {
            return;
        }
        let fd = l.as_raw_fd();
        let ok = if on {
            let flags = accept::initial_interest(self.s.config.accept).unwrap_or(EV_IN);
            self.s.epoll.add(fd, flags, LISTENER_TOKEN).is_ok()
        } else {
            self.s.epoll.delete(fd).is_ok()
        };
        if ok {
            self.listening = on;
        }
    }

    /// The `mutex` strategy: take the lock (and the listener) or give the listener up.
    fn mutex_before_wait(&mut self) {
        if self.s.config.accept != Strategy::Mutex
            || self.draining.is_some()
            || self.paused_until.is_some()
        {
            return;
        }
        let share = (self.s.config.max_connections / self.s.config.workers).max(1);
        let busy = self.slab.len() > share / 8 * 7;
        if !busy && self.s.shared.lock.try_acquire() {
            self.holds_lock = true;
            self.listen(true);
        } else {
            self.listen(false);
        }
    }

    fn event(&mut self, token: u64, bits: u32, now: Instant) {
        match token {
            WAKE_TOKEN => self.s.wake.drain(),
            LISTENER_TOKEN => self.accept_burst(now),
            _ => {
                let Some(conn) = self.slab.get_mut(token) else {
                    return;
                };
                let env = Env {
                    config: &self.s.config,
                    root: self.s.root.as_ref().map(|p| p.as_path()),
                    date: self.date.line(),
                    hello: &self.hello,
                };
                let mut io = Io {
                    env: &env,
                    log: self.log.as_mut(),
                    requests: &mut self.requests,
                    now,
                    draining: self.draining.is_some(),
                    cache: self.cache.as_mut(),
                    scratch: &mut self.scratch,
                };
                let next = conn.on_event(bits, &mut io);
                self.apply(token, next);
            }
        }
    }

    fn apply(&mut self, token: u64, next: Next) {
        match next {
            Next::Close => self.close(token),
            Next::Keep(interest) => {
                let Some(conn) = self.slab.get_mut(token) else {
                    return;
                };
                if conn.interest != interest {
                    if self.s.epoll.modify(conn.raw_fd(), interest, token).is_err() {
                        self.close(token);
                    } else {
                        conn.interest = interest;
                    }
                }
            }
        }
    }

    fn close(&mut self, token: u64) {
        if self.slab.remove(token).is_some() {
            self.s.shared.active.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn accept_burst(&mut self, now: Instant) {
        let Some(l) = &self.listener else { return };
        let lfd = l.as_raw_fd();
        for _ in 0..ACCEPT_BATCH {
            match sys::accept(lfd) {
                Ok((fd, peer)) => self.admit(fd, peer, now),
                Err(e) if sys::would_block(&e) => break,
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                    ) =>
                {
                    eprintln!("perflab-serve: accept: {e}; pausing accepts for {ACCEPT_PAUSE:?}");
                    self.listen(false);
                    self.paused_until = Some(now + ACCEPT_PAUSE);
                    break;
                }
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ECONNABORTED | libc::EINTR | libc::EPROTO)
                    ) => {}
                Err(_) => break,
            }
        }
    }

    fn admit(&mut self, fd: OwnedFd, peer: std::net::SocketAddr, now: Instant) {
        self.accepted += 1;
        let active = &self.s.shared.active;
        if active.fetch_add(1, Ordering::Relaxed) >= self.s.config.max_connections {
            active.fetch_sub(1, Ordering::Relaxed);
            if self.s.tls.is_none() {
                let _ = sys::send(fd.as_raw_fd(), BUSY_503, false);
            }
            return;
        }
        let deadline = now + self.s.config.request_timeout;
        let raw = fd.as_raw_fd();
        let sock = match &self.s.tls {
            None => Sock::plain(fd),
            Some(cfg) => match rustls::ServerConnection::new(Arc::clone(cfg)) {
                Ok(session) => Sock::tls(fd, session),
                Err(_) => {
                    active.fetch_sub(1, Ordering::Relaxed);
                    return;
                }
            },
        };
        let token = self.slab.insert(Conn::new(sock, peer, deadline));
        if self.s.epoll.add(raw, EV_IN, token).is_err() {
            self.close(token);
        }
    }

    fn sweep(&mut self, now: Instant) {
        for token in self.slab.tokens() {
            let Some(conn) = self.slab.get_mut(token) else {
                continue;
            };
            if conn.deadline() > now {
                continue;
            }
            let env = Env {
                config: &self.s.config,
                root: self.s.root.as_ref().map(|p| p.as_path()),
                date: self.date.line(),
                hello: &self.hello,
            };
            let mut io = Io {
                env: &env,
                log: self.log.as_mut(),
                requests: &mut self.requests,
                now,
                draining: self.draining.is_some(),
                cache: self.cache.as_mut(),
                scratch: &mut self.scratch,
            };
            let next = conn.on_timeout(&mut io);
            self.apply(token, next);
        }
    }

    fn begin_drain(&mut self, now: Instant) {
        self.listen(false);
        self.listener = None;
        if self.holds_lock {
            self.s.shared.lock.release();
            self.holds_lock = false;
        }
        self.draining = Some(now + self.s.config.shutdown_grace);
        for token in self.slab.tokens() {
            if self.slab.get_mut(token).is_some_and(|c| c.is_idle()) {
                self.close(token);
            }
        }
    }

    fn close_all(&mut self) {
        for token in self.slab.tokens() {
            self.close(token);
        }
    }

    fn publish(&self) {
        let c = &self.s.shared.counters[self.s.index];
        c.accepted.store(self.accepted, Ordering::Relaxed);
        c.requests.store(self.requests, Ordering::Relaxed);
        if let Some(fc) = &self.cache {
            c.cache_entries.store(fc.len() as u64, Ordering::Relaxed);
            c.cache_bytes.store(fc.bytes() as u64, Ordering::Relaxed);
            c.cache_hits.store(fc.hits, Ordering::Relaxed);
            c.cache_misses.store(fc.misses, Ordering::Relaxed);
        }
    }
}
