//! Ratio of ratios: is the gap between two levels of a factor (C vs Java) the same in
//! two settings (x86 vs ARM)? One computation ([`ratio_of_ratios`] over four cells)
//! behind both shapes that ask it:
//!
//! * a [`Design`] (`perflab compare`): the two settings are either two runs
//!   ([`two_runs`], typically from two hosts) or the two levels of a second parameter
//!   within one run ([`within_run`]). Within each setting the factor must have exactly
//!   two levels, one configuration each; the first level in config order is the
//!   numerator.
//! * a [`grid`] (the report): when exactly two parameters vary across a run's
//!   configs, every non-baseline pair of levels (a, b) against the first levels
//!   (a₀, b₀): (a,b)/(a₀,b) ÷ (a,b₀)/(a₀,b₀).
//!
//! The numbers come from `perflab_stats::ratio_of_ratios` (log-scale delta-method
//! interval and a stratified bootstrap beside it).

use perflab_stats::{Interaction, RatioCi, StatsError};
use perflab_store::{params_label, value_text};
use serde_json::{json, Value};

use crate::format;
use crate::samples::{ConfigSamples, MetricSamples};
use crate::select::{selector_text, RunData, Selector, Side};
use crate::SelectError;

/// The ratio of ratios of one metric's four cells (x numerator, x denominator, y
/// numerator, y denominator), or why the statistics refuse.
pub fn ratio_of_ratios(cells: [&MetricSamples; 4], confidence: f64) -> Result<Interaction, String> {
    perflab_stats::ratio_of_ratios(
        &cells[0].values,
        &cells[1].values,
        &cells[2].values,
        &cells[3].values,
        confidence,
    )
    .map_err(|e| match e {
        StatsError::NonPositiveMean { mean, .. } => format!("a mean is {}", format::sig(mean)),
        e => e.to_string(),
    })
}

/// One setting: the numerator and denominator configs of the factor.
#[derive(Debug, Clone)]
pub struct Setting {
    /// The run id (two runs) or the `by` value (one run), as JSON.
    pub level: Value,
    /// The `key=value,...` that narrowed the run's configs, if any.
    pub selector: Option<String>,
    /// For the table: `run 3 (host arm)` or `platform=arm`.
    pub title: String,
    pub num: Side,
    pub den: Side,
}

/// The design: a factor with two levels, measured in two settings.
#[derive(Debug, Clone)]
pub struct Design {
    pub factor: String,
    pub by: Option<String>,
    /// (numerator, denominator) level texts.
    pub levels: (String, String),
    pub x: Setting,
    pub y: Setting,
}

/// Two runs (each optionally narrowed by a selector) as the two settings.
pub fn two_runs(
    x: (&RunData, &Selector),
    y: (&RunData, &Selector),
    factor: &str,
) -> Result<Design, SelectError> {
    let xc = x.0.matching(x.1)?;
    let levels = two_levels(&xc, factor, &where_text(x.0, x.1))?;
    let yc = y.0.matching(y.1)?;
    let ylevels = two_levels(&yc, factor, &where_text(y.0, y.1))?;
    if !(ylevels == levels || ylevels == (levels.1.clone(), levels.0.clone())) {
        return Err(SelectError(format!(
            "{factor} has levels {}, {} in run {} but {}, {} in run {}: the two runs must share both",
            levels.0, levels.1, x.0.run.id, ylevels.0, ylevels.1, y.0.run.id
        )));
    }
    let setting = |d: &RunData, sel: &Selector, configs: &[&ConfigSamples]| {
        Ok::<_, SelectError>(Setting {
            level: json!(d.run.id),
            selector: (!sel.is_empty()).then(|| selector_text(sel)),
            title: if sel.is_empty() {
                format!("run {} (host {})", d.run.id, d.run.host)
            } else {
                format!("run {} {}", d.run.id, selector_text(sel))
            },
            num: cell(d, configs, factor, &levels.0, &where_text(d, sel))?,
            den: cell(d, configs, factor, &levels.1, &where_text(d, sel))?,
        })
    };
    Ok(Design {
        factor: factor.to_string(),
        by: None,
        x: setting(x.0, x.1, &xc)?,
        y: setting(y.0, y.1, &yc)?,
        levels,
    })
}

/// The two levels of `by` within one run as the two settings.
pub fn within_run(
    run: &RunData,
    sel: &Selector,
    factor: &str,
    by: &str,
) -> Result<Design, SelectError> {
    if factor == by {
        return Err(SelectError(format!(
            "the factor and the parameter it is split by name the same parameter {factor:?}"
        )));
    }
    let configs = run.matching(sel)?;
    let where_ = where_text(run, sel);
    let (bx, by_y) = two_levels(&configs, by, &where_)?;
    let levels = two_levels(&configs, factor, &where_)?;
    let setting = |b: &str| {
        let part: Vec<_> = configs
            .iter()
            .copied()
            .filter(|c| c.params.get(by).is_some_and(|v| value_text(v) == b))
            .collect();
        let level = part[0].params[by].clone();
        let w = format!("{where_} with {by}={b}");
        Ok::<_, SelectError>(Setting {
            level,
            selector: (!sel.is_empty()).then(|| selector_text(sel)),
            title: format!("{by}={b}"),
            num: cell(run, &part, factor, &levels.0, &w)?,
            den: cell(run, &part, factor, &levels.1, &w)?,
        })
    };
    Ok(Design {
        factor: factor.to_string(),
        by: Some(by.to_string()),
        x: setting(&bx)?,
        y: setting(&by_y)?,
        levels,
    })
}

fn where_text(d: &RunData, sel: &Selector) -> String {
    if sel.is_empty() {
        format!("run {}", d.run.id)
    } else {
        format!("run {} ({})", d.run.id, selector_text(sel))
    }
}

/// The two distinct levels of `param` among `configs`, in config order.
fn two_levels(
    configs: &[&ConfigSamples],
    param: &str,
    where_: &str,
) -> Result<(String, String), SelectError> {
    let mut levels: Vec<String> = Vec::new();
    for c in configs {
        let Some(v) = c.params.get(param) else {
            return Err(SelectError(format!(
                "config {} of {where_} has no parameter {param:?}",
                params_label(&c.params)
            )));
        };
        let t = value_text(v);
        if !levels.contains(&t) {
            levels.push(t);
        }
    }
    match levels.as_slice() {
        [a, b] => Ok((a.clone(), b.clone())),
        _ => Err(SelectError(format!(
            "{param} needs exactly two levels in {where_}, found {}: {}",
            levels.len(),
            if levels.is_empty() {
                "none".to_string()
            } else {
                levels.join(", ")
            }
        ))),
    }
}

/// The one config with `param = level`.
fn cell(
    d: &RunData,
    configs: &[&ConfigSamples],
    param: &str,
    level: &str,
    where_: &str,
) -> Result<Side, SelectError> {
    let found: Vec<_> = configs
        .iter()
        .filter(|c| c.params.get(param).is_some_and(|v| value_text(v) == level))
        .collect();
    match found.as_slice() {
        [one] => Ok(d.side(one)),
        _ => Err(SelectError(format!(
            "{where_} has {} configs with {param}={level} ({}); other parameters vary: \
             fix them with RUN:key=value",
            found.len(),
            crate::select::labels(found.iter().map(|c| **c))
        ))),
    }
}

/// One metric's ratio of ratios (or why there is none).
#[derive(Debug, Clone)]
pub struct Row {
    pub name: String,
    pub unit: String,
    pub better: String,
    pub result: Result<Interaction, String>,
}

impl Design {
    /// The four cells: x numerator, x denominator, y numerator, y denominator.
    pub fn cells(&self) -> [&Side; 4] {
        [&self.x.num, &self.x.den, &self.y.num, &self.y.den]
    }

    /// The rows, in first-seen metric order over the four cells, and the metrics not
    /// measured in all four.
    pub fn rows(&self, only: &[String], confidence: f64) -> (Vec<Row>, Vec<String>) {
        let mut rows = Vec::new();
        let mut skipped = Vec::new();
        let cells = self.cells();
        let mut names: Vec<&str> = Vec::new();
        for c in cells {
            for m in &c.metrics {
                if !names.contains(&m.name.as_str()) && (only.is_empty() || only.contains(&m.name))
                {
                    names.push(&m.name);
                }
            }
        }
        for name in names {
            let samples: Vec<_> = cells.iter().filter_map(|c| c.metric(name)).collect();
            let [a, b, c, d] = samples[..] else {
                skipped.push(name.to_string());
                continue;
            };
            rows.push(Row {
                name: name.to_string(),
                unit: a.unit.clone(),
                better: a.better.clone(),
                result: ratio_of_ratios([a, b, c, d], confidence),
            });
        }
        (rows, skipped)
    }

    /// `ratio of ratios of lang: c / java in run 1 (host x86) over the same in run 2 ...`.
    pub fn header(&self) -> String {
        format!(
            "ratio of ratios of {}: {} / {} in {} over the same in {}",
            self.factor, self.levels.0, self.levels.1, self.x.title, self.y.title
        )
    }

    /// The `interactions` entries of the JSON document.
    pub fn json(&self, rows: &[Row]) -> Vec<Value> {
        rows.iter()
            .map(|r| {
                let mut v = json!({
                    "metric": r.name, "unit": r.unit, "better": r.better,
                    "factor": self.factor, "by": self.by,
                    "numerator": self.levels.0, "denominator": self.levels.1,
                });
                match &r.result {
                    Ok(i) => {
                        v["ratios"] = json!([
                            ratio_json(&self.x, &i.ratio_x),
                            ratio_json(&self.y, &i.ratio_y),
                        ]);
                        v["ratio_of_ratios"] = json!(i.ratio_of_ratios);
                        v["ci_low"] = json!(i.ci_low);
                        v["ci_high"] = json!(i.ci_high);
                        v["bootstrap_ci_low"] = json!(i.bootstrap_ci_low);
                        v["bootstrap_ci_high"] = json!(i.bootstrap_ci_high);
                        v["log_se"] = json!(i.log_se);
                        v["df"] = json!(i.df);
                    }
                    Err(why) => {
                        v["ratios"] = json!([]);
                        v["ratio_of_ratios"] = Value::Null;
                        v["error"] = json!(why);
                    }
                }
                v
            })
            .collect()
    }
}

fn ratio_json(s: &Setting, r: &RatioCi) -> Value {
    json!({
        "level": s.level, "selector": s.selector, "ratio": r.ratio, "ci_low": r.ci_low,
        "ci_high": r.ci_high, "ci_method": r.method,
    })
}

/// One row of a two-factor [`grid`].
#[derive(Debug, Clone)]
pub struct GridRow {
    pub metric: String,
    /// `A: a₀ → a`.
    pub effect: String,
    /// `B=b vs B=b₀`.
    pub across: String,
    pub interaction: Interaction,
}

impl GridRow {
    /// Whether the interval excludes 1 (the effect differs with B).
    pub fn significant(&self) -> bool {
        self.interaction.ci_low > 1.0 || self.interaction.ci_high < 1.0
    }
}

/// The ratio-of-ratios rows of a run whose configs vary in exactly two parameters
/// (empty otherwise, and for cells the statistics refuse).
pub fn grid(configs: &[ConfigSamples], confidence: f64) -> Vec<GridRow> {
    let mut keys: Vec<&String> = Vec::new();
    for c in configs {
        for (k, v) in &c.params {
            if !keys.contains(&k) && configs.iter().any(|o| o.params.get(k) != Some(v)) {
                keys.push(k);
            }
        }
    }
    let [ka, kb] = keys[..] else {
        return Vec::new();
    };
    let levels = |k: &String| {
        let mut out: Vec<&Value> = Vec::new();
        for v in configs.iter().filter_map(|c| c.params.get(k)) {
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    };
    let (la, lb) = (levels(ka), levels(kb));
    let at = |a: &Value, b: &Value, metric: &str| {
        configs
            .iter()
            .find(|c| c.params.get(ka) == Some(a) && c.params.get(kb) == Some(b))?
            .metric(metric)
    };
    let mut out = Vec::new();
    for (metric, _, _) in crate::samples::metric_names(configs) {
        for a in la.iter().skip(1) {
            for b in lb.iter().skip(1) {
                let (a0, b0) = (la[0], lb[0]);
                let (Some(xn), Some(xd), Some(yn), Some(yd)) = (
                    at(a, b, &metric),
                    at(a0, b, &metric),
                    at(a, b0, &metric),
                    at(a0, b0, &metric),
                ) else {
                    continue;
                };
                let Ok(interaction) = ratio_of_ratios([xn, xd, yn, yd], confidence) else {
                    continue;
                };
                out.push(GridRow {
                    metric: metric.clone(),
                    effect: format!("{ka}: {} → {}", value_text(a0), value_text(a)),
                    across: format!("{kb}={} vs {kb}={}", value_text(b), value_text(b0)),
                    interaction,
                });
            }
        }
    }
    out
}
