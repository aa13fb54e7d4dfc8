//! The controller of a distributed load (`perflab http URL --agents a,b`, or `--engine
//! slurm`): one load test split into segments, each run by `perflab worker` (an
//! *agent*, [`crate::agent`]), started together, and added back into one report.
//!
//! How the agents are started and spoken to is a [`Link`], one per launch engine: over
//! ssh, one session per inventory host with the same transport and deploy as every
//! remote trial ([`crate::ssh_agents`]); under Slurm, one `srun` whose tasks are the
//! agents, orders broadcast to all and their answers told apart by task label
//! ([`crate::slurm`]). The controller below — split, barrier, bounded waits, merge —
//! is the same for both.
//!
//! - **Split.** The connections, the open-loop rate and a request count (`-n`) are
//!   shared in proportion to weights: `--agent-weights`, else each agent's cores (from
//!   the facts its hello carries), else equal. Counts use the largest remainder, so the
//!   segments add up exactly ([`split_count`]).
//! - **Barrier.** Every agent gets its segment, checks it (resolves, serialises — nothing
//!   sent) and says `armed`; only when all have does the controller send `go` to all.
//!   Each answers with its clock at its start; corrected by that host's clock offset,
//!   the spread of those starts is the *start skew*. The offset is measured again at
//!   arming (the segment's send, the agent's clock on receiving it and on answering,
//!   the answer's arrival: NTP's formula over an established session — the hello's
//!   round trip included the connection itself).
//! - **Merge.** Each agent returns its report and its latency histograms; they are
//!   added (`Report::merge`: counts summed, percentiles from the added histograms,
//!   never averaged). Each recorded second's histograms are added likewise, so the
//!   merged series' p99 is the p99 of that second across agents.
//! - **Bounds.** Every wait has a deadline (the run's duration, its warm-up and its
//!   timeouts, plus [`SLACK`]), and ssh's keep-alives end a session whose link is down
//!   within about 15 s. An agent that is lost (its session ends, it fails, or it misses
//!   a deadline) fails only its own segment: the run reports it with the reason and
//!   merges the others. An agent lost before it could even be started is an [`Agent`]
//!   with its reason and no session.
//! - **Stopping.** When `stop` is set (Ctrl-C) every agent's stdin is closed: each
//!   ends its load at once and reports what ran.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use perflab_load::{decode_histogram, LoadSpec, Report};
use perflab_units::Phrase;

use crate::wire::{Order, Said};

/// The time a step may take beyond the work itself (a connection, a slow host).
pub const SLACK: Duration = Duration::from_secs(30);

/// Shares of `total` in proportion to `weights`, adding up to `total` exactly (the
/// largest remainders get the units rounding left over).
pub fn split_count(total: u64, weights: &[f64]) -> Vec<u64> {
    let sum: f64 = weights.iter().sum();
    if weights.is_empty() || sum <= 0.0 {
        return vec![0; weights.len()];
    }
    let exact: Vec<f64> = weights.iter().map(|w| total as f64 * w / sum).collect();
    let mut shares: Vec<u64> = exact.iter().map(|x| x.floor() as u64).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|a, b| {
        let (ra, rb) = (exact[*a].fract(), exact[*b].fract());
        rb.total_cmp(&ra).then(a.cmp(b))
    });
    let left = total.saturating_sub(shares.iter().sum());
    for i in order.into_iter().cycle().take(left as usize) {
        shares[i] += 1;
    }
    shares
}

/// Each agent's segment of `spec`: connections, rate, request count and most
/// connections shared by `weights`; every other setting as given. An error (naming
/// the count's field) when a count is too small to give every agent one.
pub fn segments(spec: &LoadSpec, weights: &[f64]) -> Result<Vec<LoadSpec>, Phrase> {
    let n = weights.len();
    let share = |what: &'static str, total: u64| -> Result<Vec<u64>, Phrase> {
        let s = split_count(total, weights);
        if s.contains(&0) {
            return Err(Phrase::field(what).then(format!(
                " {total} cannot be shared by {n} agents with weights {weights:?}: \
                 give each at least one"
            )));
        }
        Ok(s)
    };
    let conns = share("connections", spec.connections as u64)?;
    let requests = spec.requests.map(|r| share("requests", r)).transpose()?;
    let max_conns = spec
        .max_connections
        .map(|m| share("max_connections", m as u64))
        .transpose()?;
    let sum: f64 = weights.iter().sum();
    Ok((0..n)
        .map(|i| {
            let mut s = spec.clone();
            s.connections = conns[i] as usize;
            s.requests = requests.as_ref().map(|r| r[i]);
            s.max_connections = max_conns.as_ref().map(|m| m[i] as usize);
            s.rate = spec.rate.map(|r| r * weights[i] / sum);
            s.threads = spec.threads.map(|t| t.min(s.connections));
            s.thresholds.clear();
            s
        })
        .collect())
}

/// One agent's part in the run.
#[derive(Debug)]
pub struct AgentOutcome {
    pub name: String,
    /// Its weight in the split (0 when it was lost before the split).
    pub weight: f64,
    /// Its cores, as its facts say.
    pub cores: Option<u32>,
    /// Its segment's connections.
    pub connections: usize,
    /// Its report (with its histograms), or why it was lost.
    pub result: Result<Report, String>,
    /// Its compressed V2 latency histogram in base64, as it sent it.
    pub histogram: Option<String>,
    /// Its clock's offset from this one's, ms.
    pub clock_offset_ms: Option<f64>,
}

/// The whole run.
#[derive(Debug)]
pub struct Outcome {
    pub agents: Vec<AgentOutcome>,
    /// The reports of the agents that finished, added; None when none did.
    pub merged: Option<Report>,
    /// The spread of the agents' start times, corrected by their clock offsets, ms.
    pub start_skew_ms: Option<f64>,
    /// Why the launch itself failed (`srun` could not start the tasks), when no agent
    /// said hello and the engine knows.
    pub launch_failed: Option<String>,
}

/// What the run asks.
pub struct Plan<'a> {
    /// The whole load (its thresholds are judged by the caller, on the merged report).
    pub spec: &'a LoadSpec,
    /// Each agent's weight, in the link's order; None: by cores.
    pub weights: Option<&'a [f64]>,
    /// Set to stop every agent (Ctrl-C).
    pub stop: Arc<AtomicBool>,
}

/// A line from agent `.0` (None: its stream ended), with the time it was heard.
pub type Heard = (usize, Option<String>, i128);

/// The split, as the controller made it: agent `live[k]` runs `segments[k]`, of weight
/// `weights[k]`, of the whole load `spec`.
pub struct Split<'a> {
    pub spec: &'a LoadSpec,
    pub live: &'a [usize],
    pub weights: &'a [f64],
    pub segments: &'a [LoadSpec],
}

/// A launch engine's sessions with the agents: how they are started, how orders reach
/// them, how they end. Agents are numbered `0..names().len()`; every line they say
/// comes back on the channel given to [`Link::open`], tagged with that number.
pub trait Link {
    /// The agents' names until they say hello (inventory hosts, or `task N`).
    fn names(&self) -> Vec<String>;
    /// The connect timeout this engine waits on (the hello's deadline is this plus
    /// [`SLACK`]).
    fn connect_timeout(&self) -> Duration;
    /// Starts every agent and sends each the first order ([`Order::Agent`]); per agent:
    /// the time it was sent, or why the agent could not be started.
    fn open(&mut self, tx: mpsc::Sender<Heard>) -> Vec<Result<i128, String>>;
    /// Sends the agents in `split.live` their segments; the agents it could not send
    /// one to, and why.
    fn arm(&mut self, split: &Split) -> Vec<(usize, String)>;
    /// Sends `order` to the agents in `live`.
    fn tell(&mut self, live: &[usize], order: &Order);
    /// Closes every agent's stdin: each stops (Ctrl-C).
    fn close(&mut self);
    /// Agent `i` is lost: its session is ended where it has one of its own.
    fn drop_agent(&mut self, i: usize);
    /// Why agent `i`'s stream ended, from its (or its transport's) last words.
    fn ended(&mut self, i: usize) -> String;
    /// Ends every session (all stdins closed, then what is left is stopped).
    fn hang_up(&mut self);
    /// Why the launch itself failed (`srun` refused), asked when no agent said hello.
    fn failure(&mut self) -> Option<String> {
        None
    }
}

/// The controller's view of one agent.
struct Agent {
    name: String,
    /// Why it is lost, once it is (before it was started, too).
    lost: Option<String>,
    sent_ns: i128,
    offset_ns: Option<i128>,
    /// When its segment was sent (the arming exchange measures the clock offset again,
    /// over an established session: a far shorter round trip than the hello's).
    armed_sent_ns: Option<i128>,
    cores: Option<u32>,
    armed: bool,
    started_ns: Option<i128>,
    seconds: BTreeMap<u64, String>,
    report: Option<(Report, String)>,
}

pub(crate) fn now_ns() -> i128 {
    i128::from(crate::wire::now_ns())
}

impl Agent {
    fn new(name: String) -> Agent {
        Agent {
            name,
            lost: None,
            sent_ns: now_ns(),
            offset_ns: None,
            armed_sent_ns: None,
            cores: None,
            armed: false,
            started_ns: None,
            seconds: BTreeMap::new(),
            report: None,
        }
    }

    fn live(&self) -> bool {
        self.lost.is_none()
    }
}

/// The agents and their link.
struct Run<'l> {
    agents: Vec<Agent>,
    link: &'l mut dyn Link,
}

impl Run<'_> {
    fn live(&self) -> Vec<usize> {
        (0..self.agents.len())
            .filter(|i| self.agents[*i].live())
            .collect()
    }

    fn lose(&mut self, i: usize, why: String) {
        let a = &mut self.agents[i];
        if a.lost.is_none() {
            a.lost = Some(why);
            self.link.drop_agent(i);
        }
    }

    /// Takes in one line of agent `i` (None: the end of its stream).
    fn hear(&mut self, i: usize, line: Option<String>, at: i128) {
        if !self.agents[i].live() {
            return; // A lost agent's last lines (a Slurm task runs on): not counted.
        }
        let Some(line) = line else {
            if self.agents[i].report.is_some() {
                return; // Its work is done: the end of its session is no loss.
            }
            let why = self.link.ended(i);
            self.lose(i, why);
            return;
        };
        // A line that is not ours (a login banner on stdout): ignored.
        let Ok(said) = serde_json::from_str::<Said>(&line) else {
            return;
        };
        let a = &mut self.agents[i];
        match said {
            Said::Hello {
                unix_ns,
                cores,
                task,
                ..
            } => {
                a.offset_ns = Some(i128::from(unix_ns) - (a.sent_ns + at) / 2);
                a.cores = cores;
                if let Some(node) = task.and_then(|t| t.node) {
                    a.name = node;
                }
            }
            Said::Armed {
                received_ns: Some(t1),
                unix_ns: Some(t2),
            } if a.armed_sent_ns.is_some() => {
                // NTP's offset over the arming exchange: ((t1 - t0) + (t2 - t3)) / 2,
                // its error at most half the round trip less the agent's time between.
                let t0 = a.armed_sent_ns.unwrap_or_default();
                let (t1, t2) = (i128::from(t1), i128::from(t2));
                a.offset_ns = Some(((t1 - t0) + (t2 - at)) / 2);
                a.armed = true;
            }
            Said::Armed { .. } => a.armed = true,
            Said::Running { unix_ns } => a.started_ns = Some(i128::from(unix_ns)),
            Said::Second { second, histogram } => {
                a.seconds.insert(second, histogram);
            }
            Said::Report {
                report,
                histogram,
                histogram_uncorrected,
            } => match read_report(report, &histogram, histogram_uncorrected.as_deref()) {
                Ok(r) => a.report = Some((r, histogram)),
                Err(e) => self.lose(i, format!("its report: {e}")),
            },
            Said::Failed { message } => self.lose(i, message),
        }
    }

    /// Waits until `done` holds for every live agent, or the deadline (then the others
    /// are lost, with `what` as the reason), or `stop` (then, when `close` is false, it
    /// gives up at once; else it closes every stdin and waits a while longer).
    fn wait(
        &mut self,
        rx: &mpsc::Receiver<Heard>,
        limit: Duration,
        what: &str,
        done: impl Fn(&Agent) -> bool,
        close: bool,
        stop: &AtomicBool,
    ) {
        let mut deadline = Instant::now() + limit;
        let mut stopped = false;
        while self.agents.iter().any(|a| a.live() && !done(a)) {
            if !stopped && stop.load(Ordering::SeqCst) {
                stopped = true;
                if !close {
                    return;
                }
                self.link.close();
                deadline = deadline.min(Instant::now() + SLACK / 3);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                for i in 0..self.agents.len() {
                    if self.agents[i].live() && !done(&self.agents[i]) {
                        self.lose(i, format!("no {what} within {limit:?}"));
                    }
                }
                return;
            }
            if let Ok((i, line, at)) = rx.recv_timeout(left.min(Duration::from_millis(100))) {
                if i < self.agents.len() {
                    self.hear(i, line, at);
                }
            }
        }
    }
}

fn read_report(v: serde_json::Value, h: &str, unc: Option<&str>) -> Result<Report, String> {
    let r: Report = serde_json::from_value(v).map_err(|e| e.to_string())?;
    let unc = unc.map(decode_histogram).transpose()?;
    Ok(r.with_histograms(decode_histogram(h)?, unc))
}

/// Runs the load on the agents `link` starts; `progress` hears what happens (for
/// stderr).
pub fn run(link: &mut dyn Link, plan: &Plan, mut progress: impl FnMut(&str)) -> Outcome {
    let (tx, rx) = mpsc::channel();
    let mut agents: Vec<Agent> = link.names().into_iter().map(Agent::new).collect();
    let opened = link.open(tx);
    for (a, o) in agents.iter_mut().zip(opened) {
        match o {
            Ok(sent) => a.sent_ns = sent,
            Err(why) => a.lost = Some(why),
        }
    }
    let mut run = Run { agents, link };
    let spec = plan.spec;
    let stop = &plan.stop;
    let hello = run.link.connect_timeout() + SLACK;
    run.wait(&rx, hello, "hello", |a| a.offset_ns.is_some(), false, stop);
    let launch_failed = if run.agents.iter().all(|a| a.offset_ns.is_none()) {
        run.link.failure()
    } else {
        None
    };
    // The split, among the agents that answered.
    let live = run.live();
    let weights: Vec<f64> = live
        .iter()
        .map(|i| match plan.weights {
            Some(w) => w[*i],
            None => f64::from(run.agents[*i].cores.unwrap_or(1).max(1)),
        })
        .collect();
    let mut outcome_weight = vec![0.0; run.agents.len()];
    let mut outcome_conns = vec![0; run.agents.len()];
    if !live.is_empty() {
        match segments(spec, &weights) {
            Ok(segs) => {
                for ((i, seg), w) in live.iter().zip(&segs).zip(&weights) {
                    outcome_weight[*i] = *w;
                    outcome_conns[*i] = seg.connections;
                }
                let split = Split {
                    spec,
                    live: &live,
                    weights: &weights,
                    segments: &segs,
                };
                let t0 = now_ns();
                for i in &live {
                    run.agents[*i].armed_sent_ns = Some(t0);
                }
                for (i, why) in run.link.arm(&split) {
                    run.lose(i, why);
                }
                progress(&format!(
                    "agents: {} armed with their segments; waiting at the barrier",
                    live.len()
                ));
            }
            Err(e) => {
                for i in &live {
                    run.lose(*i, e.to_string());
                }
            }
        }
        let armed_limit = spec.connect_timeout + SLACK;
        run.wait(&rx, armed_limit, "armed", |a| a.armed, false, stop);
    }
    // The barrier is passed: go, all together.
    let run_limit = spec
        .effective_duration()
        .map(|d| d + spec.warmup + spec.timeout + spec.connect_timeout + SLACK)
        .unwrap_or(Duration::from_secs(24 * 3600));
    if !stop.load(Ordering::SeqCst) && run.agents.iter().any(|a| a.live()) {
        let live = run.live();
        run.link.tell(&live, &Order::Go);
        progress("agents: go");
        run.wait(&rx, run_limit, "report", |a| a.report.is_some(), true, stop);
    }
    run.link.hang_up();
    let mut outcome = finish(run.agents, outcome_weight, outcome_conns);
    outcome.launch_failed = launch_failed;
    outcome
}

/// The reports merged.
fn finish(agents: Vec<Agent>, weights: Vec<f64>, conns: Vec<usize>) -> Outcome {
    let starts: Vec<f64> = agents
        .iter()
        .filter(|a| a.report.is_some())
        .filter_map(|a| Some((a.started_ns? - a.offset_ns?) as f64 / 1e6))
        .collect();
    let start_skew_ms = (!starts.is_empty()).then(|| {
        let max = starts.iter().copied().fold(f64::MIN, f64::max);
        let min = starts.iter().copied().fold(f64::MAX, f64::min);
        max - min
    });
    let parts: Vec<Report> = agents
        .iter()
        .filter_map(|a| a.report.as_ref().map(|(r, _)| r.clone()))
        .collect();
    let mut merged = Report::merge(&parts);
    if let Some(m) = merged.as_mut() {
        // Each second's p99 from the agents' histograms of that second, added.
        for p in &mut m.series {
            let hists: Vec<_> = agents
                .iter()
                .filter(|a| a.report.is_some())
                .filter_map(|a| a.seconds.get(&p.second))
                .filter_map(|h| decode_histogram(h).ok())
                .collect();
            if !hists.is_empty() {
                p.p99_ms = perflab_load::second_p99(hists.iter());
            }
        }
    }
    let agents = agents
        .into_iter()
        .enumerate()
        .map(|(i, a)| {
            let (result, histogram) = match (a.report, a.lost) {
                (Some((r, h)), _) => (Ok(r), Some(h)),
                (None, Some(why)) => (Err(why), None),
                (None, None) => (Err("no report".into()), None),
            };
            AgentOutcome {
                name: a.name,
                weight: weights[i],
                cores: a.cores,
                connections: conns[i],
                result,
                histogram,
                clock_offset_ms: a.offset_ns.map(|o| o as f64 / 1e6),
            }
        })
        .collect();
    Outcome {
        agents,
        merged,
        start_skew_ms,
        launch_failed: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_follow_the_weights() {
        assert_eq!(split_count(10, &[1.0, 1.0]), vec![5, 5]);
        assert_eq!(split_count(10, &[1.0, 2.0]), vec![3, 7]);
        assert_eq!(split_count(2000, &[2.0, 2.0, 2.0]), vec![667, 667, 666]);
        assert_eq!(split_count(7, &[4.0, 2.0, 1.0]), vec![4, 2, 1]);
        assert_eq!(split_count(3, &[0.0, 0.0]), vec![0, 0]);
    }

    #[test]
    fn segments_share_connections_rate_and_requests() {
        let mut spec = LoadSpec::new("http://127.0.0.1:9/");
        spec.connections = 6;
        spec.requests = Some(1000);
        let segs = segments(&spec, &[1.0, 2.0]).unwrap();
        assert_eq!(segs[0].connections + segs[1].connections, 6);
        assert_eq!((segs[0].requests, segs[1].requests), (Some(333), Some(667)));
        let mut open = LoadSpec::new("http://127.0.0.1:9/");
        open.rate = Some(900.0);
        let segs = segments(&open, &[1.0, 2.0]).unwrap();
        assert!((segs[0].rate.unwrap() - 300.0).abs() < 1e-9);
        assert!((segs[1].rate.unwrap() - 600.0).abs() < 1e-9);
    }

    #[test]
    fn too_few_connections_for_the_agents_name_the_field() {
        let mut spec = LoadSpec::new("http://127.0.0.1:9/");
        spec.connections = 1;
        // The field, as an experiment file names it; `perflab http --agents` says `-c`.
        let e = segments(&spec, &[1.0, 1.0]).unwrap_err();
        assert_eq!(e.subject(), Some("connections"));
        let e = e.to_string();
        assert!(e.starts_with("`connections` 1"), "{e}");
    }
}
