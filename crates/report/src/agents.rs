//! The agents section of a distributed load (`perflab http --agents`, `[workload]
//! agents`), shared by the HTML and Markdown reports: one row per agent of each trial
//! that stored an `agents.json` artifact — its requests, rate, errors, p99, client CPU,
//! and whether it saturated its own CPU or was lost — and the start skew measured at
//! the barrier. The cells are plain text; the caller escapes them.

use perflab_store::vocab::ARTIFACT_AGENTS;
use serde_json::Value;

use crate::data::ReportData;

/// Column heads of the section.
pub const HEAD: [&str; 8] = [
    "trial",
    "agent",
    "requests",
    "req/s",
    "errors",
    "p99 ms",
    "client CPU",
    "",
];

/// The rows of every trial with agents, in execution order.
pub fn rows(d: &ReportData) -> Vec<[String; 8]> {
    let mut out = Vec::new();
    for (t, doc) in docs(d) {
        let trial = format!("{} ({})", t.ordinal, d.config_label(t.config));
        for a in doc["agents"].as_array().into_iter().flatten() {
            let name = a["name"].as_str().unwrap_or("?").to_string();
            let num = |k: &str, digits: usize| {
                a[k].as_f64()
                    .map_or("—".to_string(), |x| format!("{x:.digits$}"))
            };
            out.push(match a["lost"].as_str() {
                Some(why) => [
                    trial.clone(),
                    name,
                    "—".into(),
                    "—".into(),
                    "—".into(),
                    "—".into(),
                    "—".into(),
                    format!("lost: {why}"),
                ],
                None => [
                    trial.clone(),
                    name,
                    num("requests", 0),
                    num("rps", 0),
                    num("errors", 0),
                    a["latency_ms"]["p99"]
                        .as_f64()
                        .map_or("—".to_string(), |x| format!("{x:.3}")),
                    a["cpu_busy"]
                        .as_f64()
                        .map_or("—".to_string(), |x| format!("{:.0} %", x * 100.0)),
                    if a["saturated"].as_bool() == Some(true) {
                        "saturated its CPU".into()
                    } else {
                        String::new()
                    },
                ],
            });
        }
    }
    out
}

/// The start skew in words: median and largest over the trials that measured it.
pub fn skew(d: &ReportData) -> Option<String> {
    let mut s: Vec<f64> = docs(d)
        .filter_map(|(_, doc)| doc["start_skew_ms"].as_f64())
        .collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let median = if s.len() % 2 == 1 {
        s[s.len() / 2]
    } else {
        (s[s.len() / 2 - 1] + s[s.len() / 2]) / 2.0
    };
    Some(format!(
        "Start skew at the barrier (the spread of the agents' starts, clocks corrected): median {median:.3} ms, largest {:.3} ms, over {} trial{}.",
        s[s.len() - 1],
        s.len(),
        if s.len() == 1 { "" } else { "s" }
    ))
}

/// Each trial's `agents.json`, parsed.
fn docs(d: &ReportData) -> impl Iterator<Item = (&perflab_store::ExportedTrial, Value)> {
    d.export.trials.iter().filter_map(|t| {
        let a = t.artifacts.iter().find(|a| a.name == ARTIFACT_AGENTS)?;
        Some((t, serde_json::from_slice(&a.content).ok()?))
    })
}
