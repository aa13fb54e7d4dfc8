//! Where the why block's evidence comes from: the ok trials of the two sides' configs,
//! read from export documents (`Store::export_run`, or the document a report already
//! holds), so `perflab compare`, `perflab run`, `perflab bench` and the report gather
//! the same evidence from the same trials.
//!
//! * functions: [`crate::diffprof::function_evidence`] (CPU time per operation; a
//!   function one side's profiles never sampled is 0 there, [`absent_is_zero`]);
//! * counters: the metrics `counter.*` (per request where the trial counted requests)
//!   and the service's `service.counter.*` (per trial) and `service_*_per_req`;
//! * telemetry: the `[monitor]` metrics (`cpu.*`, `sched.*`, `memory.*`, `disk.*`,
//!   `net.*`, `sockets.*`, `nfs.*`, `process.*`) and `service_cpu_per_req_us`;
//! * doctor: findings in every ok trial of one side and none of the other's;
//! * host: the facts ([`crate::facts`]) that differ between two runs.
//!
//! Profile shares (`fn:NAME`, `profile.kernel_pct`) are not evidence: a share falls
//! when another function grows without its own work changing (the diffprof's time per
//! operation is used instead). Two configs of one run pair by round
//! ([`crate::samples::paired_by_round`], from the verdict's `MIN_PAIRED_ROUNDS` on);
//! configs of two runs are independent samples.

use std::collections::BTreeSet;

use perflab_stats::MIN_PAIRED_ROUNDS;
use perflab_store::vocab::ARTIFACT_STACKS;
use perflab_store::{ExportedTrial, RunExport};

use super::{judge_across, Reason, SideValue, Tested, WhyBlock, WhyOptions};
use crate::evidence::{Evidence, WhyKind};
use crate::samples::{self, paired_by_round, MetricSamples};
use crate::{diffprof, doctor, facts, floor};

/// One side of a comparison: a config (by ordinal) of an exported run.
#[derive(Debug, Clone, Copy)]
pub struct WhySide<'a> {
    pub export: &'a RunExport,
    pub config: u32,
}

impl WhySide<'_> {
    /// The config's ok trials, in execution order.
    fn ok_trials(&self) -> Vec<ExportedTrial> {
        self.export
            .trials
            .iter()
            .filter(|t| t.config == self.config && t.status == "ok")
            .cloned()
            .collect()
    }

    /// The config's metrics (ok trials only).
    fn metrics(&self) -> Vec<MetricSamples> {
        samples::from_export(self.export)
            .into_iter()
            .find(|c| c.ordinal == self.config)
            .map(|c| c.metrics)
            .unwrap_or_default()
    }
}

/// The why block of comparing candidate `b` with baseline `a`.
pub fn explain(a: WhySide<'_>, b: WhySide<'_>, opts: &WhyOptions) -> WhyBlock {
    let same_run = a.export.run.uuid == b.export.run.uuid;
    let (ta, tb) = (a.ok_trials(), b.ok_trials());
    let profiled = (profiled(&ta), profiled(&tb));
    let mut tested: Vec<Tested> = diffprof::function_evidence(&ta, &tb)
        .into_iter()
        .map(|e| Tested::unpaired(absent_is_zero(e, profiled)))
        .collect();
    tested.extend(metric_evidence(&a.metrics(), &b.metrics(), same_run));
    let mut found = doctor_reasons(a, b, &ta, &tb);
    if !same_run {
        found.extend(host_reasons(a.export, b.export));
    }
    let noise = (!same_run)
        .then(|| floor::RunNoise::of(&a.export.run.environment, &b.export.run.environment));
    let mut block = judge_across(tested, found, opts, noise);
    block.noise_floor = noise.and_then(run_floor);
    block
}

/// How many of these trials were profiled (they stored folded stacks).
fn profiled(trials: &[ExportedTrial]) -> usize {
    trials
        .iter()
        .filter(|t| t.artifacts.iter().any(|a| a.name == ARTIFACT_STACKS))
        .count()
}

/// A function no profile of one side sampled spent no measurable time there: its
/// empty side becomes one 0 per profiled trial of that side, so a function that only
/// the candidate runs is judged, not dropped. A side with no profiled trial stays
/// empty (nothing was measured there, and the quantity is not checked).
pub(crate) fn absent_is_zero(mut e: Evidence, profiled: (usize, usize)) -> Evidence {
    if e.baseline.is_empty() && !e.candidate.is_empty() {
        e.baseline = vec![0.0; profiled.0];
    } else if e.candidate.is_empty() && !e.baseline.is_empty() {
        e.candidate = vec![0.0; profiled.1];
    }
    e
}

/// The noise floor of two runs: the larger CPU-loop CV each measured before it
/// started ([`floor::RunNoise`]); None when neither did.
fn run_floor(n: floor::RunNoise) -> Option<f64> {
    match (n.a, n.b) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0.0).max(y.unwrap_or(0.0))),
    }
}

/// Which kind of evidence a stored metric is, if any.
pub fn kind_of(name: &str) -> Option<WhyKind> {
    // The load average is a decaying average over a minute and more: it carries the
    // trials before, not this one, so it is no evidence about a trial (an A/A run
    // showed it "differing" with a constant value on each side).
    if name.starts_with("sched.loadavg") {
        return None;
    }
    const TELEMETRY: [&str; 8] = [
        "cpu.", "sched.", "memory.", "disk.", "net.", "sockets.", "nfs.", "process.",
    ];
    if name == "service_cpu_per_req_us" || TELEMETRY.iter().any(|p| name.starts_with(p)) {
        Some(WhyKind::Telemetry)
    } else if name.starts_with("counter.")
        || name.starts_with("service.counter.")
        || (name.starts_with("service_") && name.ends_with("_per_req"))
    {
        Some(WhyKind::Counter)
    } else {
        None
    }
}

/// Counters and telemetry present on both sides, as evidence (paired by round within
/// one run when enough rounds pair).
fn metric_evidence(a: &[MetricSamples], b: &[MetricSamples], same_run: bool) -> Vec<Tested> {
    let (a, b) = (per_request(a), per_request(b));
    a.iter()
        .filter_map(|ma| {
            let kind = kind_of(&ma.name)?;
            let mb = b.iter().find(|m| m.name == ma.name)?;
            let pairs = same_run
                .then(|| paired_by_round(ma, mb))
                .flatten()
                .filter(|(x, _)| x.len() >= MIN_PAIRED_ROUNDS);
            Some(Tested {
                evidence: Evidence {
                    kind,
                    name: ma.name.clone(),
                    unit: ma.unit.clone(),
                    baseline: ma.values.clone(),
                    candidate: mb.values.clone(),
                },
                pairs,
            })
        })
        .collect()
}

/// Counters of an http trial divided by its requests (`counter.instructions` →
/// `counter.instructions_per_req`): a trial that served more requests counts more
/// work without any request costing more. Ratios (`ipc`, `*_per_kinst`) stay.
fn per_request(metrics: &[MetricSamples]) -> Vec<MetricSamples> {
    let Some(req) = metrics.iter().find(|m| m.name == "requests") else {
        return metrics.to_vec();
    };
    metrics
        .iter()
        .map(|m| {
            let ratio = m.name.contains("ipc") || m.name.contains("_per_");
            if !m.name.starts_with("counter.") || ratio {
                return m.clone();
            }
            let mut out = m.clone();
            out.values.clear();
            out.trials.clear();
            out.rounds.clear();
            for (i, t) in m.trials.iter().enumerate() {
                let n = req
                    .trials
                    .iter()
                    .position(|x| x == t)
                    .map(|j| req.values[j]);
                if let Some(n) = n.filter(|n| *n > 0.0) {
                    out.values.push(m.values[i] / n);
                    out.trials.push(*t);
                    out.rounds.push(m.rounds[i]);
                }
            }
            out.name = format!("{}_per_req", m.name);
            out.unit = format!("{}/req", m.unit);
            out
        })
        .collect()
}

/// The doctor findings seen in every ok trial of one side and in none of the other's.
fn doctor_reasons(
    a: WhySide<'_>,
    b: WhySide<'_>,
    ta: &[ExportedTrial],
    tb: &[ExportedTrial],
) -> Vec<Reason> {
    let seen = |side: WhySide<'_>, trials: &[ExportedTrial]| -> Vec<BTreeSet<String>> {
        let per = doctor::per_trial(side.export);
        trials
            .iter()
            .map(|t| {
                per.iter()
                    .filter(|f| f.trial == t.ordinal && f.config == side.config)
                    .flat_map(|f| f.findings.iter().map(|x| x.id.clone()))
                    .collect()
            })
            .collect()
    };
    let (sa, sb) = (seen(a, ta), seen(b, tb));
    let in_all = |s: &[BTreeSet<String>]| -> BTreeSet<String> {
        let mut it = s.iter();
        let first = it.next().cloned().unwrap_or_default();
        it.fold(first, |acc, x| acc.intersection(x).cloned().collect())
    };
    let in_any =
        |s: &[BTreeSet<String>]| -> BTreeSet<String> { s.iter().flatten().cloned().collect() };
    let fact = |id: &String, on_a: bool| {
        let (yes, no) = (
            SideValue::Text("seen".into()),
            SideValue::Text("not seen".into()),
        );
        let (baseline, candidate) = if on_a { (yes, no) } else { (no, yes) };
        Reason {
            kind: WhyKind::Doctor,
            name: id.clone(),
            unit: String::new(),
            baseline,
            candidate,
            change: None,
            p_adj: None,
        }
    };
    let (all_a, any_a, all_b, any_b) = (in_all(&sa), in_any(&sa), in_all(&sb), in_any(&sb));
    let mut out: Vec<Reason> = all_a.difference(&any_b).map(|id| fact(id, true)).collect();
    out.extend(all_b.difference(&any_a).map(|id| fact(id, false)));
    out
}

/// The host facts that differ between two runs.
fn host_reasons(a: &RunExport, b: &RunExport) -> Vec<Reason> {
    facts::side_by_side(&facts::of_export(a), &facts::of_export(b))
        .into_iter()
        .filter(facts::Fact::differs)
        .map(|f| Reason {
            kind: WhyKind::Host,
            name: f.name,
            unit: String::new(),
            baseline: SideValue::Text(f.a),
            candidate: SideValue::Text(f.b),
            change: None,
            p_adj: None,
        })
        .collect()
}
