//! `kind = "crypto"`: signatures and bulk ciphers per second — RSA-2048/4096
//! (PKCS#1 v1.5, SHA-256) and ECDSA P-256 sign and verify, Ed25519 sign and verify,
//! SHA-256, AES-256-GCM and ChaCha20-Poly1305 MB/s — the figures `openssl speed`
//! prints (`rsa2048`, `ecdsap256`, `ed25519`, `-evp sha256`, `-evp aes-256-gcm`).
//!
//! The library is `ring` (already in the tree for TLS; its primitives are BoringSSL's
//! assembly, so the figures are comparable to OpenSSL's). ring cannot generate RSA keys,
//! so the two RSA keys are fixed test keys embedded here (`rsa2048.der`, `rsa4096.der`, PKCS#1,
//! made with `openssl genpkey`; they protect nothing); ECDSA and Ed25519 keys are
//! generated per run. Proof of work: every signature made is verified once at the end,
//! every verification must succeed, the last AEAD output is opened and compared, and
//! the hash of the last pass is compared with one computed apart.

use std::time::{Duration, Instant};

use ring::rand::SystemRandom;
use ring::signature::{self, KeyPair};
use serde::{Deserialize, Serialize};

use crate::disk::ByteSize;
use crate::{Measurement, MetricValue, TrialContext, Workload, WorkloadError};

const RSA2048: &[u8] = include_bytes!("rsa2048.der");
const RSA4096: &[u8] = include_bytes!("rsa4096.der");

/// The algorithms, as written.
pub const ALGORITHMS: &[&str] = &[
    "rsa2048-sign",
    "rsa2048-verify",
    "rsa4096-sign",
    "rsa4096-verify",
    "ecdsap256-sign",
    "ecdsap256-verify",
    "ed25519-sign",
    "ed25519-verify",
    "sha256",
    "aes-256-gcm",
    "chacha20-poly1305",
];

/// Metrics a crypto trial records: `ops_s` for signatures, `mb_s` for bulk ones.
pub const METRICS: &[&str] = &["ops_s", "mb_s"];

/// One crypto trial's options (`[workload] kind = "crypto"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CryptoSpec {
    pub algorithm: String,
    /// Bytes per operation of the bulk algorithms (default 16k, openssl speed's
    /// largest common size); signatures sign a 32-byte message.
    #[serde(default = "default_block")]
    pub block: ByteSize,
    /// Threads (default 1); `0` means every CPU this process may use.
    #[serde(default = "one")]
    pub threads: usize,
    /// Seconds of operations to time (default 1).
    #[serde(default = "second")]
    pub min_time: f64,
}

fn default_block() -> ByteSize {
    ByteSize(16 << 10)
}
fn one() -> usize {
    1
}
fn second() -> f64 {
    1.0
}

impl CryptoSpec {
    /// Checks the options; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if !ALGORITHMS.contains(&self.algorithm.as_str()) {
            return Err(format!(
                "`algorithm` {:?}: expected one of {}",
                self.algorithm,
                ALGORITHMS.join(", ")
            ));
        }
        if self.block.bytes() == 0 || self.block.bytes() > (64 << 20) {
            return Err(format!(
                "`block` {}: expected 1 byte to 64M",
                self.block.bytes()
            ));
        }
        if !(self.min_time > 0.0 && self.min_time <= 600.0) {
            return Err(format!(
                "`min_time` {}: expected more than 0 and at most 600 seconds",
                self.min_time
            ));
        }
        Ok(())
    }

    fn bulk(&self) -> bool {
        matches!(
            self.algorithm.as_str(),
            "sha256" | "aes-256-gcm" | "chacha20-poly1305"
        )
    }
}

/// What one run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CryptoResult {
    pub algorithm: String,
    pub threads: usize,
    pub ops: u64,
    pub seconds: f64,
    pub ops_s: f64,
    /// Bulk algorithms: MB (10^6 bytes) per second.
    pub mb_s: Option<f64>,
}

/// Repeats `op` until `min_time` has passed; returns (operations, seconds).
fn timed(
    min_time: Duration,
    mut op: impl FnMut() -> Result<(), String>,
) -> Result<(u64, f64), String> {
    let start = Instant::now();
    let mut n = 0u64;
    loop {
        op()?;
        n += 1;
        if n & 7 == 0 && start.elapsed() >= min_time {
            return Ok((n, start.elapsed().as_secs_f64()));
        }
    }
}

fn rsa(der: &[u8], verify: bool, min_time: Duration) -> Result<(u64, f64), String> {
    let key = signature::RsaKeyPair::from_der(der).map_err(|e| format!("RSA key: {e}"))?;
    let rng = SystemRandom::new();
    let msg = [7u8; 32];
    let mut sig = vec![0; key.public().modulus_len()];
    let public = signature::UnparsedPublicKey::new(
        &signature::RSA_PKCS1_2048_8192_SHA256,
        key.public_key().as_ref().to_vec(),
    );
    let sign = |sig: &mut Vec<u8>| {
        key.sign(&signature::RSA_PKCS1_SHA256, &rng, &msg, sig)
            .map_err(|_| "RSA signing failed".to_string())
    };
    sign(&mut sig)?;
    let check = |sig: &[u8]| {
        public
            .verify(&msg, sig)
            .map_err(|_| "an RSA signature did not verify".to_string())
    };
    let r = if verify {
        timed(min_time, || check(&sig))?
    } else {
        timed(min_time, || sign(&mut sig))?
    };
    check(&sig)?;
    Ok(r)
}

fn ecdsa(verify: bool, min_time: Duration) -> Result<(u64, f64), String> {
    let rng = SystemRandom::new();
    let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let pkcs8 = signature::EcdsaKeyPair::generate_pkcs8(alg, &rng)
        .map_err(|_| "ECDSA key generation failed")?;
    let key = signature::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng)
        .map_err(|e| format!("ECDSA key: {e}"))?;
    let public = signature::UnparsedPublicKey::new(
        &signature::ECDSA_P256_SHA256_FIXED,
        key.public_key().as_ref().to_vec(),
    );
    let msg = [7u8; 32];
    let mut sig = key
        .sign(&rng, &msg)
        .map_err(|_| "ECDSA signing failed")?
        .as_ref()
        .to_vec();
    let check = |sig: &[u8]| {
        public
            .verify(&msg, sig)
            .map_err(|_| "an ECDSA signature did not verify".to_string())
    };
    let r = if verify {
        timed(min_time, || check(&sig))?
    } else {
        timed(min_time, || {
            sig = key
                .sign(&rng, &msg)
                .map_err(|_| "ECDSA signing failed")?
                .as_ref()
                .to_vec();
            Ok(())
        })?
    };
    check(&sig)?;
    Ok(r)
}

fn ed25519(verify: bool, min_time: Duration) -> Result<(u64, f64), String> {
    let rng = SystemRandom::new();
    let pkcs8 = signature::Ed25519KeyPair::generate_pkcs8(&rng)
        .map_err(|_| "Ed25519 key generation failed")?;
    let key = signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref())
        .map_err(|e| format!("Ed25519 key: {e}"))?;
    let public =
        signature::UnparsedPublicKey::new(&signature::ED25519, key.public_key().as_ref().to_vec());
    let msg = [7u8; 32];
    let mut sig = key.sign(&msg).as_ref().to_vec();
    let check = |sig: &[u8]| {
        public
            .verify(&msg, sig)
            .map_err(|_| "an Ed25519 signature did not verify".to_string())
    };
    let r = if verify {
        timed(min_time, || check(&sig))?
    } else {
        timed(min_time, || {
            sig = key.sign(&msg).as_ref().to_vec();
            Ok(())
        })?
    };
    check(&sig)?;
    Ok(r)
}

fn sha256(block: usize, min_time: Duration) -> Result<(u64, f64), String> {
    let data = vec![0x5au8; block];
    let want = ring::digest::digest(&ring::digest::SHA256, &data);
    let mut last = None;
    let r = timed(min_time, || {
        last = Some(ring::digest::digest(
            &ring::digest::SHA256,
            std::hint::black_box(&data),
        ));
        Ok(())
    })?;
    match last {
        Some(d) if d.as_ref() == want.as_ref() => Ok(r),
        _ => Err("SHA-256 of the last pass differs".into()),
    }
}

fn aead(
    alg: &'static ring::aead::Algorithm,
    block: usize,
    min_time: Duration,
) -> Result<(u64, f64), String> {
    use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey};
    let key = LessSafeKey::new(UnboundKey::new(alg, &[9u8; 32]).map_err(|_| "AEAD key")?);
    let plain = vec![0x33u8; block];
    let mut buf = plain.clone();
    let mut counter = 0u64;
    let mut last_tag = None;
    let mut last_nonce = [0u8; 12];
    let r = timed(min_time, || {
        buf.copy_from_slice(&plain);
        counter += 1;
        let mut n = [0u8; 12];
        n[4..].copy_from_slice(&counter.to_be_bytes());
        let tag = key
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(n), Aad::empty(), &mut buf)
            .map_err(|_| "sealing failed".to_string())?;
        last_tag = Some(tag);
        last_nonce = n;
        Ok(())
    })?;
    // Open the last ciphertext: it must give the plaintext back.
    let mut sealed = buf.clone();
    sealed.extend_from_slice(last_tag.ok_or("nothing sealed")?.as_ref());
    let opened = key
        .open_in_place(
            Nonce::assume_unique_for_key(last_nonce),
            Aad::empty(),
            &mut sealed,
        )
        .map_err(|_| "the last ciphertext did not open".to_string())?;
    if opened != plain.as_slice() {
        return Err("the last ciphertext opened to other bytes".into());
    }
    Ok(r)
}

fn one_thread(spec: &CryptoSpec, ready: &std::sync::Barrier) -> Result<(u64, f64), String> {
    let t = Duration::from_secs_f64(spec.min_time);
    let block = spec.block.bytes() as usize;
    ready.wait();
    match spec.algorithm.as_str() {
        "rsa2048-sign" => rsa(RSA2048, false, t),
        "rsa2048-verify" => rsa(RSA2048, true, t),
        "rsa4096-sign" => rsa(RSA4096, false, t),
        "rsa4096-verify" => rsa(RSA4096, true, t),
        "ecdsap256-sign" => ecdsa(false, t),
        "ecdsap256-verify" => ecdsa(true, t),
        "ed25519-sign" => ed25519(false, t),
        "ed25519-verify" => ed25519(true, t),
        "sha256" => sha256(block, t),
        "aes-256-gcm" => aead(&ring::aead::AES_256_GCM, block, t),
        _ => aead(&ring::aead::CHACHA20_POLY1305, block, t),
    }
}

/// Runs the operations on every thread at once.
pub fn run(spec: &CryptoSpec) -> Result<CryptoResult, String> {
    spec.validate()?;
    let threads = crate::parallel::resolve(spec.threads);
    let barrier = std::sync::Barrier::new(threads);
    let results = crate::parallel::each(threads, |_| one_thread(spec, &barrier));
    let (mut ops, mut seconds) = (0u64, 0f64);
    for r in results {
        let (n, s) = r?;
        ops += n;
        seconds = seconds.max(s);
    }
    let ops_s = ops as f64 / seconds.max(1e-9);
    Ok(CryptoResult {
        algorithm: spec.algorithm.clone(),
        threads,
        ops,
        seconds,
        ops_s,
        mb_s: spec.bulk().then(|| ops_s * spec.block.bytes() as f64 / 1e6),
    })
}

/// The store's view of a result: `ops_s`, and `mb_s` for the bulk algorithms.
pub fn measurement(r: &CryptoResult) -> Measurement {
    let mut metrics = vec![MetricValue::new("ops_s", "op/s", r.ops_s, "higher")];
    if let Some(mb) = r.mb_s {
        metrics.push(MetricValue::new("mb_s", "MB/s", mb, "higher"));
    }
    Measurement {
        metrics,
        ..Measurement::default()
    }
}

impl Workload for CryptoSpec {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        crate::parallel::in_trial(ctx, || run(self).map(|r| measurement(&r)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_runs_and_proves_its_work() {
        for alg in ALGORITHMS {
            let r = run(&CryptoSpec {
                algorithm: alg.to_string(),
                block: ByteSize(1024),
                threads: 1,
                min_time: 0.01,
            })
            .unwrap();
            assert!(r.ops >= 8 && r.ops_s > 0.0, "{alg}");
            assert_eq!(
                r.mb_s.is_some(),
                ["sha256", "aes-256-gcm", "chacha20-poly1305"].contains(alg)
            );
        }
    }

    #[test]
    fn bad_options_name_the_field() {
        let s = CryptoSpec {
            algorithm: "rot13".into(),
            block: ByteSize(16),
            threads: 1,
            min_time: 1.0,
        };
        assert!(s.validate().unwrap_err().contains("`algorithm`"));
        let s = CryptoSpec {
            algorithm: "sha256".into(),
            block: ByteSize(0),
            threads: 1,
            min_time: 1.0,
        };
        assert!(s.validate().unwrap_err().contains("`block` 0"));
    }
}
