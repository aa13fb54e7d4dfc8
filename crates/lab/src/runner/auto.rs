//! `repetitions = "auto"`: after the planned minimum, the runner adds one round of
//! every config at a time and looks at the stored trials after each, until the
//! experiment's `stop` rule says enough, or `max_repetitions`.
//!
//! - `stop = "precise"` (the default, the rule this runner always had): every primary
//!   metric of every config has its 95 % CI within `target_precision` of its mean.
//! - `stop = "decided"`: every config's comparison with the first, on every primary
//!   metric, is decided — the paired ratio interval (trials paired by round,
//!   `perflab_stats::paired_log_ratio`) excludes 1, or lies inside ±`equivalence`.
//!   Looking after every round would find differences between identical configs far
//!   too often, so each look's interval comes from a group-sequential design
//!   (`perflab_stats::SequentialDesign`: O'Brien–Fleming-type alpha spending over the
//!   rounds from `min_repetitions` to `max_repetitions`), which keeps the overall
//!   false-positive rate at 5 %.
//!
//! Each look reads the store, not the runner's memory, so a resumed run looks at the
//! same rounds as the run it continues, and the rounds it adds follow the plan's
//! order ([`crate::plan::round`]). Why the run stopped is said once, through the
//! observer.

use std::collections::BTreeMap;

use perflab_stats::{paired_log_ratio, Decision, SequentialDesign, StatsError};
use perflab_store::{RunId, Store, StoreError};

use super::Runner;
use crate::experiment::{Experiment, Repetitions, Stop};
use crate::plan;

/// The overall two-sided level of `stop = "decided"` (the verdicts' 95 %).
const ALPHA: f64 = 0.05;

/// What one look at the stored trials says.
enum Look {
    /// Stop now, and why.
    Stop(String),
    /// Not done: another round, unless every config already has `reps` rounds at the
    /// maximum; `at_max` says why the run stops there.
    More { reps: u32, at_max: String },
}

/// One comparison's state at a look of a `stop = "decided"` run: the candidate config
/// (its index; the baseline is the first), its label, the metric, and what the design
/// decided, with the interval it used.
#[derive(Debug, Clone)]
pub struct Compared {
    pub candidate: usize,
    pub label: String,
    pub metric: String,
    pub decision: Decision,
    pub interval: Option<Interval>,
}

/// (ratio, low, high, confidence) of a comparison at a look.
pub type Interval = (f64, f64, f64, f64);

impl Runner<'_> {
    /// Adds rounds until the experiment's `stop` rule is met or the maximum is reached,
    /// and says which; true when interrupted.
    pub(super) fn adaptive(&mut self, seed: u64) -> bool {
        let Repetitions::Auto { max, target, .. } = self.exp.repetitions else {
            return false;
        };
        let design = match design(self.exp) {
            None => None,
            Some(Ok(d)) => Some(d),
            Some(Err(e)) => {
                self.obs.warn(&format!(
                    "stop = \"decided\": {e}; stopping by precision instead"
                ));
                None
            }
        };
        // Rounds whose trials fail add no repetitions; never add more rounds than the
        // maximum, so a config that always fails cannot keep the run going.
        let mut added = 0;
        loop {
            let look = match &design {
                Some(d) => self.decided(d, max),
                None => self.precise(target, max),
            };
            let reps = match look {
                Look::Stop(why) => {
                    self.say_stopped(&why, design.is_some());
                    return false;
                }
                Look::More { reps, at_max } if reps >= max => {
                    self.say_stopped(&at_max, design.is_some());
                    return false;
                }
                Look::More { reps, .. } if added >= max => {
                    self.obs.warn(&format!(
                        "repetitions = \"auto\": {added} rounds added and still only {reps} complete (trials keep failing); stopping"
                    ));
                    return false;
                }
                Look::More { reps, .. } => reps,
            };
            added += 1;
            let after = self
                .store
                .trials(self.run_id)
                .map(|t| t.iter().map(|t| t.ordinal).max().unwrap_or(0))
                .unwrap_or(0);
            let round = plan::round(self.exp, self.configs.len(), seed, reps + 1, after);
            self.obs.started(self.run_id, round.len());
            if self.run_trials(&round) {
                return true;
            }
        }
    }

    /// `stop = "decided"` says why it stopped as a note; the precision rule keeps its
    /// warnings.
    fn say_stopped(&self, why: &str, decided: bool) {
        if decided {
            self.obs.stopped(why);
        } else {
            self.obs.warn(why);
        }
    }

    /// `stop = "precise"`: the least precise primary metric against the target.
    fn precise(&self, target: f64, max: u32) -> Look {
        let (reps, worst) = self.precision();
        match worst {
            None => Look::Stop(format!(
                "repetitions = \"auto\": no primary metric was measured; stopping after {reps} repetitions"
            )),
            Some((_, _, p)) if p <= target => Look::Stop(format!(
                "precision target met: every primary metric's 95% CI is within ±{:.1}% of its mean after {reps} repetitions",
                target * 100.0
            )),
            Some((label, metric, p)) => Look::More {
                reps,
                at_max: format!(
                    "max_repetitions ({max}) reached before the precision target: {metric} of {label} is at ±{:.1}% (target ±{:.1}%)",
                    p * 100.0,
                    target * 100.0
                ),
            },
        }
    }

    /// (repetitions done by every config, the least precise primary metric as
    /// (config, metric, CI half-width / |mean|)), from the store.
    fn precision(&self) -> (u32, Option<(String, String, f64)>) {
        let Ok(summary) = crate::precision::summarize_run(self.store, self.run_id, 0.95) else {
            return (0, None);
        };
        let primary = primary(self.exp);
        let mut reps = u32::MAX;
        let mut worst: Option<(String, String, f64)> = None;
        for c in &summary.configs {
            let n = c.metrics.iter().map(|m| m.stats.n).max().unwrap_or(0) as u32;
            reps = reps.min(n);
            for m in c.metrics.iter().filter(|m| primary.contains(&m.name)) {
                let p = if m.stats.mean == 0.0 && m.stats.ci_half_width() == 0.0 {
                    0.0
                } else {
                    m.stats.ci_half_width() / m.stats.mean.abs()
                };
                let p = if p.is_finite() { p } else { f64::INFINITY };
                if worst.as_ref().is_none_or(|w| p > w.2) {
                    worst = Some((perflab_store::params_label(&c.params), m.name.clone(), p));
                }
            }
        }
        if summary.configs.is_empty() {
            reps = 0;
        }
        (reps, worst)
    }

    /// `stop = "decided"`: every config against the first, on every primary metric,
    /// paired by round, judged by the design at this look.
    fn decided(&self, design: &SequentialDesign, max: u32) -> Look {
        let (reps, compared) = match compare_all(self.store, self.run_id, self.exp, design) {
            Ok(c) => c,
            Err(e) => return Look::Stop(format!("stop = \"decided\": cannot read the run: {e}")),
        };
        if compared.is_empty() {
            return match reps >= 2 {
                true => Look::Stop(format!(
                    "stop = \"decided\": no primary metric can be compared on a ratio scale after {reps} rounds; stopping"
                )),
                false => Look::More {
                    reps,
                    at_max: format!("reached max_repetitions = {max}, undecided"),
                },
            };
        }
        let margin = design.margin() * 100.0;
        if compared
            .iter()
            .all(|c| matches!(c.decision, Decision::Differs | Decision::Equivalent))
        {
            return Look::Stop(format!(
                "decided after {reps} rounds: {}",
                reasons(&compared, margin)
            ));
        }
        let open: Vec<String> = compared
            .iter()
            .filter(|c| !matches!(c.decision, Decision::Differs | Decision::Equivalent))
            .map(|c| format!("{} of {}{}", c.metric, c.label, interval_text(c)))
            .collect();
        Look::More {
            reps,
            at_max: format!(
                "reached max_repetitions = {max}, undecided: {}",
                open.join("; ")
            ),
        }
    }
}

/// The design of a `stop = "decided"` experiment (`None` for any other).
fn design(exp: &Experiment) -> Option<Result<SequentialDesign, StatsError>> {
    match (&exp.repetitions, exp.stop) {
        (Repetitions::Auto { min, max, .. }, Stop::Decided { equivalence }) => Some(
            SequentialDesign::obrien_fleming(*min, *max, ALPHA, equivalence),
        ),
        _ => None,
    }
}

/// The metrics auto repetitions watch: `primary`, else the workload's named metrics,
/// else `wall_s`.
fn primary(exp: &Experiment) -> Vec<String> {
    let named: Vec<String> = exp.workload.metric_names();
    if !exp.primary.is_empty() {
        exp.primary.clone()
    } else if !named.is_empty() {
        named
    } else {
        vec!["wall_s".into()]
    }
}

/// Where a `stop = "decided"` run stands, as the runner's last look saw it: the rounds
/// every config has, and each config against the first on each primary metric. `None`
/// for a run that does not stop when decided. A command reads it to keep its verdict
/// in line with why the run stopped.
pub fn decisions(
    store: &Store,
    run: RunId,
    exp: &Experiment,
) -> Result<Option<(u32, Vec<Compared>)>, StoreError> {
    match design(exp) {
        Some(Ok(d)) => compare_all(store, run, exp, &d).map(Some),
        _ => Ok(None),
    }
}

/// Every config against the first, on every primary metric, paired by round and
/// judged by `design`; with the rounds every config has.
fn compare_all(
    store: &Store,
    run: RunId,
    exp: &Experiment,
    design: &SequentialDesign,
) -> Result<(u32, Vec<Compared>), StoreError> {
    let configs = plan::configs(exp);
    let rounds = Rounds::read(store, run)?;
    let reps = rounds.complete(configs.len());
    let mut compared = Vec::new();
    for (cand, config) in configs.iter().enumerate().skip(1) {
        for metric in primary(exp) {
            let (base, cand_v) = rounds.pairs(0, cand, &metric);
            let Some((decision, interval)) = judge(design, &base, &cand_v) else {
                continue; // not comparable on the log scale (a zero, a missing metric)
            };
            compared.push(Compared {
                candidate: cand,
                label: config.label(),
                metric,
                decision,
                interval,
            });
        }
    }
    Ok((reps, compared))
}

/// The decision on one comparison and its interval at this look; `None` when the
/// values cannot be compared as ratios.
fn judge(
    design: &SequentialDesign,
    base: &[f64],
    cand: &[f64],
) -> Option<(Decision, Option<Interval>)> {
    if base.len() < 2 {
        return Some((Decision::Continue, None));
    }
    let p = paired_log_ratio(base, cand, 0.95).ok()?;
    let n = p.n_pairs as u32;
    let decision = design.decide(n, p.mean_log, p.sd_log);
    let level = design.confidence(n);
    let interval = (level > 0.0 && level < 1.0)
        .then(|| paired_log_ratio(base, cand, level).ok())
        .flatten()
        .map(|q| (q.ratio, q.lo, q.hi, level));
    Some((decision, interval))
}

/// Why every comparison is decided, in words: one reason when all agree.
fn reasons(compared: &[Compared], margin: f64) -> String {
    let reason = |d: Decision| match d {
        Decision::Differs => "ratio CI excludes 1".to_string(),
        _ => format!("equivalent within {margin} %"),
    };
    let first = compared[0].decision;
    if compared.iter().all(|c| c.decision == first) {
        let detail = match compared {
            [one] => format!(" ({} of {}{})", one.metric, one.label, interval_text(one)),
            _ => String::new(),
        };
        return format!("{}{detail}", reason(first));
    }
    compared
        .iter()
        .map(|c| format!("{} of {}: {}", c.metric, c.label, reason(c.decision)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `: 1.021 [0.998, 1.044] at 99.1 %`, or nothing before the first look.
fn interval_text(c: &Compared) -> String {
    match c.interval {
        Some((r, lo, hi, level)) => {
            // Enough decimals that a strict early look does not read "100.0 %".
            let miss = ((1.0 - level) * 100.0).max(1e-9);
            let digits = (-miss.log10()).ceil().clamp(1.0, 9.0) as usize;
            format!(
                ": {r:.3} [{lo:.3}, {hi:.3}] at {:.digits$} %",
                level * 100.0
            )
        }
        None => String::new(),
    }
}

/// The values of a run's successful trials by config ordinal, metric and repetition.
struct Rounds(BTreeMap<u32, BTreeMap<String, BTreeMap<u32, f64>>>);

impl Rounds {
    fn read(store: &Store, run: RunId) -> Result<Rounds, StoreError> {
        let configs = store.configs(run)?;
        let trials: BTreeMap<i64, (i64, u32)> = store
            .trials(run)?
            .into_iter()
            .map(|t| (t.id, (t.config_id, t.repetition)))
            .collect();
        let mut out: BTreeMap<u32, BTreeMap<String, BTreeMap<u32, f64>>> = BTreeMap::new();
        for m in store
            .metrics(run)?
            .into_iter()
            .filter(|m| m.value.is_finite())
        {
            let Some((config_id, rep)) = trials.get(&m.trial_id) else {
                continue;
            };
            let Some(c) = configs.iter().find(|c| c.id == *config_id) else {
                continue;
            };
            out.entry(c.ordinal)
                .or_default()
                .entry(m.name)
                .or_default()
                .insert(*rep, m.value);
        }
        Ok(Rounds(out))
    }

    /// Rounds every one of `n_configs` configs has a successful trial in (by its most
    /// measured metric).
    fn complete(&self, n_configs: usize) -> u32 {
        (0..n_configs as u32)
            .map(|c| {
                self.0
                    .get(&c)
                    .and_then(|m| m.values().map(BTreeMap::len).max())
                    .unwrap_or(0) as u32
            })
            .min()
            .unwrap_or(0)
    }

    /// The values of `metric` of configs `base` and `cand` in the rounds both have, in
    /// round order.
    fn pairs(&self, base: usize, cand: usize, metric: &str) -> (Vec<f64>, Vec<f64>) {
        let of = |c: usize| self.0.get(&(c as u32)).and_then(|m| m.get(metric));
        let (Some(b), Some(c)) = (of(base), of(cand)) else {
            return (Vec::new(), Vec::new());
        };
        b.iter()
            .filter_map(|(rep, bv)| c.get(rep).map(|cv| (*bv, *cv)))
            .unzip()
    }
}
