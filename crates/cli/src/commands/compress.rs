//! `perflab compress`: gzip, zstd and lz4 on generated data, as an experiment over
//! `algorithm` run by the runner (interleaved repetitions, Ctrl-C, stored as a run) —
//! `kind = "compress"` (crates/workloads/src/compress.rs) with its options as flags.

use std::process::ExitCode;

use perflab_workloads::compress::{CompressSpec, ALGORITHMS, DATA};

use crate::commands::oneliner;
use crate::exit::InvalidInput;
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
    let threads = oneliner::threads(&a.threads)?;
    oneliner::runs(a.runs)?;
    let q = oneliner::q;
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
        .map_err(|e| InvalidInput(e.render(&|f| perflab_units::flag_for(&[], f))))?;
    Ok(text)
}

pub fn run(g: &Global, a: &CompressArgs) -> anyhow::Result<ExitCode> {
    let text = experiment_text(a)?;
    let title = format!("compress · {} data, {}", a.data, a.size);
    oneliner::run(g, "compress", &text, a.json, &title)
}
