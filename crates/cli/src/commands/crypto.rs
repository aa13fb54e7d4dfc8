//! `perflab crypto`: signatures per second and cipher MB/s — an experiment over
//! `algorithm` run by the runner (interleaved repetitions, stored), `kind = "crypto"`
//! (crates/workloads/src/crypto) with its options as flags.

use std::process::ExitCode;

use perflab_lab::experiment::Draft;
use perflab_workloads::crypto::{CryptoSpec, ALGORITHMS};
use perflab_workloads::disk::ByteSize;
use perflab_workloads::spec::Kind;

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

    /// Time of operations per trial (`500ms`, `1s`; a plain number is seconds).
    #[arg(long, default_value = "500ms", value_parser = oneliner::seconds)]
    pub min_time: f64,

    /// Repetitions per algorithm (interleaved).
    #[arg(long, short = 'r', default_value_t = 3)]
    pub runs: u32,

    /// Print the summary as JSON (the `show --json` contract).
    #[arg(long)]
    pub json: bool,
}

/// The experiment `perflab crypto` runs: one config per algorithm.
pub fn experiment(a: &CryptoArgs) -> Result<Draft, InvalidInput> {
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
    let spec = CryptoSpec {
        algorithm: algs[0].clone(),
        block,
        threads,
        min_time: a.min_time,
    };
    let draft = Draft::new("crypto", Kind::Crypto, &spec)
        .and_then(|d| d.vary("algorithm", algs))
        .map_err(oneliner::usage)?;
    Ok(oneliner::fixed(draft, a.runs, 0))
}

pub fn run(g: &Global, a: &CryptoArgs) -> anyhow::Result<ExitCode> {
    let draft = experiment(a)?;
    let title = format!("crypto · {} thread(s)", a.threads);
    oneliner::run(g, &draft, a.json, &title)
}

#[cfg(test)]
mod tests {
    use crate::commands::oneliner::round_trip;

    #[test]
    fn the_experiment_reads_back_as_built() {
        let a = round_trip::args(&[
            "--algorithm",
            "sha256",
            "--block",
            "1K",
            "--min-time",
            "0.2",
        ]);
        let e = round_trip::check(&super::experiment(&a).unwrap());
        assert_eq!(e.config_count(), 1);
        round_trip::check(&super::experiment(&round_trip::args(&[])).unwrap());
    }
}
