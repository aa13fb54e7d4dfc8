//! The "why" block under every verdict (issue 31): the differences, drawn from the
//! same trials as the verdict, that explain it — a function's CPU time per operation,
//! counters, telemetry, a doctor finding on one side only, a host fact that differs.
//!
//! Every measured quantity arrives as [`Evidence`] (per-trial values on both sides,
//! gathered by [`sources`]) and is judged the same way: the difference of the means
//! with its 95 % interval across the trials — paired by round when the two sides are
//! configs of one run that ran in blocked rounds (drift cancels, as in the verdict),
//! Welch's otherwise — and its p-value. Because dozens of quantities are checked at
//! once, the p-values are adjusted over everything checked ([`Adjust::Holm`] by
//! default: the family-wise error rate, so that a config compared with itself lists
//! something in at most α of the comparisons; [`Adjust::BenjaminiHochberg`] for the
//! false discovery rate when many reasons are expected). A quantity is a reason when
//! its adjusted p is below α — and, between two runs, when its relative change is
//! beyond its noise floor too ([`judge_across`]), the rule the verdicts follow there.
//!
//! Doctor findings and host facts are facts, not samples: they carry no p-value and
//! are not counted in `checked`. A doctor finding is one-sided only when it was seen
//! in *every* ok trial of one side and in *none* of the other's (by chance, under one
//! shared rate r, that has probability rⁿ(1 − r)ᵐ ≤ 4⁻ⁿ for n = m, so an A/A
//! comparison of repeated trials does not list one); a host fact differs only between
//! two runs, never within one, so neither can make A against A explain anything.
//!
//! Order: functions first, by the absolute change of their time per operation; then
//! the other measured reasons by the size of their relative change; then doctor
//! findings, then host facts. The noise floor and the count of quantities checked are
//! beside the list, not in it.

pub mod sources;

use perflab_stats::{benjamini_hochberg, holm, mean_difference, paired_difference, Difference};
use serde::Serialize;
use serde_json::{json, Value};

use crate::evidence::{Evidence, WhyKind};
use crate::floor::RunNoise;
use crate::format;

pub use sources::{explain, WhySide};

/// How the p-values are adjusted over the quantities checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Adjust {
    /// Holm's step-down procedure: the family-wise error rate (the default).
    Holm,
    /// Benjamini–Hochberg: the false discovery rate.
    BenjaminiHochberg,
}

impl Adjust {
    /// `Holm` or `Benjamini–Hochberg`, for text.
    pub fn label(self) -> &'static str {
        match self {
            Adjust::Holm => "Holm",
            Adjust::BenjaminiHochberg => "Benjamini–Hochberg",
        }
    }

    fn apply(self, p: &[f64]) -> Vec<f64> {
        match self {
            Adjust::Holm => holm(p),
            Adjust::BenjaminiHochberg => benjamini_hochberg(p),
        }
    }
}

/// What the block judges with.
#[derive(Debug, Clone, PartialEq)]
pub struct WhyOptions {
    /// A reason needs an adjusted p below this (0.05).
    pub alpha: f64,
    /// Confidence level of each change's interval (0.95).
    pub confidence: f64,
    pub adjust: Adjust,
    /// Metrics the verdict is about: never a reason for themselves.
    pub exclude: Vec<String>,
}

impl Default for WhyOptions {
    fn default() -> Self {
        WhyOptions {
            alpha: 0.05,
            confidence: 0.95,
            adjust: Adjust::Holm,
            exclude: Vec::new(),
        }
    }
}

/// One quantity to test: its evidence and, when the trials pair by round, the paired
/// values (`(baseline, candidate)`, round by round).
#[derive(Debug, Clone, PartialEq)]
pub struct Tested {
    pub evidence: Evidence,
    pub pairs: Option<(Vec<f64>, Vec<f64>)>,
}

impl Tested {
    /// Evidence judged with Welch's interval.
    pub fn unpaired(evidence: Evidence) -> Tested {
        Tested {
            evidence,
            pairs: None,
        }
    }
}

/// A value of a side: a mean, or a fact's text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SideValue {
    Mean(f64),
    Text(String),
}

impl SideValue {
    fn text(&self, unit: &str) -> String {
        match self {
            SideValue::Mean(v) => format::value(*v, unit),
            SideValue::Text(t) => t.clone(),
        }
    }
}

/// One reason: what differs, by how much, and how sure.
#[derive(Debug, Clone, PartialEq)]
pub struct Reason {
    pub kind: WhyKind,
    pub name: String,
    pub unit: String,
    pub baseline: SideValue,
    pub candidate: SideValue,
    /// The measured change (None for a doctor finding or a host fact).
    pub change: Option<Difference>,
    /// The adjusted p-value (None for a fact).
    pub p_adj: Option<f64>,
}

/// The block: the reasons, first first, and what they were found among.
#[derive(Debug, Clone, PartialEq)]
pub struct WhyBlock {
    pub reasons: Vec<Reason>,
    /// How many quantities were tested (facts not counted).
    pub checked: usize,
    /// The comparison's noise floor (a fraction), where it has one (across runs).
    pub noise_floor: Option<f64>,
    pub alpha: f64,
    pub adjust: Adjust,
}

/// Judges every tested quantity, keeps those whose adjusted p is below α, adds the
/// facts and orders the list. Quantities named in `opts.exclude`, with fewer than two
/// values on a side, or with one and the same value in every trial of both sides (no
/// retransmits, no swap: nothing that could differ) are left out, and not counted:
/// each would only raise every other quantity's adjusted p.
pub fn judge(tested: Vec<Tested>, facts: Vec<Reason>, opts: &WhyOptions) -> WhyBlock {
    judge_across(tested, facts, opts, None)
}

/// [`judge`] for two runs whose noise is `noise`: a quantity also needs its relative
/// change beyond its noise floor — the rule `perflab compare` applies to the verdicts
/// across runs ([`crate::floor`]: the larger of each side's CV and each run's CPU-loop
/// noise) — since two runs differ in the machine's mood as well as in what is compared.
pub fn judge_across(
    tested: Vec<Tested>,
    facts: Vec<Reason>,
    opts: &WhyOptions,
    noise: Option<RunNoise>,
) -> WhyBlock {
    let beyond = |e: &Evidence, d: &Difference| {
        noise.is_none_or(|n| !n.floor(&e.baseline, &e.candidate).holds(1.0 + d.rel))
    };
    let judged: Vec<(Evidence, Difference)> = tested
        .into_iter()
        .filter(|t| !opts.exclude.contains(&t.evidence.name) && !constant(&t.evidence))
        .filter_map(|t| {
            let d = difference(&t, opts.confidence)?;
            Some((t.evidence, d))
        })
        .collect();
    let p: Vec<f64> = judged.iter().map(|(_, d)| d.p).collect();
    let adjusted = opts.adjust.apply(&p);
    let checked = judged.len();
    let mut reasons: Vec<Reason> = judged
        .into_iter()
        .zip(adjusted)
        .filter(|((e, d), q)| *q < opts.alpha && beyond(e, d))
        .map(|((e, d), q)| Reason {
            kind: e.kind,
            name: e.name,
            unit: e.unit,
            baseline: SideValue::Mean(d.baseline_mean),
            candidate: SideValue::Mean(d.candidate_mean),
            change: Some(d),
            p_adj: Some(q),
        })
        .collect();
    order(&mut reasons);
    reasons.extend(
        facts
            .into_iter()
            .filter(|f| !opts.exclude.contains(&f.name)),
    );
    WhyBlock {
        reasons,
        checked,
        noise_floor: None,
        alpha: opts.alpha,
        adjust: opts.adjust,
    }
}

/// Whether every value on both sides is the same.
fn constant(e: &Evidence) -> bool {
    let mut all = e.baseline.iter().chain(&e.candidate);
    match all.next() {
        Some(first) => all.all(|v| v == first),
        None => true,
    }
}

/// The difference of one quantity: paired when its rounds pair, else Welch's; None
/// when a side has fewer than two values.
fn difference(t: &Tested, confidence: f64) -> Option<Difference> {
    match &t.pairs {
        Some((b, c)) => paired_difference(b, c, confidence).ok(),
        None => mean_difference(&t.evidence.baseline, &t.evidence.candidate, confidence).ok(),
    }
}

/// Functions by absolute change, then the rest by relative change (an undefined one,
/// from a zero baseline, is the largest).
fn order(reasons: &mut [Reason]) {
    let key = |r: &Reason| {
        let d = r.change.as_ref();
        let size = match r.kind {
            WhyKind::Function => d.map_or(0.0, |d| d.abs.abs()),
            _ => d.map_or(0.0, |d| {
                if d.rel.is_finite() {
                    d.rel.abs()
                } else {
                    f64::INFINITY
                }
            }),
        };
        (r.kind != WhyKind::Function, size)
    };
    reasons.sort_by(|a, b| {
        let (fa, sa) = key(a);
        let (fb, sb) = key(b);
        fa.cmp(&fb).then(sb.total_cmp(&sa))
    });
}

impl Reason {
    /// `+0.120 ms/op (+10.0%) [+0.080, +0.160]`, or the fact's two values.
    pub fn change_text(&self) -> String {
        match &self.change {
            Some(d) => format!(
                "{} ({}) [{}, {}]",
                signed(d.abs, &self.unit),
                format::delta_pct(d.rel * 100.0),
                signed(d.lo, &self.unit),
                signed(d.hi, &self.unit)
            ),
            None => format!("{} → {}", self.baseline_text(), self.candidate_text()),
        }
    }

    pub fn baseline_text(&self) -> String {
        self.baseline.text(&self.unit)
    }

    pub fn candidate_text(&self) -> String {
        self.candidate.text(&self.unit)
    }

    /// The adjusted p-value, `—` for a fact.
    pub fn p_text(&self) -> String {
        self.p_adj.map_or(format::NONE.to_string(), format::p_value)
    }

    /// `function`, `counter`, `telemetry`, `doctor` or `host`.
    pub fn kind_text(&self) -> &'static str {
        match self.kind {
            WhyKind::Function => "function",
            WhyKind::Counter => "counter",
            WhyKind::Telemetry => "telemetry",
            WhyKind::Doctor => "doctor",
            WhyKind::Host => "host",
        }
    }

    /// One entry of `why` in `compare --json` (docs/json.md).
    pub fn json(&self) -> Value {
        let change = self.change.as_ref().map(|d| {
            json!({
                "abs": finite(d.abs), "rel": finite(d.rel), "lo": finite(d.lo),
                "hi": finite(d.hi), "rel_lo": finite(d.rel_lo), "rel_hi": finite(d.rel_hi),
                "basis": if d.paired { "paired" } else { "welch" },
            })
        });
        json!({
            "kind": self.kind, "name": self.name, "unit": self.unit,
            "baseline": self.baseline, "candidate": self.candidate,
            "change": change, "p_adj": self.p_adj,
        })
    }
}

/// A signed value with its unit, unscaled so the three numbers of a change share it.
fn signed(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return format::NONE.into();
    }
    let sign = if v > 0.0 { "+" } else { "" };
    format!("{sign}{}", format::with_unit(v, unit))
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// The headline when the trials hold nothing to judge beside the verdict's metrics.
pub const NOTHING_MEASURED: &str = "nothing else was measured in these trials to explain it \
     (add [monitor], counters or [profile])";

/// The sentence when nothing passes (issue 31's wording).
pub fn nothing_text(checked: usize) -> String {
    format!("no difference above the noise among {checked} metrics checked")
}

impl WhyBlock {
    /// The measured reasons (those with a p-value).
    pub fn measured(&self) -> impl Iterator<Item = &Reason> {
        self.reasons.iter().filter(|r| r.p_adj.is_some())
    }

    /// The line above the list: `why: 3 differences above the noise among 42 metrics
    /// checked (Holm-adjusted p < 0.05; noise floor ±1.2%)`, or the sentence for none.
    pub fn headline(&self) -> String {
        let n = self.measured().count();
        let how = format!(
            "{}-adjusted p < {}",
            self.adjust.label(),
            format::num(self.alpha)
        );
        let floor = match self.noise_floor {
            Some(f) => format!("; noise floor ±{:.1}%", f * 100.0),
            None => String::new(),
        };
        if n == 0 && self.checked == 0 {
            // Nothing beside the verdict's own metrics was measured: say what would be.
            format!("why: {NOTHING_MEASURED}{floor}")
        } else if n == 0 {
            format!("why: {} ({how}{floor})", nothing_text(self.checked))
        } else {
            let s = if n == 1 { "" } else { "s" };
            format!(
                "why: {n} difference{s} above the noise among {} metrics checked ({how}{floor})",
                self.checked
            )
        }
    }

    /// The `why`, `why_checked`, `noise_floor`, `why_alpha` and `why_adjust` keys.
    pub fn json_fields(&self) -> Value {
        json!({
            "why": self.reasons.iter().map(Reason::json).collect::<Vec<_>>(),
            "why_checked": self.checked,
            "noise_floor": self.noise_floor,
            "why_alpha": self.alpha,
            "why_adjust": self.adjust,
        })
    }

    /// Writes [`WhyBlock::json_fields`] into a JSON document.
    pub fn add_to(&self, doc: &mut Value) {
        for (k, v) in self.json_fields().as_object().into_iter().flatten() {
            doc[k] = v.clone();
        }
    }
}

#[cfg(test)]
mod tests;
