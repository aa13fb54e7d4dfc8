//! The report's why blocks: under each comparison the report makes (every config
//! against the baseline config, or each config against the same config of the
//! `--compare` run), the differences that explain it — `perflab_analysis::why`, the
//! same as `perflab compare`'s, gathered from the export documents the report already
//! holds. Laid out by [`markdown`] here and by `html::why`.

use std::fmt::Write;

use perflab_analysis::why::{explain, WhyBlock, WhyOptions, WhySide};
use perflab_store::RunExport;

use crate::data::{ConfigData, ReportData};
use crate::format::md_cell;

/// The why block of one comparison, with its configs' labels.
#[derive(Debug, Clone)]
pub struct WhyRow {
    pub baseline: String,
    pub candidate: String,
    pub block: WhyBlock,
}

fn label(labels: &[ConfigData], ordinal: u32) -> String {
    labels
        .iter()
        .find(|c| c.ordinal == ordinal)
        .map_or_else(|| format!("config {ordinal}"), |c| c.label.clone())
}

/// A machine suite's configs are unlike items (mem, net, crypto, ...): nothing explains
/// one by another (`perflab suite compare` compares machines).
fn is_suite(export: &RunExport) -> bool {
    perflab_analysis::suite::kind_of(export).is_some()
}

fn options(confidence: f64) -> WhyOptions {
    WhyOptions {
        confidence,
        ..WhyOptions::default()
    }
}

/// Every other config of the run against config `base` (an ordinal).
pub fn within_run(
    export: &RunExport,
    labels: &[ConfigData],
    base: u32,
    confidence: f64,
) -> Vec<WhyRow> {
    if is_suite(export) {
        return Vec::new();
    }
    let a = WhySide {
        export,
        config: base,
    };
    export
        .configs
        .iter()
        .filter(|c| c.ordinal != base)
        .map(|c| WhyRow {
            baseline: label(labels, base),
            candidate: label(labels, c.ordinal),
            block: explain(
                a,
                WhySide {
                    export,
                    config: c.ordinal,
                },
                &options(confidence),
            ),
        })
        .collect()
}

/// Each config of `run` against the config of `other` with the same parameters (or
/// the only one, when both runs have one), as the comparison rows pair them.
pub fn across_runs(
    other: (&RunExport, &[ConfigData]),
    run: (&RunExport, &[ConfigData]),
    confidence: f64,
) -> Vec<WhyRow> {
    if is_suite(run.0) {
        return Vec::new();
    }
    let (oc, rc) = (&other.0.configs, &run.0.configs);
    rc.iter()
        .filter_map(|c| {
            let b = oc
                .iter()
                .find(|o| o.params == c.params)
                .or_else(|| (oc.len() == 1 && rc.len() == 1).then(|| &oc[0]))?;
            Some(WhyRow {
                baseline: label(other.1, b.ordinal),
                candidate: label(run.1, c.ordinal),
                block: explain(
                    WhySide {
                        export: other.0,
                        config: b.ordinal,
                    },
                    WhySide {
                        export: run.0,
                        config: c.ordinal,
                    },
                    &options(confidence),
                ),
            })
        })
        .collect()
}

/// The Markdown section: per comparison its headline and, when something passed, a
/// table of the reasons.
pub fn markdown(out: &mut String, d: &ReportData) {
    if d.whys.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Why\n");
    for w in &d.whys {
        let _ = writeln!(
            out,
            "**{} vs {}** — {}\n",
            md_cell(&w.candidate),
            md_cell(&w.baseline),
            md_cell(&w.block.headline())
        );
        if w.block.reasons.is_empty() {
            continue;
        }
        let change = format!("change [{} CI]", d.level());
        let _ = writeln!(
            out,
            "| kind | what | baseline | candidate | {change} | p (adjusted) |\n|---|---|---|---|---|---|"
        );
        for r in &w.block.reasons {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                r.kind_text(),
                md_cell(&r.name),
                md_cell(&r.baseline_text()),
                md_cell(&r.candidate_text()),
                md_cell(&r.change_text()),
                r.p_text()
            );
        }
        out.push('\n');
    }
}
