//! Baseline versus candidate, metric by metric: ratio of means with its CI, Welch and
//! Mann–Whitney p-values, a direction-aware verdict (`perflab_stats::compare_metric`)
//! and the geometric mean of the ratios — the one implementation behind `perflab
//! compare`, the comparison `perflab run` prints, the report's comparison table, and
//! any command that compares its configs with a baseline ([`against_baseline`]).
//!
//! Two configs of one run are compared round by round when their trials ran in
//! blocked rounds ([`crate::samples::paired_by_round`]): the verdict then rests on the
//! paired ratio from `MIN_PAIRED_ROUNDS` complete rounds on, Welch's kept beside it.
//! Configs of different runs are never paired (their rounds share no time).
//!
//! Every compared row states its minimum detectable effect; rows that cannot be
//! compared are folded into one line ([`PairReport::not_comparable_line`]); a
//! geometric mean only combines metrics of one direction *and* one kind (times with
//! times, rates with rates, sizes with sizes: never a size with a time; counts and
//! ratios not at all), and names them.
//!
//! Nothing here drops a metric silently: a metric on one side only is listed as
//! skipped, one with fewer than two values on a side is "too few trials", and one the
//! statistics refuse (a zero baseline mean) is "not comparable", with why. Which rows
//! an output shows is the output's choice (the report hides metrics that are zero on
//! both sides, see [`Row::both_zero`]).

use perflab_stats::{
    compare_metric_rounds, geometric_mean_ratio, summarize, Basis, Better, CompareOptions,
    Comparison, GeoMean, MetricKind, MetricSide, Outcome, Verdict,
};
use perflab_store::{Params, RunId, Store};
use serde_json::{json, Value};

use crate::samples::{paired_by_round, ConfigSamples, MetricSamples};
use crate::select::{RunData, Selector};
use crate::{format, Error, SelectError};

/// One metric present on both sides.
#[derive(Debug, Clone)]
pub struct Row {
    pub name: String,
    pub unit: String,
    pub better: String,
    pub baseline: Sample,
    pub candidate: Sample,
    pub outcome: Outcome,
    /// Every value on both sides is exactly 0 (no errors either side).
    pub both_zero: bool,
    /// A verdict set by a caller that knows more than the statistics (e.g. `within
    /// noise` from a noise floor across hosts); replaces the word in every output.
    pub verdict_override: Option<&'static str>,
}

/// n, mean and the half-width of its t interval (NaN for n = 1).
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub n: usize,
    pub mean: f64,
    pub half: f64,
}

impl Sample {
    pub fn of(values: &[f64], confidence: f64) -> Sample {
        match summarize(values, confidence) {
            Ok(s) => Sample {
                n: s.n,
                mean: s.mean,
                half: s.ci_half_width(),
            },
            Err(_) => Sample {
                n: values.len(),
                mean: f64::NAN,
                half: f64::NAN,
            },
        }
    }

    /// `mean ± half unit`, with `(n=1)` when there is no interval.
    pub fn text(&self, unit: &str) -> String {
        let mut t = format::mean_pm(self.mean, self.half, unit);
        if self.n < 2 {
            t.push_str(&format!(" (n={})", self.n));
        }
        t
    }
}

/// Geometric mean of the ratios of the compared metrics of one direction and kind.
#[derive(Debug, Clone)]
pub struct GeoRow {
    pub better: Better,
    pub kind: MetricKind,
    pub metrics: Vec<String>,
    pub geo: GeoMean,
}

impl GeoRow {
    /// `geomean ↑ (2 metrics)`.
    pub fn label(&self) -> String {
        let arrow = if self.better == Better::Higher {
            "↑"
        } else {
            "↓"
        };
        format!("geomean {arrow} ({} metrics)", self.metrics.len())
    }

    /// What it combines: `of v, u (rates)`.
    pub fn combines(&self) -> String {
        let kind = match self.kind {
            MetricKind::Time => "times",
            MetricKind::Rate => "rates",
            MetricKind::Size => "sizes",
            MetricKind::Other => "other values",
        };
        format!("of {} ({kind})", self.metrics.join(", "))
    }
}

/// Everything a comparison says about one baseline/candidate pair.
#[derive(Debug, Clone)]
pub struct PairReport {
    pub rows: Vec<Row>,
    /// (metric, the side it is on: `baseline` or `candidate`).
    pub skipped: Vec<(String, &'static str)>,
    pub geomean: Vec<GeoRow>,
    pub confidence: f64,
}

/// Compares every metric of `candidate` with `baseline` (only those in `only`, when
/// it is not empty), in the baseline's metric order, as independent samples (sides
/// from different runs).
pub fn compare_metrics(
    baseline: &[MetricSamples],
    candidate: &[MetricSamples],
    only: &[String],
    opts: &CompareOptions,
) -> PairReport {
    compare_sides(baseline, candidate, only, opts, false)
}

/// As [`compare_metrics`] for two configs of the same run: metrics whose trials ran
/// in blocked rounds are compared round by round.
pub fn compare_metrics_in_run(
    baseline: &[MetricSamples],
    candidate: &[MetricSamples],
    only: &[String],
    opts: &CompareOptions,
) -> PairReport {
    compare_sides(baseline, candidate, only, opts, true)
}

fn compare_sides(
    baseline: &[MetricSamples],
    candidate: &[MetricSamples],
    only: &[String],
    opts: &CompareOptions,
    same_run: bool,
) -> PairReport {
    let wanted = |m: &MetricSamples| only.is_empty() || only.contains(&m.name);
    let find = |side: &[MetricSamples], name: &str| side.iter().position(|m| m.name == name);
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for b in baseline.iter().filter(|m| wanted(m)) {
        match find(candidate, &b.name) {
            Some(i) => rows.push(row(b, &candidate[i], opts, same_run)),
            None => skipped.push((b.name.clone(), "baseline")),
        }
    }
    for c in candidate.iter().filter(|m| wanted(m)) {
        if find(baseline, &c.name).is_none() {
            skipped.push((c.name.clone(), "candidate"));
        }
    }
    // Counts, ratios and percentages ("other") share no unit: no geomean of them.
    let kinds = [MetricKind::Time, MetricKind::Rate, MetricKind::Size];
    let geomean = [Better::Higher, Better::Lower]
        .into_iter()
        .flat_map(|dir| kinds.map(|kind| (dir, kind)))
        .filter_map(|(dir, kind)| geo_row(&rows, dir, kind, opts.confidence))
        .collect();
    PairReport {
        rows,
        skipped,
        geomean,
        confidence: opts.confidence,
    }
}

fn geo_row(rows: &[Row], dir: Better, kind: MetricKind, confidence: f64) -> Option<GeoRow> {
    let of_dir: Vec<(&str, &Comparison)> = rows
        .iter()
        .filter_map(|r| match &r.outcome {
            Outcome::Compared(c) if c.better == dir && c.kind == kind => {
                Some((r.name.as_str(), &**c))
            }
            _ => None,
        })
        .collect();
    if of_dir.len() < 2 {
        return None;
    }
    let refs: Vec<&Comparison> = of_dir.iter().map(|(_, c)| *c).collect();
    Some(GeoRow {
        better: dir,
        kind,
        metrics: of_dir.iter().map(|(n, _)| n.to_string()).collect(),
        geo: geometric_mean_ratio(&refs, confidence)?,
    })
}

fn side(m: &MetricSamples) -> MetricSide<'_> {
    MetricSide {
        values: &m.values,
        unit: &m.unit,
        better: &m.better,
    }
}

fn row(b: &MetricSamples, c: &MetricSamples, opts: &CompareOptions, same_run: bool) -> Row {
    let pairs = same_run.then(|| paired_by_round(b, c)).flatten();
    let rounds = pairs.as_ref().map(|(x, y)| (x.as_slice(), y.as_slice()));
    Row {
        name: b.name.clone(),
        unit: b.unit.clone(),
        better: b.better.clone(),
        baseline: Sample::of(&b.values, opts.confidence),
        candidate: Sample::of(&c.values, opts.confidence),
        outcome: compare_metric_rounds(side(b), side(c), rounds, opts, format::sig),
        both_zero: b.all_zero() && c.all_zero(),
        verdict_override: None,
    }
}

impl Row {
    /// `faster`/`slower` (times and rates), `better`/`worse` (anything else),
    /// `equivalent`, `undecided`, `too few trials` or `not comparable` — the JSON
    /// `verdict`. The word can be overridden by a caller that knows more (a noise
    /// floor): it is a plain string in every output.
    pub fn verdict(&self) -> &'static str {
        if let Some(v) = self.verdict_override {
            return v;
        }
        match &self.outcome {
            Outcome::Compared(c) => c.verdict_word(),
            Outcome::TooFew => "too few trials",
            Outcome::NotComparable(_) => "not comparable",
        }
    }

    /// The verdict for a table: a refusal says why; `undecided` says it found no
    /// significant difference (its MDE is in [`Row::notes`]).
    pub fn verdict_text(&self) -> String {
        match &self.outcome {
            _ if self.verdict_override.is_some() => self.verdict().to_string(),
            Outcome::NotComparable(why) => format!("not comparable: {why}"),
            Outcome::Compared(c) if c.verdict == Verdict::Undecided => {
                "undecided: no significant difference".into()
            }
            _ => self.verdict().to_string(),
        }
    }

    /// `paired (8 rounds)` or `Welch`, `—` when not compared.
    pub fn basis_text(&self) -> String {
        match self.comparison() {
            Some(c) => match (c.basis, &c.paired) {
                (Basis::Paired, Some(p)) => format!("paired ({} rounds)", p.n_pairs),
                _ => "Welch".into(),
            },
            None => format::NONE.into(),
        }
    }

    /// What a reader must know beside the verdict: the basis with Welch's estimate
    /// when paired, the minimum detectable effect, and a warning when the figure
    /// says little. Empty when not compared.
    pub fn notes(&self) -> Vec<String> {
        let Some(c) = self.comparison() else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        let mde = format::mde(c.mde_pct, c.rounds_for_1pct);
        match (c.basis, &c.paired) {
            (Basis::Paired, Some(p)) => notes.push(format!(
                "paired ({} rounds), Wilcoxon p = {}; Welch (unpaired): {}, p = {}; {mde}",
                p.n_pairs,
                format::p_value(p.p_wilcoxon),
                format::ratio_ci(c.ratio, c.ratio_ci_low, c.ratio_ci_high),
                format::p_value(c.p_welch),
            )),
            _ => notes.push(format!("Welch (unpaired); {mde}")),
        }
        if let Some(w) = c.says_little() {
            notes.push(format!("warning: {w}"));
        }
        notes
    }

    /// `better`, `worse`, `same` (not significant: equivalent or undecided) or `na`
    /// (not compared).
    pub fn class(&self) -> &'static str {
        match &self.outcome {
            Outcome::Compared(_) if self.verdict_override.is_some() => "same",
            Outcome::Compared(c) => match c.verdict {
                Verdict::Better => "better",
                Verdict::Worse => "worse",
                Verdict::Equivalent | Verdict::Undecided => "same",
            },
            _ => "na",
        }
    }

    /// The comparison, when there is one.
    pub fn comparison(&self) -> Option<&Comparison> {
        match &self.outcome {
            Outcome::Compared(c) => Some(c),
            _ => None,
        }
    }

    /// The verdict's estimate, `ratio [lo, hi]` (paired when that is the basis), `—`
    /// when not compared.
    pub fn ratio_text(&self) -> String {
        self.comparison().map_or(format::NONE.into(), |c| {
            let (r, lo, hi) = c.basis_ratio();
            format::ratio_ci(r, lo, hi)
        })
    }

    /// Welch's p, `—` when not compared.
    pub fn p_text(&self) -> String {
        self.comparison()
            .map_or(format::NONE.into(), |c| format::p_value(c.p_welch))
    }

    /// The signed relative difference of the verdict's estimate, `—` when not
    /// compared.
    pub fn delta_text(&self) -> String {
        self.comparison().map_or(format::NONE.into(), |c| {
            format::delta_pct((c.basis_ratio().0 - 1.0) * 100.0)
        })
    }

    /// One entry of `perflab compare --json`'s `comparisons` (docs/json.md): `metric`,
    /// `ratio`, `ratio_ci_low`, `ratio_ci_high`, `p_welch` (Welch's estimate),
    /// `verdict`, `basis`, `paired` ({n_pairs, ratio, lo, hi, p_t, p_wilcoxon, ...} or
    /// null), `mde_pct`, `rounds_for_1pct`, `equivalence_pct`, `warning`, ...
    pub fn json(&self) -> Value {
        let mut v = json!({
            "metric": self.name, "unit": self.unit, "better": self.better,
            "n_baseline": self.baseline.n, "n_candidate": self.candidate.n,
            "baseline_mean": self.baseline.mean, "candidate_mean": self.candidate.mean,
            "baseline_ci_half_width": self.baseline.half,
            "candidate_ci_half_width": self.candidate.half,
            "ratio": null, "ratio_ci_low": null, "ratio_ci_high": null, "ci_method": null,
            "rel_diff_pct": null, "rel_diff_ci_low_pct": null, "rel_diff_ci_high_pct": null,
            "p_welch": null, "welch_t": null, "welch_df": null, "p_mwu": null,
            "verdict": self.verdict(), "significant": false, "regression_pct": null,
            "kind": null, "basis": null, "paired": null, "mde_pct": null,
            "rounds_for_1pct": null, "equivalence_pct": null, "warning": null,
        });
        match &self.outcome {
            Outcome::Compared(c) => {
                let extra = json!({
                    "ratio": c.ratio, "ratio_ci_low": c.ratio_ci_low,
                    "ratio_ci_high": c.ratio_ci_high, "ci_method": c.ci_method,
                    "rel_diff_pct": c.rel_diff_pct,
                    "rel_diff_ci_low_pct": c.rel_diff_ci_low_pct,
                    "rel_diff_ci_high_pct": c.rel_diff_ci_high_pct,
                    "p_welch": c.p_welch, "welch_t": c.welch_t, "welch_df": c.welch_df,
                    "p_mwu": c.p_mwu, "significant": c.significant,
                    "regression_pct": c.regression_pct,
                    "kind": c.kind, "basis": c.basis, "paired": c.paired,
                    "mde_pct": finite(c.mde_pct), "rounds_for_1pct": c.rounds_for_1pct,
                    "equivalence_pct": c.equivalence_pct, "warning": c.says_little(),
                });
                for (k, x) in extra.as_object().into_iter().flatten() {
                    v[k] = x.clone();
                }
            }
            Outcome::NotComparable(why) => v["error"] = json!(why),
            Outcome::TooFew => {}
        }
        v
    }
}

/// A number for JSON: null when not finite (serde_json would write null anyway,
/// this says so).
fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

impl PairReport {
    /// Every metric that could not be compared, in one line: `not comparable:
    /// user_s (baseline mean is 0), sys_s (baseline mean is 0)`; None when none.
    pub fn not_comparable_line(&self) -> Option<String> {
        let items: Vec<String> = self
            .rows
            .iter()
            .filter_map(|r| match &r.outcome {
                Outcome::NotComparable(why) => Some(format!("{} ({why})", r.name)),
                _ => None,
            })
            .collect();
        (!items.is_empty()).then(|| format!("not comparable: {}", items.join(", ")))
    }

    /// The rows a table shows one by one: all but the not-comparable ones (which
    /// [`PairReport::not_comparable_line`] folds).
    pub fn shown_rows(&self) -> impl Iterator<Item = &Row> {
        self.rows
            .iter()
            .filter(|r| !matches!(r.outcome, Outcome::NotComparable(_)))
    }

    /// (metric, regression %) of every significant regression larger than `pct`.
    pub fn regressions_over(&self, pct: f64) -> Vec<(&str, f64)> {
        self.rows
            .iter()
            .filter_map(|r| {
                let p = r.comparison()?.regression_pct.filter(|&p| p > pct)?;
                Some((r.name.as_str(), p))
            })
            .collect()
    }

    /// "skipped: x (baseline only), y (candidate only)", when any.
    pub fn skipped_line(&self) -> Option<String> {
        (!self.skipped.is_empty()).then(|| {
            let items: Vec<String> = self
                .skipped
                .iter()
                .map(|(m, side)| format!("{m} ({side} only)"))
                .collect();
            format!("skipped: {}", items.join(", "))
        })
    }

    /// The `comparisons` entries of the JSON document.
    pub fn comparisons_json(&self) -> Vec<Value> {
        self.rows.iter().map(Row::json).collect()
    }

    /// The `geomean` entries of the JSON document.
    pub fn geomean_json(&self) -> Vec<Value> {
        self.geomean
            .iter()
            .map(|g| {
                json!({
                    "better": g.better, "kind": g.kind, "metrics": g.metrics,
                    "n_metrics": g.geo.n_metrics,
                    "ratio": g.geo.ratio, "ci_low": g.geo.ci_low, "ci_high": g.geo.ci_high,
                    "rel_diff_pct": (g.geo.ratio - 1.0) * 100.0,
                })
            })
            .collect()
    }

    /// The `skipped` entries of the JSON document.
    pub fn skipped_json(&self) -> Vec<Value> {
        self.skipped
            .iter()
            .map(|(m, side)| json!({"metric": m, "only_in": side}))
            .collect()
    }
}

/// Which config of a run is the baseline.
#[derive(Debug, Clone)]
pub enum Baseline {
    /// The first config (`perflab run`'s and `perflab bench`'s default).
    First,
    /// The config with this ordinal.
    Ordinal(u32),
    /// The one config whose parameters match every `key=value` (`lang=c`).
    Matching(Selector),
}

/// One candidate config compared with the baseline.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub params: Params,
    /// The config's ordinal in the run.
    pub ordinal: u32,
    pub report: PairReport,
}

/// Every config of a run against its baseline — what `perflab compare RUN --baseline`,
/// `perflab run` and `perflab bench` print.
#[derive(Debug, Clone)]
pub struct BaselineComparison {
    pub baseline: Params,
    pub candidates: Vec<Candidate>,
}

impl BaselineComparison {
    /// The `comparisons`, `geomean` and `skipped` arrays of `perflab compare RUN
    /// --baseline ... --json` (docs/json.md): each entry as for one pair, tagged with
    /// its `candidate_params`.
    pub fn json_arrays(&self) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
        let (mut comparisons, mut geomean, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
        for c in &self.candidates {
            let tag = |mut v: Value| {
                v["candidate_params"] = json!(c.params);
                v
            };
            comparisons.extend(c.report.comparisons_json().into_iter().map(tag));
            geomean.extend(c.report.geomean_json().into_iter().map(tag));
            skipped.extend(c.report.skipped_json().into_iter().map(tag));
        }
        (comparisons, geomean, skipped)
    }

    /// Every row of every candidate, with the candidate's parameters.
    pub fn rows(&self) -> impl Iterator<Item = (&Params, &Row)> {
        self.candidates
            .iter()
            .flat_map(|c| c.report.rows.iter().map(move |r| (&c.params, r)))
    }
}

/// Compares every other config of run `run` with its baseline config, on the metrics
/// in `only` (all when empty). A baseline that names no config, or several, is a
/// [`SelectError`].
pub fn against_baseline(
    store: &Store,
    run: RunId,
    baseline: &Baseline,
    only: &[String],
    opts: &CompareOptions,
) -> Result<BaselineComparison, Error> {
    let d = RunData::load(store, run)?;
    let base = pick(&d, baseline)?;
    Ok(BaselineComparison {
        baseline: base.params.clone(),
        candidates: d
            .configs
            .iter()
            .filter(|c| c.ordinal != base.ordinal)
            .map(|c| Candidate {
                params: c.params.clone(),
                ordinal: c.ordinal,
                report: compare_metrics_in_run(&base.metrics, &c.metrics, only, opts),
            })
            .collect(),
    })
}

fn pick<'a>(d: &'a RunData, baseline: &Baseline) -> Result<&'a ConfigSamples, SelectError> {
    match baseline {
        Baseline::First => d
            .configs
            .first()
            .ok_or_else(|| SelectError(format!("run {} has no config to compare with", d.run.id))),
        Baseline::Ordinal(o) => d.configs.iter().find(|c| c.ordinal == *o).ok_or_else(|| {
            SelectError(format!(
                "run {} has no config #{o}; its configs: {}",
                d.run.id,
                d.config_list()
            ))
        }),
        Baseline::Matching(sel) => d.one(sel),
    }
}

/// Each config of `run` against the config of `other` with the same parameters (or
/// the only one, when both runs have a single config): (baseline, candidate, report).
pub fn across_runs<'a>(
    other: &'a [ConfigSamples],
    run: &'a [ConfigSamples],
    opts: &CompareOptions,
) -> Vec<(&'a ConfigSamples, &'a ConfigSamples, PairReport)> {
    let mut out = Vec::new();
    for c in run {
        let b = other
            .iter()
            .find(|o| o.params == c.params)
            .or_else(|| (other.len() == 1 && run.len() == 1).then(|| &other[0]));
        if let Some(b) = b {
            out.push((b, c, compare_metrics(&b.metrics, &c.metrics, &[], opts)));
        }
    }
    out
}
