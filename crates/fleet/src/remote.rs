//! A trial on another host: [`Fleet`] is the runner's [`WorkloadFactory`] for runs with
//! `on = [...]` / `--on` or `[workload] host = "a"`: a trial whose `host` parameter (or
//! the run's workload host) names an inventory host becomes a [`RemoteTrial`], which
//! starts `perflab worker` there over ssh, sends the [`TrialSpec`] and reads the
//! answer; any other trial is built here as usual. The first use of a host puts perflab
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

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::Child;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use perflab_workloads::spec::{Builtin, KindSpec, TrialSpec, WorkloadFactory};
use perflab_workloads::{ArtifactData, Measurement, TrialContext, Workload, WorkloadError};

use perflab_lab::site::{Site, Sites};

use crate::inventory::{Host, Inventory};
use crate::session::HostSession;
use crate::ssh::Ssh;
use crate::worker::Event;

/// A host's perflab (the word to run it by there), or why it has none: settled once.
type Deployed = Arc<OnceLock<Result<String, String>>>;

/// The factory of a run over hosts. (A clone shares what has been deployed.)
#[derive(Clone)]
pub struct Fleet {
    pub inventory: Inventory,
    pub ssh: Ssh,
    /// Where the stripped binary is prepared before it is copied.
    pub scratch: PathBuf,
    /// `[workload] host`: where every trial's workload runs (unless its `host`
    /// parameter, from `on`, says otherwise).
    pub workload_host: Option<String>,
    /// Per host: the perflab to run there, or why there is none.
    /// (Hosts deploy in parallel: a host's first trial waits only for its own.)
    deployed: Arc<Mutex<HashMap<String, Deployed>>>,
}

impl Fleet {
    pub fn new(inventory: Inventory, ssh: Ssh, scratch: PathBuf) -> Fleet {
        Fleet {
            inventory,
            ssh,
            scratch,
            workload_host: None,
            deployed: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    pub(crate) fn perflab_on(&self, host: &Host) -> Result<String, String> {
        let cell = {
            let mut d = self.deployed.lock().unwrap_or_else(|e| e.into_inner());
            d.entry(host.name.clone()).or_default().clone()
        };
        cell.get_or_init(|| crate::deploy::ensure(&self.ssh, host, &self.scratch))
            .clone()
    }
}

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
        let perflab = self.perflab_on(host).map_err(WorkloadError::Setup)?;
        Ok(Box::new(RemoteTrial {
            host: host.clone(),
            ssh: self.ssh.clone(),
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
    fn address(&self, host: &str) -> Result<String, String> {
        Ok(self.inventory.get(host)?.address().to_string())
    }

    fn open(&self, host: &str) -> Result<Box<dyn Site>, String> {
        let h = self.inventory.get(host)?;
        let perflab = self.perflab_on(h)?;
        Ok(Box::new(HostSession::open(&self.ssh, h, &perflab)?))
    }
}

/// One trial run by `perflab worker` on a host.
pub struct RemoteTrial {
    pub host: Host,
    pub ssh: Ssh,
    /// The perflab there, as a shell word.
    pub perflab: String,
    pub spec: TrialSpec,
}

fn now_ns() -> i128 {
    i128::from(crate::worker::now_ns())
}

/// Ends the session: stdin closed (the worker stops what it started), then the ssh
/// client killed if it has not gone within `grace`.
pub(crate) fn hang_up(child: &mut Child, grace: Duration) {
    drop(child.stdin.take());
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl Workload for RemoteTrial {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        let h = &self.host.name;
        let mut child = self
            .ssh
            .worker(&self.host, &self.perflab)
            .map_err(WorkloadError::Setup)?;
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send((line, now_ns()));
            }
        });
        let mut stderr = child.stderr.take().expect("piped stderr");
        let errors = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let mut line = serde_json::to_string(&self.spec)
            .map_err(|e| WorkloadError::Setup(format!("the trial spec: {e}")))?;
        line.push('\n');
        let sent_at = now_ns();
        if let Some(stdin) = child.stdin.as_mut() {
            // A failed write means ssh is already gone: its stderr says why, below.
            let _ = stdin.write_all(line.as_bytes()).and_then(|_| stdin.flush());
        }
        // The trial's own limit, and time for the connection on top of it.
        let limit = ctx
            .timeout
            .map(|t| t + Duration::from_secs(30))
            .unwrap_or(Duration::from_secs(24 * 3600));
        let started = Instant::now();
        let mut facts = serde_json::Value::Null;
        let mut clock = serde_json::Value::Null;
        let result = loop {
            if ctx.interrupted.load(Ordering::SeqCst) {
                hang_up(&mut child, Duration::from_secs(5));
                break Err(WorkloadError::Interrupted);
            }
            if started.elapsed() > limit {
                hang_up(&mut child, Duration::from_secs(5));
                break Err(WorkloadError::Setup(format!(
                    "host {h}: no answer within {:?}",
                    limit
                )));
            }
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok((text, heard_at)) => match serde_json::from_str::<Event>(&text) {
                    Ok(Event::Started { unix_ns, host, .. }) => {
                        let mid = (sent_at + heard_at) / 2;
                        clock = serde_json::json!({
                            "offset_ms": (i128::from(unix_ns) - mid) as f64 / 1e6,
                            "uncertainty_ms": (heard_at - sent_at) as f64 / 2e6,
                        });
                        facts = host;
                    }
                    Ok(e) => {
                        hang_up(&mut child, Duration::from_secs(5));
                        break e.into_result().expect("not a start event");
                    }
                    // A line that is not ours (a login banner on stdout): ignored.
                    Err(_) => {}
                },
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = child.wait().ok();
                    let err = errors.join().unwrap_or_default();
                    let last = err.lines().rev().find(|l| !l.trim().is_empty());
                    return Err(WorkloadError::Setup(format!(
                        "host {h} ({}): the worker ended without an answer{}",
                        self.host.address(),
                        match (last, status) {
                            (Some(l), _) => format!(": {}", l.trim()),
                            (None, Some(s)) => format!(" ({s})"),
                            (None, None) => String::new(),
                        }
                    )));
                }
            }
        };
        let tag = |mut m: Measurement| {
            let doc = serde_json::json!({"name": h, "facts": facts, "clock": clock});
            m.artifacts.push(ArtifactData {
                name: "host.json".into(),
                media_type: "application/json".into(),
                content: serde_json::to_vec_pretty(&doc).unwrap_or_default(),
            });
            m
        };
        match result {
            Ok(m) => Ok(tag(m)),
            Err(WorkloadError::Failed { message, partial }) => Err(WorkloadError::Failed {
                message: format!("host {h}: {message}"),
                partial: Box::new(tag(*partial)),
            }),
            Err(WorkloadError::Setup(m)) if !m.starts_with("host ") => {
                Err(WorkloadError::Setup(format!("host {h}: {m}")))
            }
            Err(e) => Err(e),
        }
    }
}
