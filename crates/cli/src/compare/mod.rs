//! How `perflab compare`, `perflab run` (and `perflab bench`, `perflab scimark`) lay a
//! comparison out in the terminal. What is compared, and the numbers, are
//! `perflab_analysis` (the one reader of stored runs, shared with the report); this
//! module only turns its answers into tables ([`table`]) and prints the one view every
//! measuring command ends with: each config against the baseline
//! ([`print_against_baseline`]), with the why block under each comparison ([`why`]).

pub mod diffflame;
pub mod table;
pub mod why;

use perflab_analysis::compare::{against_baseline, Baseline, BaselineComparison};
use perflab_analysis::why::WhyOptions;
use perflab_analysis::{CompareOptions, SelectError};
use perflab_store::{params_label, RunId, Store};

use crate::exit::InvalidInput;

impl From<SelectError> for InvalidInput {
    fn from(e: SelectError) -> InvalidInput {
        InvalidInput(e.0)
    }
}

/// An analysis error as the CLI reports it: a wrong selection is a usage error (exit 2).
pub fn cli_error(e: perflab_analysis::Error) -> anyhow::Error {
    match e {
        perflab_analysis::Error::Select(s) => InvalidInput::from(s).into(),
        perflab_analysis::Error::Store(s) => s.into(),
    }
}

/// Compares every config of run `run` with the baseline on `metrics` (all when
/// empty) and prints, per candidate with something to show, `CANDIDATE vs BASELINE
/// (baseline):`, the comparison table and its why block (the metrics compared are no
/// reason for themselves) — the end of `perflab run`'s output. Returns the comparison
/// (for JSON or a gate).
pub fn print_against_baseline(
    store: &Store,
    run: RunId,
    baseline: &Baseline,
    metrics: &[String],
    opts: &CompareOptions,
) -> anyhow::Result<BaselineComparison> {
    let cmp = against_baseline(store, run, baseline, metrics, opts).map_err(cli_error)?;
    let mut exports = why::Exports::default();
    let mut base = None;
    if cmp.candidates.iter().any(|c| !c.report.rows.is_empty()) {
        base = exports
            .get(store, run)?
            .configs
            .iter()
            .find(|c| c.params == cmp.baseline)
            .map(|c| c.ordinal);
    }
    let why_opts = WhyOptions {
        confidence: opts.confidence,
        exclude: metrics.to_vec(),
        ..WhyOptions::default()
    };
    for c in cmp.candidates.iter().filter(|c| !c.report.rows.is_empty()) {
        println!(
            "\n{} vs {} (baseline):",
            params_label(&c.params),
            params_label(&cmp.baseline)
        );
        println!("{}", table::pair(&c.report));
        for line in table::notes(&c.report) {
            println!("{line}");
        }
        if let Some(b) = base {
            let block = exports.block(store, (run, b), (run, c.ordinal), &why_opts)?;
            why::print(&block, opts.confidence);
        }
    }
    Ok(cmp)
}
