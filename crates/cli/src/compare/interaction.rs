//! Ratio of ratios: is the gap between two levels of a factor (C vs Java) the same in
//! two settings (x86 vs ARM)?
//!
//! The two settings are either two runs (`compare RUN_X RUN_Y --interaction lang`,
//! typically from two hosts) or the two levels of a second parameter within one run
//! (`compare RUN --interaction lang --by platform`). Within each setting the factor
//! must have exactly two levels, one configuration each; the first level in config
//! order is the numerator. The numbers come from `perflab_stats::ratio_of_ratios`
//! (log-scale delta-method interval and a stratified bootstrap beside it).

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use perflab_lab::plan::value_text;
use perflab_lab::summary::params_label;
use perflab_stats::{ratio_of_ratios, Interaction, StatsError};
use serde_json::{json, Value};

use super::pair::{num, ratio_ci};
use super::select::{selector_text, RunData, Selector, Side};
use crate::exit::InvalidInput;
use crate::format::{sig, STYLE};

/// One setting: the numerator and denominator configs of the factor.
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
) -> Result<Design, InvalidInput> {
    let xc = x.0.matching(x.1)?;
    let levels = two_levels(&xc, factor, &where_text(x.0, x.1))?;
    let yc = y.0.matching(y.1)?;
    let ylevels = two_levels(&yc, factor, &where_text(y.0, y.1))?;
    if !(ylevels == levels || ylevels == (levels.1.clone(), levels.0.clone())) {
        return Err(InvalidInput(format!(
            "{factor} has levels {}, {} in run {} but {}, {} in run {}: the two runs must share both",
            levels.0, levels.1, x.0.run.id, ylevels.0, ylevels.1, y.0.run.id
        )));
    }
    let setting = |d: &RunData, sel: &Selector, configs: &[&perflab_store::ConfigRow]| {
        Ok::<_, InvalidInput>(Setting {
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
) -> Result<Design, InvalidInput> {
    if factor == by {
        return Err(InvalidInput(format!(
            "--interaction and --by name the same parameter {factor:?}"
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
        Ok::<_, InvalidInput>(Setting {
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
    configs: &[&perflab_store::ConfigRow],
    param: &str,
    where_: &str,
) -> Result<(String, String), InvalidInput> {
    let mut levels: Vec<String> = Vec::new();
    for c in configs {
        let Some(v) = c.params.get(param) else {
            return Err(InvalidInput(format!(
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
        _ => Err(InvalidInput(format!(
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
    configs: &[&perflab_store::ConfigRow],
    param: &str,
    level: &str,
    where_: &str,
) -> Result<Side, InvalidInput> {
    let found: Vec<_> = configs
        .iter()
        .filter(|c| c.params.get(param).is_some_and(|v| value_text(v) == level))
        .collect();
    match found.as_slice() {
        [one] => Ok(d.side(one)),
        _ => Err(InvalidInput(format!(
            "{where_} has {} configs with {param}={level} ({}); other parameters vary: \
             fix them with RUN:key=value",
            found.len(),
            found
                .iter()
                .map(|c| params_label(&c.params))
                .collect::<Vec<_>>()
                .join("; ")
        ))),
    }
}

/// One metric's ratio of ratios (or why there is none).
pub struct Row {
    pub name: String,
    pub unit: String,
    pub better: String,
    pub result: Result<Interaction, String>,
}

/// The rows, in the order of the x numerator's metrics, and the metrics not
/// measured in all four cells.
pub fn rows(d: &Design, only: &[String], confidence: f64) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    let cells = [&d.x.num, &d.x.den, &d.y.num, &d.y.den];
    let mut names: Vec<&str> = Vec::new();
    for c in cells {
        for m in &c.metrics {
            if !names.contains(&m.name.as_str()) && (only.is_empty() || only.contains(&m.name)) {
                names.push(&m.name);
            }
        }
    }
    for name in names {
        let samples: Vec<_> = cells.iter().filter_map(|c| c.metric(name)).collect();
        if samples.len() < 4 {
            skipped.push(name.to_string());
            continue;
        }
        let result = ratio_of_ratios(
            &samples[0].values,
            &samples[1].values,
            &samples[2].values,
            &samples[3].values,
            confidence,
        )
        .map_err(|e| match e {
            StatsError::NonPositiveMean { mean, .. } => format!("a mean is {}", sig(mean)),
            e => e.to_string(),
        });
        rows.push(Row {
            name: name.to_string(),
            unit: samples[0].unit.clone(),
            better: samples[0].better.clone(),
            result,
        });
    }
    (rows, skipped)
}

impl Design {
    /// `lang: c / java, run 1 (host x86) vs run 2 (host arm)`.
    pub fn header(&self) -> String {
        format!(
            "ratio of ratios of {}: {} / {} in {} over the same in {}",
            self.factor, self.levels.0, self.levels.1, self.x.title, self.y.title
        )
    }

    pub fn table(&self, rows: &[Row], confidence: f64) -> Table {
        let level = format!("{:.0}%", confidence * 100.0);
        let mut t = Table::new();
        t.load_style(STYLE)
            .set_content_arrangement(ContentArrangement::Dynamic);
        t.set_header(vec![
            "metric".to_string(),
            format!("{} [{level} CI]", self.x.title),
            format!("{} [{level} CI]", self.y.title),
            format!("ratio of ratios [{level} CI]"),
            "bootstrap CI".to_string(),
        ]);
        let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        for r in rows {
            let arrow = if r.better == "higher" { "↑" } else { "↓" };
            let name = Cell::new(format!("{} {arrow}", r.name));
            match &r.result {
                Ok(i) => t.add_row(vec![
                    name,
                    right(ratio_ci(
                        i.ratio_x.ratio,
                        i.ratio_x.ci_low,
                        i.ratio_x.ci_high,
                    )),
                    right(ratio_ci(
                        i.ratio_y.ratio,
                        i.ratio_y.ci_low,
                        i.ratio_y.ci_high,
                    )),
                    right(ratio_ci(i.ratio_of_ratios, i.ci_low, i.ci_high)),
                    right(format!(
                        "[{}, {}]",
                        num(i.bootstrap_ci_low),
                        num(i.bootstrap_ci_high)
                    )),
                ]),
                Err(why) => t.add_row(vec![name, Cell::new(format!("not computed: {why}"))]),
            };
        }
        t
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

fn ratio_json(s: &Setting, r: &perflab_stats::RatioCi) -> Value {
    json!({
        "level": s.level, "selector": s.selector, "ratio": r.ratio, "ci_low": r.ci_low, "ci_high": r.ci_high,
        "ci_method": r.method,
    })
}
