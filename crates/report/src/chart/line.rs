//! The shared line plot: named polylines in data coordinates over caller-chosen
//! ticks. [`super::latency`] passes a log-transformed x, [`super::series`] time.

use std::fmt::Write;

use super::{colour, legend, open, x_axis, y_axis, Frame};

/// A line plot's content.
pub struct LinePlot {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_range: (f64, f64),
    pub y_range: (f64, f64),
    pub x_ticks: Vec<(f64, String)>,
    pub y_ticks: Vec<(f64, String)>,
    /// (name, points) in data coordinates.
    pub lines: Vec<(String, Vec<(f64, f64)>)>,
}

/// The SVG of a line plot.
pub fn render(p: &LinePlot) -> String {
    let f = Frame::plot(p.x_range, p.y_range);
    let mut out = String::new();
    open(&mut out, f.w, f.h, &p.title);
    x_axis(&mut out, &f, &p.x_ticks, &p.x_label);
    y_axis(&mut out, &f, &p.y_ticks, &p.y_label);
    for (i, (_, pts)) in p.lines.iter().enumerate() {
        let d: Vec<String> = pts
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .map(|(x, y)| format!("{:.1},{:.1}", f.x(*x), f.y(*y)))
            .collect();
        let _ = write!(
            out,
            r#"<polyline class="line" fill="none" stroke="{}" points="{}"/>"#,
            colour(i),
            d.join(" ")
        );
        // Few points (a short trial's one-second series): mark each, or a single
        // point would draw nothing at all.
        if d.len() <= 30 {
            for xy in &d {
                let (x, y) = xy.split_once(',').unwrap_or(("0", "0"));
                let _ = write!(
                    out,
                    r#"<circle cx="{x}" cy="{y}" r="2.5" fill="{}"/>"#,
                    colour(i)
                );
            }
        }
    }
    let names: Vec<String> = p.lines.iter().map(|(n, _)| n.clone()).collect();
    legend(&mut out, &f, &names);
    out.push_str("</svg>");
    out
}
