//! `perflab suite compare RUN_A RUN_B`: two machine-suite runs side by side — per item
//! B/A with its interval, the geometric mean with its interval, each host's noise
//! floor, and the host facts that differ (crates/analysis/src/suite.rs).

use std::process::ExitCode;

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use perflab_analysis::format;
use perflab_analysis::suite::{self, Comparison};

use crate::exit::InvalidInput;
use crate::format::STYLE;
use crate::Global;

/// Two machine-suite runs side by side: B/A per item with its 95% interval, the
/// geometric mean ("geomean"), each host's noise floor and the host facts.
///
/// A ratio is called faster or slower only when its interval excludes 1 and it is
/// beyond both hosts' own noise for that item. A --quick run and a full run are not
/// compared.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline run (machine A).
    run_a: i64,

    /// The other run (machine B): ratios are B/A, above 1 is B faster.
    run_b: i64,

    /// Show every host fact, not only those that differ.
    #[arg(long)]
    all_facts: bool,

    /// Print the comparison as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(g: &Global, a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let store = g.existing_store()?;
    let ea = store.export_run(a.run_a)?;
    let eb = store.export_run(a.run_b)?;
    if let Some(why) = suite::refuse(&ea, &eb) {
        // The analysis names the suite's quick form as the field `quick`: `--quick`.
        let why = why.render(&|f| perflab_units::flag_for(&[], f));
        return Err(InvalidInput(why).into());
    }
    let c = suite::compare(&ea, &eb, 0.95);
    if c.rows.is_empty() {
        return Err(InvalidInput(format!(
            "runs {} and {} have no item in common",
            a.run_a, a.run_b
        ))
        .into());
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&json(&c, a))?);
        return Ok(ExitCode::SUCCESS);
    }
    let host = |e: &perflab_store::RunExport| e.host.hostname.clone();
    println!(
        "suite compare · A = run {} ({}) · B = run {} ({}) · ratio = B/A of each item's score, above 1: B faster",
        a.run_a,
        host(&ea),
        a.run_b,
        host(&eb)
    );
    println!("{}", items(&c));
    match c.geomean {
        Some((r, lo, hi, n)) => println!(
            "geomean B/A over {n} items: {}",
            format::ratio_ci(r, lo, hi)
        ),
        None => println!("geomean: not available (no item compared on both sides)"),
    }
    let noise = |n: Option<f64>| n.map_or("not measured".into(), |v| format!("{:.1}%", v * 100.0));
    println!(
        "noise floor: A's CPU loop varied {} (CV) before its run, B's {}; per item the floor is the larger of that and each side's own CV",
        noise(c.noise.0),
        noise(c.noise.1)
    );
    if !c.only_a.is_empty() {
        println!("only in A: {}", c.only_a.join(", "));
    }
    if !c.only_b.is_empty() {
        println!("only in B: {}", c.only_b.join(", "));
    }
    println!(
        "\nhost facts{}:",
        if a.all_facts { "" } else { " that differ" }
    );
    println!("{}", facts(&c, a.all_facts));
    Ok(ExitCode::SUCCESS)
}

fn items(c: &Comparison) -> Table {
    let mut t = Table::new();
    t.load_style(STYLE)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec!["item", "A", "B", "B/A [95% CI]", "noise", "verdict"]);
    let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
    for r in &c.rows {
        t.add_row(vec![
            Cell::new(&r.item),
            right(r.a.text(&r.unit)),
            right(r.b.text(&r.unit)),
            right(match &r.ratio {
                Ok((x, lo, hi)) => format::ratio_ci(*x, *lo, *hi),
                Err(why) => why.clone(),
            }),
            right(format!("±{:.1}%", r.floor * 100.0)),
            Cell::new(r.verdict),
        ]);
    }
    t
}

fn facts(c: &Comparison, all: bool) -> Table {
    let mut t = Table::new();
    t.load_style(STYLE)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec!["fact", "A", "B"]);
    let shown: Vec<_> = c.facts.iter().filter(|f| all || f.differs()).collect();
    if shown.is_empty() {
        t.add_row(vec!["(none: the same host facts)", "", ""]);
    }
    for f in shown {
        let mark = if f.differs() { " *" } else { "" };
        t.add_row(vec![format!("{}{mark}", f.name), f.a.clone(), f.b.clone()]);
    }
    t
}

fn json(c: &Comparison, a: &CompareArgs) -> serde_json::Value {
    serde_json::json!({
        "run_a": a.run_a,
        "run_b": a.run_b,
        "confidence": c.confidence,
        "items": c.rows.iter().map(|r| {
            let (ratio, lo, hi, why) = match &r.ratio {
                Ok((x, lo, hi)) => (Some(*x), Some(*lo), Some(*hi), None),
                Err(w) => (None, None, None, Some(w.clone())),
            };
            serde_json::json!({
                "item": r.item, "unit": r.unit,
                "a_mean": r.a.mean, "a_n": r.a.n, "b_mean": r.b.mean, "b_n": r.b.n,
                "ratio": ratio, "ratio_ci_low": lo, "ratio_ci_high": hi,
                "noise_floor": r.floor, "verdict": r.verdict, "why": why,
            })
        }).collect::<Vec<_>>(),
        "geomean": c.geomean.map(|(r, lo, hi, n)| serde_json::json!({
            "ratio": r, "ci_low": lo, "ci_high": hi, "items": n,
        })),
        "noise_cv": {"a": c.noise.0, "b": c.noise.1},
        "only_a": c.only_a,
        "only_b": c.only_b,
        "facts": c.facts.iter().map(|f| serde_json::json!({
            "name": f.name, "a": f.a, "b": f.b, "differs": f.differs(),
        })).collect::<Vec<_>>(),
    })
}
