//! The ratio-of-ratios table of a two-factor design: does factor A's effect depend
//! on factor B? For each metric and each pair of non-baseline levels (a, b):
//! (a,b)/(a₀,b) ÷ (a,b₀)/(a₀,b₀), with `perflab_stats::ratio_of_ratios`' interval.
//! Shown only when exactly two parameters vary across the run's configs.

use perflab_lab::plan::value_text;
use perflab_stats::ratio_of_ratios;
use serde_json::Value;

use crate::data::ReportData;

/// One row of the table.
#[derive(Debug, Clone)]
pub struct InteractionRow {
    pub metric: String,
    /// `A: a₀ → a`.
    pub effect: String,
    /// `B=b vs B=b₀`.
    pub across: String,
    pub ratio_at_b: f64,
    pub ratio_at_b0: f64,
    pub ratio_of_ratios: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

impl InteractionRow {
    /// Whether the interval excludes 1 (the effect differs with B).
    pub fn significant(&self) -> bool {
        self.ci_low > 1.0 || self.ci_high < 1.0
    }
}

/// The rows, empty unless exactly two parameters vary.
pub fn rows(d: &ReportData) -> Vec<InteractionRow> {
    let cfgs = &d.export.configs;
    let mut keys: Vec<&String> = Vec::new();
    for c in cfgs {
        for (k, v) in &c.params {
            if !keys.contains(&k) && cfgs.iter().any(|o| o.params.get(k) != Some(v)) {
                keys.push(k);
            }
        }
    }
    let [ka, kb] = keys[..] else {
        return Vec::new();
    };
    let levels = |k: &String| {
        let mut out: Vec<&Value> = Vec::new();
        for c in cfgs {
            if let Some(v) = c.params.get(k) {
                if !out.contains(&v) {
                    out.push(v);
                }
            }
        }
        out
    };
    let (la, lb) = (levels(ka), levels(kb));
    let values = |a: &Value, b: &Value, metric: &str| -> Option<Vec<f64>> {
        let c = cfgs
            .iter()
            .find(|c| c.params.get(ka) == Some(a) && c.params.get(kb) == Some(b))?;
        let data = d.configs.iter().find(|x| x.ordinal == c.ordinal)?;
        Some(data.metric(metric)?.values.clone())
    };
    let mut out = Vec::new();
    for (metric, _, _) in &d.metric_names {
        for a in la.iter().skip(1) {
            for b in lb.iter().skip(1) {
                let (a0, b0) = (la[0], lb[0]);
                let (Some(xn), Some(xd), Some(yn), Some(yd)) = (
                    values(a, b, metric),
                    values(a0, b, metric),
                    values(a, b0, metric),
                    values(a0, b0, metric),
                ) else {
                    continue;
                };
                let Ok(r) = ratio_of_ratios(&xn, &xd, &yn, &yd, d.confidence) else {
                    continue;
                };
                out.push(InteractionRow {
                    metric: metric.clone(),
                    effect: format!("{ka}: {} → {}", value_text(a0), value_text(a)),
                    across: format!("{kb}={} vs {kb}={}", value_text(b), value_text(b0)),
                    ratio_at_b: r.ratio_x.ratio,
                    ratio_at_b0: r.ratio_y.ratio,
                    ratio_of_ratios: r.ratio_of_ratios,
                    ci_low: r.ci_low,
                    ci_high: r.ci_high,
                });
            }
        }
    }
    out
}
