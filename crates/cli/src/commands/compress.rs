//! `perflab compress`: gzip, zstd and lz4 on generated data, as an experiment over
//! `algorithm` run by the runner (interleaved repetitions, Ctrl-C, stored as a run) —
//! `kind = "compress"` (crates/workloads/src/compress.rs) with its options as flags.

use std::process::ExitCode;

use perflab_lab::experiment::Draft;
use perflab_workloads::compress::{CompressSpec, ALGORITHMS, DATA};
use perflab_workloads::disk::ByteSize;
use perflab_workloads::spec::Kind;

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

/// The experiment `perflab compress` runs: one config per algorithm.
pub fn experiment(a: &CompressArgs) -> Result<Draft, InvalidInput> {
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
    // The options are checked here, so a bad size or level is a usage error naming
    // the flag before anything runs.
    let size: ByteSize = a
        .size
        .parse()
        .map_err(|e| InvalidInput(format!("--size {:?}: {e}", a.size)))?;
    let spec = CompressSpec {
        algorithm: a.algorithm[0].clone(),
        level: a.level,
        data: a.data.clone(),
        size,
        threads,
    };
    spec.validate()
        .map_err(|e| InvalidInput(crate::exit::as_flags(&e, &[])))?;
    let name = format!("compress {}", a.algorithm.join(","));
    let draft = Draft::new(&name, Kind::Compress, &spec)
        .and_then(|d| d.vary("algorithm", a.algorithm.clone()))
        .map_err(oneliner::usage)?;
    Ok(oneliner::fixed(draft, a.runs, 1))
}

pub fn run(g: &Global, a: &CompressArgs) -> anyhow::Result<ExitCode> {
    let draft = experiment(a)?;
    let title = format!("compress · {} data, {}", a.data, a.size);
    oneliner::run(g, &draft, a.json, &title)
}

#[cfg(test)]
mod tests {
    use crate::commands::oneliner::round_trip;

    #[test]
    fn the_experiment_reads_back_as_built() {
        let a = round_trip::args(&["--algorithm", "zstd", "--level", "5", "--size", "1M"]);
        round_trip::check(&super::experiment(&a).unwrap());
        let e = round_trip::check(&super::experiment(&round_trip::args(&[])).unwrap());
        assert!(e.config_count() > 1);
    }
}
