//! Hand-written SVG charts, one module per kind: [`dots`] (per-metric means with CI
//! whiskers and every trial as a point), [`line`] (the shared line plot), on which
//! [`latency`] (HdrHistogram percentile curves) and [`series`] (telemetry over time)
//! are built, and [`stacked`] (areas stacked over time: the CPU breakdown, whose parts
//! add up to a total that lines would hide). This module holds what they share: the
//! plot frame, nice tick values, axis drawing, the legend and the palette; [`axis`]
//! chooses a value axis from the data (never below zero for what cannot be negative,
//! logarithmic where values span decades).
//!
//! Every chart is an `<svg class="chart">` with a `viewBox` (so it scales with the
//! page and prints), text coloured by the page's CSS (light and dark), and two
//! `axis-label` texts that name the quantity and its unit.

pub mod axis;
pub mod dots;
pub mod knee;
pub mod latency;
pub mod line;
pub mod series;
pub mod stacked;

use std::fmt::Write;

use crate::format::esc;
use perflab_analysis::format::num;

/// Series colours, readable on light and dark backgrounds.
pub const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#edc948", "#9c755f",
];

/// Colour of series `i`.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// The plot area inside an SVG of `w` × `h`.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    pub w: f64,
    pub h: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
    pub x0: f64,
    pub x1: f64,
    pub y0: f64,
    pub y1: f64,
}

impl Frame {
    /// The standard time-series plot area (760 × 340 px with room for axis labels) over
    /// these data ranges: line and stacked plots share it.
    pub fn plot(x_range: (f64, f64), y_range: (f64, f64)) -> Frame {
        Frame {
            w: 760.0,
            h: 340.0,
            left: 64.0,
            right: 32.0,
            top: 46.0,
            bottom: 48.0,
            x0: x_range.0,
            x1: x_range.1,
            y0: y_range.0,
            y1: y_range.1,
        }
    }

    /// Screen x of data value `v`.
    pub fn x(&self, v: f64) -> f64 {
        let span = (self.x1 - self.x0).max(f64::MIN_POSITIVE);
        self.left + (v - self.x0) / span * (self.w - self.left - self.right)
    }
    /// Screen y of data value `v` (up is larger).
    pub fn y(&self, v: f64) -> f64 {
        let span = (self.y1 - self.y0).max(f64::MIN_POSITIVE);
        self.h - self.bottom - (v - self.y0) / span * (self.h - self.top - self.bottom)
    }
    pub fn plot_bottom(&self) -> f64 {
        self.h - self.bottom
    }
    pub fn plot_right(&self) -> f64 {
        self.w - self.right
    }
}

/// About `n` round tick values covering [lo, hi].
pub fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() * step;
    let mut out = Vec::new();
    let mut v = first;
    while v <= hi + step * 1e-9 && out.len() < 50 {
        out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    out
}

/// A domain padded to nice ends, starting at zero when all values are positive.
pub fn domain(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if from_zero && lo >= 0.0 {
        lo = 0.0;
    }
    if hi <= lo {
        hi = lo + if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
    }
    let pad = (hi - lo) * 0.05;
    let ticks = nice_ticks(lo, hi + pad, 5);
    let step = if ticks.len() > 1 {
        ticks[1] - ticks[0]
    } else {
        hi - lo
    };
    let hi = (((hi + pad) / step).ceil() * step).max(hi);
    let lo = if lo == 0.0 {
        0.0
    } else {
        ((lo - pad) / step).floor() * step
    };
    (lo, hi)
}

/// The opening tag of a chart.
pub fn open(out: &mut String, w: f64, h: f64, title: &str) {
    let _ = write!(
        out,
        r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{t}"><title>{t}</title>"#,
        t = esc(title)
    );
    let _ = write!(
        out,
        r#"<text class="chart-title" x="{}" y="16" text-anchor="middle">{}</text>"#,
        w / 2.0,
        esc(title)
    );
}

/// A unit in parentheses, `(unitless)` when there is none.
pub fn unit_paren(unit: &str) -> String {
    if unit.is_empty() {
        "(unitless)".into()
    } else {
        format!("({unit})")
    }
}

/// X ticks (value, label) with grid lines, the x axis line and its label.
pub fn x_axis(out: &mut String, f: &Frame, ticks: &[(f64, String)], label: &str) {
    let yb = f.plot_bottom();
    for (v, t) in ticks {
        let x = f.x(*v);
        let _ = write!(
            out,
            r#"<line class="grid" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{yb:.1}"/><line class="axis" x1="{x:.1}" y1="{yb:.1}" x2="{x:.1}" y2="{:.1}"/><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            f.top,
            yb + 4.0,
            yb + 16.0,
            esc(t)
        );
    }
    let _ = write!(
        out,
        r#"<line class="axis" x1="{:.1}" y1="{yb:.1}" x2="{:.1}" y2="{yb:.1}"/><text class="axis-label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        f.left,
        f.plot_right(),
        (f.left + f.plot_right()) / 2.0,
        f.h - 6.0,
        esc(label)
    );
}

/// Y ticks with grid lines, the y axis line and its (rotated) label.
pub fn y_axis(out: &mut String, f: &Frame, ticks: &[(f64, String)], label: &str) {
    for (v, t) in ticks {
        let y = f.y(*v);
        let _ = write!(
            out,
            r#"<line class="grid" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            f.left,
            f.plot_right(),
            f.left - 6.0,
            y + 4.0,
            esc(t)
        );
    }
    let cy = (f.top + f.plot_bottom()) / 2.0;
    let _ = write!(
        out,
        r#"<line class="axis" x1="{l:.1}" y1="{:.1}" x2="{l:.1}" y2="{:.1}"/><text class="axis-label" transform="translate(14 {cy:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        f.top,
        f.plot_bottom(),
        esc(label),
        l = f.left
    );
}

/// Ticks labelled compactly: `2.5k`, `3M` for large values, [`num`] otherwise.
pub fn labelled(ticks: Vec<f64>) -> Vec<(f64, String)> {
    ticks.into_iter().map(|v| (v, tick(v))).collect()
}

fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{}G", num(v / 1e9))
    } else if a >= 1e6 {
        format!("{}M", num(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", num(v / 1e3))
    } else {
        num(v)
    }
}

/// A legend: coloured swatches in one row under the title, above the plot area.
pub fn legend(out: &mut String, f: &Frame, names: &[String]) {
    let items: Vec<(String, &str)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), colour(i)))
        .collect();
    legend_coloured(out, f, &items);
}

/// A legend of `(name, colour)` swatches in one row above the plot area; returns the
/// x where a further entry would go.
pub fn legend_coloured(out: &mut String, f: &Frame, items: &[(String, &str)]) -> f64 {
    let mut x = f.left;
    let y = legend_y(f);
    for (n, c) in items {
        let _ = write!(
            out,
            r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{c}"/><text class="legend" x="{:.1}" y="{y:.1}">{}</text>"#,
            y - 9.0,
            x + 14.0,
            esc(n)
        );
        x += legend_width(n);
    }
    x
}

/// The baseline of the legend's text.
pub fn legend_y(f: &Frame) -> f64 {
    f.top - 8.0
}

/// The room one legend entry named `n` takes: swatch, text and gap.
pub fn legend_width(n: &str) -> f64 {
    14.0 + 6.5 * n.chars().count() as f64 + 16.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(
            nice_ticks(0.0, 10.0, 5),
            vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        );
        let t = nice_ticks(0.13, 0.87, 4);
        assert!(t.first().unwrap() >= &0.13 && t.last().unwrap() <= &0.87);
    }

    #[test]
    fn large_ticks_are_compact() {
        assert_eq!(tick(2_500_000.0), "2.5M");
        assert_eq!(tick(20_000.0), "20k");
        assert_eq!(tick(500.0), "500");
    }

    #[test]
    fn positive_domains_start_at_zero() {
        let (lo, hi) = domain([3.0, 7.0].into_iter(), true);
        assert_eq!(lo, 0.0);
        assert!(hi >= 7.0);
    }
}
