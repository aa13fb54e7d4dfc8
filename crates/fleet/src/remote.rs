//! A trial on another host: [`Fleet`] is the runner's [`WorkloadFactory`] for runs with
//! `on = [...]` / `--on` or `[workload] host = "a"`: a trial whose `host` parameter (or
//! the run's workload host) names an inventory host becomes a [`RemoteTrial`], which
//! starts `perflab worker` there (over ssh, or the fleet's other [`WorkerLink`]), sends
//! the [`TrialSpec`] and reads the answer; any other trial is built here as usual. The first use of a host puts perflab
//! there ([`crate::deploy`]); a host that cannot be reached or prepared fails its own
//! trials, each with the reason, and the others go on.
//!
//! [`Fleet`] is also the runner's [`Sites`]: it opens the [`HostSession`]s in which the
//! service under test and its monitor run on their host (`[service] host`, `[monitor]
//! host`), and tells templates the service host's address (`{service_host}`).
//!
//! The measurement comes back with one more artifact, `host.json`: the host's name, its
//! facts, and its clock's offset from this one (the worker's time at start against the
//! midpoint of sending the spec and hearing back; the error is at most half that round
//! trip, which is recorded beside it).

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use perflab_lab::site::{Site, SiteError, Sites};
use perflab_workloads::spec::{Builtin, KindSpec, TrialSpec, WorkloadFactory};
use perflab_workloads::{ArtifactData, Measurement, TrialContext, Workload, WorkloadError};

use crate::hosts::Fleet;
use crate::inventory::Host;
use crate::link::{Conn, WorkerLink};
use crate::session::HostSession;
use crate::wire::Event;

impl WorkloadFactory for Fleet {
    fn build(&self, trial: &TrialSpec) -> Result<Box<dyn Workload>, WorkloadError> {
        // A distributed load runs from its agents, whoever starts it.
        if let KindSpec::Http(o) = &trial.workload {
            if let (options, Some(agents)) =
                perflab_workloads::http::split_agents(o).map_err(WorkloadError::Setup)?
            {
                return Ok(Box::new(crate::agents_trial::AgentsTrial {
                    fleet: self.clone(),
                    options,
                    agents,
                }));
            }
        }
        let param = trial.params.get("host").and_then(|v| v.as_str());
        let Some(name) = param.or(self.workload_host.as_deref()) else {
            return Builtin.build(trial);
        };
        let host = self.inventory.get(name).map_err(WorkloadError::Setup)?;
        let perflab = self
            .perflab_on(host)
            .map_err(|e| WorkloadError::Setup(e.to_string()))?;
        Ok(Box::new(RemoteTrial {
            host: host.clone(),
            link: self.link.clone(),
            perflab,
            spec: trial.clone(),
        }))
    }

    /// Each host's trials are independent of the others' (they run there, over their
    /// own ssh sessions), so a run drives its hosts in parallel.
    fn concurrent(&self) -> Option<&(dyn WorkloadFactory + Sync)> {
        Some(self)
    }
}

impl Sites for Fleet {
    fn address(&self, host: &str) -> Result<String, SiteError> {
        let h = self.inventory.get(host).map_err(SiteError::NoHost)?;
        Ok(h.address().to_string())
    }

    fn open(&self, host: &str) -> Result<Box<dyn Site>, SiteError> {
        let h = self.inventory.get(host).map_err(SiteError::NoHost)?;
        let perflab = self
            .perflab_on(h)
            .map_err(|e| SiteError::Link(e.to_string()))?;
        Ok(Box::new(HostSession::open(&*self.link, h, &perflab)?))
    }
}

/// One trial run by `perflab worker` on a host.
pub struct RemoteTrial {
    pub host: Host,
    /// How the host's worker is reached.
    pub link: Arc<dyn WorkerLink>,
    /// The perflab there, as a shell word.
    pub perflab: String,
    pub spec: TrialSpec,
}

fn now_ns() -> i128 {
    i128::from(crate::wire::now_ns())
}

/// A worker started for one trial: its stdout's lines (with when each was heard) and
/// its stderr, read by threads of their own.
struct Started {
    conn: Conn,
    lines: mpsc::Receiver<(String, i128)>,
    errors: Option<JoinHandle<String>>,
}

/// What the worker said before its answer: its host's facts and clock.
#[derive(Default)]
struct Heard {
    facts: serde_json::Value,
    clock: serde_json::Value,
}

impl RemoteTrial {
    /// Starts the worker and the threads that read it.
    fn start(&self) -> Result<Started, WorkloadError> {
        let mut conn = self
            .link
            .worker(&self.host, &self.perflab)
            .map_err(|e| WorkloadError::Setup(e.to_string()))?;
        let (tx, lines) = mpsc::channel();
        let stdout = conn.stdout.take().expect("a worker's stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send((line, now_ns()));
            }
        });
        let mut stderr = conn.stderr.take().expect("a worker's stderr");
        let errors = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        Ok(Started {
            conn,
            lines,
            errors: Some(errors),
        })
    }

    /// Sends the trial spec; when it was sent, by this clock.
    fn send_spec(&self, w: &mut Started) -> Result<i128, WorkloadError> {
        let mut line = serde_json::to_string(&self.spec)
            .map_err(|e| WorkloadError::Setup(format!("the trial spec: {e}")))?;
        line.push('\n');
        let sent_at = now_ns();
        if let Some(stdin) = w.conn.stdin.as_mut() {
            // A failed write means the link is already gone: its stderr says why.
            let _ = stdin.write_all(line.as_bytes()).and_then(|_| stdin.flush());
        }
        Ok(sent_at)
    }

    /// Reads the worker's events until its answer, an interrupt, the trial's limit or
    /// the end of the link.
    fn answer(
        &self,
        w: &mut Started,
        ctx: &TrialContext,
        sent_at: i128,
        heard: &mut Heard,
    ) -> Result<Measurement, WorkloadError> {
        // The trial's own limit, and time for the connection on top of it.
        let limit = ctx
            .timeout
            .map(|t| t + Duration::from_secs(30))
            .unwrap_or(Duration::from_secs(24 * 3600));
        let started = Instant::now();
        let grace = Duration::from_secs(5);
        loop {
            if ctx.interrupted.load(Ordering::SeqCst) {
                w.conn.hang_up(grace);
                return Err(WorkloadError::Interrupted);
            }
            if started.elapsed() > limit {
                w.conn.hang_up(grace);
                return Err(WorkloadError::Setup(format!(
                    "host {}: no answer within {limit:?}",
                    self.host.name
                )));
            }
            let (text, heard_at) = match w.lines.recv_timeout(Duration::from_millis(50)) {
                Ok(l) => l,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(self.lost(w)),
            };
            match serde_json::from_str::<Event>(&text) {
                Ok(Event::Started { unix_ns, host, .. }) => {
                    let mid = (sent_at + heard_at) / 2;
                    heard.clock = serde_json::json!({
                        "offset_ms": (i128::from(unix_ns) - mid) as f64 / 1e6,
                        "uncertainty_ms": (heard_at - sent_at) as f64 / 2e6,
                    });
                    heard.facts = host;
                }
                Ok(e) => {
                    w.conn.hang_up(grace);
                    return e.into_result().expect("not a start event");
                }
                // A line that is not ours (a login banner on stdout): ignored.
                Err(_) => {}
            }
        }
    }

    /// The link ended without an answer: why, from its stderr's last line or how
    /// it exited. (Marked `host NAME`, so [`RemoteTrial::run`] leaves it as it is.)
    fn lost(&self, w: &mut Started) -> WorkloadError {
        let status = w.conn.ended_within(Duration::from_secs(5));
        let err = w
            .errors
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        let last = err.lines().rev().find(|l| !l.trim().is_empty());
        WorkloadError::Setup(format!(
            "host {} ({}): the worker ended without an answer{}",
            self.host.name,
            self.host.address(),
            match (last, status) {
                (Some(l), _) => format!(": {}", l.trim()),
                (None, Some(s)) => format!(" ({s})"),
                (None, None) => String::new(),
            }
        ))
    }

    /// The measurement with its `host.json` (the host's name, facts and clock).
    fn tag(&self, mut m: Measurement, heard: &Heard) -> Measurement {
        let doc = serde_json::json!({
            "name": self.host.name,
            "facts": heard.facts,
            "clock": heard.clock,
        });
        m.artifacts.push(ArtifactData {
            name: "host.json".into(),
            media_type: "application/json".into(),
            content: serde_json::to_vec_pretty(&doc).unwrap_or_default(),
        });
        m
    }
}

impl Workload for RemoteTrial {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        let h = &self.host.name;
        let mut w = self.start()?;
        let mut heard = Heard::default();
        let result = self
            .send_spec(&mut w)
            .and_then(|sent_at| self.answer(&mut w, ctx, sent_at, &mut heard));
        match result {
            Ok(m) => Ok(self.tag(m, &heard)),
            Err(WorkloadError::Failed { message, partial }) => Err(WorkloadError::Failed {
                message: format!("host {h}: {message}"),
                partial: Box::new(self.tag(*partial, &heard)),
            }),
            Err(WorkloadError::Setup(m)) if !m.starts_with("host ") => {
                Err(WorkloadError::Setup(format!("host {h}: {m}")))
            }
            Err(e) => Err(e),
        }
    }
}
