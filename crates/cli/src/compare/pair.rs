//! Baseline versus candidate, metric by metric: the numbers (`perflab_stats::compare`
//! and `geometric_mean_ratio`), the benchstat-like table and the JSON entries.
//!
//! Nothing here drops a metric silently: a metric on one side only is listed as
//! skipped, one with fewer than two values on a side is shown as "too few trials",
//! and one the statistics refuse (a zero baseline mean) as "not comparable", with why.

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use perflab_stats::{
    compare_metric, geometric_mean_ratio, summarize, Better, CompareOptions, Comparison, GeoMean,
    MetricSide,
};
use serde_json::{json, Value};

use super::select::{MetricSamples, Side};
use crate::format::{mean_pm, sig, STYLE};

pub use perflab_stats::Outcome;

/// One metric present on both sides.
#[derive(Debug, Clone)]
pub struct Row {
    pub name: String,
    pub unit: String,
    pub better: String,
    pub baseline: Sample,
    pub candidate: Sample,
    pub outcome: Outcome,
}

/// n, mean and the half-width of its t interval (NaN for n = 1).
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub n: usize,
    pub mean: f64,
    pub half: f64,
}

impl Sample {
    fn of(values: &[f64], confidence: f64) -> Sample {
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
}

/// Geometric mean of the ratios of the compared metrics of one direction.
#[derive(Debug, Clone)]
pub struct GeoRow {
    pub better: Better,
    pub metrics: Vec<String>,
    pub geo: GeoMean,
}

/// Everything `compare` says about one baseline/candidate pair.
#[derive(Debug, Clone)]
pub struct PairReport {
    pub rows: Vec<Row>,
    /// (metric, the side it is on).
    pub skipped: Vec<(String, &'static str)>,
    pub geomean: Vec<GeoRow>,
    pub confidence: f64,
}

/// Compares every metric of `candidate` with `baseline` (only those in `only`, when
/// it is not empty), in the baseline's metric order.
pub fn compare_sides(
    baseline: &Side,
    candidate: &Side,
    only: &[String],
    opts: &CompareOptions,
) -> PairReport {
    let wanted = |m: &MetricSamples| only.is_empty() || only.contains(&m.name);
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for b in baseline.metrics.iter().filter(|m| wanted(m)) {
        let Some(c) = candidate.metric(&b.name) else {
            skipped.push((b.name.clone(), "baseline"));
            continue;
        };
        rows.push(row(b, c, opts));
    }
    for c in candidate.metrics.iter().filter(|m| wanted(m)) {
        if baseline.metric(&c.name).is_none() {
            skipped.push((c.name.clone(), "candidate"));
        }
    }
    let geomean = [Better::Higher, Better::Lower]
        .into_iter()
        .filter_map(|dir| {
            let of_dir: Vec<(&str, &Comparison)> = rows
                .iter()
                .filter_map(|r| match &r.outcome {
                    Outcome::Compared(c) if c.better == dir => Some((r.name.as_str(), &**c)),
                    _ => None,
                })
                .collect();
            if of_dir.len() < 2 {
                return None;
            }
            let refs: Vec<&Comparison> = of_dir.iter().map(|(_, c)| *c).collect();
            Some(GeoRow {
                better: dir,
                metrics: of_dir.iter().map(|(n, _)| n.to_string()).collect(),
                geo: geometric_mean_ratio(&refs, opts.confidence)?,
            })
        })
        .collect();
    PairReport {
        rows,
        skipped,
        geomean,
        confidence: opts.confidence,
    }
}

fn row(b: &MetricSamples, c: &MetricSamples, opts: &CompareOptions) -> Row {
    let baseline = Sample::of(&b.values, opts.confidence);
    let candidate = Sample::of(&c.values, opts.confidence);
    let outcome = compare_metric(side(b), side(c), opts, sig);
    Row {
        name: b.name.clone(),
        unit: b.unit.clone(),
        better: b.better.clone(),
        baseline,
        candidate,
        outcome,
    }
}

impl Row {
    pub fn verdict(&self) -> &'static str {
        match &self.outcome {
            Outcome::Compared(c) => c.verdict.as_str(),
            Outcome::TooFew => "too few trials",
            Outcome::NotComparable(_) => "not comparable",
        }
    }
}

impl PairReport {
    /// (metric, regression %) of every significant regression larger than `pct`.
    pub fn regressions_over(&self, pct: f64) -> Vec<(&str, f64)> {
        self.rows
            .iter()
            .filter_map(|r| match &r.outcome {
                Outcome::Compared(c) => c
                    .regression_pct
                    .filter(|&p| p > pct)
                    .map(|p| (r.name.as_str(), p)),
                _ => None,
            })
            .collect()
    }

    /// The benchstat-like table.
    pub fn table(&self) -> Table {
        let level = format!("{:.0}%", self.confidence * 100.0);
        let mut t = Table::new();
        t.load_style(STYLE)
            .set_content_arrangement(ContentArrangement::Dynamic);
        t.set_header(vec![
            "metric".to_string(),
            format!("baseline ± {level} CI"),
            format!("candidate ± {level} CI"),
            format!("ratio [{level} CI]"),
            "Δ%".to_string(),
            "p (Welch)".to_string(),
            "verdict".to_string(),
        ]);
        let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        for r in &self.rows {
            let arrow = if r.better == "higher" { "↑" } else { "↓" };
            let (ratio, delta, p) = match &r.outcome {
                Outcome::Compared(c) => (
                    ratio_ci(c.ratio, c.ratio_ci_low, c.ratio_ci_high),
                    format!("{:+.1}%", c.rel_diff_pct),
                    p_text(c.p_welch),
                ),
                _ => ("—".into(), "—".into(), "—".into()),
            };
            let verdict = match &r.outcome {
                Outcome::NotComparable(why) => format!("not comparable: {why}"),
                _ => r.verdict().to_string(),
            };
            t.add_row(vec![
                Cell::new(format!("{} {arrow}", r.name)),
                right(side_text(&r.baseline, &r.unit)),
                right(side_text(&r.candidate, &r.unit)),
                right(ratio),
                right(delta),
                right(p),
                Cell::new(verdict),
            ]);
        }
        for g in &self.geomean {
            let arrow = if g.better == Better::Higher {
                "↑"
            } else {
                "↓"
            };
            t.add_row(vec![
                Cell::new(format!("geomean {arrow} ({} metrics)", g.metrics.len())),
                Cell::new(""),
                Cell::new(""),
                right(ratio_ci(g.geo.ratio, g.geo.ci_low, g.geo.ci_high)),
                right(format!("{:+.1}%", (g.geo.ratio - 1.0) * 100.0)),
                Cell::new(""),
                Cell::new(""),
            ]);
        }
        t
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
        self.rows.iter().map(row_json).collect()
    }

    /// The `geomean` entries of the JSON document.
    pub fn geomean_json(&self) -> Vec<Value> {
        self.geomean
            .iter()
            .map(|g| {
                json!({
                    "better": g.better, "metrics": g.metrics, "n_metrics": g.geo.n_metrics,
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

fn row_json(r: &Row) -> Value {
    let mut v = json!({
        "metric": r.name, "unit": r.unit, "better": r.better,
        "n_baseline": r.baseline.n, "n_candidate": r.candidate.n,
        "baseline_mean": r.baseline.mean, "candidate_mean": r.candidate.mean,
        "baseline_ci_half_width": r.baseline.half, "candidate_ci_half_width": r.candidate.half,
        "ratio": null, "ratio_ci_low": null, "ratio_ci_high": null, "ci_method": null,
        "rel_diff_pct": null, "rel_diff_ci_low_pct": null, "rel_diff_ci_high_pct": null,
        "p_welch": null, "welch_t": null, "welch_df": null, "p_mwu": null,
        "verdict": r.verdict(), "significant": false, "regression_pct": null,
    });
    match &r.outcome {
        Outcome::Compared(c) => {
            let extra = json!({
                "ratio": c.ratio, "ratio_ci_low": c.ratio_ci_low, "ratio_ci_high": c.ratio_ci_high,
                "ci_method": c.ci_method, "rel_diff_pct": c.rel_diff_pct,
                "rel_diff_ci_low_pct": c.rel_diff_ci_low_pct,
                "rel_diff_ci_high_pct": c.rel_diff_ci_high_pct,
                "p_welch": c.p_welch, "welch_t": c.welch_t, "welch_df": c.welch_df,
                "p_mwu": c.p_mwu, "significant": c.significant,
                "regression_pct": c.regression_pct,
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

fn side_text(s: &Sample, unit: &str) -> String {
    let mut t = mean_pm(s.mean, s.half, unit);
    if s.n < 2 {
        t.push_str(&format!(" (n={})", s.n));
    }
    t
}

/// `1.100 [1.090, 1.110]`.
pub fn ratio_ci(r: f64, lo: f64, hi: f64) -> String {
    format!("{} [{}, {}]", num(r), num(lo), num(hi))
}

/// Four significant digits, "—" when undefined.
pub fn num(v: f64) -> String {
    if v.is_finite() {
        sig(v)
    } else {
        "—".into()
    }
}

/// p with three decimals, small ones in scientific notation.
pub fn p_text(p: f64) -> String {
    if !p.is_finite() {
        "—".into()
    } else if p >= 0.001 || p == 0.0 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}

fn side(m: &MetricSamples) -> MetricSide<'_> {
    MetricSide {
        values: &m.values,
        unit: &m.unit,
        better: &m.better,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_values_print_readably() {
        assert_eq!(p_text(0.04321), "0.043");
        assert_eq!(p_text(1.0), "1.000");
        assert_eq!(p_text(2.5e-7), "2.5e-7");
        assert_eq!(p_text(f64::NAN), "—");
        assert_eq!(ratio_ci(1.1, 1.09, 1.11), "1.100 [1.090, 1.110]");
    }
}
