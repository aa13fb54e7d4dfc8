//! `perflab show [RUN]`: the summary of a stored run.

use std::process::ExitCode;

use perflab_analysis::summary::{summarize_run, RunSummary};
use perflab_store::Store;
use serde_json::{json, Value};

use crate::Global;

/// Summary of a stored run: per config and metric, mean ± CI, n, CV, median, outliers.
///
/// Examples:
///   perflab show            # the latest run
///   perflab show 3 --json
///   perflab show 3 --confidence 0.99
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct ShowArgs {
    /// Run id (default: the latest run).
    run: Option<i64>,

    /// Confidence level of the intervals, in (0, 1).
    #[arg(long, default_value_t = 0.95, value_parser = parse_confidence)]
    confidence: f64,

    /// JSON (schema in docs/json.md).
    #[arg(long)]
    json: bool,
}

/// Parses a confidence level in (0, 1) (also accepts 95 for 0.95).
pub fn parse_confidence(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    let v = if v > 1.0 && v < 100.0 { v / 100.0 } else { v };
    if v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(format!("confidence must be in (0, 1), e.g. 0.95; got {s}"))
    }
}

pub fn run(g: &Global, a: &ShowArgs) -> anyhow::Result<ExitCode> {
    let (store, id) = g.store_and_run(a.run)?;
    let s = summarize_run(&store, id, a.confidence)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&json(&store, &s)?)?);
        return Ok(ExitCode::SUCCESS);
    }
    let r = &s.run;
    let host = store.host(r.host_id)?;
    println!(
        "run {} · {} · {} · started {} · host {} ({} cores{}) · {} ok, {} failed",
        r.id,
        r.name,
        r.status,
        r.started_at,
        host.hostname,
        host.cores.unwrap_or(0),
        host.cpu_model
            .as_deref()
            .map(|m| format!(", {m}"))
            .unwrap_or_default(),
        r.trials_ok,
        r.trials_failed
    );
    if let Some(h) = crate::commands::runs::hint(r) {
        println!("{h}");
    }
    println!("{}", crate::format::summary_table(&s));
    for t in store.trials(id)?.iter().filter(|t| t.status == "failed") {
        let first = t
            .error
            .as_deref()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("");
        println!("failed trial {}: {first}", t.ordinal);
    }
    Ok(ExitCode::SUCCESS)
}

/// The `show --json` document (docs/json.md).
pub fn json(store: &Store, s: &RunSummary) -> anyhow::Result<Value> {
    let r = &s.run;
    let host = store.host(r.host_id)?;
    let trials = store.trials(r.id)?;
    let configs: Vec<Value> = s
        .configs
        .iter()
        .map(|c| {
            let ordinals: Vec<u32> = trials
                .iter()
                .filter(|t| t.config_id == c.config_id && t.status == "ok")
                .map(|t| t.ordinal)
                .collect();
            let metrics: Vec<Value> = c
                .metrics
                .iter()
                .map(|m| {
                    let st = &m.stats;
                    let outlier_trials: Vec<u32> = st
                        .outliers
                        .iter()
                        .filter_map(|&i| ordinals.get(i).copied())
                        .collect();
                    json!({
                        "name": m.name, "unit": m.unit, "better": m.better,
                        "n": st.n, "mean": st.mean, "sd": st.sd, "se": st.se,
                        "confidence": st.confidence, "ci_low": st.ci_low, "ci_high": st.ci_high,
                        "median": st.median, "median_ci_low": st.median_ci_low,
                        "median_ci_high": st.median_ci_high,
                        "median_ci_confidence": st.median_ci_confidence,
                        "min": st.min, "max": st.max, "cv": st.cv,
                        "outliers": st.outliers.len(), "outlier_trials": outlier_trials,
                    })
                })
                .collect();
            json!({ "params": c.params, "metrics": metrics })
        })
        .collect();
    Ok(json!({
        "schema_version": 1,
        "run": {
            "id": r.id, "name": r.name, "kind": r.kind, "status": r.status,
            "started_at": r.started_at, "ended_at": r.ended_at, "host": r.host,
            "seed": r.seed, "file": r.file_path,
            "trials_ok": r.trials_ok, "trials_failed": r.trials_failed,
            "trials_interrupted": r.trials_interrupted,
            "owner": r.owner, "heartbeat_at": r.heartbeat_at,
            "hint": crate::commands::runs::hint(r),
            "host_info": host,
        },
        "configs": configs,
    }))
}
