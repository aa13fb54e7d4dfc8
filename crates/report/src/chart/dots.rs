//! Per-metric chart: one row per config, a light bar to the mean, the confidence
//! interval as a whisker, and every trial as a point (so noise is visible); trials
//! the MAD rule flags as outliers are drawn as hollow red rings. A single-trial config
//! gets its point and bar, no whisker.

use std::fmt::Write;

use super::{colour, domain, esc, labelled, nice_ticks, open, unit_paren, x_axis, Frame};
use crate::data::MetricSample;
use perflab_analysis::format::{num, with_unit};

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
    let (x0, x1) = domain(
        rows.iter().filter_map(|(_, m)| *m).flat_map(|m| {
            let s = m.summary.as_ref();
            m.values
                .iter()
                .copied()
                .chain(s.map(|s| s.ci_low))
                .chain(s.map(|s| s.ci_high))
        }),
        true,
    );
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
        &labelled(nice_ticks(x0, x1, 6)),
        &format!("{metric} {} — {dir}", unit_paren(unit)),
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
        row(&mut out, &f, cy, colour(i), m, unit);
    }
    out.push_str("</svg>");
    out
}

fn row(out: &mut String, f: &Frame, cy: f64, c: &str, m: &MetricSample, unit: &str) {
    let Some(s) = &m.summary else { return };
    let (xa, xb) = (f.x(0f64.max(f.x0)), f.x(s.mean));
    let _ = write!(
        out,
        r#"<rect class="bar" x="{:.1}" y="{:.1}" width="{:.1}" height="14" fill="{c}"><title>mean {}</title></rect>"#,
        xa.min(xb),
        cy - 7.0,
        (xb - xa).abs(),
        esc(&with_unit(s.mean, unit))
    );
    if s.n >= 2 && s.ci_low.is_finite() && s.ci_high.is_finite() {
        let (l, h) = (f.x(s.ci_low), f.x(s.ci_high));
        let _ = write!(
            out,
            r#"<g class="whisker"><line x1="{l:.1}" y1="{cy:.1}" x2="{h:.1}" y2="{cy:.1}"/><line x1="{l:.1}" y1="{:.1}" x2="{l:.1}" y2="{:.1}"/><line x1="{h:.1}" y1="{:.1}" x2="{h:.1}" y2="{:.1}"/><title>CI [{}, {}]</title></g>"#,
            cy - 6.0,
            cy + 6.0,
            cy - 6.0,
            cy + 6.0,
            num(s.ci_low),
            num(s.ci_high)
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
            f.x(*v),
            cy + jitter,
            if outlier { 5 } else { 3 },
            esc(&with_unit(*v, unit)),
            if outlier { " (outlier)" } else { "" }
        );
    }
}
