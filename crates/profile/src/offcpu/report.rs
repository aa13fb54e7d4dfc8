//! Off-CPU shares: the blocked time in the report (total, share of the wall-clock
//! profile, the top blocked functions and stacks) and the off-CPU half of the folded
//! wall-clock stacks.
//!
//! A share is of the *wall-clock profile*: on-CPU time (samples × the sampling
//! period) plus off-CPU time, the total a combined flame graph draws. For one thread
//! that is its wall time; for many, the sum of their wall times. A function's share is
//! inclusive (time blocked anywhere under it) and only user-space frames are listed:
//! the kernel frames of a blocked stack are the mechanism (`schedule`, the syscall),
//! shared by every stack, and stay visible in the stacks list and the flame graph.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::{BlockedStack, OffCpu, OFF_CPU_FRAME};
use crate::reduce::ReportOptions;

/// The off-CPU part of a report (`off_cpu` in `perflab profile --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffCpuReport {
    /// On-CPU time of the samples that pass the filters (samples × 1/frequency).
    pub on_cpu_ms: f64,
    /// Time blocked (switched out, not runnable), summed over the tasks.
    pub off_cpu_ms: f64,
    /// Off-CPU share of the wall-clock profile (on + off), percent.
    pub off_cpu_pct: f64,
    /// Runnable but preempted (waiting for a CPU): not counted as off-CPU.
    pub waiting_ms: f64,
    /// The recording's length, first to last event.
    pub span_ms: f64,
    /// `sched:sched_switch` samples recorded (every switch-out of the recorded tasks).
    pub switches: u64,
    /// Blocked intervals measured; `open_at_end` of them closed at the recording's end.
    pub intervals: u64,
    pub open_at_end: u64,
    /// User-space functions by inclusive off-CPU time (over the threshold, top first).
    pub functions: Vec<OffCpuFunction>,
    /// The blocked stacks with the most off-CPU time (over the threshold, top first).
    pub stacks: Vec<OffCpuStack>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffCpuFunction {
    pub name: String,
    pub off_cpu_ms: f64,
    /// Percent of the wall-clock profile.
    pub pct: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffCpuStack {
    /// Folded: `comm;outer;...;leaf` (no `[off-cpu]` frame).
    pub stack: String,
    pub off_cpu_ms: f64,
    pub pct: f64,
}

/// How many functions and stacks a report lists at most.
const TOP: usize = 10;

fn selected<'a>(off: &'a OffCpu, o: &'a ReportOptions) -> impl Iterator<Item = &'a BlockedStack> {
    off.stacks.iter().filter(move |s| {
        s.us > 0 && o.comm.as_ref().is_none_or(|c| *c == s.comm) && o.pid.is_none_or(|p| p == s.pid)
    })
}

fn folded_line(s: &BlockedStack) -> String {
    let mut line = crate::flame::clean(&s.comm);
    for (f, _) in &s.frames {
        line.push(';');
        line.push_str(f);
    }
    line
}

impl OffCpu {
    /// The report, with `on_cpu_us` the on-CPU time of the same filters' samples.
    pub fn report(&self, on_cpu_us: f64, o: &ReportOptions) -> OffCpuReport {
        let off_us: u64 = selected(self, o).map(|s| s.us).sum();
        let whole = on_cpu_us + off_us as f64;
        let pct = |us: u64| {
            if whole > 0.0 {
                100.0 * us as f64 / whole
            } else {
                0.0
            }
        };
        let mut by_fn: HashMap<&str, u64> = HashMap::new();
        let mut by_stack: BTreeMap<String, u64> = BTreeMap::new();
        for s in selected(self, o) {
            let names: BTreeSet<&str> = s
                .frames
                .iter()
                .filter(|(_, k)| !k)
                .map(|(n, _)| n.as_str())
                .collect();
            for n in names {
                *by_fn.entry(n).or_default() += s.us;
            }
            *by_stack.entry(folded_line(s)).or_default() += s.us;
        }
        let top = |m: Vec<(String, u64)>| {
            let mut v: Vec<(String, u64)> = m
                .into_iter()
                .filter(|(_, us)| pct(*us) >= o.threshold)
                .collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            v.truncate(TOP);
            v
        };
        let ms = |us: u64| us as f64 / 1000.0;
        OffCpuReport {
            on_cpu_ms: on_cpu_us / 1000.0,
            off_cpu_ms: ms(off_us),
            off_cpu_pct: pct(off_us),
            waiting_ms: ms(self.waiting_us),
            span_ms: ms(self.span_us),
            switches: self.switches,
            intervals: self.intervals,
            open_at_end: self.open_at_end,
            functions: top(by_fn.into_iter().map(|(n, u)| (n.to_string(), u)).collect())
                .into_iter()
                .map(|(name, us)| OffCpuFunction {
                    name,
                    off_cpu_ms: ms(us),
                    pct: pct(us),
                })
                .collect(),
            stacks: top(by_stack.into_iter().collect())
                .into_iter()
                .map(|(stack, us)| OffCpuStack {
                    stack,
                    off_cpu_ms: ms(us),
                    pct: pct(us),
                })
                .collect(),
            notes: self.notes.clone(),
        }
    }

    /// The off-CPU folded stacks that pass the filters, in microseconds, each ending
    /// in the `[off-cpu]` frame.
    pub fn folded_us(&self, o: &ReportOptions) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for s in selected(self, o) {
            let mut line = folded_line(s);
            line.push(';');
            line.push_str(OFF_CPU_FRAME);
            *out.entry(line).or_default() += s.us;
        }
        out
    }
}
