//! `perflab export RUN`: a stored run as lossless JSON (for `perflab import` on another
//! machine), as CSV (one row per trial and metric, for spreadsheets and pandas) or as
//! a Markdown summary table (for reports and pull requests).
//!
//! The JSON document is `perflab_store::RunExport`; CSV and Markdown are written here,
//! each by one small function: they are views, not formats anything reads back.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::Global;
use anyhow::Context;
use perflab_analysis::format::{arrow, cv, level, mean_ci};
use perflab_analysis::summary::summarize_run;
use perflab_store::{params_label, value_text, Params, RunExport, Store};

/// Export a stored run: lossless JSON (host, file, trials, metrics, histograms, series,
/// artifacts) for `perflab import`, CSV (one row per trial × metric), or Markdown.
///
/// Examples:
///   perflab export 3 -o run3.json          # then, elsewhere: perflab import run3.json
///   perflab export 3 --format csv > run3.csv
///   perflab export --format markdown       # the latest run's summary table
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct ExportArgs {
    /// Run id (default: the latest run).
    run: Option<i64>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    format: Format,

    /// Write to FILE instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,

    /// Confidence level of the Markdown table's intervals.
    #[arg(long, default_value_t = 0.95, value_parser = crate::commands::show::parse_confidence)]
    confidence: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Json,
    Csv,
    Markdown,
}

pub fn run(g: &Global, a: &ExportArgs) -> anyhow::Result<ExitCode> {
    let (store, id) = g.store_and_run(a.run)?;
    let text = match a.format {
        Format::Json => {
            let mut t = store.export_run(id)?.to_json()?;
            t.push('\n');
            t
        }
        Format::Csv => csv(&store.export_run(id)?),
        Format::Markdown => markdown(&store, id, a.confidence)?,
    };
    match &a.output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|_| out.flush())
                .context("cannot write to stdout")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `run_id,config,trial,repetition,status,metric,unit,better,value`, one row per
/// (trial, metric), every trial (a failed trial's partial metrics too, with its status).
fn csv(doc: &RunExport) -> String {
    let mut out = String::from("run_id,config,trial,repetition,status,metric,unit,better,value\n");
    for t in &doc.trials {
        let config = doc
            .configs
            .iter()
            .find(|c| c.ordinal == t.config)
            .map(|c| config_text(&c.params))
            .unwrap_or_default();
        for m in &t.metrics {
            let fields = [
                doc.run.id.to_string(),
                config.clone(),
                t.ordinal.to_string(),
                t.repetition.to_string(),
                t.status.clone(),
                m.name.clone(),
                m.unit.clone(),
                m.better.clone(),
                // Display is the shortest text that reads back to the same f64.
                m.value.to_string(),
            ];
            let row: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
            out.push_str(&row.join(","));
            out.push('\n');
        }
    }
    out
}

/// `k=v;k=v` (a comma would need quoting in every row).
fn config_text(p: &Params) -> String {
    p.iter()
        .map(|(k, v)| format!("{k}={}", value_text(v)))
        .collect::<Vec<_>>()
        .join(";")
}

/// RFC 4180: quote a field holding a comma, quote or line break; double its quotes.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The summary table (`perflab show`) as GitHub-flavoured Markdown.
fn markdown(store: &Store, id: i64, confidence: f64) -> anyhow::Result<String> {
    let s = summarize_run(store, id, confidence)?;
    let r = &s.run;
    let mut out = format!(
        "### run {} · {} · host {} · {}\n\n| config | metric | mean ± {} CI | n | CV |\n|---|---|---:|---:|---:|\n",
        r.id,
        md_cell(&r.name),
        md_cell(&r.host),
        r.started_at,
        level(confidence)
    );
    for c in &s.configs {
        let label = md_cell(&params_label(&c.params));
        for m in &c.metrics {
            let st = &m.stats;
            out.push_str(&format!(
                "| {label} | {} {} | {} | {} | {} |\n",
                md_cell(&m.name),
                arrow(&m.better),
                mean_ci(st, &m.unit),
                st.n,
                cv(st)
            ));
        }
        if c.metrics.is_empty() {
            out.push_str(&format!("| {label} | (no successful trial) | | | |\n"));
        }
    }
    Ok(out)
}

/// A table cell: pipes escaped, line breaks flattened.
fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(csv_field("wall_s"), "wall_s");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(md_cell("a|b\nc"), "a\\|b c");
    }
}
