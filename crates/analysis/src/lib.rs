//! perflab-analysis: what a stored run says, computed once. Every reader of the store —
//! `perflab show`, `perflab compare`, the summary `perflab run` prints, `perflab export
//! --format markdown`, `perflab report` (HTML and Markdown), and commands such as
//! `perflab bench` that compare their configs with a baseline — goes through here, so
//! the same run gives the same numbers, and prints them the same way, everywhere
//! (`docs/architecture.md`: the one-way flow store → analysis → outputs).
//!
//! * [`samples`]: per config × metric, the values of the ok trials (one gatherer for
//!   the store and for an export document);
//! * [`summary`]: per-config summaries (mean, CI, median, CV, outliers);
//! * [`select`]: `RUN[:key=value,...]` sides;
//! * [`compare`]: baseline versus candidate — ratio CIs, Welch p, verdicts, geomean —
//!   and [`compare::against_baseline`] for "every config against the baseline";
//! * [`interaction`]: ratio of ratios;
//! * [`floor`]: the noise floor of a comparison across runs or hosts, and its rule;
//!   [`facts`]: the host facts and parameters that differ between the two sides;
//!   [`across`]: both applied to `perflab compare A B` of two runs or hosts;
//! * [`doctor`]: the doctor's findings per trial; [`profile`]: a profile's top functions;
//! * [`why`]: the differences that explain a verdict (functions, counters, telemetry,
//!   doctor findings, host facts), judged with multiple-comparison control;
//! * [`format`]: the one way numbers are written (mean ± CI, ratio [lo, hi], p).
//!
//! It depends on the store and the statistics only, and does no I/O beyond reading
//! the store: laying the answers out (terminal tables, HTML, Markdown) is the caller's.
//! The statistics types the answers carry are re-exported, so callers need not
//! depend on `perflab-stats` themselves.

pub mod across;
pub mod compare;
pub mod diffprof;
pub mod doctor;
pub mod evidence;
pub mod facts;
pub mod floor;
pub mod format;
pub mod interaction;
pub mod profile;
pub mod samples;
pub mod select;
pub mod suite;
pub mod summary;
pub mod thresholds;
pub mod why;

pub use perflab_stats::{
    Basis, Better, CiMethod, CompareOptions, Comparison, GeoMean, Interaction, MetricKind, Outcome,
    Paired, RatioCi, Summary, Verdict,
};

/// The input named no config, or not exactly one (a usage error: exit 2 in the CLI).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct SelectError(pub String);

/// Errors of the analysis: the store could not be read, or the selection was wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] perflab_store::StoreError),
    #[error(transparent)]
    Select(#[from] SelectError),
}
