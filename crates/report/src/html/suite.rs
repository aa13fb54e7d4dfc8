//! The machine suite's page (`perflab suite machine`, `kind = "suite"`): the memory
//! curve as a line over block sizes on a log axis, then each group's scores as bars
//! with their confidence whiskers and every trial as a point — one chart per group and
//! unit, since GB/s and op/s share no axis (on decades when a group's items span them:
//! RSA-4096 signs beside Ed25519's). The generic per-metric charts are left out for a
//! suite run: each would list every item and measure one group.
//!
//! The results table lists each item once, with its score under the name of the
//! figure it copies (`gb_s (score)`): the suite stores the score as a metric of its
//! own beside the figure it was taken from, and listing both showed every item twice.
//! An item's other figures (compress's ratio, decompression speed) and the monitor's
//! are folded below it, apart.

use std::fmt::Write;

use perflab_analysis::suite;

use super::{head, metric_row};
use crate::chart::axis::Axis;
use crate::chart::dots;
use crate::chart::line::{render, LinePlot};
use crate::data::{ConfigData, MetricSample, ReportData};
use crate::format::esc;

/// Whether the run is a machine-suite run (its configs are items with a score).
pub(crate) fn is_suite(d: &ReportData) -> bool {
    suite::kind_of(&d.export).is_some()
}

/// The results of a suite run: one row per item, its score; the rest folded.
pub(super) fn results(o: &mut String, d: &ReportData) {
    let mean_head = format!("mean ± {} CI", d.level());
    // Scores, the items' other figures, the monitor's (`cpu.*`: names with a dot).
    let mut bodies = [String::new(), String::new(), String::new()];
    for c in &d.configs {
        let twin = score_twin(c);
        let item = c.label.strip_prefix("item=").unwrap_or(&c.label);
        if let Some(score) = c.metric("score") {
            let name = twin.map_or("score".to_string(), |t| format!("{t} (score)"));
            bodies[0].push_str(&metric_row(item, score, &name).unwrap_or_default());
        }
        for m in &c.metrics {
            if m.name != "score" && Some(m.name.as_str()) != twin {
                let row = metric_row(item, m, &m.name).unwrap_or_default();
                bodies[if m.name.contains('.') { 2 } else { 1 }].push_str(&row);
            }
        }
    }
    let folds = [
        None,
        Some("Other figures of the items"),
        Some("System metrics from the monitor"),
    ];
    for (body, folded) in bodies.iter().zip(folds) {
        if body.is_empty() {
            continue;
        }
        if let Some(summary) = folded {
            let _ = write!(o, "<details><summary>{summary}</summary>");
        }
        head(o, &["item", "metric", &mean_head, "n", "CV", "median"]);
        o.push_str(body);
        o.push_str("</tbody></table>\n");
        if folded.is_some() {
            o.push_str("</details>\n");
        }
    }
}

/// The metric an item's `score` copies: same unit, same values, trial by trial.
pub(crate) fn score_twin(c: &ConfigData) -> Option<&str> {
    let score = c.metric("score")?;
    c.metrics
        .iter()
        .find(|m| m.name != "score" && m.unit == score.unit && m.values == score.values)
        .map(|m| m.name.as_str())
}

pub(super) fn section(o: &mut String, d: &ReportData) {
    if !is_suite(d) {
        return;
    }
    let rows = suite::rows(&d.export, d.confidence);
    let _ = writeln!(
        o,
        "<h2>Machine suite</h2><p class=\"muted\">Each item's score (higher is better), mean with its {} interval and every trial. Compare two machines with <code>perflab suite compare RUN_A RUN_B</code>.</p>",
        d.level()
    );
    if let Some(svg) = memory_curve(&suite::mem_curve(&rows)) {
        o.push_str(&svg);
        o.push('\n');
    }
    // (group, unit) → the items' score samples, in suite order.
    let mut charts: Vec<(String, String, Items)> = Vec::new();
    for r in &rows {
        let Some(m) = score_of(d, &r.item) else {
            continue;
        };
        let label = r
            .item
            .strip_prefix(&format!("{}.", r.group))
            .unwrap_or(&r.item)
            .to_string();
        match charts
            .iter_mut()
            .find(|(g, u, _)| *g == r.group && *u == r.unit)
        {
            Some((_, _, items)) => items.push((label, m)),
            None => charts.push((r.group.clone(), r.unit.clone(), vec![(label, m)])),
        }
    }
    for (group, unit, items) in &charts {
        let rows: Vec<(&str, Option<&MetricSample>)> =
            items.iter().map(|(l, m)| (l.as_str(), Some(*m))).collect();
        if dots::content(&rows) != dots::Content::Points {
            continue;
        }
        let _ = writeln!(
            o,
            "<h3>{} <span class=\"muted\">({})</span></h3>",
            esc(group),
            esc(unit)
        );
        o.push_str(&dots::chart(
            &format!("{group} score"),
            unit,
            "higher",
            &rows,
            &d.level(),
        ));
        o.push('\n');
    }
}

/// (item label, its score samples).
type Items<'a> = Vec<(String, &'a MetricSample)>;

/// The `score` samples of the config whose `item` is `item`.
fn score_of<'a>(d: &'a ReportData, item: &str) -> Option<&'a MetricSample> {
    let ordinal = d
        .samples
        .iter()
        .find(|c| c.params.get("item").and_then(|v| v.as_str()) == Some(item))?
        .ordinal;
    d.configs
        .iter()
        .find(|c| c.ordinal == ordinal)?
        .metric("score")
}

/// GB/s by block size, one line per operation, x on a log₂ scale.
fn memory_curve(curves: &[suite::Curve]) -> Option<String> {
    let lines: Vec<(String, Vec<(f64, f64)>)> = curves
        .iter()
        .filter(|c| c.points.len() >= 2)
        .map(|c| {
            let pts = c
                .points
                .iter()
                .map(|(b, gbs, _)| ((*b as f64).log2(), *gbs))
                .collect();
            (c.op.clone(), pts)
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    let xs: Vec<f64> = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(x, _)| *x))
        .collect();
    let (x0, x1) = (
        xs.iter().copied().fold(f64::INFINITY, f64::min),
        xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    let mut x_ticks = Vec::new();
    let mut e = x0.floor() as i32;
    while f64::from(e) <= x1 {
        x_ticks.push((f64::from(e), suite::block_label(1u64 << e.clamp(0, 62))));
        e += if x1 - x0 > 10.0 { 2 } else { 1 };
    }
    let ys: Vec<f64> = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(_, y)| *y))
        .collect();
    let axis = Axis::of(&ys, &[], true);
    let lines = lines
        .into_iter()
        .map(|(n, p)| (n, p.into_iter().map(|(x, y)| (x, axis.at(y))).collect()))
        .collect();
    Some(render(&LinePlot {
        title: "memory bandwidth by block size (one thread)".into(),
        x_label: "block size (bytes, log scale) — small blocks stay in the caches".into(),
        y_label: format!("bandwidth (GB/s){}", axis.note()),
        x_range: (x0, x1),
        y_range: (axis.lo, axis.hi),
        x_ticks,
        y_ticks: axis.ticks(5),
        lines,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_is_a_line_per_operation_over_log_sizes() {
        let curves = vec![suite::Curve {
            op: "write".into(),
            points: vec![
                (4096, 100.0, 1.0),
                (1 << 20, 150.0, 2.0),
                (256 << 20, 40.0, 1.0),
            ],
        }];
        let svg = memory_curve(&curves).unwrap();
        assert!(svg.contains("<polyline"), "{svg}");
        assert!(svg.contains(">4K<") && svg.contains(">256M<"), "{svg}");
        // One point is no curve.
        let one = vec![suite::Curve {
            op: "read".into(),
            points: vec![(4096, 1.0, 0.0)],
        }];
        assert!(memory_curve(&one).is_none());
    }
}
