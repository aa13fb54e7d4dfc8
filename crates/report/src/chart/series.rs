//! Series over time for one trial: telemetry CPU breakdown (user, system, softirq,
//! iowait, in %) and any other series of one unit (e.g. `http.rps`), seconds on x.

use perflab_store::SeriesData;

use super::line::{render, LinePlot};
use super::{domain, labelled, nice_ticks, unit_paren};

/// The CPU series drawn, in this order.
pub const CPU: [&str; 4] = [
    "cpu.user_pct",
    "cpu.system_pct",
    "cpu.softirq_pct",
    "cpu.iowait_pct",
];

/// A plot of `series` (all in one unit) titled `title`; None when none has points.
pub fn chart(title: &str, quantity: &str, series: &[&SeriesData]) -> Option<String> {
    let series: Vec<_> = series.iter().filter(|s| !s.points.is_empty()).collect();
    // All zero (an idle disk, no retransmits) or one point each (a trial shorter
    // than the sampling step): nothing to see over time, no chart.
    if series.iter().all(|s| s.points.iter().all(|p| p.1 == 0.0))
        || series.iter().all(|s| s.points.len() < 2)
    {
        return None;
    }
    let unit = &series[0].unit;
    let x_range = domain(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.0)),
        true,
    );
    let y_range = domain(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
        true,
    );
    Some(render(&LinePlot {
        title: title.to_string(),
        x_label: "time since trial start (s)".into(),
        y_label: format!("{quantity} {}", unit_paren(unit)),
        x_range,
        y_range,
        x_ticks: labelled(nice_ticks(x_range.0, x_range.1, 8)),
        y_ticks: labelled(nice_ticks(y_range.0, y_range.1, 5)),
        lines: series
            .iter()
            .map(|s| (s.name.clone(), s.points.clone()))
            .collect(),
    }))
}
