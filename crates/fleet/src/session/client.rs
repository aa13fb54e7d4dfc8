//! The controller's side of a session: one `perflab worker` on the host kept open
//! (over ssh, or the fleet's other [`WorkerLink`]), a request written per line, each
//! answer awaited with a bound. The host's refusal (a `failed` reply) is
//! [`SiteError::Refused`]; a session that cannot go on is [`SiteError::Link`]. The ssh client runs in
//! a process group of its own, so a Ctrl-C at the terminal reaches only perflab, which
//! then stops the remote service in order and gets its log back; if perflab itself
//! dies, the ssh client reads the end of its stdin and the host stops everything.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use perflab_lab::site::{ProfileResult, ServiceRequest, ServiceStarted, Site, SiteError};
use perflab_telemetry::Recording;
use perflab_workloads::spec::{MonitorAttachment, ProfileAttachment};

use crate::inventory::Host;
use crate::link::{Conn, WorkerLink};
use crate::wire::{Reply, Request};

/// The time an answer may take beyond the work itself (the connection, a slow host).
const SLACK: Duration = Duration::from_secs(30);

/// The work of starting perf (finding it, probing the event, a trial recording).
const PROFILE_START: Duration = Duration::from_secs(20);

/// An open session with perflab on a host.
pub struct HostSession {
    host: String,
    conn: Conn,
    lines: mpsc::Receiver<String>,
    /// The tail of ssh's and the worker's stderr, for messages.
    errors: Arc<Mutex<String>>,
    /// The grace of the service running here (the hang-up waits that long for it).
    grace: Duration,
    /// When the profile recording now was started (its reduction takes longer the
    /// longer it recorded).
    profiling: Option<Instant>,
}

impl HostSession {
    /// Starts `perflab worker` on `host` (the binary `perflab` there) over `link`.
    pub fn open(
        link: &dyn WorkerLink,
        host: &Host,
        perflab: &str,
    ) -> Result<HostSession, SiteError> {
        let mut conn = link
            .worker(host, perflab)
            .map_err(|e| SiteError::Link(e.to_string()))?;
        let (tx, lines) = mpsc::channel();
        let stdout = conn.stdout.take().expect("a worker's stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let errors = Arc::new(Mutex::new(String::new()));
        let mut stderr = conn.stderr.take().expect("a worker's stderr");
        let sink = errors.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
                s.push_str(&String::from_utf8_lossy(&buf[..n]));
                if s.len() > 16 << 10 {
                    let cut = s.len() - (8 << 10);
                    let cut = (cut..s.len()).find(|i| s.is_char_boundary(*i)).unwrap_or(0);
                    s.drain(..cut);
                }
            }
        });
        Ok(HostSession {
            host: format!("{} ({})", host.name, host.address()),
            conn,
            lines,
            errors,
            grace: Duration::from_secs(5),
            profiling: None,
        })
    }

    /// Why the session ended, from its stderr's last line.
    fn ended(&mut self) -> SiteError {
        // Give ssh a moment to write its last words and exit.
        self.conn.ended_within(Duration::from_secs(2));
        let err = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        let last = err.lines().rev().find(|l| !l.trim().is_empty());
        SiteError::Link(format!(
            "the session with {} ended{}",
            self.host,
            last.map(|l| format!(": {}", l.trim())).unwrap_or_default()
        ))
    }

    /// Sends `req` and waits up to `work` + [`SLACK`] for its answer; `failed` is the
    /// host's refusal.
    fn ask(&mut self, req: &Request, work: Duration) -> Result<Reply, SiteError> {
        match self.exchange(req, work)? {
            Reply::Failed { message } => Err(SiteError::Refused(message)),
            r => Ok(r),
        }
    }

    /// Sends `req` and waits up to `work` + [`SLACK`] for its answer, `failed` included.
    fn exchange(&mut self, req: &Request, work: Duration) -> Result<Reply, SiteError> {
        let mut line = serde_json::to_string(req).map_err(|e| SiteError::Link(e.to_string()))?;
        line.push('\n');
        let sent = match self.conn.stdin.as_mut() {
            Some(s) => s.write_all(line.as_bytes()).and_then(|_| s.flush()),
            None => {
                return Err(SiteError::Link(format!(
                    "the session with {} is closed",
                    self.host
                )))
            }
        };
        if sent.is_err() {
            return Err(self.ended());
        }
        let limit = work + SLACK;
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(text) => {
                    // A line that is not a reply (a login banner on stdout) is ignored.
                    if let Ok(r) = serde_json::from_str::<Reply>(&text) {
                        return Ok(r);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(SiteError::Link(format!(
                        "{}: no answer within {limit:?}",
                        self.host
                    )))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(self.ended()),
            }
        }
    }

    fn unexpected(&self, r: Reply) -> SiteError {
        SiteError::Link(format!("{}: an answer out of turn: {r:?}", self.host))
    }
}

impl Site for HostSession {
    fn start_service(&mut self, req: &ServiceRequest) -> Result<ServiceStarted, SiteError> {
        self.grace = Duration::from_secs_f64(req.grace_s.clamp(0.0, 3600.0));
        let work = Duration::from_secs_f64(req.ready_timeout_s.clamp(0.0, 24.0 * 3600.0));
        match self.ask(&Request::Service(req.clone()), work + self.grace)? {
            Reply::Ready { service } => Ok(service),
            r => Err(self.unexpected(r)),
        }
    }

    fn check_service(&mut self) -> Result<(), SiteError> {
        match self.ask(&Request::CheckService, Duration::ZERO)? {
            Reply::Alive => Ok(()),
            r => Err(self.unexpected(r)),
        }
    }

    fn stop_service(&mut self) -> Result<String, SiteError> {
        match self.ask(&Request::StopService, self.grace)? {
            Reply::Stopped { log } => Ok(log),
            r => Err(self.unexpected(r)),
        }
    }

    fn start_monitor(&mut self, monitor: &MonitorAttachment) -> Result<(), SiteError> {
        match self.ask(&Request::Monitor(monitor.clone()), Duration::ZERO)? {
            Reply::Monitoring => Ok(()),
            r => Err(self.unexpected(r)),
        }
    }

    fn stop_monitor(&mut self) -> Result<Recording, SiteError> {
        match self.ask(&Request::StopMonitor, Duration::ZERO)? {
            Reply::Recording { recording } => Ok(recording),
            r => Err(self.unexpected(r)),
        }
    }

    fn start_profile(&mut self, profile: &ProfileAttachment) -> Result<Option<i32>, SiteError> {
        self.profiling = Some(Instant::now());
        match self.ask(&Request::Profile(profile.clone()), PROFILE_START)? {
            Reply::Profiling { pid } => Ok(pid),
            r => Err(self.unexpected(r)),
        }
    }

    fn stop_profile(&mut self) -> Result<ProfileResult, SiteError> {
        // perf script reads the recording back: a minute, and twice the time recorded.
        let recorded = self
            .profiling
            .take()
            .map_or(Duration::ZERO, |t| t.elapsed());
        let work = Duration::from_secs(60) + recorded.saturating_mul(2);
        match self.ask(&Request::StopProfile, work)? {
            Reply::Profile { profile } => Ok(*profile),
            r => Err(self.unexpected(r)),
        }
    }
}

impl Drop for HostSession {
    /// Ends the session: stdin closed (the host stops what it runs for it, within its
    /// grace), then the ssh client killed if it has not gone by then.
    fn drop(&mut self) {
        self.conn.hang_up(self.grace + Duration::from_secs(5));
    }
}
