//! Evidence for the "why" block: one measured quantity seen in the trials of both
//! sides of a comparison — a function's CPU time per operation, a counter, a telemetry
//! rate, a doctor finding present on one side, a host fact — as per-trial values, so
//! that every source is judged the same way (a difference with its CI across the
//! trials, then multiple-comparison control over everything checked; see [`crate::why`]).
//!
//! Sources produce `Evidence`; the why block consumes it. Keeping the type here, apart
//! from both, lets the profile differ ([`crate::diffprof`]) and the why block grow
//! independently.

use serde::Serialize;

/// Where a piece of evidence comes from (the `kind` of a `why` entry in `compare --json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WhyKind {
    /// A function's (or stack's) CPU time per operation, from repeated profiles.
    Function,
    /// A hardware or software counter (`perf_event_open`), or one derived from them.
    Counter,
    /// A `[monitor]` telemetry metric (context switches/s, run queue, softirq share, …).
    Telemetry,
    /// A doctor finding present on one side only.
    Doctor,
    /// A host fact that differs between the sides.
    Host,
}

/// One quantity, per trial, on both sides. `baseline` and `candidate` hold one value
/// per ok trial (unequal lengths are fine); a quantity seen on one side only has an
/// empty other side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    pub kind: WhyKind,
    /// What a user reads: `schedule`, `ipc`, `sched.ctxt_per_s`, …
    pub name: String,
    /// Unit of the values (`ms/op`, `count`, `/s`, `%`, …); empty when unitless.
    pub unit: String,
    pub baseline: Vec<f64>,
    pub candidate: Vec<f64>,
}
