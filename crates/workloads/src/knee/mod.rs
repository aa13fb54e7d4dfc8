//! The limit named at a find-max knee: what ran out when the SLO broke.
//!
//! [`KneeWatch`] is a `perflab_load::Observer` that wraps the caller's own (the CLI's
//! live line, or none) and reads the host just before each find-max step starts and
//! just after it ends ([`facts::Reading`]); each step becomes a [`facts::StepFacts`].
//! When the search is done, [`knee_limit`] picks the knee's steps and
//! [`classify::classify`] names the resource — a pure function of the recorded facts,
//! so every rule is tested from recorded counters, and the facts can be kept with the
//! trial.
//!
//! Which step is the knee: the failing steps above `max_rate`, from the lowest one up
//! to 10 % above it (a bisection's last failures, or the first failure of each of
//! several searches). Each is classified; the most common verdict wins (a tie goes to
//! the earlier candidate in the classifier's order), and its evidence is that of its
//! lowest-rate step. A search that never failed has no knee and no limit.
//!
//! The service is found by its listening socket — the processes that hold the socket
//! listening on the target URL's port — rather than from a trial's `[service]`: the
//! lab does not hand the service to the workload, and the socket also finds the worker
//! processes of a pre-forking server (nginx's master and workers all hold it), or a
//! server perflab did not start. A target on another host has no service facts, and
//! the host-wide rules (PSI, listen queue, disk, memory) then do not apply.

pub mod classify;
pub mod facts;

use std::path::PathBuf;

use hdrhistogram::Histogram;

use crate::ArtifactData;
use perflab_load::{Limit, LimitResource, Mode, Observer, Report, SecondPoint, Step};

use facts::{Reading, StepFacts};

/// How far above the lowest failing step a failing step still counts as the knee.
pub const KNEE_BAND: f64 = 1.1;

/// Watches the host around each find-max step; forwards everything to `inner`.
pub struct KneeWatch<'a> {
    inner: &'a mut dyn Observer,
    root: PathBuf,
    port: Option<u16>,
    local: bool,
    pids: Vec<i32>,
    before: Option<Reading>,
    /// One record per finished step, in the order they ran.
    pub facts: Vec<StepFacts>,
}

impl<'a> KneeWatch<'a> {
    /// A watch for a load whose first URL is `url` (its port names the service).
    pub fn new(inner: &'a mut dyn Observer, url: Option<&str>) -> KneeWatch<'a> {
        let port = url
            .and_then(|u| perflab_load::Target::parse(u).ok())
            .map(|t| t.port);
        KneeWatch {
            inner,
            root: PathBuf::from("/proc"),
            port,
            local: false,
            pids: Vec::new(),
            before: None,
            facts: Vec::new(),
        }
    }

    /// The steps' facts as the trial's `knee.json` artifact (None before any step).
    pub fn artifact(&self) -> Option<ArtifactData> {
        (!self.facts.is_empty()).then(|| ArtifactData {
            name: perflab_store::vocab::ARTIFACT_KNEE.into(),
            media_type: "application/json".into(),
            content: serde_json::to_vec(&self.facts).unwrap_or_default(),
        })
    }

    /// The limit at the knee of `report` (None: not a find-max run, or no knee).
    pub fn limit(&self, report: &Report) -> Option<Limit> {
        if report.mode != Mode::FindMax || report.interrupted {
            return None;
        }
        knee_limit(report.max_rate, &self.facts)
    }
}

impl Observer for KneeWatch<'_> {
    fn second(&mut self, point: &SecondPoint) {
        self.inner.second(point);
    }

    fn interval(&mut self, point: &SecondPoint, hist: &Histogram<u64>) {
        self.inner.interval(point, hist);
    }

    fn step_started(&mut self, rate: f64) {
        // Found again each step while not found: a service may bind late.
        if let (Some(port), true) = (self.port, self.pids.is_empty()) {
            (self.local, self.pids) = facts::listening_owners(&self.root, port);
        }
        self.before = Some(Reading::take(&self.root, &self.pids));
        self.inner.step_started(rate);
    }

    fn step(&mut self, step: &Step) {
        if let Some(before) = self.before.take() {
            let after = Reading::take(&self.root, &self.pids);
            let target = (self.port, self.local, self.pids.as_slice());
            self.facts.push(StepFacts::between(
                &before, &after, step, target, &self.root,
            ));
        }
        self.inner.step(step);
    }
}

/// The limit at the knee of a search whose highest passing rate is `max_rate` (see
/// the module doc for which steps are the knee).
pub fn knee_limit(max_rate: Option<f64>, facts: &[StepFacts]) -> Option<Limit> {
    let above = max_rate.unwrap_or(0.0);
    let failing: Vec<&StepFacts> = facts
        .iter()
        .filter(|f| f.passed == Some(false) && f.rate > above)
        .collect();
    let lowest = failing.iter().map(|f| f.rate).min_by(f64::total_cmp)?;
    let mut knee: Vec<&StepFacts> = failing
        .into_iter()
        .filter(|f| f.rate <= lowest * KNEE_BAND)
        .collect();
    knee.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let verdicts: Vec<Limit> = knee.iter().map(|f| classify::classify(f)).collect();
    let count = |r: LimitResource| verdicts.iter().filter(|l| l.resource == r).count();
    // The most common; among equals, the first in the classifier's order.
    let best = ORDER
        .iter()
        .copied()
        .filter(|r| count(*r) > 0)
        .max_by(|a, b| count(*a).cmp(&count(*b)).then(rank(*b).cmp(&rank(*a))))?;
    verdicts.into_iter().find(|l| l.resource == best)
}

/// The classifier's order of candidates.
const ORDER: [LimitResource; 9] = [
    LimitResource::Generator,
    LimitResource::ServiceCpu,
    LimitResource::CpuPressure,
    LimitResource::ListenQueue,
    LimitResource::Softirq,
    LimitResource::Retransmits,
    LimitResource::Disk,
    LimitResource::Memory,
    LimitResource::Unknown,
];

fn rank(r: LimitResource) -> usize {
    ORDER.iter().position(|x| *x == r).unwrap_or(ORDER.len())
}

#[cfg(test)]
mod tests;
