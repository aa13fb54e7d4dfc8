//! `perflab mem`: memory bandwidth by block size — an experiment over `op` × `block`
//! run by the runner (interleaved repetitions, stored), `kind = "mem"`
//! (crates/workloads/src/mem.rs) with its options as flags.

use std::process::ExitCode;

use perflab_lab::experiment::Draft;
use perflab_workloads::disk::ByteSize;
use perflab_workloads::mem::{MemSpec, OPS};
use perflab_workloads::spec::Kind;

use crate::commands::oneliner;
use crate::exit::InvalidInput;
use crate::Global;

/// Memory bandwidth by block size: write (memset), read and copy (memcpy) over
/// buffers from cache-sized to DRAM-sized, in GB/s (10^9 bytes) with intervals.
///
/// Examples:
///   perflab mem                                       # 4K … 256M, write/read/copy
///   perflab mem --block-size 4K,1M --op copy --threads all
///   perflab mem --json > mem.json
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct MemArgs {
    /// Block sizes (powers of 1024, comma-separated).
    #[arg(
        long,
        short = 'b',
        value_delimiter = ',',
        default_value = "4K,32K,256K,1M,8M,64M,256M"
    )]
    pub block_size: Vec<String>,

    /// Operations (comma-separated): write, read, copy, and write-nt, copy-nt (the same
    /// with non-temporal stores that bypass the cache; x86_64 only).
    #[arg(long, value_delimiter = ',', default_value = "write,read,copy")]
    pub op: Vec<String>,

    /// Threads: a number, or `all` (every CPU this process may use).
    #[arg(long, short = 't', default_value = "1")]
    pub threads: String,

    /// Time of passes per trial (`300ms`, `1s`; a plain number is seconds).
    #[arg(long, default_value = "300ms", value_parser = oneliner::seconds)]
    pub min_time: f64,

    /// Repetitions per block size and operation (interleaved).
    #[arg(long, short = 'r', default_value_t = 3)]
    pub runs: u32,

    /// Print the summary as JSON (the `show --json` contract).
    #[arg(long)]
    pub json: bool,
}

/// The experiment `perflab mem` runs: `op` × `block`, the other flags as options.
pub fn experiment(a: &MemArgs) -> Result<Draft, InvalidInput> {
    let mut blocks = Vec::new();
    for b in &a.block_size {
        let size: ByteSize = b
            .parse()
            .map_err(|e| InvalidInput(format!("--block-size {b:?}: {e}")))?;
        if size.bytes() < 64 {
            return Err(InvalidInput(format!(
                "--block-size {b:?}: expected at least 64 bytes"
            )));
        }
        blocks.push(size);
    }
    for op in &a.op {
        if !OPS.contains(&op.as_str()) {
            return Err(InvalidInput(format!(
                "--op {op:?}: expected some of {}",
                OPS.join(", ")
            )));
        }
    }
    let threads = oneliner::threads(&a.threads)?;
    oneliner::min_time(a.min_time)?;
    oneliner::runs(a.runs)?;
    let spec = MemSpec {
        op: a.op[0].clone(),
        block: blocks[0],
        threads,
        min_time: a.min_time,
    };
    let draft = Draft::new("mem", Kind::Mem, &spec)
        .and_then(|d| d.vary("op", a.op.clone()))
        .and_then(|d| d.vary("block", blocks.iter().map(|b| b.to_string()).collect()))
        .map_err(oneliner::usage)?;
    Ok(oneliner::fixed(draft, a.runs, 0))
}

pub fn run(g: &Global, a: &MemArgs) -> anyhow::Result<ExitCode> {
    let draft = experiment(a)?;
    let title = format!("mem · {} thread(s)", a.threads);
    oneliner::run(g, &draft, a.json, &title)
}

#[cfg(test)]
mod tests {
    use crate::commands::oneliner::round_trip;

    #[test]
    fn the_experiment_reads_back_as_built() {
        let a = round_trip::args(&[
            "-b",
            "4K,1M",
            "--op",
            "copy,read",
            "-t",
            "2",
            "--min-time",
            "50ms",
        ]);
        let e = round_trip::check(&super::experiment(&a).unwrap());
        assert_eq!(e.config_count(), 4);
        round_trip::check(&super::experiment(&round_trip::args(&[])).unwrap());
    }
}
