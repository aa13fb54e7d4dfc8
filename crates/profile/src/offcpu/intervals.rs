//! Switches → blocked intervals → off-CPU time per stack (see the parent module for
//! which events open and close an interval, and why).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use std::path::Path;

use super::{is_switch, SWITCH_RECORD, SWITCH_TRACEPOINT};
use crate::error::Result;
use crate::script::{Parser, Sample};

/// One distinct blocked stack and the time spent blocked in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockedStack {
    /// The task's command name (the folded stacks' root frame).
    pub comm: String,
    /// Its process.
    pub pid: i32,
    /// Frame names from the outermost caller to the switch-out (leaf last), each with
    /// whether it is kernel code.
    pub frames: Vec<(String, bool)>,
    /// Microseconds blocked there.
    pub us: u64,
}

/// The off-CPU side of a recording.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OffCpu {
    /// Blocked time per distinct stack, in the order first seen.
    pub stacks: Vec<BlockedStack>,
    /// Switch-outs of the recorded tasks (`sched:sched_switch` samples).
    pub switches: u64,
    /// Blocked intervals measured (a blocking switch-out to the next switch-in).
    pub intervals: u64,
    /// Of those, how many were still open at the end and closed there.
    pub open_at_end: u64,
    /// Time the recorded tasks were runnable but preempted (`R`): waiting for a CPU,
    /// not blocked, so not in `stacks`.
    pub waiting_us: u64,
    /// From the first to the last event of the recording.
    pub span_us: u64,
    /// What the recording's off-CPU side needs said (tracefs mounted, ...).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// An interval that is open: since when, in which stack (None: preempted).
struct Open {
    since: f64,
    stack: Option<usize>,
}

/// A switch as its tracepoint fields say it.
struct Switch {
    prev_pid: i32,
    prev_state: String,
    next_pid: i32,
}

fn parse_switch(trace: &str) -> Option<Switch> {
    let (mut prev_pid, mut prev_state, mut next_pid) = (None, None, None);
    for tok in trace.split_whitespace() {
        if let Some(v) = tok.strip_prefix("prev_pid=") {
            prev_pid = v.parse().ok();
        } else if let Some(v) = tok.strip_prefix("prev_state=") {
            prev_state = Some(v.to_string());
        } else if let Some(v) = tok.strip_prefix("next_pid=") {
            next_pid = v.parse().ok();
        }
    }
    Some(Switch {
        prev_pid: prev_pid?,
        prev_state: prev_state?,
        next_pid: next_pid?,
    })
}

/// What makes two blocked stacks one: the process, its name, the frames.
type StackKey = (i32, String, Vec<(String, bool)>);

/// Builds the off-CPU side while the samples are read in time order.
#[derive(Default)]
pub(crate) struct Builder {
    out: OffCpu,
    open: HashMap<i32, Open>,
    index: HashMap<StackKey, usize>,
    first: Option<f64>,
    last: f64,
}

impl Builder {
    /// `tid` runs at `t`: its open interval, if any, ends there.
    fn close(&mut self, tid: i32, t: f64) {
        let Some(o) = self.open.remove(&tid) else {
            return;
        };
        let us = ((t - o.since).max(0.0) * 1e6).round() as u64;
        match o.stack {
            Some(i) => {
                self.out.stacks[i].us += us;
                self.out.intervals += 1;
            }
            None => self.out.waiting_us += us,
        }
    }

    /// The stack's index, interned.
    fn stack_of(&mut self, s: &Sample) -> usize {
        let frames: Vec<(String, bool)> = s
            .frames
            .iter()
            .rev()
            .map(|f| (crate::flame::clean(&f.name()), f.is_kernel()))
            .collect();
        let key = (s.pid, s.comm.clone(), frames);
        if let Some(i) = self.index.get(&key) {
            return *i;
        }
        let i = self.out.stacks.len();
        self.out.stacks.push(BlockedStack {
            comm: key.1.clone(),
            pid: key.0,
            frames: key.2.clone(),
            us: 0,
        });
        self.index.insert(key, i);
        i
    }

    fn switch(&mut self, s: &Sample, t: f64) {
        let Some(sw) = s.trace.as_deref().and_then(parse_switch) else {
            return;
        };
        self.out.switches += 1;
        self.close(sw.next_pid, t);
        self.close(sw.prev_pid, t);
        if sw.prev_pid == 0 || sw.prev_state.starts_with(['X', 'Z']) {
            return;
        }
        let stack = if sw.prev_state.starts_with('R') {
            None
        } else {
            Some(self.stack_of(s))
        };
        self.open.insert(sw.prev_pid, Open { since: t, stack });
    }

    pub(crate) fn see(&mut self, s: &Sample) {
        let Some(t) = s.time else {
            return;
        };
        self.first.get_or_insert(t);
        self.last = self.last.max(t);
        if s.event == SWITCH_TRACEPOINT {
            self.switch(s, t);
        } else if s.event.starts_with(SWITCH_RECORD) {
            if s.trace.as_deref().is_some_and(|r| r.starts_with("IN")) {
                self.close(s.tid, t);
            }
        } else {
            self.close(s.tid, t);
        }
    }

    pub(crate) fn finish(mut self) -> OffCpu {
        let tids: Vec<i32> = self.open.keys().copied().collect();
        let end = self.last;
        for tid in tids {
            let blocked = self.open.get(&tid).is_some_and(|o| o.stack.is_some());
            self.close(tid, end);
            self.out.open_at_end += u64::from(blocked);
        }
        self.out.span_us = ((end - self.first.unwrap_or(end)) * 1e6).round() as u64;
        self.out
    }
}

impl OffCpu {
    /// The off-CPU side of these samples (in perf's time order), or None when they
    /// hold no `sched:sched_switch` sample (not recorded with off-CPU time).
    pub fn from_samples(samples: &[Sample]) -> Option<OffCpu> {
        if !samples.iter().any(|s| s.event == SWITCH_TRACEPOINT) {
            return None;
        }
        let mut b = Builder::default();
        for s in samples {
            b.see(s);
        }
        Some(b.finish())
    }

    /// Reads an off-CPU recording as perf script writes it, one sample at a time: the
    /// switches are reduced as they come and dropped, the on-CPU samples kept. Returns
    /// those, how many lines were not understood, and the off-CPU side.
    pub fn read(perf: &Path, data: &Path) -> Result<(Vec<Sample>, usize, OffCpu)> {
        let mut parser = Parser::default();
        let mut b = Builder::default();
        let mut samples = Vec::new();
        let mut take = |s: Sample| {
            b.see(&s);
            if !is_switch(&s) {
                samples.push(s);
            }
        };
        crate::perf::script_each(perf, data, |line| {
            if let Some(s) = parser.line(line) {
                take(s);
            }
        })?;
        let skipped = parser.skipped_lines;
        if let Some(s) = parser.finish() {
            take(s);
        }
        Ok((samples, skipped, b.finish()))
    }

    /// Total blocked time, in microseconds.
    pub fn total_us(&self) -> u64 {
        self.stacks.iter().map(|s| s.us).sum()
    }
}
