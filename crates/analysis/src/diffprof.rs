//! A differential profile from repeated profiled trials (issue 31): every function's
//! and every stack's **CPU time per operation**, per trial, on both sides, and the
//! change candidate − baseline with a 95 % CI *across the trials*.
//!
//! Why time per operation and not a share of samples: when one function grows, the
//! shares of all the others fall without their work changing, and a share-based diff
//! (difffolded.pl, inferno-diff-folded) reports them. A sample is 1/F CPU-seconds
//! (perf samples at F per CPU-second: `-F`), so samples / F / operations is a
//! function's CPU time per operation — requests for an HTTP trial (its `requests`
//! metric), one run for a command, one per trial where the workload counts nothing.
//! A trial that did not store its frequency makes the unit `samples/op`.
//!
//! Why across trials and not one pair: one pair of profiles has no error bar. Each
//! profiled ok trial gives one value per function; a function a trial never sampled
//! counts 0 there (seen on one side only, it is 0 in every trial of the other side);
//! the change is Welch's difference of means with the t interval and its p-value.
//!
//! The family: a trial samples thousands of rarely hit frames that can never be
//! significant and would only weaken a multiple-comparison control. A function (or a
//! frame path) is *tested* when its mean time is at least [`MIN_SHARE`] of its side's
//! mean total on either side; the rest are drawn but never coloured. Frames are judged
//! after Holm's adjustment over the tested ones ([`DiffProfile::judge`]), frames with
//! the very same per-trial values (a frame and its only callee) counted once.
//!
//! [`function_evidence`] gives the why block one [`Evidence`] per tested function: its
//! *self* time per operation (the leaf frame), so that extra work in one function is
//! not also reported for each of its callers; the flame graph ([`DiffProfile`]) works
//! on inclusive time per frame path, from the first frame under the process name (the
//! folded stacks' root, left out so that a renamed program is the same code).

use std::collections::{BTreeMap, BTreeSet};

use perflab_stats::{holm, mean_difference};
use perflab_store::vocab::{ARTIFACT_PROFILE, ARTIFACT_STACKS};
use perflab_store::ExportedTrial;
use serde::Serialize;

use crate::evidence::{Evidence, WhyKind};

/// Below this share of its side's total time a frame is drawn but not tested.
pub const MIN_SHARE: f64 = 0.005;

/// One profiled trial as the differential profile reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialStacks {
    /// Folded stacks: frames from the root (the process name) to the leaf, samples.
    pub stacks: Vec<(Vec<String>, u64)>,
    /// perf's sampling frequency (samples per CPU-second); None when not stored.
    pub frequency: Option<f64>,
    /// Operations the trial did (its `requests`, else 1).
    pub ops: f64,
}

impl TrialStacks {
    /// The stacks of an ok trial that stored `stacks.folded`; None otherwise.
    pub fn of(t: &ExportedTrial) -> Option<TrialStacks> {
        if t.status != "ok" {
            return None;
        }
        let folded = t.artifacts.iter().find(|a| a.name == ARTIFACT_STACKS)?;
        let frequency = t
            .artifacts
            .iter()
            .find(|a| a.name == ARTIFACT_PROFILE)
            .and_then(|a| serde_json::from_slice::<serde_json::Value>(&a.content).ok())
            .and_then(|v| v.get("frequency").and_then(|f| f.as_f64()))
            .filter(|f| *f > 0.0);
        let ops = t
            .metrics
            .iter()
            .find(|m| m.name == "requests")
            .map(|m| m.value)
            .filter(|n| *n > 0.0)
            .unwrap_or(1.0);
        Some(TrialStacks::parse(
            &String::from_utf8_lossy(&folded.content),
            frequency,
            ops,
        ))
    }

    /// Reads folded stacks (`comm;outer;...;leaf COUNT` per line; malformed lines are
    /// skipped).
    pub fn parse(folded: &str, frequency: Option<f64>, ops: f64) -> TrialStacks {
        let stacks = folded
            .lines()
            .filter_map(|l| {
                let (stack, n) = l.trim_end().rsplit_once(' ')?;
                let n: u64 = n.parse().ok()?;
                let frames: Vec<String> = stack.split(';').map(str::to_string).collect();
                (!stack.is_empty()).then_some((frames, n))
            })
            .collect();
        TrialStacks {
            stacks,
            frequency,
            ops,
        }
    }

    /// What one sample is worth: ms per operation (samples per operation without a
    /// frequency).
    fn per_sample(&self) -> f64 {
        match self.frequency {
            Some(f) => 1000.0 / f / self.ops,
            None => 1.0 / self.ops,
        }
    }

    /// Each function's self time per operation (the leaf frames; a stack of the
    /// process name alone has no function).
    pub fn self_per_op(&self) -> BTreeMap<String, f64> {
        let mut out: BTreeMap<String, f64> = BTreeMap::new();
        for (frames, n) in &self.stacks {
            if let Some(leaf) = frames.last().filter(|_| frames.len() > 1) {
                *out.entry(leaf.clone()).or_default() += *n as f64 * self.per_sample();
            }
        }
        out
    }

    /// Each frame path's inclusive time per operation (every prefix of every stack),
    /// the process name left out: the same code in a program renamed between the
    /// configs (`prog-a`, `prog-b`) is the same path.
    pub fn frames_per_op(&self) -> BTreeMap<Vec<String>, f64> {
        let mut out: BTreeMap<Vec<String>, f64> = BTreeMap::new();
        for (frames, n) in &self.stacks {
            let frames = &frames[1.min(frames.len())..];
            for depth in 1..=frames.len() {
                *out.entry(frames[..depth].to_vec()).or_default() += *n as f64 * self.per_sample();
            }
        }
        out
    }

    /// All samples of the trial, per operation.
    pub fn total_per_op(&self) -> f64 {
        self.stacks.iter().map(|(_, n)| *n as f64).sum::<f64>() * self.per_sample()
    }
}

/// The profiled ok trials among `trials`.
pub fn profiled(trials: &[ExportedTrial]) -> Vec<TrialStacks> {
    trials.iter().filter_map(TrialStacks::of).collect()
}

/// The unit of the values: `ms/op` when every trial stored its frequency.
fn unit(trials: &[TrialStacks]) -> &'static str {
    if trials.iter().all(|t| t.frequency.is_some()) {
        "ms/op"
    } else {
        "samples/op"
    }
}

/// A change candidate − baseline across trials (Welch).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Change {
    pub baseline_mean: f64,
    pub candidate_mean: f64,
    /// mean(candidate) − mean(baseline).
    pub diff: f64,
    /// The 95 % interval of `diff`.
    pub lo: f64,
    pub hi: f64,
    /// Two-sided p-value of Welch's test (1 when both sides are constant and equal).
    pub p: f64,
}

impl Change {
    /// `diff` over the baseline mean (NaN when the baseline is 0).
    pub fn rel(&self) -> f64 {
        if self.baseline_mean == 0.0 {
            f64::NAN
        } else {
            self.diff / self.baseline_mean.abs()
        }
    }
}

/// Welch's difference of means with its 95 % t interval
/// ([`perflab_stats::mean_difference`]); None when a side has fewer than 2 values.
/// Both sides constant: a point interval, p = 0 when they differ and 1 when they are
/// equal (scipy's convention, with "no evidence" for the equal case).
pub fn change(base: &[f64], cand: &[f64]) -> Option<Change> {
    let d = mean_difference(base, cand, 0.95).ok()?;
    Some(Change {
        baseline_mean: d.baseline_mean,
        candidate_mean: d.candidate_mean,
        diff: d.abs,
        lo: d.lo,
        hi: d.hi,
        p: d.p,
    })
}

/// Per key, the values of every trial of a side (0 where a trial has none).
fn per_trial<K: Ord + Clone>(
    maps: &[BTreeMap<K, f64>],
    keys: &BTreeSet<K>,
) -> BTreeMap<K, Vec<f64>> {
    keys.iter()
        .map(|k| {
            let v = maps
                .iter()
                .map(|m| m.get(k).copied().unwrap_or(0.0))
                .collect();
            (k.clone(), v)
        })
        .collect()
}

/// Keys whose mean on a side is at least [`MIN_SHARE`] of that side's mean total.
fn worth_testing<K: Ord + Clone>(side: &BTreeMap<K, Vec<f64>>, total: f64, into: &mut BTreeSet<K>) {
    for (k, v) in side {
        let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
        if total > 0.0 && mean >= MIN_SHARE * total {
            into.insert(k.clone());
        }
    }
}

fn mean_total(trials: &[TrialStacks]) -> f64 {
    trials.iter().map(TrialStacks::total_per_op).sum::<f64>() / trials.len().max(1) as f64
}

/// Both sides' per-trial values of the keys `of` gives, the tested keys first
/// flagged: (key, baseline values, candidate values, tested).
type Sides<K> = Vec<(K, Vec<f64>, Vec<f64>, bool)>;

fn sides<K: Ord + Clone>(
    base: &[TrialStacks],
    cand: &[TrialStacks],
    of: impl Fn(&TrialStacks) -> BTreeMap<K, f64>,
) -> Sides<K> {
    let (mb, mc): (Vec<_>, Vec<_>) = (
        base.iter().map(&of).collect(),
        cand.iter().map(&of).collect(),
    );
    let keys: BTreeSet<K> = mb
        .iter()
        .chain(&mc)
        .flat_map(|m| m.keys().cloned())
        .collect();
    let (vb, vc) = (per_trial(&mb, &keys), per_trial(&mc, &keys));
    let mut tested = BTreeSet::new();
    worth_testing(&vb, mean_total(base), &mut tested);
    worth_testing(&vc, mean_total(cand), &mut tested);
    keys.into_iter()
        .map(|k| {
            let t = tested.contains(&k);
            (k.clone(), vb[&k].clone(), vc[&k].clone(), t)
        })
        .collect()
}

/// One [`Evidence`] of kind `Function` per tested function (see the module doc): its
/// self CPU time per operation in each profiled ok trial, 0 where a trial did not
/// sample it. Empty when a side has no profiled trials.
pub fn function_evidence(baseline: &[ExportedTrial], candidate: &[ExportedTrial]) -> Vec<Evidence> {
    let (base, cand) = (profiled(baseline), profiled(candidate));
    if base.is_empty() || cand.is_empty() {
        return Vec::new();
    }
    let unit = if unit(&base) == "ms/op" && unit(&cand) == "ms/op" {
        "ms/op"
    } else {
        "samples/op"
    };
    sides(&base, &cand, TrialStacks::self_per_op)
        .into_iter()
        .filter(|(_, _, _, tested)| *tested)
        .map(|(name, b, c, _)| Evidence {
            kind: WhyKind::Function,
            name,
            unit: unit.to_string(),
            baseline: b,
            candidate: c,
        })
        .collect()
}

/// One frame path of the differential flame graph.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameDiff {
    /// Frames from the root (the process name) to this one.
    pub path: Vec<String>,
    /// Inclusive time per operation, both sides, and its change (None: a side has
    /// fewer than 2 profiled trials).
    pub change: Change,
    /// Whether it is in the tested family.
    pub tested: bool,
    /// Holm-adjusted p over the tested frames (1 for the untested).
    pub adjusted_p: f64,
}

/// The differential profile of two sides: every frame path's change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffProfile {
    /// `ms/op`, or `samples/op` when a trial did not store its frequency.
    pub unit: String,
    pub baseline_trials: usize,
    pub candidate_trials: usize,
    /// Every frame path seen on either side, sorted by path.
    pub frames: Vec<FrameDiff>,
}

impl DiffProfile {
    /// The differential profile of the profiled ok trials of both sides; None when a
    /// side has fewer than 2 (no interval can be drawn).
    pub fn of(baseline: &[ExportedTrial], candidate: &[ExportedTrial]) -> Option<DiffProfile> {
        DiffProfile::from_stacks(&profiled(baseline), &profiled(candidate))
    }

    /// [`DiffProfile::of`] from parsed trials.
    pub fn from_stacks(base: &[TrialStacks], cand: &[TrialStacks]) -> Option<DiffProfile> {
        if base.len() < 2 || cand.len() < 2 {
            return None;
        }
        let rows = sides(base, cand, TrialStacks::frames_per_op);
        let mut values = Vec::with_capacity(rows.len());
        let mut frames: Vec<FrameDiff> = Vec::with_capacity(rows.len());
        for (path, b, c, tested) in rows {
            if let Some(change) = change(&b, &c) {
                frames.push(FrameDiff {
                    path,
                    change,
                    tested,
                    adjusted_p: 1.0,
                });
                values.push((b, c));
            }
        }
        // A frame whose time is all in its one callee has the same values as it: one
        // test, counted once in the family (a kernel entry path of five frames is not
        // five reasons), its adjusted p given to each.
        let mut tests: BTreeMap<(Vec<u64>, Vec<u64>), Vec<usize>> = BTreeMap::new();
        for (i, (b, c)) in values.iter().enumerate() {
            if frames[i].tested {
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
                tests.entry((bits(b), bits(c))).or_default().push(i);
            }
        }
        let groups: Vec<Vec<usize>> = tests.into_values().collect();
        let p: Vec<f64> = groups.iter().map(|g| frames[g[0]].change.p).collect();
        for (g, q) in groups.iter().zip(holm(&p)) {
            for &i in g {
                frames[i].adjusted_p = q;
            }
        }
        let unit = if unit(base) == "ms/op" && unit(cand) == "ms/op" {
            "ms/op"
        } else {
            "samples/op"
        };
        Some(DiffProfile {
            unit: unit.into(),
            baseline_trials: base.len(),
            candidate_trials: cand.len(),
            frames,
        })
    }

    /// The frames whose change passes: adjusted p < `alpha`.
    pub fn judge(&self, alpha: f64) -> impl Iterator<Item = &FrameDiff> {
        self.frames
            .iter()
            .filter(move |f| f.tested && f.adjusted_p < alpha)
    }
}

#[cfg(test)]
mod tests;
