//! `perflab compare`: is the candidate faster than the baseline, by how much, and how
//! sure are we — and is a gap between two levels the same in two settings.
//!
//! Three shapes, one command: `A B` (two configs, possibly of runs from different
//! hosts), `RUN --baseline key=value` (every other config of a run against one) and
//! `--interaction PARAM [--by PARAM2]` (ratio of ratios). The numbers are
//! `perflab_analysis` (shared with the report), the tables `crate::compare::table`;
//! this module parses, dispatches, prints and applies the gate. Two runs (or two hosts)
//! compared also get their noise floor — a difference within it is "within noise" —
//! the host facts that differ and a warning per parameter that differs off the axis
//! (`perflab_analysis::across`, applied after the comparison, not inside it).

use std::process::ExitCode;

use anyhow::Context;
use perflab_analysis::across::{Across, SideRef};
use perflab_analysis::compare::{
    compare_metrics, compare_metrics_in_run, BaselineComparison, Candidate, PairReport,
};
use perflab_analysis::floor::WITHIN_NOISE;
use perflab_analysis::interaction;
use perflab_analysis::select::{parse_selector, parse_spec, RunData, Selector, Side, Spec};
use perflab_analysis::CompareOptions;
use perflab_store::Store;
use serde_json::json;

use crate::compare::diffflame::{self, DiffSide};
use crate::compare::table;
use crate::compare::why::{self, Exports};
use crate::exit::{self, InvalidInput};
use crate::Global;
use perflab_analysis::why::{WhyBlock, WhyOptions};

/// Compare two configurations: ratio of means with a CI, Welch and Mann–Whitney
/// p-values, and a verdict per metric; or a ratio of ratios across two settings.
///
/// A side is RUN (a run with one config) or RUN:key=value,... (one config of a run;
/// values match the parameter's text, so level=6 matches 6 and mode=fast "fast").
/// Two configs of one run that ran in rounds are compared round by round (paired,
/// from 5 rounds on), with Welch's beside it. A difference is significant when
/// p < --alpha and the ratio CI excludes 1; a CI inside ±--equivalence is
/// `equivalent`, anything else `undecided`. Every comparison states its minimum
/// detectable effect.
/// Across two runs or hosts each metric also has a noise floor (the larger of each
/// side's CV and each run's CPU-loop noise): a ratio within it is "within noise" and
/// no regression; the host facts that differ are listed, and a parameter that differs
/// without being named in the sides is warned about.
/// Under every comparison, the why block: the counters, telemetry, profiled functions,
/// doctor findings and host facts that differ, each with its CI, Holm-adjusted over
/// everything checked (--why-alpha, --why-adjust); "no difference above the noise
/// among N metrics checked" when nothing passes.
///
/// Examples:
///   perflab compare 3 4                          # run 3 is the baseline
///   perflab compare 3:level=1 3:level=6 --metric wall_s
///   perflab compare 5 --baseline level=1         # every other config vs level=1
///   perflab compare 3 4 --fail-on-regression 5   # exit 3 on a >5% significant regression
///   perflab compare 7 8 --interaction lang       # (c/java on run 7) / (c/java on run 8)
///   perflab compare 9 --interaction lang --by platform
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct CompareArgs {
    /// BASELINE and CANDIDATE (one side with --baseline, or with --interaction --by).
    #[arg(value_name = "RUN[:KEY=VALUE,...]", num_args = 1..=2, required = true)]
    sides: Vec<String>,

    /// Only these metrics (repeatable).
    #[arg(long = "metric", value_name = "NAME")]
    metrics: Vec<String>,

    /// Confidence level of the intervals, in (0, 1).
    #[arg(long, default_value_t = 0.95, value_parser = crate::commands::show::parse_confidence)]
    confidence: f64,

    /// Significance level of the tests, in (0, 1).
    #[arg(long, default_value_t = 0.05, value_parser = parse_alpha)]
    alpha: f64,

    /// Equivalence margin in percent: a ratio interval inside ±PCT is `equivalent`.
    #[arg(long, value_name = "PCT", default_value_t = 2.0, value_parser = parse_pct)]
    equivalence: f64,

    /// JSON (schema in docs/json.md).
    #[arg(long)]
    json: bool,

    /// Exit 3 when a metric has a significant regression larger than PCT percent.
    #[arg(long, value_name = "PCT", value_parser = parse_pct, conflicts_with = "interaction")]
    fail_on_regression: Option<f64>,

    /// Compare every other config of the one RUN with the config key=value,...
    #[arg(long, value_name = "KEY=VALUE,...", conflicts_with = "interaction")]
    baseline: Option<String>,

    /// Ratio of ratios: the ratio between the two levels of PARAM (first in config
    /// order over second) in each setting, and the ratio of the two.
    #[arg(long, value_name = "PARAM")]
    interaction: Option<String>,

    /// With --interaction and one RUN: the two settings are the two levels of PARAM2.
    #[arg(long, value_name = "PARAM2", requires = "interaction")]
    by: Option<String>,

    /// The why block lists a difference when its p-value, adjusted over everything
    /// checked, is below this.
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05, value_parser = parse_alpha)]
    why_alpha: f64,

    /// How the why block adjusts its p-values over everything checked.
    #[arg(long, value_enum, default_value = "holm")]
    why_adjust: why::AdjustArg,
    /// Write the differential flame graph of the two sides' profiled trials (CPU time
    /// per operation, each frame's change with its CI) to FILE.svg; with --baseline
    /// and several candidates, FILE-N.svg for config N.
    #[arg(long, value_name = "FILE.svg", conflicts_with = "interaction")]
    flamegraph_diff: Option<std::path::PathBuf>,

    /// Level below which a frame's Holm-adjusted p colours it in the differential
    /// flame graph.
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05, value_parser = parse_alpha)]
    flamegraph_alpha: f64,
}

fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!("alpha must be in (0, 1), e.g. 0.05; got {s}")),
    }
}

pub(crate) fn parse_pct(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').trim().parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("expected a percentage ≥ 0, e.g. 5 or 5%; got {s}")),
    }
}

pub fn run(g: &Global, a: &CompareArgs) -> anyhow::Result<ExitCode> {
    if !g.store.exists() {
        return Err(perflab_store::StoreError::Empty)
            .with_context(|| format!("no store at {}", g.store.display()));
    }
    let store = Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let opts = CompareOptions {
        confidence: a.confidence,
        alpha: a.alpha,
        equivalence: a.equivalence / 100.0,
        ..CompareOptions::default()
    };
    let expected = if a.baseline.is_some() || a.by.is_some() {
        1
    } else {
        2
    };
    if a.sides.len() != expected {
        let what = match (&a.baseline, &a.by) {
            (Some(_), _) => "--baseline takes one RUN",
            (_, Some(_)) => "--interaction with --by takes one RUN",
            _ => "give a BASELINE and a CANDIDATE (RUN or RUN:key=value,...)",
        };
        return Err(InvalidInput(format!("{what}; got {} run(s)", a.sides.len())).into());
    }
    if let Some(factor) = &a.interaction {
        return interaction_cmd(&store, a, factor);
    }
    if let Some(sel) = &a.baseline {
        let sel = parse_selector(sel).map_err(InvalidInput::from)?;
        let reports = against_one(&store, a, &sel, &opts)?;
        return gate(a.fail_on_regression, &reports, None);
    }
    let (label, report, across) = two_sides(&store, a, &opts)?;
    gate(a.fail_on_regression, &[(label, report)], across.as_ref())
}

/// `A B`: one config against another, of one run or two; across runs or hosts with
/// the noise floor, the host facts and the parameters that differ
/// (`perflab_analysis::across`).
fn two_sides(
    store: &Store,
    a: &CompareArgs,
    opts: &CompareOptions,
) -> anyhow::Result<(String, PairReport, Option<Across>)> {
    let (x, y) = (spec(&a.sides[0])?, spec(&a.sides[1])?);
    let (xd, yd) = (RunData::load(store, x.run)?, RunData::load(store, y.run)?);
    let xc = xd.one(&x.selector).map_err(InvalidInput::from)?;
    let yc = yd.one(&y.selector).map_err(InvalidInput::from)?;
    let (base, cand) = (xd.side(xc), yd.side(yc));
    check_metric_names(&a.metrics, [&base, &cand])?;
    // Two configs of one run are compared round by round (paired) when they can be.
    let report = if x.run == y.run {
        compare_metrics_in_run(&base.metrics, &cand.metrics, &a.metrics, opts)
    } else {
        compare_metrics(&base.metrics, &cand.metrics, &a.metrics, opts)
    };
    let across = Across::load(
        store,
        SideRef {
            run: &xd.run,
            config: xc,
            selector: &x.selector,
        },
        SideRef {
            run: &yd.run,
            config: yc,
            selector: &y.selector,
        },
        &report,
    )?;
    for w in across.iter().flat_map(Across::warnings) {
        eprintln!("warning: {w}");
    }
    let block = Exports::default().block(
        store,
        (x.run, xc.ordinal),
        (y.run, yc.ordinal),
        &why_options(a),
    )?;
    if let Some(path) = &a.flamegraph_diff {
        let (bl, cl) = (base.label(), cand.label());
        let side = |run, config, label| DiffSide { run, config, label };
        diffflame::write(
            store,
            &side(x.run, xc.ordinal, &bl),
            &side(y.run, yc.ordinal, &cl),
            path,
            a.flamegraph_alpha,
        )?;
    }
    if a.json {
        let mut comparisons = report.comparisons_json();
        let mut doc = json!({
            "schema_version": 1, "confidence": opts.confidence, "alpha": opts.alpha,
            "baseline": base.json(), "candidate": cand.json(),
            "comparisons": null, "geomean": report.geomean_json(),
            "skipped": report.skipped_json(),
        });
        if let Some(across) = &across {
            across.patch_json(&report, &mut comparisons);
            for (k, v) in across.json().as_object().into_iter().flatten() {
                doc[k] = v.clone();
            }
        }
        doc["comparisons"] = json!(comparisons);
        block.add_to(&mut doc);
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_pair(&base, &cand, &report, across.as_ref(), &block, opts);
    }
    Ok((cand.label(), report, across))
}

/// `RUN --baseline key=value`: every other config against that one.
fn against_one(
    store: &Store,
    a: &CompareArgs,
    sel: &Selector,
    opts: &CompareOptions,
) -> anyhow::Result<Vec<(String, PairReport)>> {
    let spec = spec(&a.sides[0])?;
    if !spec.selector.is_empty() {
        return Err(InvalidInput(format!(
            "with --baseline give the run alone ({}), not {}",
            spec.run, a.sides[0]
        ))
        .into());
    }
    let d = RunData::load(store, spec.run)?;
    let base_cfg = d.one(sel).map_err(InvalidInput::from)?;
    let base = d.side(base_cfg);
    let cand_cfgs: Vec<_> = d
        .configs
        .iter()
        .filter(|c| c.ordinal != base_cfg.ordinal)
        .collect();
    let cands: Vec<Side> = cand_cfgs.iter().map(|c| d.side(c)).collect();
    if cands.is_empty() {
        return Err(InvalidInput(format!(
            "run {} has no config other than the baseline to compare",
            d.run.id
        ))
        .into());
    }
    let mut all = vec![&base];
    all.extend(cands.iter());
    check_metric_names(&a.metrics, all)?;
    if let Some(path) = &a.flamegraph_diff {
        let bl = base.label();
        for (c, side) in cand_cfgs.iter().zip(&cands) {
            let cl = side.label();
            diffflame::write(
                store,
                &DiffSide {
                    run: spec.run,
                    config: base_cfg.ordinal,
                    label: &bl,
                },
                &DiffSide {
                    run: spec.run,
                    config: c.ordinal,
                    label: &cl,
                },
                &diffflame::nth_path(path, c.ordinal, cands.len()),
                a.flamegraph_alpha,
            )?;
        }
    }
    let reports: Vec<(String, PairReport)> = cands
        .iter()
        .map(|c| {
            let r = compare_metrics_in_run(&base.metrics, &c.metrics, &a.metrics, opts);
            (c.label(), r)
        })
        .collect();
    let mut exports = Exports::default();
    let blocks = cand_cfgs
        .iter()
        .map(|c| {
            let (a_, b_) = ((spec.run, base_cfg.ordinal), (spec.run, c.ordinal));
            exports.block(store, a_, b_, &why_options(a))
        })
        .collect::<anyhow::Result<Vec<WhyBlock>>>()?;
    if a.json {
        let all = BaselineComparison {
            baseline: base.params.clone(),
            candidates: cand_cfgs
                .iter()
                .zip(&reports)
                .map(|(c, (_, r))| Candidate {
                    params: c.params.clone(),
                    ordinal: c.ordinal,
                    report: r.clone(),
                })
                .collect(),
        };
        let (comparisons, geomean, skipped) = all.json_arrays();
        let mut doc = json!({
            "schema_version": 1, "confidence": opts.confidence, "alpha": opts.alpha,
            "baseline": base.json(), "comparisons": comparisons, "geomean": geomean,
            "skipped": skipped,
        });
        add_whys(&mut doc, &all, &blocks);
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        for (i, ((cand, (_, r)), block)) in cands.iter().zip(&reports).zip(&blocks).enumerate() {
            if i > 0 {
                println!();
            }
            print_pair(&base, cand, r, None, block, opts);
        }
    }
    Ok(reports)
}

/// The why block's options from the flags: the metrics the verdict is about
/// (`--metric`) are no reason for themselves.
fn why_options(a: &CompareArgs) -> WhyOptions {
    WhyOptions {
        alpha: a.why_alpha,
        confidence: a.confidence,
        adjust: a.why_adjust.into(),
        exclude: a.metrics.clone(),
    }
}

/// `RUN --baseline ... --json`: `why` lists every candidate's reasons, each tagged
/// with its `candidate_params`; `why_checked` is one `{candidate_params, checked}` per
/// candidate; `noise_floor` is null (one run has none).
fn add_whys(doc: &mut serde_json::Value, all: &BaselineComparison, blocks: &[WhyBlock]) {
    let mut entries = Vec::new();
    let mut checked = Vec::new();
    for (c, b) in all.candidates.iter().zip(blocks) {
        for r in &b.reasons {
            let mut e = r.json();
            e["candidate_params"] = json!(c.params);
            entries.push(e);
        }
        checked.push(json!({"candidate_params": c.params, "checked": b.checked}));
    }
    doc["why"] = json!(entries);
    doc["why_checked"] = json!(checked);
    doc["noise_floor"] = serde_json::Value::Null;
    if let Some(b) = blocks.first() {
        doc["why_alpha"] = json!(b.alpha);
        doc["why_adjust"] = json!(b.adjust);
    }
}

fn print_pair(
    base: &Side,
    cand: &Side,
    r: &PairReport,
    across: Option<&Across>,
    block: &WhyBlock,
    opts: &CompareOptions,
) {
    println!("baseline:  {}", base.label());
    println!("candidate: {}", cand.label());
    match across {
        Some(x) => println!("{}", table::pair_with(r, &|row| x.verdict(row))),
        None => println!("{}", table::pair(r)),
    }
    for line in table::notes(r) {
        println!("{line}");
    }
    if let Some(line) = r.skipped_line() {
        println!("{line}");
    }
    if let Some(x) = across {
        print_across(x);
    }
    why::print(block, opts.confidence);
}

/// Under the table of a comparison across runs or hosts: the noise floor and the host
/// facts that differ.
fn print_across(x: &Across) {
    let noise = |side: &str, n: Option<f64>| match n {
        Some(v) => format!(
            "{side}'s CPU loop varied {:.1}% (CV) before its run",
            v * 100.0
        ),
        None => format!("{side}'s CPU loop was not measured"),
    };
    let floors: Vec<String> = x
        .floors
        .iter()
        .map(|(m, f)| format!("{m} {}", f.text()))
        .collect();
    println!(
        "noise floor: {}, {}; per metric the floor is the larger of that and each side's \
         own CV, and a ratio within it is \"{WITHIN_NOISE}\": {}",
        noise("A", x.noise.a),
        noise("B", x.noise.b),
        floors.join(", ")
    );
    let differ: Vec<_> = x.facts_differ().collect();
    if differ.is_empty() {
        println!("host facts: the same on both sides");
        return;
    }
    let mut t = comfy_table::Table::new();
    t.load_style(crate::format::STYLE)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
    t.set_header(vec!["host fact", "A", "B"]);
    for f in differ {
        t.add_row(vec![f.name.clone(), f.a.clone(), f.b.clone()]);
    }
    println!("host facts that differ:\n{t}");
}

/// A `--metric` that no side has is a typo, not an empty comparison.
fn check_metric_names<'a>(
    wanted: &[String],
    sides: impl IntoIterator<Item = &'a Side>,
) -> Result<(), InvalidInput> {
    let mut known: Vec<&str> = Vec::new();
    for s in sides {
        for m in &s.metrics {
            if !known.contains(&m.name.as_str()) {
                known.push(&m.name);
            }
        }
    }
    match wanted.iter().find(|w| !known.contains(&w.as_str())) {
        Some(w) => Err(InvalidInput(format!(
            "no metric {w:?} in the compared configs; they have: {}",
            known.join(", ")
        ))),
        None => Ok(()),
    }
}

/// `--fail-on-regression PCT`: exit 3 naming every regression larger than PCT (one
/// within the noise floor of a comparison across runs is none).
fn gate(
    pct: Option<f64>,
    reports: &[(String, PairReport)],
    across: Option<&Across>,
) -> anyhow::Result<ExitCode> {
    let Some(pct) = pct else {
        return Ok(ExitCode::SUCCESS);
    };
    let mut failed = false;
    for (cand, r) in reports {
        let regressions = match across {
            Some(x) => x.regressions_over(r, pct),
            None => r.regressions_over(pct),
        };
        for (metric, reg) in regressions {
            eprintln!("regression: {metric} is {reg:.1}% worse in {cand} (limit {pct}%)");
            failed = true;
        }
    }
    Ok(ExitCode::from(if failed {
        exit::GATE_FAILED
    } else {
        exit::OK
    }))
}

/// `--interaction PARAM [--by PARAM2]`.
fn interaction_cmd(store: &Store, a: &CompareArgs, factor: &str) -> anyhow::Result<ExitCode> {
    if a.by.as_deref() == Some(factor) {
        // The analysis refuses it too, in its own words; here the flags are named.
        return Err(InvalidInput(format!(
            "--interaction and --by name the same parameter {factor:?}"
        ))
        .into());
    }
    let x = spec(&a.sides[0])?;
    let xd = RunData::load(store, x.run)?;
    let yd;
    let design = match (&a.by, a.sides.get(1)) {
        (Some(by), _) => interaction::within_run(&xd, &x.selector, factor, by),
        (None, Some(y)) => {
            let y = spec(y)?;
            yd = RunData::load(store, y.run)?;
            interaction::two_runs((&xd, &x.selector), (&yd, &y.selector), factor)
        }
        (None, None) => unreachable!("the number of sides was checked"),
    }
    .map_err(InvalidInput::from)?;
    check_metric_names(&a.metrics, design.cells())?;
    let (rows, skipped) = design.rows(&a.metrics, a.confidence);
    if a.json {
        let doc = json!({
            "schema_version": 1, "confidence": a.confidence,
            "factor": design.factor, "by": design.by,
            "numerator": design.levels.0, "denominator": design.levels.1,
            "interactions": design.json(&rows), "skipped": skipped,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("{}", design.header());
        println!("{}", table::interaction(&design, &rows, a.confidence));
        if !skipped.is_empty() {
            println!("skipped (not in all four configs): {}", skipped.join(", "));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `RUN[:key=value,...]`, a wrong one a usage error.
fn spec(s: &str) -> Result<Spec, InvalidInput> {
    parse_spec(s).map_err(InvalidInput::from)
}
