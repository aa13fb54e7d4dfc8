//! What a finished bench says, per command, and the three files it can be exported to:
//! JSON in hyperfine's schema (its plotting scripts read it) plus perflab's
//! `comparison` entries, and Markdown and CSV tables shaped like hyperfine's.
//! Times are in seconds everywhere, as hyperfine writes them.

use std::collections::BTreeMap;

use perflab_store::{RunId, Store};
use serde_json::{json, Map, Value};

use super::plan::Bench;
use super::stats::{Stat, Versus};

/// One benchmarked command after the run.
#[derive(Debug, Clone)]
pub struct BenchResult {
    pub bench: Bench,
    /// Wall times of its successful runs, in run order.
    pub times: Vec<f64>,
    /// Peak resident memory of the same runs.
    pub memory: Vec<f64>,
    /// Summaries by metric name (`wall_s`, `user_s`, `sys_s`, `max_process_rss_bytes`).
    pub stats: BTreeMap<String, Stat>,
}

impl BenchResult {
    pub fn stat(&self, metric: &str) -> Option<&Stat> {
        self.stats.get(metric)
    }
}

/// Everything printed and exported.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub run: RunId,
    pub confidence: f64,
    pub results: Vec<BenchResult>,
    /// Index of the baseline in `results`.
    pub baseline: usize,
    /// (index of the candidate in `results`, its comparisons with the baseline).
    pub comparisons: Vec<(usize, Vec<Versus>)>,
    /// Exit codes are known to be 0 only when failures were not ignored.
    pub ignore_failure: bool,
    /// (index of the candidate, the why block of its comparison with the baseline).
    pub whys: Vec<(usize, perflab_analysis::why::WhyBlock)>,
    /// `--counters`: the events asked for (their summaries are `counter.*` stats).
    pub counters: Vec<perflab_telemetry::perfcount::Event>,
}

/// The samples of every config of the run, matched to the benches by config ordinal.
pub fn load(
    store: &Store,
    run: RunId,
    benches: &[Bench],
    mut stats: super::stats::Summaries,
) -> anyhow::Result<Vec<BenchResult>> {
    let configs = store.configs(run)?;
    let metrics = store.metrics(run)?;
    let mut out = Vec::new();
    for (i, bench) in benches.iter().enumerate() {
        let ordinal = i as u32;
        let id = configs.iter().find(|c| c.ordinal == ordinal).map(|c| c.id);
        let values = |name: &str| -> Vec<f64> {
            metrics
                .iter()
                .filter(|m| Some(m.config_id) == id && m.name == name)
                .map(|m| m.value)
                .collect()
        };
        out.push(BenchResult {
            bench: bench.clone(),
            times: values("wall_s"),
            memory: values("max_process_rss_bytes"),
            stats: stats.remove(&ordinal).unwrap_or_default(),
        });
    }
    Ok(out)
}

fn num(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}

/// The `--export-json` (and `--json`) document.
pub fn json_doc(o: &Outcome) -> Value {
    let results: Vec<Value> = o.results.iter().map(|r| result_json(r, o)).collect();
    let base = &o.results[o.baseline];
    let comparison: Vec<Value> = o
        .comparisons
        .iter()
        .flat_map(|(i, rows)| {
            let cand = &o.results[*i];
            rows.iter().map(move |v| {
                let mut e = Map::new();
                e.insert("baseline".into(), json!(o.baseline));
                e.insert("baseline_command".into(), json!(base.bench.name));
                e.insert("candidate".into(), json!(i));
                e.insert("candidate_command".into(), json!(cand.bench.name));
                if let Value::Object(fields) = &v.json {
                    e.extend(fields.clone());
                }
                Value::Object(e)
            })
        })
        .collect();
    json!({
        "schema_version": 1,
        "run": o.run,
        "confidence": o.confidence,
        "results": results,
        "comparison": comparison,
        "why": why_json(o),
    })
}

/// `why`: per candidate, its why block (`candidate`, `candidate_command`, and the
/// `why`, `why_checked`, `noise_floor` keys of `perflab compare --json`).
fn why_json(o: &Outcome) -> Vec<Value> {
    o.whys
        .iter()
        .map(|(i, block)| {
            let mut v = json!({"candidate": i, "candidate_command": o.results[*i].bench.name});
            block.add_to(&mut v);
            v
        })
        .collect()
}

fn result_json(r: &BenchResult, o: &Outcome) -> Value {
    let get = |metric: &str, f: fn(&Stat) -> f64| r.stat(metric).map_or(Value::Null, |s| num(f(s)));
    let exit_codes: Vec<Value> = r
        .times
        .iter()
        .map(|_| {
            if o.ignore_failure {
                Value::Null
            } else {
                json!(0)
            }
        })
        .collect();
    let mut v = json!({
        "command": r.bench.name,
        "mean": get("wall_s", |s| s.mean),
        "stddev": get("wall_s", |s| s.sd),
        "median": get("wall_s", |s| s.median),
        "user": get("user_s", |s| s.mean),
        "system": get("sys_s", |s| s.mean),
        "min": get("wall_s", |s| s.min),
        "max": get("wall_s", |s| s.max),
        "times": r.times,
        "memory_usage_byte": r.memory.iter().map(|m| *m as u64).collect::<Vec<_>>(),
        "exit_codes": exit_codes,
    });
    if !r.bench.params.is_empty() {
        let params: Map<String, Value> = r
            .bench
            .params
            .iter()
            .map(|(k, val)| (k.clone(), json!(val)))
            .collect();
        v["parameters"] = Value::Object(params);
    }
    v["command_line"] = json!(r.bench.command);
    v["n"] = json!(r.times.len());
    v["mean_ci_low"] = get("wall_s", |s| s.ci_low);
    v["mean_ci_high"] = get("wall_s", |s| s.ci_high);
    if !o.counters.is_empty() {
        v["counters"] = counters_json(r);
    }
    v
}

/// `--counters`: each `counter.*` metric's mean and interval, in its unit.
fn counters_json(r: &BenchResult) -> Value {
    let m: Map<String, Value> = r
        .stats
        .iter()
        .filter_map(|(name, s)| {
            let short = name.strip_prefix("counter.")?;
            Some((
                short.to_string(),
                json!({
                    "unit": s.unit,
                    "mean": num(s.mean),
                    "ci_low": num(s.ci_low),
                    "ci_high": num(s.ci_high),
                    "n": s.n,
                }),
            ))
        })
        .collect();
    Value::Object(m)
}

/// Seconds in hyperfine's unit: milliseconds below one second.
fn unit_for(o: &Outcome) -> (&'static str, f64) {
    let first = o
        .results
        .iter()
        .find_map(|r| r.stat("wall_s"))
        .map(|s| s.mean);
    match first {
        Some(m) if m >= 1.0 => ("s", 1.0),
        _ => ("ms", 1e3),
    }
}

fn fmt_time(v: f64, scale: f64) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    if scale == 1.0 {
        format!("{v:.3}")
    } else {
        format!("{:.1}", v * scale)
    }
}

/// The wall-time ratio to the baseline and the verdict, for one result.
fn relative(o: &Outcome, i: usize) -> (String, String) {
    if i == o.baseline {
        return ("1.00".into(), "baseline".into());
    }
    let wall = o
        .comparisons
        .iter()
        .find(|(c, _)| *c == i)
        .and_then(|(_, rows)| rows.iter().find(|v| v.metric == "wall_s"));
    match wall {
        Some(v) if v.ratio.is_finite() => (
            format!(
                "{:.2} [{:.2}, {:.2}]",
                v.ratio, v.ratio_ci_low, v.ratio_ci_high
            ),
            v.verdict.clone(),
        ),
        Some(v) => ("—".into(), v.verdict.clone()),
        None => ("—".into(), "no successful run".into()),
    }
}

/// The `--export-markdown` table (hyperfine's columns; mean ± the CI half-width, the
/// ratio to the baseline with its interval, and the verdict).
pub fn markdown(o: &Outcome) -> String {
    let (unit, scale) = unit_for(o);
    let level = format!("{:.0}%", o.confidence * 100.0);
    let mut t = format!(
        "| Command | Mean ± {level} CI [{unit}] | Min [{unit}] | Max [{unit}] | Relative [{level} CI] | Verdict |\n|:---|---:|---:|---:|---:|:---|\n"
    );
    for (i, r) in o.results.iter().enumerate() {
        let (rel, verdict) = relative(o, i);
        let (mean, min, max) = match r.stat("wall_s") {
            Some(s) => {
                let half = if s.half.is_finite() {
                    format!(" ± {}", fmt_time(s.half, scale))
                } else {
                    String::new()
                };
                (
                    format!("{}{half}", fmt_time(s.mean, scale)),
                    fmt_time(s.min, scale),
                    fmt_time(s.max, scale),
                )
            }
            None => ("—".into(), "—".into(), "—".into()),
        };
        t.push_str(&format!(
            "| `{}` | {mean} | {min} | {max} | {rel} | {verdict} |\n",
            r.bench.name.replace('|', "\\|")
        ));
    }
    t
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The `--export-csv` table: hyperfine's columns (seconds; stddev 0 when undefined),
/// its `parameter_NAME` columns, then perflab's `n`, `mean_ci_low`, `mean_ci_high`.
pub fn csv(o: &Outcome) -> String {
    let mut head: Vec<String> = [
        "command", "mean", "stddev", "median", "user", "system", "min", "max",
    ]
    .map(String::from)
    .to_vec();
    if let Some(r) = o.results.iter().find(|r| !r.bench.params.is_empty()) {
        head.extend(r.bench.params.iter().map(|(k, _)| format!("parameter_{k}")));
    }
    let n_params = head.len() - 8;
    head.extend(["n", "mean_ci_low", "mean_ci_high"].map(String::from));
    let mut t = head.join(",") + "\n";
    let f = |v: Option<f64>| {
        v.filter(|x| x.is_finite())
            .map_or(String::new(), |x| x.to_string())
    };
    for r in &o.results {
        let wall = r.stat("wall_s");
        let mut row = vec![csv_field(&r.bench.name)];
        row.push(f(wall.map(|s| s.mean)));
        row.push(f(wall.map(|s| if s.sd.is_finite() { s.sd } else { 0.0 })));
        row.push(f(wall.map(|s| s.median)));
        row.push(f(r.stat("user_s").map(|s| s.mean)));
        row.push(f(r.stat("sys_s").map(|s| s.mean)));
        row.push(f(wall.map(|s| s.min)));
        row.push(f(wall.map(|s| s.max)));
        let mut params: Vec<String> = r.bench.params.iter().map(|(_, v)| csv_field(v)).collect();
        params.resize(n_params, String::new());
        row.extend(params);
        row.push(r.times.len().to_string());
        row.push(f(wall.map(|s| s.ci_low)));
        row.push(f(wall.map(|s| s.ci_high)));
        t.push_str(&row.join(","));
        t.push('\n');
    }
    t
}
