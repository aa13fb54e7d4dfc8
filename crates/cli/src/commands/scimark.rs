//! `perflab scimark`: SciMark 2 in several languages — build, verify against each
//! other, run interleaved repeats, store, and print MFLOPS with intervals and each
//! language's ratio to C with its interval.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context;
use comfy_table::{Cell, CellAlignment, Table};
use perflab_stats::{compare, summarize, Better, CompareOptions};
use perflab_store::{rfc3339, MetricValue, NewRun, RunStatus, Store, TrialRecord, TrialStatus};
use perflab_workloads::scimark::{self, BuildOptions, Built, Output, RunOptions, KERNELS, LANGS};
use perflab_workloads::{TrialContext, WorkloadError};
use serde_json::{json, Value};

use crate::exit::{self, InvalidInput};
use crate::format::{sig, STYLE};
use crate::Global;

/// SciMark 2 (FFT, SOR, Monte Carlo, sparse mat-mult, LU) in C, Java, Rust, Go,
/// JavaScript and Python: the same arithmetic on the same data, verified by checksums.
///
/// Examples:
///   perflab scimark --lang c,java --repeat 10
///   perflab scimark --lang c,rust,go --min-time 0.5 --json
///   perflab scimark --lang java --java /usr/lib/jvm/temurin-21/bin/java --jvm-flags "-XX:+UseParallelGC"
///
/// Builds are cached (~/.cache/perflab/scimark; PERFLAB_CACHE overrides). A missing
/// toolchain, a failed build or a failed verification drops that language only.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct ScimarkArgs {
    /// Languages, comma-separated: c, java, rust, go, js, python.
    #[arg(long, value_delimiter = ',', default_value = "c,java")]
    lang: Vec<String>,
    /// The large problem sizes (FFT 1M points, SOR and LU 1000×1000, sparse N=100000).
    #[arg(long)]
    large: bool,
    /// Minimum seconds per kernel timing (calibration doubles cycles until reached).
    #[arg(long, default_value_t = 2.0)]
    min_time: f64,
    /// Timed runs per language, interleaved across languages.
    #[arg(long, default_value_t = 5)]
    repeat: u32,
    /// C compiler flags.
    #[arg(long, default_value = "-O3", allow_hyphen_values = true)]
    cflags: String,
    /// JVM flags.
    #[arg(long, allow_hyphen_values = true)]
    jvm_flags: Option<String>,
    /// The java binary (another JDK).
    #[arg(long)]
    java: Option<String>,
    /// A subset of kernels: fft,sor,mc,sparse,lu.
    #[arg(long, value_delimiter = ',')]
    kernels: Option<Vec<String>>,
    /// Confidence level of the intervals.
    #[arg(long, default_value_t = 0.95, value_parser = crate::commands::show::parse_confidence)]
    confidence: f64,
    /// JSON output (see docs/json.md).
    #[arg(long)]
    json: bool,
}

struct Lang {
    name: String,
    built: Option<Built>,
    verify: Option<Output>,
    error: Option<String>,
    config_id: i64,
    runtime: String,
    values: BTreeMap<String, Vec<f64>>,
}

pub fn run(g: &Global, a: &ScimarkArgs) -> anyhow::Result<ExitCode> {
    for l in &a.lang {
        if !LANGS.contains(&l.as_str()) {
            return Err(InvalidInput(format!(
                "--lang {l:?}: expected some of {}",
                LANGS.join(", ")
            ))
            .into());
        }
    }
    for k in a.kernels.iter().flatten() {
        if !KERNELS.contains(&k.as_str()) {
            return Err(InvalidInput(format!(
                "--kernels {k:?}: expected some of {}",
                KERNELS.join(", ")
            ))
            .into());
        }
    }
    if a.min_time.is_nan() || a.min_time <= 0.0 || a.repeat == 0 {
        return Err(InvalidInput("--min-time must be > 0 and --repeat ≥ 1".into()).into());
    }
    let flag = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    let ctx = TrialContext {
        cpus: None,
        timeout: None,
        interrupted: flag.clone(),
        run_dir: std::env::temp_dir(),
    };
    let bopts = BuildOptions {
        cache_dir: None,
        cflags: Some(a.cflags.clone()),
        jvm_flags: a.jvm_flags.clone(),
        java: a.java.clone(),
    };
    let say = |s: &str| {
        if !g.quiet {
            eprintln!("{s}");
        }
    };
    let vopts = RunOptions {
        large: a.large,
        verify_only: true,
        kernels: a.kernels.clone(),
        ..Default::default()
    };
    // Build and verify every language; C (if asked for, else built anyway when
    // possible) is the reference the others must agree with.
    let mut langs: Vec<Lang> = Vec::new();
    for name in &a.lang {
        say(&format!("scimark: building {name}…"));
        let mut l = Lang {
            name: name.clone(),
            built: None,
            verify: None,
            error: None,
            config_id: 0,
            runtime: String::new(),
            values: BTreeMap::new(),
        };
        match scimark::build(name, &bopts) {
            Ok(b) => match scimark::run(&b, &vopts, &ctx) {
                Ok((out, _)) => {
                    l.runtime = out.runtime.clone();
                    l.verify = Some(out);
                    l.built = Some(b);
                }
                Err(WorkloadError::Interrupted) => return Ok(ExitCode::from(exit::INTERRUPTED)),
                Err(e) => l.error = Some(e.to_string()),
            },
            Err(e) => l.error = Some(e.to_string()),
        }
        langs.push(l);
    }
    let reference: Option<Output> = match langs.iter().find(|l| l.name == "c") {
        Some(c) => c.verify.clone(),
        None => scimark::build("c", &bopts)
            .ok()
            .and_then(|b| scimark::run(&b, &vopts, &ctx).ok())
            .map(|(o, _)| o),
    };
    for l in &mut langs {
        let Some(out) = &l.verify else { continue };
        let check = match &reference {
            Some(r) => scimark::agree(r, out),
            None => scimark::self_check(out),
        };
        if let Err(e) = check {
            l.error = Some(format!("{}: verification failed: {e}", l.name));
            l.built = None;
        }
    }
    for l in &langs {
        if let Some(e) = &l.error {
            eprintln!("error: {e}");
        }
    }

    // Store: one run, one config per language.
    let store = Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let host_id = store.upsert_host(&perflab_lab::env::host())?;
    let run_id = store.create_run(
        &NewRun {
            name: format!("scimark {}", a.lang.join(",")),
            kind: "scimark".into(),
            environment: json!({
                "cflags": a.cflags, "jvm_flags": a.jvm_flags, "java": a.java,
                "min_time": a.min_time, "size": if a.large { "large" } else { "default" },
                "runtimes": langs.iter().map(|l| (l.name.clone(), l.runtime.clone())).collect::<BTreeMap<_, _>>(),
            }),
            ..Default::default()
        },
        host_id,
    )?;
    for (i, l) in langs.iter_mut().enumerate() {
        let mut params = perflab_store::Params::new();
        params.insert("lang".into(), json!(l.name));
        params.insert(
            "size".into(),
            json!(if a.large { "large" } else { "default" }),
        );
        l.config_id = store.ensure_config(run_id, i as u32, &params)?;
    }
    say(&format!(
        "scimark: run {run_id}, {} repeat(s) × {} language(s), min-time {} s",
        a.repeat,
        langs.iter().filter(|l| l.built.is_some()).count(),
        a.min_time
    ));
    let topts = RunOptions {
        large: a.large,
        min_time: Some(a.min_time),
        verify_only: false,
        kernels: a.kernels.clone(),
    };
    let mut ordinal = 0;
    let mut failures = 0;
    let mut interrupted = false;
    'rounds: for rep in 1..=a.repeat {
        for l in langs.iter_mut() {
            let Some(b) = &l.built else { continue };
            if flag.load(Ordering::SeqCst) {
                interrupted = true;
                break 'rounds;
            }
            ordinal += 1;
            say(&format!("scimark: {} repeat {rep}/{}", l.name, a.repeat));
            let started = std::time::SystemTime::now();
            let clock = std::time::Instant::now();
            let (status, error, metrics, method) = match scimark::run(b, &topts, &ctx) {
                Ok((out, tree)) => {
                    let mut m: Vec<MetricValue> = scimark::metrics(&out);
                    m.extend(tree.metrics());
                    for v in &m {
                        l.values.entry(v.name.clone()).or_default().push(v.value);
                    }
                    (
                        TrialStatus::Ok,
                        None,
                        m,
                        Some(tree.method.as_str().to_string()),
                    )
                }
                Err(WorkloadError::Interrupted) => {
                    interrupted = true;
                    (
                        TrialStatus::Interrupted,
                        Some("interrupted".to_string()),
                        vec![],
                        None,
                    )
                }
                Err(e) => {
                    failures += 1;
                    eprintln!("error: {e}");
                    (TrialStatus::Failed, Some(e.to_string()), vec![], None)
                }
            };
            store.record_trial(
                run_id,
                &TrialRecord {
                    config_id: l.config_id,
                    repetition: rep,
                    ordinal,
                    started_at: rfc3339(started),
                    duration_s: clock.elapsed().as_secs_f64(),
                    status,
                    error,
                    method,
                    metrics,
                    histograms: vec![],
                    series: vec![],
                    artifacts: vec![],
                },
            )?;
            if interrupted {
                break 'rounds;
            }
        }
    }
    let lang_failed = langs.iter().any(|l| l.error.is_some());
    let status = if interrupted {
        RunStatus::Interrupted
    } else if failures > 0 || lang_failed {
        RunStatus::CompleteWithFailures
    } else {
        RunStatus::Complete
    };
    store.finish_run(run_id, status)?;

    let doc = report(run_id, &langs, a.confidence);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_tables(&doc, a.confidence);
    }
    Ok(ExitCode::from(match status {
        RunStatus::Interrupted => exit::INTERRUPTED,
        RunStatus::CompleteWithFailures => exit::FAILURES,
        _ => exit::OK,
    }))
}

fn metric_names() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = KERNELS
        .iter()
        .map(|k| (k.to_string(), format!("{k}_mflops")))
        .collect();
    v.push(("composite".into(), "composite_mflops".into()));
    v
}

fn report(run_id: i64, langs: &[Lang], confidence: f64) -> Value {
    let c = langs.iter().find(|l| l.name == "c");
    let opts = CompareOptions {
        confidence,
        ..CompareOptions::default()
    };
    let list: Vec<Value> = langs
        .iter()
        .map(|l| {
            let mut kernels = serde_json::Map::new();
            let mut ratios = serde_json::Map::new();
            let mut composite = Value::Null;
            for (short, metric) in metric_names() {
                let Some(vals) = l.values.get(&metric) else { continue };
                let Ok(s) = summarize(vals, confidence) else { continue };
                let checksum = l
                    .verify
                    .as_ref()
                    .and_then(|o| o.kernels.get(&short))
                    .map(|k| json!(k.checksum))
                    .unwrap_or(Value::Null);
                let entry = json!({"mflops_mean": s.mean, "ci_low": s.ci_low, "ci_high": s.ci_high, "n": s.n, "checksum": checksum});
                if short == "composite" {
                    composite = json!({"mflops_mean": s.mean, "ci_low": s.ci_low, "ci_high": s.ci_high, "n": s.n});
                } else {
                    kernels.insert(short.clone(), entry);
                }
                if let Some(base) = c.filter(|c| c.name != l.name).and_then(|c| c.values.get(&metric)) {
                    let r = compare(base, vals, Better::Higher, &opts).ok();
                    ratios.insert(
                        short.clone(),
                        match r {
                            Some(r) => json!({"ratio": r.ratio, "ci_low": r.ratio_ci_low, "ci_high": r.ratio_ci_high}),
                            None => {
                                let (mb, mc) = (mean(base), mean(vals));
                                json!({"ratio": mc / mb, "ci_low": null, "ci_high": null})
                            }
                        },
                    );
                }
            }
            json!({
                "lang": l.name,
                "runtime": l.runtime,
                "verified": l.error.is_none() && l.verify.is_some(),
                "error": l.error,
                "kernels": kernels,
                "composite": composite,
                "ratio_to_c": ratios,
            })
        })
        .collect();
    json!({"schema_version": 1, "run_id": run_id, "languages": list})
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn print_tables(doc: &Value, confidence: f64) {
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
    }
}
