//! Per-metric chart: one row per config, a light bar to the mean, the confidence
//! interval as a whisker, and every trial as a point (so noise is visible); trials
//! the MAD rule flags as outliers are drawn as hollow red rings. A single-trial config
//! gets its point and bar, no whisker.
//!
//! The value axis is [`super::axis::Axis`]'s: from zero for a quantity that cannot be
//! negative (a whisker end below it is clipped and drawn open, its hover text keeps
//! the interval), on decades when the configs' values span them (bars then start at
//! the axis floor). What has nothing to draw is said by [`content`], so the page can
//! leave the chart out: no values at all, or 0 in every trial (no errors).

use std::fmt::Write;

use super::axis::{non_negative, Axis};
use super::{colour, esc, open, x_axis, Frame};
use crate::data::MetricSample;
use perflab_analysis::format::{num, with_unit};

/// What a metric's chart would show over these rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// Some config has a value other than 0: worth a chart.
    Points,
    /// Every value of every config is 0 (an error count in an error-free run).
    AllZero,
    /// No config has a finite value: nothing to draw.
    Empty,
}

/// What the chart of `rows` would show.
pub fn content(rows: &[(&str, Option<&MetricSample>)]) -> Content {
    let mut values = rows
        .iter()
        .filter_map(|(_, m)| *m)
        .flat_map(|m| m.values.iter().copied())
        .filter(|v| v.is_finite())
        .peekable();
    if values.peek().is_none() {
        Content::Empty
    } else if values.all(|v| v == 0.0) {
        Content::AllZero
    } else {
        Content::Points
    }
}

/// The unit as an axis names it: `ms`; for a metric without one, `count` when every
/// value is a whole number (requests, errors), else `unitless` (a rate, a ratio).
fn unit_name(unit: &str, values: &[f64]) -> String {
    if !unit.is_empty() {
        unit.to_string()
    } else if values.iter().all(|v| v.fract() == 0.0) {
        "count".into()
    } else {
        "unitless".into()
    }
}

/// One metric over every config: `(config label, its samples if it has the metric)`.
pub fn chart(
    metric: &str,
    unit: &str,
    better: &str,
    rows: &[(&str, Option<&MetricSample>)],
    level: &str,
) -> String {
    let label_w = rows
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(4)
        .min(40) as f64
        * 6.8
        + 16.0;
    let row_h = 30.0;
    let ms: Vec<&MetricSample> = rows.iter().filter_map(|(_, m)| *m).collect();
    let values: Vec<f64> = ms.iter().flat_map(|m| m.values.iter().copied()).collect();
    let summaries = ms.iter().filter_map(|m| m.summary.as_ref());
    let means: Vec<f64> = summaries.clone().map(|s| s.mean).collect();
    let bounds: Vec<f64> = summaries
        .filter(|s| s.n >= 2)
        .flat_map(|s| [s.ci_low, s.ci_high])
        .collect();
    let axis = Axis::bars(
        &[values.as_slice(), &means].concat(),
        &bounds,
        non_negative(metric, &values),
    );
    let (x0, x1) = (axis.lo, axis.hi);
    let f = Frame {
        w: 760.0,
        h: 28.0 + row_h * rows.len() as f64 + 52.0,
        left: label_w.max(60.0) + 22.0,
        right: 32.0,
        top: 28.0,
        bottom: 52.0,
        x0,
        x1,
        y0: 0.0,
        y1: 1.0,
    };
    let dir = if better == "higher" {
        "higher is better"
    } else {
        "lower is better"
    };
    let mut out = String::new();
    open(
        &mut out,
        f.w,
        f.h,
        &format!("{metric} — mean, {level} CI and trials"),
    );
    x_axis(
        &mut out,
        &f,
        &axis.ticks(6),
        &format!(
            "{metric} ({}){} — {dir}",
            unit_name(unit, &values),
            axis.note()
        ),
    );
    let _ = write!(
        out,
        r#"<text class="axis-label" transform="translate(12 {:.1}) rotate(-90)" text-anchor="middle">config</text><line class="axis" x1="{l:.1}" y1="{:.1}" x2="{l:.1}" y2="{:.1}"/>"#,
        (f.top + f.plot_bottom()) / 2.0,
        f.top,
        f.plot_bottom(),
        l = f.left
    );
    for (i, (label, m)) in rows.iter().enumerate() {
        let cy = f.top + row_h * (i as f64 + 0.5);
        let short: String = label.chars().take(40).collect();
        let _ = write!(
            out,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}<title>{}</title></text>"#,
            f.left - 6.0,
            cy + 4.0,
            esc(&short),
            esc(label)
        );
        let Some(m) = m else {
            let _ = write!(
                out,
                r#"<text class="note" x="{:.1}" y="{:.1}">not measured</text>"#,
                f.left + 6.0,
                cy + 4.0
            );
            continue;
        };
        row(&mut out, &f, &axis, cy, colour(i), m, unit);
    }
    out.push_str("</svg>");
    out
}

fn row(out: &mut String, f: &Frame, axis: &Axis, cy: f64, c: &str, m: &MetricSample, unit: &str) {
    let Some(s) = &m.summary else { return };
    let x = |v: f64| f.x(axis.at(v));
    let (xa, xb) = (f.x(axis.base()), x(s.mean));
    let _ = write!(
        out,
        r#"<rect class="bar" x="{:.1}" y="{:.1}" width="{:.1}" height="14" fill="{c}"><title>mean {}</title></rect>"#,
        xa.min(xb),
        cy - 7.0,
        (xb - xa).abs(),
        esc(&with_unit(s.mean, unit))
    );
    if s.n >= 2 && s.ci_low.is_finite() && s.ci_high.is_finite() {
        whisker(out, (x(s.ci_low), x(s.ci_high)), cy, axis.below(s.ci_low));
        let _ = write!(
            out,
            "<title>CI [{}, {}]{}</title></g>",
            num(s.ci_low),
            num(s.ci_high),
            if axis.below(s.ci_low) {
                " (its low end is below the axis: drawn open)"
            } else {
                ""
            }
        );
    }
    let _ = write!(
        out,
        r#"<line class="mean" x1="{xb:.1}" y1="{:.1}" x2="{xb:.1}" y2="{:.1}"/>"#,
        cy - 9.0,
        cy + 9.0
    );
    for (j, (v, t)) in m.values.iter().zip(&m.trials).enumerate() {
        let jitter = ((j % 5) as f64 - 2.0) * 2.5;
        let outlier = s.outliers.contains(&j);
        let class = if outlier { "pt outlier" } else { "pt" };
        let fill = if outlier { "none" } else { c };
        let _ = write!(
            out,
            r#"<circle class="{class}" cx="{:.1}" cy="{:.1}" r="{}" fill="{fill}"><title>trial {t}: {}{}</title></circle>"#,
            x(*v),
            cy + jitter,
            if outlier { 5 } else { 3 },
            esc(&with_unit(*v, unit)),
            if outlier { " (outlier)" } else { "" }
        );
    }
}

/// Opens a whisker group from screen x `l` to `h` at height `cy`, with an end cap on
/// each side, but none on a low end clipped at the axis (the interval goes on
/// beyond it). The caller adds the `<title>` and closes the group.
fn whisker(out: &mut String, (l, h): (f64, f64), cy: f64, clipped: bool) {
    let _ = write!(
        out,
        r#"<g class="whisker"><line x1="{l:.1}" y1="{cy:.1}" x2="{h:.1}" y2="{cy:.1}"/>"#
    );
    let caps: &[f64] = if clipped { &[h] } else { &[l, h] };
    for x in caps {
        let _ = write!(
            out,
            r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}"/>"#,
            cy - 6.0,
            cy + 6.0
        );
    }
}
