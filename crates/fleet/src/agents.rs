//! The controller of a distributed load (`perflab http URL --agents a,b`): one load
//! test split into segments, each run by `perflab worker` on an inventory host (an
//! *agent*, [`crate::agent`]) over the same ssh transport and deploy as every remote
//! trial, started together, and added back into one report.
//!
//! - **Split.** The connections, the open-loop rate and a request count (`-n`) are
//!   shared in proportion to weights: `--agent-weights`, else each agent's cores (from
//!   the facts its hello carries), else equal. Counts use the largest remainder, so the
//!   segments add up exactly ([`split_count`]).
//! - **Barrier.** Every agent gets its segment, checks it (resolves, serialises — nothing
//!   sent) and says `armed`; only when all have does the controller send `go` to all.
//!   Each answers with its clock at its start; corrected by that host's clock offset
//!   (measured at its hello, as for a remote trial) the spread of those starts is the
//!   *start skew*.
//! - **Merge.** Each agent returns its report and its latency histograms; they are
//!   added (`Report::merge`: counts summed, percentiles from the added histograms,
//!   never averaged). Each recorded second's histograms are added likewise, so the
//!   merged series' p99 is the p99 of that second across agents.
//! - **Bounds.** Every wait has a deadline (the run's duration, its warm-up and its
//!   timeouts, plus [`SLACK`]), and ssh's keep-alives end a session whose link is down
//!   within about 15 s. An agent that is lost (its session ends, it fails, or it misses
//!   a deadline) fails only its own segment: the run reports it with the reason and
//!   merges the others.
//! - **Stopping.** When `stop` is set (Ctrl-C) every agent's stdin is closed: each
//!   ends its load at once and reports what ran.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use perflab_load::{decode_histogram, LoadSpec, Report};

use crate::agent::{Order, Said};
use crate::remote::Fleet;

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
/// the flag) when a count is too small to give every agent one.
pub fn segments(spec: &LoadSpec, weights: &[f64]) -> Result<Vec<LoadSpec>, String> {
    let n = weights.len();
    let share = |what: &str, total: u64| -> Result<Vec<u64>, String> {
        let s = split_count(total, weights);
        if s.contains(&0) {
            return Err(format!(
                "{what} {total} cannot be shared by {n} agents with weights {weights:?}: \
                 give each at least one"
            ));
        }
        Ok(s)
    };
    let conns = share("-c", spec.connections as u64)?;
    let requests = spec.requests.map(|r| share("-n", r)).transpose()?;
    let max_conns = spec
        .max_connections
        .map(|m| share("--max-connections", m as u64))
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
}

/// What the run asks.
pub struct Plan<'a> {
    /// The whole load (its thresholds are judged by the caller, on the merged report).
    pub spec: &'a LoadSpec,
    /// Inventory host names.
    pub agents: &'a [String],
    /// `--agent-weights`; None: by cores.
    pub weights: Option<&'a [f64]>,
    /// Set to stop every agent (Ctrl-C).
    pub stop: Arc<AtomicBool>,
}

/// A line from an agent (None: its stdout ended), with the time it was heard.
type Heard = (usize, Option<String>, i128);

/// One open session with an agent.
struct Link {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    errors: Arc<Mutex<String>>,
    sent_ns: i128,
    /// Why it is lost, once it is.
    lost: Option<String>,
    offset_ns: Option<i128>,
    cores: Option<u32>,
    started_ns: Option<i128>,
    seconds: BTreeMap<u64, String>,
    report: Option<(Report, String)>,
}

fn now_ns() -> i128 {
    i128::from(crate::worker::now_ns())
}

impl Link {
    fn open(fleet: &Fleet, name: &str, i: usize, tx: mpsc::Sender<Heard>) -> Result<Link, String> {
        let host = fleet.inventory.get(name)?;
        let perflab = fleet.perflab_on(host)?;
        let mut child = fleet
            .ssh
            .script(host, &format!("exec {perflab} worker"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: a terminal's Ctrl-C reaches perflab alone.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", fleet.ssh.program))?;
        let stdout = child.stdout.take().expect("piped stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send((i, Some(line), now_ns())).is_err() {
                    return;
                }
            }
            let _ = tx.send((i, None, now_ns()));
        });
        let errors = Arc::new(Mutex::new(String::new()));
        let (mut stderr, sink) = (child.stderr.take().expect("piped stderr"), errors.clone());
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            sink.lock().unwrap_or_else(|e| e.into_inner()).push_str(&s);
        });
        let mut link = Link {
            name: format!("{name} ({})", host.address()),
            stdin: child.stdin.take(),
            child,
            errors,
            sent_ns: now_ns(),
            lost: None,
            offset_ns: None,
            cores: None,
            started_ns: None,
            seconds: BTreeMap::new(),
            report: None,
        };
        link.send(&Order::Agent);
        Ok(link)
    }

    fn live(&self) -> bool {
        self.lost.is_none()
    }

    fn send(&mut self, o: &Order) {
        let Ok(mut line) = serde_json::to_string(o) else {
            return;
        };
        line.push('\n');
        self.sent_ns = now_ns();
        if let Some(s) = self.stdin.as_mut() {
            // A failed write means ssh is gone: its end of stdout says so, with why.
            let _ = s.write_all(line.as_bytes()).and_then(|_| s.flush());
        }
    }

    fn lose(&mut self, why: String) {
        if self.lost.is_none() {
            self.lost = Some(why);
        }
        crate::remote::hang_up(&mut self.child, Duration::from_secs(2));
    }

    /// Why the session ended, from ssh's (or the worker's) last words.
    fn ended(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(20));
        let err = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        let last = err.lines().rev().find(|l| !l.trim().is_empty());
        format!(
            "the session ended{}",
            last.map(|l| format!(": {}", l.trim())).unwrap_or_default()
        )
    }

    /// Takes in one line (None: the end of its stdout).
    fn hear(&mut self, line: Option<String>, at: i128) {
        let Some(line) = line else {
            if self.report.is_some() {
                return; // Its work is done: the end of its session is no loss.
            }
            let why = self.ended();
            self.lose(why);
            return;
        };
        // A line that is not ours (a login banner on stdout): ignored.
        let Ok(said) = serde_json::from_str::<Said>(&line) else {
            return;
        };
        match said {
            Said::Hello { unix_ns, cores, .. } => {
                self.offset_ns = Some(i128::from(unix_ns) - (self.sent_ns + at) / 2);
                self.cores = cores;
            }
            Said::Armed => {}
            Said::Running { unix_ns } => self.started_ns = Some(i128::from(unix_ns)),
            Said::Second { second, histogram } => {
                self.seconds.insert(second, histogram);
            }
            Said::Report {
                report,
                histogram,
                histogram_uncorrected,
            } => match read_report(report, &histogram, histogram_uncorrected.as_deref()) {
                Ok(r) => self.report = Some((r, histogram)),
                Err(e) => self.lose(format!("its report: {e}")),
            },
            Said::Failed { message } => self.lose(message),
        }
    }
}

fn read_report(v: serde_json::Value, h: &str, unc: Option<&str>) -> Result<Report, String> {
    let r: Report = serde_json::from_value(v).map_err(|e| e.to_string())?;
    let unc = unc.map(decode_histogram).transpose()?;
    Ok(r.with_histograms(decode_histogram(h)?, unc))
}

/// Waits until `done` holds for every live link, or the deadline (then the others
/// are lost, with `what` as the reason), or `stop` (when `on_stop` says to give up).
fn wait(
    links: &mut [Link],
    rx: &mpsc::Receiver<Heard>,
    limit: Duration,
    what: &str,
    done: impl Fn(&Link) -> bool,
    mut on_stop: impl FnMut(&mut [Link]) -> bool,
    stop: &AtomicBool,
) {
    let mut deadline = Instant::now() + limit;
    let mut stopped = false;
    while links.iter().any(|l| l.live() && !done(l)) {
        if !stopped && stop.load(Ordering::SeqCst) {
            stopped = true;
            if on_stop(links) {
                return;
            }
            deadline = deadline.min(Instant::now() + SLACK / 3);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            for l in links.iter_mut().filter(|l| l.live() && !done(l)) {
                l.lose(format!("no {what} within {limit:?}"));
            }
            return;
        }
        if let Ok((i, line, at)) = rx.recv_timeout(left.min(Duration::from_millis(100))) {
            links[i].hear(line, at);
        }
    }
}

/// Runs the load on the agents; `progress` hears what happens (for stderr).
pub fn run(fleet: &Fleet, plan: &Plan, mut progress: impl FnMut(&str)) -> Outcome {
    let (tx, rx) = mpsc::channel();
    // Deploy and connect in parallel: a slow host does not hold up the others' start.
    let opened: Vec<Result<Link, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = plan
            .agents
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let tx = tx.clone();
                s.spawn(move || Link::open(fleet, name, i, tx))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("panicked".into())))
            .collect()
    });
    drop(tx);
    let mut lost_early: Vec<(usize, String)> = Vec::new();
    let mut links: Vec<Link> = Vec::new();
    for (i, r) in opened.into_iter().enumerate() {
        match r {
            Ok(l) => links.push(l),
            Err(e) => {
                lost_early.push((i, e));
                // A placeholder keeps indices aligned with the senders' numbers.
                links.push(placeholder(&plan.agents[i]));
            }
        }
    }
    for (i, e) in lost_early {
        links[i].lost = Some(e);
    }
    let spec = plan.spec;
    let stop = &plan.stop;
    let connect = Duration::from_secs(u64::from(fleet.ssh.connect_timeout_s));
    let give_up = |_: &mut [Link]| true;
    wait(
        &mut links,
        &rx,
        connect + SLACK,
        "hello",
        |l| l.offset_ns.is_some(),
        give_up,
        stop,
    );
    // The split, among the agents that answered.
    let live: Vec<usize> = (0..links.len()).filter(|i| links[*i].live()).collect();
    let weights: Vec<f64> = live
        .iter()
        .map(|i| match plan.weights {
            Some(w) => w[*i],
            None => f64::from(links[*i].cores.unwrap_or(1).max(1)),
        })
        .collect();
    let mut outcome_weight = vec![0.0; links.len()];
    let mut outcome_conns = vec![0; links.len()];
    if !live.is_empty() {
        match segments(spec, &weights) {
            Ok(segs) => {
                for ((i, seg), w) in live.iter().zip(segs).zip(&weights) {
                    outcome_weight[*i] = *w;
                    outcome_conns[*i] = seg.connections;
                    match seg.to_table() {
                        Ok(t) => links[*i].send(&Order::Spec(t)),
                        Err(e) => links[*i].lose(e.to_string()),
                    }
                }
                progress(&format!(
                    "agents: {} armed with their segments; waiting at the barrier",
                    live.len()
                ));
            }
            Err(e) => {
                for i in &live {
                    links[*i].lose(e.clone());
                }
            }
        }
        let armed_limit = spec.connect_timeout + SLACK;
        wait_armed(&mut links, &rx, armed_limit, stop);
    }
    // The barrier is passed: go, all together.
    let run_limit = spec
        .effective_duration()
        .map(|d| d + spec.warmup + spec.timeout + spec.connect_timeout + SLACK)
        .unwrap_or(Duration::from_secs(24 * 3600));
    if !stop.load(Ordering::SeqCst) {
        for l in links.iter_mut().filter(|l| l.live()) {
            l.send(&Order::Go);
        }
        progress("agents: go");
        let close_all = |links: &mut [Link]| {
            for l in links.iter_mut() {
                drop(l.stdin.take());
            }
            false
        };
        wait(
            &mut links,
            &rx,
            run_limit,
            "report",
            |l| l.report.is_some(),
            close_all,
            stop,
        );
    }
    finish(links, outcome_weight, outcome_conns)
}

/// Waits for every live agent's `armed` (an agent says nothing else before it).
fn wait_armed(links: &mut [Link], rx: &mpsc::Receiver<Heard>, limit: Duration, stop: &AtomicBool) {
    let deadline = Instant::now() + limit;
    let mut armed = vec![false; links.len()];
    while (0..links.len()).any(|i| links[i].live() && !armed[i]) {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            for (i, l) in links.iter_mut().enumerate() {
                if l.live() && !armed[i] {
                    l.lose(format!("not armed within {limit:?}"));
                }
            }
            return;
        }
        if let Ok((i, line, at)) = rx.recv_timeout(left.min(Duration::from_millis(100))) {
            if line
                .as_deref()
                .and_then(|t| serde_json::from_str::<Said>(t).ok())
                .is_some_and(|s| matches!(s, Said::Armed))
            {
                armed[i] = true;
            }
            links[i].hear(line, at);
        }
    }
}

/// A link that never opened (its host could not be reached or prepared).
fn placeholder(name: &str) -> Link {
    // `true` exits at once: a child to hold, never a session.
    let child = std::process::Command::new("true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .or_else(|_| std::process::Command::new("/bin/true").spawn())
        .expect("spawn true");
    Link {
        name: name.to_string(),
        child,
        stdin: None,
        errors: Arc::default(),
        sent_ns: 0,
        lost: Some("not opened".into()),
        offset_ns: None,
        cores: None,
        started_ns: None,
        seconds: BTreeMap::new(),
        report: None,
    }
}

/// Every session closed; the reports merged.
fn finish(mut links: Vec<Link>, weights: Vec<f64>, conns: Vec<usize>) -> Outcome {
    for l in &mut links {
        drop(l.stdin.take());
        crate::remote::hang_up(&mut l.child, Duration::from_secs(5));
    }
    let starts: Vec<f64> = links
        .iter()
        .filter(|l| l.report.is_some())
        .filter_map(|l| Some((l.started_ns? - l.offset_ns?) as f64 / 1e6))
        .collect();
    let start_skew_ms = (!starts.is_empty()).then(|| {
        let max = starts.iter().copied().fold(f64::MIN, f64::max);
        let min = starts.iter().copied().fold(f64::MAX, f64::min);
        max - min
    });
    let parts: Vec<Report> = links
        .iter()
        .filter_map(|l| l.report.as_ref().map(|(r, _)| r.clone()))
        .collect();
    let mut merged = Report::merge(&parts);
    if let Some(m) = merged.as_mut() {
        // Each second's p99 from the agents' histograms of that second, added.
        for p in &mut m.series {
            let hists: Vec<_> = links
                .iter()
                .filter(|l| l.report.is_some())
                .filter_map(|l| l.seconds.get(&p.second))
                .filter_map(|h| decode_histogram(h).ok())
                .collect();
            if !hists.is_empty() {
                p.p99_ms = perflab_load::second_p99(hists.iter());
            }
        }
    }
    let agents = links
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let (result, histogram) = match (l.report, l.lost) {
                (Some((r, h)), _) => (Ok(r), Some(h)),
                (None, Some(why)) => (Err(why), None),
                (None, None) => (Err("no report".into()), None),
            };
            AgentOutcome {
                name: l.name.split(" (").next().unwrap_or(&l.name).to_string(),
                weight: weights[i],
                cores: l.cores,
                connections: conns[i],
                result,
                histogram,
                clock_offset_ms: l.offset_ns.map(|o| o as f64 / 1e6),
            }
        })
        .collect();
    Outcome {
        agents,
        merged,
        start_skew_ms,
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
    fn too_few_connections_for_the_agents_name_the_flag() {
        let mut spec = LoadSpec::new("http://127.0.0.1:9/");
        spec.connections = 1;
        let e = segments(&spec, &[1.0, 1.0]).unwrap_err();
        assert!(e.starts_with("-c 1"), "{e}");
    }
}
