//! `perflab report [RUN]`: a stored run as one self-contained HTML file (inline CSS
//! and SVG charts) or as GitHub-flavoured Markdown. The rendering lives in
//! `perflab-report`; this module picks the run, writes the file and opens it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use perflab_report::{render_html, render_markdown, Options, ReportError};
use perflab_store::Store;

use crate::exit::InvalidInput;
use crate::Global;

/// Write a report of a stored run: HTML (one offline file with charts) or Markdown.
///
/// Examples:
///   perflab report --html report.html --open      # the latest run
///   perflab report 3 --markdown report.md
///   perflab report 3 --baseline level=1 --html r.html
///   perflab report 4 --compare 3 --markdown pr.md # run 3 is the baseline
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
#[command(group(clap::ArgGroup::new("out").required(true).multiple(true).args(["html", "markdown"])))]
pub struct ReportArgs {
    /// Run id (default: the latest run).
    run: Option<i64>,

    /// Compare with this run (config by config; it is the baseline).
    #[arg(long, value_name = "RUN2", conflicts_with = "baseline")]
    compare: Option<i64>,

    /// The config to compare the others with (default: the first), as key=value[,...].
    #[arg(long, value_name = "key=value")]
    baseline: Option<String>,

    /// Write the HTML report to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,

    /// Write the Markdown report to FILE.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,

    /// Open the report in the default browser (xdg-open) when there is one.
    #[arg(long)]
    open: bool,

    /// Confidence level of the intervals, in (0, 1).
    #[arg(long, default_value_t = 0.95, value_parser = crate::commands::show::parse_confidence)]
    confidence: f64,
}

pub fn run(g: &Global, a: &ReportArgs) -> anyhow::Result<ExitCode> {
    if !g.store.exists() {
        return Err(perflab_store::StoreError::Empty)
            .with_context(|| format!("no store at {}", g.store.display()));
    }
    let store = Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let id = match a.run {
        Some(id) => id,
        None => store.latest_run()?.id,
    };
    let opts = Options {
        confidence: a.confidence,
        baseline: a.baseline.clone(),
        compare_run: a.compare,
    };
    let mut written = Vec::new();
    if let Some(path) = &a.markdown {
        let text = render_markdown(&store, id, &opts).map_err(usage)?;
        write(path, &text)?;
        written.push(path.clone());
    }
    if let Some(path) = &a.html {
        let text = render_html(&store, id, &opts).map_err(usage)?;
        write(path, &text)?;
        written.push(path.clone());
    }
    for p in &written {
        if !g.quiet {
            eprintln!("wrote {}", p.display());
        }
    }
    if a.open {
        if let Some(p) = a.html.as_ref().or(a.markdown.as_ref()) {
            open(p, g.quiet);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Report errors that mean the arguments were wrong become exit 2.
fn usage(e: ReportError) -> anyhow::Error {
    match e {
        ReportError::BadBaseline(_) | ReportError::NoSuchBaseline { .. } => {
            anyhow::Error::new(InvalidInput(e.render(&|f| perflab_units::flag_for(&[], f))))
        }
        ReportError::Store(s) => anyhow::Error::new(s),
    }
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Opens `path` with xdg-open when it exists; says so (and goes on) when it does not.
fn open(path: &Path, quiet: bool) {
    let status = std::process::Command::new("xdg-open")
        .arg(path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    if !status.is_ok_and(|s| s.success()) && !quiet {
        eprintln!(
            "note: could not open {} (no xdg-open or no browser); open it by hand",
            path.display()
        );
    }
}
