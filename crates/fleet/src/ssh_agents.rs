//! The ssh [`Link`] of a distributed load (`perflab http --agents a,b`): one `ssh HOST
//! exec PERFLAB worker` per inventory host, with the same transport and deploy as
//! every remote trial ([`crate::hosts::Fleet`]). Each agent has a session of its own,
//! so each gets its own segment, and a lost one is hung up alone.
//!
//! The sessions are opened in parallel (a slow host's deploy does not hold up the
//! others); a host that cannot be reached or prepared has no session at all — the
//! controller holds it as lost, with the reason.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::agents::{now_ns, Heard, Link, Split};
use crate::hosts::Fleet;
use crate::wire::Order;

/// One open ssh session with an agent.
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    errors: Arc<Mutex<String>>,
}

impl Session {
    fn open(fleet: &Fleet, name: &str, i: usize, tx: mpsc::Sender<Heard>) -> Result<Self, String> {
        let host = fleet.inventory.get(name)?;
        let perflab = fleet.perflab_on(host).map_err(|e| e.to_string())?;
        let mut child = fleet
            .ssh
            .worker(host, &perflab)
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
        Ok(Session {
            stdin: child.stdin.take(),
            child,
            errors,
        })
    }

    /// Writes one order; the time it was sent.
    fn send(&mut self, o: &Order) -> i128 {
        if let (Ok(mut line), Some(s)) = (serde_json::to_string(o), self.stdin.as_mut()) {
            line.push('\n');
            // A failed write means ssh is gone: its end of stdout says so, with why.
            let _ = s.write_all(line.as_bytes()).and_then(|_| s.flush());
        }
        now_ns()
    }
}

/// The agents over ssh: one session per inventory host.
pub struct SshLink<'f> {
    fleet: &'f Fleet,
    hosts: Vec<String>,
    /// None: never opened, or hung up.
    sessions: Vec<Option<Session>>,
}

impl<'f> SshLink<'f> {
    /// The agents `hosts` (inventory names), not yet started.
    pub fn new(fleet: &'f Fleet, hosts: &[String]) -> SshLink<'f> {
        SshLink {
            fleet,
            hosts: hosts.to_vec(),
            sessions: Vec::new(),
        }
    }
}

impl Link for SshLink<'_> {
    fn names(&self) -> Vec<String> {
        self.hosts.clone()
    }

    fn connect_timeout(&self) -> Duration {
        Duration::from_secs(u64::from(self.fleet.ssh.connect_timeout_s))
    }

    fn open(&mut self, tx: mpsc::Sender<Heard>) -> Vec<Result<i128, String>> {
        let fleet = self.fleet;
        // Deploy and connect in parallel: a slow host does not hold up the others' start.
        let opened: Vec<Result<Session, String>> = std::thread::scope(|s| {
            let handles: Vec<_> = self
                .hosts
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    let tx = tx.clone();
                    s.spawn(move || Session::open(fleet, name, i, tx))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("panicked".into())))
                .collect()
        });
        let mut sent = Vec::new();
        for o in opened {
            match o {
                Ok(mut s) => {
                    sent.push(Ok(s.send(&Order::Agent)));
                    self.sessions.push(Some(s));
                }
                Err(e) => {
                    sent.push(Err(e));
                    self.sessions.push(None);
                }
            }
        }
        sent
    }

    fn arm(&mut self, split: &Split) -> Vec<(usize, String)> {
        let mut failed = Vec::new();
        for (i, seg) in split.live.iter().zip(split.segments) {
            match (seg.to_table(), self.sessions[*i].as_mut()) {
                (Ok(t), Some(s)) => {
                    s.send(&Order::Spec(t));
                }
                (Err(e), _) => failed.push((*i, e.to_string())),
                (_, None) => failed.push((*i, "no session".into())),
            }
        }
        failed
    }

    fn tell(&mut self, live: &[usize], order: &Order) {
        for i in live {
            if let Some(s) = self.sessions[*i].as_mut() {
                s.send(order);
            }
        }
    }

    fn close(&mut self) {
        for s in self.sessions.iter_mut().flatten() {
            drop(s.stdin.take());
        }
    }

    fn drop_agent(&mut self, i: usize) {
        if let Some(s) = self.sessions.get_mut(i).and_then(Option::as_mut) {
            crate::link::hang_up(&mut s.child, Duration::from_secs(2));
        }
    }

    fn ended(&mut self, i: usize) -> String {
        let Some(s) = self.sessions.get_mut(i).and_then(Option::as_mut) else {
            return "the session ended".into();
        };
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline && matches!(s.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(20));
        let err = s.errors.lock().unwrap_or_else(|e| e.into_inner());
        let last = err.lines().rev().find(|l| !l.trim().is_empty());
        format!(
            "the session ended{}",
            last.map(|l| format!(": {}", l.trim())).unwrap_or_default()
        )
    }

    fn hang_up(&mut self) {
        self.close();
        for s in self.sessions.iter_mut().flatten() {
            crate::link::hang_up(&mut s.child, Duration::from_secs(5));
        }
    }
}
