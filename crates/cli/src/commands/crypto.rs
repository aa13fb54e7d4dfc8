//! `perflab crypto`: signatures per second and cipher MB/s — an experiment over
//! `algorithm` run by the runner (interleaved repetitions, stored), `kind = "crypto"`
//! (crates/workloads/src/crypto) with its options as flags.

use std::process::ExitCode;

use perflab_workloads::crypto::ALGORITHMS;
use perflab_workloads::disk::ByteSize;

use crate::commands::oneliner;
use crate::exit::InvalidInput;
use crate::Global;

/// Signatures per second (RSA-2048/4096, ECDSA P-256, Ed25519; sign and verify) and
/// MB/s of SHA-256, AES-256-GCM and ChaCha20-Poly1305 — `openssl speed`'s figures.
///
/// Examples:
///   perflab crypto                                    # every algorithm
///   perflab crypto -a rsa4096-sign,ed25519-sign --threads all
///   perflab crypto -a aes-256-gcm --block 1K --json
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct CryptoArgs {
    /// Algorithms (comma-separated): rsa2048-sign, rsa2048-verify, rsa4096-sign,
    /// rsa4096-verify, ecdsap256-sign, ecdsap256-verify, ed25519-sign, ed25519-verify,
    /// sha256, aes-256-gcm, chacha20-poly1305 [default: all].
    #[arg(long, short = 'a', value_delimiter = ',')]
    pub algorithm: Vec<String>,

    /// Bytes per operation of sha256 and the ciphers (powers of 1024).
    #[arg(long, default_value = "16K")]
    pub block: String,

    /// Threads: a number, or `all` (every CPU this process may use).
    #[arg(long, short = 't', default_value = "1")]
    pub threads: String,

    /// Seconds of operations per trial.
    #[arg(long, default_value_t = 0.5)]
    pub min_time: f64,

    /// Repetitions per algorithm (interleaved).
    #[arg(long, short = 'r', default_value_t = 3)]
    pub runs: u32,

    /// Print the summary as JSON (the `show --json` contract).
    #[arg(long)]
    pub json: bool,
}

fn experiment_text(a: &CryptoArgs) -> Result<String, InvalidInput> {
    let algs: Vec<String> = if a.algorithm.is_empty() {
        ALGORITHMS.iter().map(|s| s.to_string()).collect()
    } else {
        a.algorithm.clone()
    };
    for alg in &algs {
        if !ALGORITHMS.contains(&alg.as_str()) {
            return Err(InvalidInput(format!(
                "--algorithm {alg:?}: expected some of {}",
                ALGORITHMS.join(", ")
            )));
        }
    }
    let block: ByteSize = a
        .block
        .parse()
        .map_err(|e| InvalidInput(format!("--block {:?}: {e}", a.block)))?;
    if block.bytes() == 0 || block.bytes() > (64 << 20) {
        return Err(InvalidInput(format!(
            "--block {:?}: expected 1 byte to 64M",
            a.block
        )));
    }
    let threads = oneliner::threads(&a.threads)?;
    oneliner::min_time(a.min_time)?;
    oneliner::runs(a.runs)?;
    let q = oneliner::q;
    let list: Vec<String> = algs.iter().map(|s| q(s)).collect();
    Ok(format!(
        "[experiment]\nname = \"crypto\"\nrepetitions = {}\nwarmup = 0\norder = \"interleaved\"\nnoise_check = false\n\n\
         [matrix]\nalgorithm = [{}]\n\n[workload]\nkind = \"crypto\"\nalgorithm = \"{{algorithm}}\"\n\
         block = {}\nthreads = {threads}\nmin_time = {:?}\n",
        a.runs,
        list.join(", "),
        block.bytes(),
        a.min_time
    ))
}

pub fn run(g: &Global, a: &CryptoArgs) -> anyhow::Result<ExitCode> {
    let text = experiment_text(a)?;
    let title = format!("crypto · {} thread(s)", a.threads);
    oneliner::run(g, "crypto", &text, a.json, &title)
}
