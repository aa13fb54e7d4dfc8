//! What `perflab scimark` prints, read back from the store through the analysis crate:
//! per language and kernel the MFLOPS mean with its interval and the verification
//! checksum, and each language's ratio to C (baseline `lang=c`) with its interval. The
//! JSON document (docs/json.md) is built first; the tables are drawn from it.

use comfy_table::{Cell, CellAlignment, Table};
use perflab_analysis::compare::{against_baseline, Baseline, Candidate};
use perflab_analysis::format::sig;
use perflab_analysis::summary::{summarize_run, ConfigSummary};
use perflab_analysis::{CompareOptions, Outcome};
use perflab_store::{RunId, Store};
use perflab_workloads::scimark::{Output, KERNELS};
use serde_json::{json, Map, Value};

use super::Checked;
use crate::format::STYLE;

/// (column name, metric name): the kernels, then the composite.
fn metric_names() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = KERNELS
        .iter()
        .map(|k| (k.to_string(), format!("{k}_mflops")))
        .collect();
    v.push(("composite".into(), "composite_mflops".into()));
    v
}

/// The document of run `run` (None when no language could run): the languages asked
/// for, in order (on `--resume`, those of the stored run), each with its results.
pub fn document(
    run: Option<RunId>,
    store: &Store,
    checked: &[Checked],
    confidence: f64,
) -> anyhow::Result<Value> {
    let summary = run
        .map(|r| summarize_run(store, r, confidence))
        .transpose()?;
    let lang_of =
        |p: &perflab_store::Params| p.get("lang").and_then(|v| v.as_str()).map(String::from);
    // The order: as asked, then any stored language not asked for (a resumed run).
    let mut names: Vec<String> = checked.iter().map(|c| c.name.clone()).collect();
    for c in summary.iter().flat_map(|s| &s.configs) {
        if let Some(l) = lang_of(&c.params).filter(|l| !names.contains(l)) {
            names.push(l);
        }
    }
    let has_c = summary
        .iter()
        .flat_map(|s| &s.configs)
        .any(|c| lang_of(&c.params).as_deref() == Some("c"));
    let ratios = match (run, has_c) {
        (Some(r), true) => {
            let opts = CompareOptions {
                confidence,
                ..Default::default()
            };
            let base = Baseline::Matching(vec![("lang".into(), "c".into())]);
            Some(against_baseline(store, r, &base, &[], &opts)?)
        }
        _ => None,
    };
    let mut list = Vec::new();
    for name in &names {
        let check = checked.iter().find(|c| &c.name == name);
        let config = summary
            .iter()
            .flat_map(|s| &s.configs)
            .find(|c| lang_of(&c.params).as_deref() == Some(name.as_str()));
        let verify = match check.and_then(|c| c.verify.clone()) {
            Some(o) => Some(o),
            None => match (run, config) {
                (Some(r), Some(c)) => stored_output(store, r, c.config_id),
                _ => None,
            },
        };
        let (kernels, composite) = mflops(config, verify.as_ref());
        let candidate = ratios.as_ref().and_then(|r| {
            r.candidates
                .iter()
                .find(|c| lang_of(&c.params).as_deref() == Some(name.as_str()))
        });
        let ratio_to_c = ratio_to_c(candidate);
        let error = check.and_then(|c| c.error.clone());
        list.push(json!({
            "lang": name,
            "runtime": verify.as_ref().map(|o| o.runtime.clone()).unwrap_or_default(),
            "verified": error.is_none() && verify.is_some(),
            "error": error,
            "kernels": kernels,
            "composite": composite,
            "ratio_to_c": ratio_to_c,
        }));
    }
    Ok(json!({"schema_version": 1, "run_id": run, "languages": list}))
}

/// One language's MFLOPS per kernel (with its checksum) and its composite.
fn mflops(config: Option<&ConfigSummary>, verify: Option<&Output>) -> (Map<String, Value>, Value) {
    let mut kernels = Map::new();
    let mut composite = Value::Null;
    for (short, metric) in metric_names() {
        let Some(m) = config.and_then(|c| c.metrics.iter().find(|m| m.name == metric)) else {
            continue;
        };
        let s = &m.stats;
        if short == "composite" {
            composite =
                json!({"mflops_mean": s.mean, "ci_low": s.ci_low, "ci_high": s.ci_high, "n": s.n});
        } else {
            let checksum = verify
                .and_then(|o| o.kernels.get(&short))
                .map(|k| json!(k.checksum))
                .unwrap_or(Value::Null);
            kernels.insert(
                short.clone(),
                json!({"mflops_mean": s.mean, "ci_low": s.ci_low, "ci_high": s.ci_high, "n": s.n, "checksum": checksum}),
            );
        }
    }
    (kernels, composite)
}

/// One language's ratio to C per kernel and composite, with its interval.
fn ratio_to_c(candidate: Option<&Candidate>) -> Map<String, Value> {
    let mut ratio_to_c = Map::new();
    for row in candidate.iter().flat_map(|c| &c.report.rows) {
        let Some((short, _)) = metric_names().into_iter().find(|(_, m)| *m == row.name) else {
            continue;
        };
        let v = match &row.outcome {
            Outcome::Compared(c) => json!({
                "ratio": c.ratio, "ci_low": c.ratio_ci_low, "ci_high": c.ratio_ci_high,
                "warning": c.says_little(),
            }),
            // Too few rounds for an interval: the ratio of the means alone.
            _ => {
                json!({"ratio": row.candidate.mean / row.baseline.mean, "ci_low": null, "ci_high": null})
            }
        };
        ratio_to_c.insert(short, v);
    }
    ratio_to_c
}

/// A stored round's output (`scimark.json`): its runtime and checksums.
fn stored_output(store: &Store, run: RunId, config: i64) -> Option<Output> {
    let trials = store.trials(run).ok()?;
    trials
        .iter()
        .filter(|t| t.config_id == config && t.status == "ok")
        .find_map(|t| {
            let arts = store.trial_artifacts(t.id).ok()?;
            let (_, _, bytes) = arts.into_iter().find(|a| a.0 == "scimark.json")?;
            serde_json::from_slice(&bytes).ok()
        })
}

/// The document as JSON, or as two tables (MFLOPS, ratio to C).
/// One line per language whose ratios to C say little (e.g. `--repeat 2`).
fn warnings(langs: &[Value]) -> Vec<String> {
    langs
        .iter()
        .filter_map(|l| {
            let w = l["ratio_to_c"]
                .as_object()?
                .values()
                .find_map(|q| q["warning"].as_str())?;
            Some(format!(
                "warning: {} ratios to C: {w}",
                l["lang"].as_str().unwrap_or("?")
            ))
        })
        .collect()
}

pub fn print(doc: &Value, json: bool, confidence: f64) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(doc)?);
        return Ok(());
    }
    let langs = doc["languages"].as_array().cloned().unwrap_or_default();
    let names = metric_names();
    let mut t = Table::new();
    t.load_style(STYLE);
    let mut header = vec![format!("MFLOPS (mean ± {:.0}% CI)", confidence * 100.0)];
    header.extend(names.iter().map(|(s, _)| s.clone()));
    t.set_header(header);
    let mut r = Table::new();
    r.load_style(STYLE);
    let mut rheader = vec!["ratio to C [CI]".to_string()];
    rheader.extend(names.iter().map(|(s, _)| s.clone()));
    r.set_header(rheader);
    for l in &langs {
        let label = format!(
            "{} ({})",
            l["lang"].as_str().unwrap_or(""),
            l["runtime"].as_str().unwrap_or("")
        );
        if !l["error"].is_null() && l["kernels"].as_object().is_none_or(|k| k.is_empty()) {
            t.add_row(vec![
                Cell::new(label),
                Cell::new("failed (see error above)"),
            ]);
            continue;
        }
        let mut row = vec![Cell::new(&label)];
        let mut rrow = vec![Cell::new(&label)];
        for (short, _) in &names {
            let e = if short == "composite" {
                &l["composite"]
            } else {
                &l["kernels"][short]
            };
            let cell = match (
                e["mflops_mean"].as_f64(),
                e["ci_low"].as_f64(),
                e["ci_high"].as_f64(),
            ) {
                (Some(m), Some(lo), Some(hi)) => format!("{} ± {}", sig(m), sig((hi - lo) / 2.0)),
                (Some(m), _, _) => sig(m),
                _ => "—".into(),
            };
            row.push(Cell::new(cell).set_alignment(CellAlignment::Right));
            let q = &l["ratio_to_c"][short];
            let rc = match (
                q["ratio"].as_f64(),
                q["ci_low"].as_f64(),
                q["ci_high"].as_f64(),
            ) {
                (Some(x), Some(lo), Some(hi)) => format!("{x:.3} [{lo:.3}, {hi:.3}]"),
                (Some(x), _, _) => format!("{x:.3}"),
                _ => "—".into(),
            };
            rrow.push(Cell::new(rc).set_alignment(CellAlignment::Right));
        }
        t.add_row(row);
        if l["lang"] != "c" {
            r.add_row(rrow);
        }
    }
    println!("run {}", doc["run_id"]);
    println!("{t}");
    if langs.iter().any(|l| l["lang"] == "c") && langs.len() > 1 {
        println!("{r}");
        for line in warnings(&langs) {
            println!("{line}");
        }
    }
    Ok(())
}
