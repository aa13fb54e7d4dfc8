//! The report's comparison rows: within a run (every config against the baseline
//! config) or across runs (each config of the run against the same config of the
//! other run). The comparing is `perflab_analysis::compare`, the same as `perflab
//! compare`'s; the report adds the config labels and leaves out metrics that are zero
//! on both sides (no errors either side: nothing to say). Within a run the configs
//! are compared round by round where their trials allow (the verdict's basis is then
//! paired); every row carries its minimum detectable effect; the rows that cannot be
//! compared are not table rows but one line ([`not_comparable_line`]).

use perflab_analysis::compare::{self, compare_metrics_in_run, PairReport, Row};
use perflab_analysis::samples::ConfigSamples;
use perflab_analysis::{CompareOptions, Outcome};

use crate::data::ConfigData;

/// One row of the comparison table.
#[derive(Debug, Clone)]
pub struct CompareRow {
    /// The baseline config's label.
    pub baseline: String,
    /// The candidate config's label.
    pub candidate: String,
    pub row: Row,
}

/// Every other config of the run against `samples[base]`.
pub fn within_run(
    samples: &[ConfigSamples],
    labels: &[ConfigData],
    base: usize,
    opts: &CompareOptions,
) -> Vec<CompareRow> {
    let b = &samples[base];
    samples
        .iter()
        .filter(|c| c.ordinal != b.ordinal)
        .flat_map(|c| {
            let report = compare_metrics_in_run(&b.metrics, &c.metrics, &[], opts);
            rows(label(labels, b), label(labels, c), report)
        })
        .collect()
}

/// Each config of `run` against the config of `other` with the same parameters (or
/// the only one, when both runs have a single config).
pub fn across_runs(
    other: (&[ConfigSamples], &[ConfigData]),
    run: (&[ConfigSamples], &[ConfigData]),
    opts: &CompareOptions,
) -> Vec<CompareRow> {
    compare::across_runs(other.0, run.0, opts)
        .into_iter()
        .flat_map(|(b, c, report)| rows(label(other.1, b), label(run.1, c), report))
        .collect()
}

fn label<'a>(labels: &'a [ConfigData], c: &ConfigSamples) -> &'a str {
    labels
        .iter()
        .find(|l| l.ordinal == c.ordinal)
        .map_or("?", |l| l.label.as_str())
}

fn rows(baseline: &str, candidate: &str, report: PairReport) -> Vec<CompareRow> {
    report
        .rows
        .into_iter()
        .filter(|r| !r.both_zero)
        .map(|row| CompareRow {
            baseline: baseline.to_string(),
            candidate: candidate.to_string(),
            row,
        })
        .collect()
}

impl CompareRow {
    /// Whether the row is a table row (not folded into [`not_comparable_line`]).
    pub fn shown(&self) -> bool {
        !matches!(self.row.outcome, Outcome::NotComparable(_))
    }
}

/// The lines under the comparison table: per compared row, the verdict's basis (with
/// Welch's beside a paired one), the minimum detectable effect and any warning
/// (`x=2 · value: Welch (unpaired); minimum detectable effect ±4.1 %; ...`); then
/// the rows that could not be compared, in one line.
pub fn notes(rows: &[CompareRow]) -> Vec<String> {
    let mut out: Vec<String> = rows
        .iter()
        .filter(|c| c.shown())
        .filter_map(|c| {
            let notes = c.row.notes();
            (!notes.is_empty())
                .then(|| format!("{} · {}: {}", c.candidate, c.row.name, notes.join("; ")))
        })
        .collect();
    out.extend(not_comparable_line(rows));
    out
}

/// Every row that could not be compared, in one line: `not comparable: user_s of
/// sleep 0.2 (baseline mean is 0), ...`; None when none.
pub fn not_comparable_line(rows: &[CompareRow]) -> Option<String> {
    let items: Vec<String> = rows
        .iter()
        .filter_map(|c| match &c.row.outcome {
            Outcome::NotComparable(why) => {
                Some(format!("{} of {} ({why})", c.row.name, c.candidate))
            }
            _ => None,
        })
        .collect();
    (!items.is_empty()).then(|| format!("not comparable: {}", items.join(", ")))
}
