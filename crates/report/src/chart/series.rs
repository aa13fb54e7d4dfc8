//! Series over time for one trial, seconds on x: the telemetry CPU breakdown as
//! stacked areas ([`cpu_chart`]), and any other series of one unit (e.g. `http.rps`,
//! disk await) as lines ([`chart`]).

use perflab_store::SeriesData;

use super::line::{render, LinePlot};
use super::stacked::{self, Layer, StackedPlot};
use super::{domain, labelled, nice_ticks, unit_paren, PALETTE};

/// The CPU states the monitor stores (`cpu.*_pct`, % of all CPUs), in stacking
/// order, bottom first, each with its legend name and a fixed colour (the same state
/// keeps its colour whichever others a host lacks). Running work first, then the
/// kernel's interrupt work and time stolen by the hypervisor, iowait on top: it is
/// idle time with I/O outstanding, so the edge below it is the busy share
/// (100 − idle − iowait, as `cpu.busiest_busy_pct` counts it) and the very top is
/// 100 − idle.
pub const CPU_STACK: [(&str, &str, &str); 7] = [
    ("cpu.user_pct", "user", PALETTE[0]),
    ("cpu.nice_pct", "nice", PALETTE[4]),
    ("cpu.system_pct", "system", PALETTE[1]),
    ("cpu.irq_pct", "irq", PALETTE[5]),
    ("cpu.softirq_pct", "softirq", PALETTE[3]),
    ("cpu.steal_pct", "steal", PALETTE[7]),
    ("cpu.iowait_pct", "iowait", PALETTE[6]),
];

/// The CPU states of one trial's `series` stacked over time; None when it has none
/// of them, or only all-zero or single-point ones (nothing to see over time).
pub fn cpu_chart(series: &[SeriesData]) -> Option<String> {
    let layers: Vec<Layer> = CPU_STACK
        .iter()
        .filter_map(|(name, label, colour)| {
            let s = series.iter().find(|s| s.name == *name)?;
            Some(Layer {
                name: label.to_string(),
                detail: s.name.clone(),
                colour,
                points: s.points.clone(),
            })
        })
        .collect();
    if layers.iter().all(|l| l.points.iter().all(|p| p.1 == 0.0))
        || layers.iter().all(|l| l.points.len() < 2)
    {
        return None;
    }
    stacked::render(&StackedPlot {
        title: "CPU time by state".into(),
        x_label: "time since trial start (s)".into(),
        y_label: "CPU time (% of all CPUs)".into(),
        x_unit: "s".into(),
        unit: "%".into(),
        ceiling: 100.0,
        total_label: "total (100 − idle)".into(),
        layers,
    })
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(name: &str, points: &[(f64, f64)]) -> SeriesData {
        SeriesData {
            name: name.into(),
            unit: "%".into(),
            points: points.to_vec(),
        }
    }

    #[test]
    fn cpu_states_stack_in_a_fixed_order_whatever_order_they_are_stored_in() {
        let series = [
            cpu("cpu.iowait_pct", &[(1.0, 1.0), (2.0, 2.0)]),
            cpu("cpu.idle_pct", &[(1.0, 80.0), (2.0, 60.0)]),
            cpu("cpu.softirq_pct", &[(1.0, 4.0), (2.0, 8.0)]),
            cpu("cpu.user_pct", &[(1.0, 10.0), (2.0, 20.0)]),
            cpu("cpu.system_pct", &[(1.0, 5.0), (2.0, 10.0)]),
        ];
        let svg = cpu_chart(&series).unwrap();
        let order: Vec<usize> = ["user (cpu.user_pct)", "system (", "softirq (", "iowait ("]
            .iter()
            .map(|n| svg.find(&format!("<title>{n}")).expect(n))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        assert!(!svg.contains("idle ("), "idle is what is left, not a layer");
        assert!(svg.contains(">total (100 − idle)</text>"));
        assert!(svg.contains("% of all CPUs") && svg.contains("(s)</text>"));
        // The hover text at 2 s: the total is the sum of the four states.
        assert!(svg.contains("<title>at 2 s\ntotal (100 − idle) 40 %\niowait 2 %"));
    }

    #[test]
    fn no_cpu_chart_without_something_to_see() {
        assert!(cpu_chart(&[]).is_none());
        assert!(cpu_chart(&[cpu("cpu.user_pct", &[(1.0, 50.0)])]).is_none());
        assert!(cpu_chart(&[cpu("cpu.user_pct", &[(1.0, 0.0), (2.0, 0.0)])]).is_none());
        assert!(cpu_chart(&[cpu("sched.ctxt_per_s", &[(1.0, 5.0), (2.0, 6.0)])]).is_none());
    }
}
