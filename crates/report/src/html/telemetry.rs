//! The telemetry section: what the monitor saw while the trials ran — per-config
//! figures that most often explain a result, then one trial's series over time.

use std::fmt::Write;

use super::head;
use crate::chart::series;
use crate::data::ReportData;
use crate::format::esc;
use perflab_analysis::format::{num, value};

/// The monitor's view: per-config summaries, then one trial's series over time.
pub(super) fn section(o: &mut String, d: &ReportData) {
    let table = telemetry_table(d);
    let charts = over_time(d);
    if table.is_empty() && charts.is_none() {
        return;
    }
    o.push_str("<h2>Telemetry</h2>\n");
    o.push_str(&table);
    o.push_str(&charts.unwrap_or_default());
}

/// Per config, the figures that most often explain a result: busy and softirq CPU
/// (softirq often piles up on one CPU, hence the busiest one too), context switches,
/// the deepest disk queue and TCP retransmits. Each is the mean over the config's ok
/// trials of a whole-trial figure, except max aqu-sz: the deepest queue of any one
/// sampling interval, trial and disk. A column only when some config has it; empty
/// when none has any.
fn telemetry_table(d: &ReportData) -> String {
    let heads = [
        "CPU busy",
        "softirq",
        "busiest CPU softirq",
        "context switches",
        "max aqu-sz",
        "retransmits",
    ];
    let rows: Vec<[Option<String>; 6]> = d
        .configs
        .iter()
        .map(|c| {
            let mean = |n: &str| c.metric(n).and_then(|m| m.summary.as_ref()).map(|s| s.mean);
            // Busy as the monitor counts it: neither idle nor waiting for I/O.
            let busy = mean("cpu.idle_pct")
                .zip(mean("cpu.iowait_pct"))
                .map(|(idle, iowait)| 100.0 - idle - iowait);
            let queue = c
                .metrics
                .iter()
                .filter(|m| m.name.starts_with("disk.") && m.name.ends_with(".aqu_sz_max"))
                .flat_map(|m| m.values.iter().map(move |v| (*v, m.name.as_str())))
                .filter(|(v, _)| v.is_finite())
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(v, n)| {
                    let dev = n
                        .trim_start_matches("disk.")
                        .trim_end_matches(".aqu_sz_max");
                    format!("{} ({})", num(v), dev)
                });
            let pct = |v: f64| value(v, "%");
            [
                busy.map(|b| pct(b.max(0.0))),
                mean("cpu.softirq_pct").map(pct),
                mean("cpu.busiest_softirq_pct").map(pct),
                mean("sched.ctxt_per_s").map(|v| value(v, "/s")),
                queue,
                mean("net.retrans_pct").map(pct),
            ]
        })
        .collect();
    let keep: Vec<usize> = (0..heads.len())
        .filter(|j| rows.iter().any(|r| r[*j].is_some()))
        .collect();
    if keep.is_empty() {
        return String::new();
    }
    let mut o = String::from(
        "<p class=\"muted\">Per config: means over its ok trials of whole-trial figures \
         (busy: neither idle nor iowait); max aqu-sz is the deepest disk queue (requests) \
         in any one sampling interval, and which disk.</p>\n",
    );
    let mut cols = vec!["config"];
    cols.extend(keep.iter().map(|j| heads[*j]));
    head(&mut o, &cols);
    for (c, r) in d.configs.iter().zip(&rows) {
        let _ = write!(o, "<tr><td>{}</td>", esc(&c.label));
        for j in &keep {
            let _ = write!(
                o,
                "<td class=\"num\">{}</td>",
                esc(r[*j].as_deref().unwrap_or("—"))
            );
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table>\n");
    o
}

/// Charts over time of the first ok trial with series; None when it has nothing to
/// draw.
fn over_time(d: &ReportData) -> Option<String> {
    let t = d
        .export
        .trials
        .iter()
        .find(|t| t.status == "ok" && !t.series.is_empty())?;
    let mut out = String::new();
    if let Some(svg) = series::cpu_chart(&t.series) {
        out.push_str(&svg);
    }
    // (title, quantity, which series): one chart each, when the trial has them.
    type Pick = fn(&str) -> bool;
    let more: [(&str, &str, Pick); 4] = [
        ("HTTP throughput", "throughput", |n| n == "http.rps"),
        ("Context switches", "rate", |n| n == "sched.ctxt_per_s"),
        ("Disk utilisation", "busy", |n| {
            n.starts_with("disk.") && n.ends_with(".util")
        }),
        ("Disk await", "await", |n| {
            n.starts_with("disk.") && n.ends_with(".await")
        }),
    ];
    for (title, quantity, pick) in more {
        let chosen: Vec<_> = t.series.iter().filter(|s| pick(&s.name)).collect();
        if let Some(svg) = series::chart(title, quantity, &chosen) {
            out.push_str(&svg);
        }
    }
    let retrans: Vec<_> = t
        .series
        .iter()
        .filter(|s| s.name == "net.retrans_pct")
        .collect();
    if let Some(svg) = series::chart("TCP retransmits", "retransmitted", &retrans) {
        out.push_str(&svg);
    }
    if out.is_empty() {
        return None;
    }
    Some(format!(
        "<h3>Over time</h3><p class=\"muted\">Trial {} ({}).</p>{out}\n",
        t.ordinal,
        esc(d.config_label(t.config))
    ))
}
