//! `perflab compress`: gzip, zstd and lz4 on generated data, as an experiment over
//! `algorithm` run by the runner (interleaved repetitions, Ctrl-C, stored as a run) —
//! `kind = "compress"` (crates/workloads/src/compress.rs) with its options as flags.

use std::process::ExitCode;

use anyhow::Context;
use perflab_analysis::summary::summarize_run;
use perflab_lab::experiment::Experiment;
use perflab_lab::runner::{self, RunOptions};
use perflab_store::Store;
use perflab_workloads::compress::{CompressSpec, ALGORITHMS, DATA};

use crate::exit::{self, InvalidInput};
use crate::progress::Progress;
use crate::Global;

/// Compression speed and ratio: gzip, zstd and lz4 on generated data, repeated and
/// interleaved, every output checked by decompressing it.
///
/// Examples:
///   perflab compress                                  # all three, text-like data
///   perflab compress --algorithm zstd --level 19 --data zeros --size 256M
///   perflab compress --threads all --json             # every CPU, chunked like pigz
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct CompressArgs {
    /// Algorithms: gzip, zstd, lz4 (comma-separated).
    #[arg(
        long,
        short = 'a',
        value_delimiter = ',',
        default_value = "gzip,zstd,lz4"
    )]
    pub algorithm: Vec<String>,

    /// Level (one algorithm only): gzip 1-9 [default 6], zstd 1-19 [default 3].
    #[arg(long, short = 'l')]
    pub level: Option<i32>,

    /// Data: text (access-log-like lines), zeros or random.
    #[arg(long, default_value = "text")]
    pub data: String,

    /// Input size, powers of 1024: 64M, 1G.
    #[arg(long, default_value = "64M")]
    pub size: String,

    /// Threads: a number, or `all` (every CPU this process may use).
    #[arg(long, short = 't', default_value = "1")]
    pub threads: String,

    /// Repetitions per algorithm (interleaved).
    #[arg(long, short = 'r', default_value_t = 3)]
    pub runs: u32,

    /// Print the summary as JSON (the `show --json` contract).
    #[arg(long)]
    pub json: bool,
}

fn experiment_text(a: &CompressArgs) -> Result<String, InvalidInput> {
    for alg in &a.algorithm {
        if !ALGORITHMS.contains(&alg.as_str()) {
            return Err(InvalidInput(format!(
                "--algorithm {alg:?}: expected some of {}",
                ALGORITHMS.join(", ")
            )));
        }
    }
    if a.level.is_some() && a.algorithm.len() != 1 {
        return Err(InvalidInput(
            "--level applies to one algorithm: give --algorithm too".into(),
        ));
    }
    if !DATA.contains(&a.data.as_str()) {
        return Err(InvalidInput(format!(
            "--data {:?}: expected one of {}",
            a.data,
            DATA.join(", ")
        )));
    }
    let threads = match a.threads.as_str() {
        "all" => 0,
        t => t.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
            InvalidInput(format!(
                "--threads {t:?}: expected a number above 0 or `all`"
            ))
        })?,
    };
    if a.runs == 0 {
        return Err(InvalidInput("--runs must be at least 1".into()));
    }
    let q = |s: &str| toml::Value::String(s.to_string()).to_string();
    let list: Vec<String> = a.algorithm.iter().map(|s| q(s)).collect();
    let level = a
        .level
        .map(|l| format!("level = {l}\n"))
        .unwrap_or_default();
    let text = format!(
        "[experiment]\nname = {}\nrepetitions = {}\nwarmup = 1\norder = \"interleaved\"\nnoise_check = false\n\n\
         [matrix]\nalgorithm = [{}]\n\n[workload]\nkind = \"compress\"\nalgorithm = \"{{algorithm}}\"\n\
         data = {}\nsize = {}\nthreads = {threads}\n{level}",
        q(&format!("compress {}", a.algorithm.join(","))),
        a.runs,
        list.join(", "),
        q(&a.data),
        q(&a.size),
    );
    // The options are checked here, so a bad size or level is a usage error naming
    // the flag before anything runs.
    let sample = serde_json::json!({
        "algorithm": a.algorithm[0], "level": a.level, "data": a.data,
        "size": a.size, "threads": threads,
    });
    let spec: CompressSpec = serde_json::from_value(sample)
        .map_err(|e| InvalidInput(format!("--size {:?}: {e}", a.size)))?;
    spec.validate()
        .map_err(|e| InvalidInput(crate::exit::as_flags(&e, &[])))?;
    Ok(text)
}

pub fn run(g: &Global, a: &CompressArgs) -> anyhow::Result<ExitCode> {
    let text = experiment_text(a)?;
    let exp = Experiment::parse(std::path::Path::new("perflab-compress.toml"), &text)?;
    let store = Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let flag = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    let progress = Progress::new(g.quiet);
    let opts = RunOptions {
        kind: Some("compress".into()),
        ..Default::default()
    };
    let outcome = runner::run(&exp, &store, &opts, flag, &progress)?;
    progress.finish();
    let summary = summarize_run(&store, outcome.run_id, 0.95)?;
    if a.json {
        let v = crate::commands::show::json(&store, &summary)?;
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "run {} · compress · {} data, {} · store {}",
            outcome.run_id,
            a.data,
            a.size,
            g.store.display()
        );
        println!("{}", crate::format::summary_table(&summary));
    }
    Ok(ExitCode::from(exit::for_outcome(
        &outcome, "runs", "compress",
    )))
}
