//! perflab-report: turns a stored run (or two, compared) into one file a person can
//! read offline — GitHub-flavoured Markdown for pull requests, or a single
//! self-contained HTML page with inline CSS and hand-written SVG charts.
//!
//! Shaped as a library without CLI concerns: [`render_markdown`] and [`render_html`]
//! take an open [`Store`], a run id and [`Options`] and return the document as a
//! `String`; the caller decides where it goes. Everything is gathered once into a
//! [`data::ReportData`] (one `export_run`, so failed trials, series, histograms and
//! artifacts all come along); what the numbers say — summaries, comparisons, ratio of
//! ratios, doctor findings, how a number is written — is `perflab-analysis`, the same
//! as the terminal's, and each output format only lays it out. The report reads the
//! store, never the runner (`docs/architecture.md`). Charts are
//! templated SVG, one module per chart kind under [`chart`]: a plotting crate would
//! bring fonts and raster back-ends we do not need for a few axes, dots and lines.

pub mod agents;
pub mod chart;
pub mod compare;
pub mod data;
pub mod diffflame;
pub mod doctor;
pub mod format;
pub mod html;
pub mod markdown;
pub mod thresholds;
pub mod why;

use perflab_store::{RunId, Store, StoreError};
use perflab_units::Phrase;

pub use data::ReportData;

/// Errors of the report. A baseline error is about the option `baseline`, kept as a
/// field ([`ReportError::render`] names it a command's way; `Display` as a key).
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{}", self.phrase())]
    BadBaseline(String),
    #[error("{}", self.phrase())]
    NoSuchBaseline {
        given: String,
        run: RunId,
        configs: String,
    },
}

impl ReportError {
    /// The message with its options as fields.
    pub fn phrase(&self) -> Phrase {
        match self {
            ReportError::Store(e) => Phrase::text(e.to_string()),
            ReportError::BadBaseline(given) => Phrase::field("baseline")
                .then(format!(
                    " {given:?}: expected key=value[,key=value...], e.g. "
                ))
                .and_field("baseline")
                .then(" level=6"),
            ReportError::NoSuchBaseline {
                given,
                run,
                configs,
            } => Phrase::field("baseline").then(format!(
                " {given:?} matches no config of run {run}; its configs are: {configs}"
            )),
        }
    }

    /// The message with each option named by `name` (a command's flag for a field).
    pub fn render(&self, name: &dyn Fn(&str) -> String) -> String {
        self.phrase().render(name)
    }
}

pub type Result<T> = std::result::Result<T, ReportError>;

/// What to put in the report.
#[derive(Debug, Clone)]
pub struct Options {
    /// Confidence level of every interval, in (0, 1).
    pub confidence: f64,
    /// Compare with this config of the run (`key=value,...`) instead of the first.
    pub baseline: Option<String>,
    /// Compare the run with this other run (config by config) instead.
    pub compare_run: Option<RunId>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            confidence: 0.95,
            baseline: None,
            compare_run: None,
        }
    }
}

/// The GitHub-flavoured Markdown report of `run`.
pub fn render_markdown(store: &Store, run: RunId, opts: &Options) -> Result<String> {
    let d = ReportData::load(store, run, opts)?;
    Ok(markdown::render(&d))
}

/// The self-contained HTML report of `run` (one file: inline CSS and SVG).
pub fn render_html(store: &Store, run: RunId, opts: &Options) -> Result<String> {
    let d = ReportData::load(store, run, opts)?;
    Ok(html::render(&d))
}

#[cfg(test)]
mod tests {
    use super::ReportError;

    #[test]
    fn baseline_errors_name_the_option_as_a_field() {
        let e = ReportError::BadBaseline("nonsense".into());
        assert!(
            e.to_string().starts_with("`baseline` \"nonsense\": "),
            "{e}"
        );
        assert_eq!(
            e.render(&|f| format!("--{f}")),
            "--baseline \"nonsense\": expected key=value[,key=value...], e.g. --baseline level=6"
        );
    }
}
