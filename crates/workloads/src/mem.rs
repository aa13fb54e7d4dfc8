//! `kind = "mem"`: memory bandwidth by block size — write (memset), read (a sum of
//! 64-bit words) and copy (memcpy) over a buffer of `block` bytes, passed over again
//! and again for `min_time`, on one thread or several (each with its own buffers).
//! The buffers are filled before the clock starts (no page fault is timed).
//! Small blocks stay in the caches, large ones go to DRAM: run it over 4K … 256M to
//! draw the cache-to-DRAM curve. GB means 10^9 bytes.
//!
//! Proof that the work was done: the read's sum is checked against the sum the
//! buffer must have, a write's last pass and a copy's destination are compared with
//! what they should hold. The compiler cannot drop a pass: each pass depends on the
//! last (the fill byte and the sum change every pass, `black_box` holds the result).

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::disk::ByteSize;
use crate::{Measurement, MetricValue, TrialContext, Workload, WorkloadError};

/// The operations, as written.
pub const OPS: &[&str] = &["write", "read", "copy"];
/// Metrics a mem trial records.
pub const METRICS: &[&str] = &["gb_s"];

/// One mem trial's options (`[workload] kind = "mem"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemSpec {
    /// `write`, `read` or `copy`.
    pub op: String,
    /// Buffer size per thread (copy: each of its two buffers).
    pub block: ByteSize,
    /// Threads (default 1); `0` means every CPU this process may use.
    #[serde(default = "one")]
    pub threads: usize,
    /// Seconds of passes to time (default 0.5).
    #[serde(default = "half")]
    pub min_time: f64,
}

fn one() -> usize {
    1
}
fn half() -> f64 {
    0.5
}

/// What one run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemResult {
    pub op: String,
    pub block: u64,
    pub threads: usize,
    /// Bytes moved by every thread together (copy counts each byte once).
    pub bytes: u64,
    pub seconds: f64,
    pub gb_s: f64,
}

impl MemSpec {
    /// Checks the options; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if !OPS.contains(&self.op.as_str()) {
            return Err(format!(
                "`op` {:?}: expected one of {}",
                self.op,
                OPS.join(", ")
            ));
        }
        if self.block.bytes() < 64 {
            return Err(format!(
                "`block` {}: expected at least 64 bytes",
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
}

/// One thread's passes: returns the bytes moved and the seconds they took, or why a
/// check failed. The buffers are filled before the clock starts, so no page fault is
/// timed; every thread starts its clock at `ready` (a barrier), after its own setup.
fn passes(
    op: &str,
    block: usize,
    min_time: Duration,
    ready: &std::sync::Barrier,
) -> Result<(u64, f64), String> {
    let words = block / 8;
    let mut a: Vec<u64> = match op {
        "copy" => (0..words as u64).collect(),
        "read" => vec![3; words],
        _ => vec![1; words],
    };
    let mut b = vec![0u64; if op == "copy" { words } else { 0 }];
    b.fill(u64::MAX); // touch every page
    ready.wait();
    let start = Instant::now();
    let mut moved = 0u64;
    let mut pass = 0u64;
    loop {
        pass += 1;
        match op {
            "write" => {
                // A byte pattern, so this is the C library's memset (the tools'
                // reference loop), with its large-buffer stores.
                let bytes: &mut [u8] = bytemuck_u8(&mut a);
                bytes.fill(pass as u8);
                black_box(&mut a);
            }
            "read" => {
                let sum = black_box(&a).iter().fold(pass, |s, &w| s.wrapping_add(w));
                if black_box(sum) != pass.wrapping_add(3 * words as u64) {
                    return Err(format!("read pass {pass}: the sum is not the buffer's"));
                }
            }
            _ => {
                // Alternate directions so every pass copies what the last one wrote.
                if pass % 2 == 1 {
                    b.copy_from_slice(&a);
                    black_box(&mut b);
                } else {
                    a.copy_from_slice(&b);
                    black_box(&mut a);
                }
            }
        }
        moved += (words * 8) as u64;
        if start.elapsed() >= min_time {
            break;
        }
    }
    let byte = (pass as u8) as u64 * 0x0101_0101_0101_0101;
    match op {
        "write" if a.iter().any(|&w| w != byte) => {
            Err("write: the last pass did not reach every word".into())
        }
        "copy"
            if a.iter()
                .chain(&b)
                .enumerate()
                .any(|(i, &w)| w != (i % words.max(1)) as u64) =>
        {
            Err("copy: a copy did not arrive whole".into())
        }
        _ => Ok((moved, start.elapsed().as_secs_f64())),
    }
}

/// The bytes of a word buffer.
fn bytemuck_u8(v: &mut [u64]) -> &mut [u8] {
    let len = std::mem::size_of_val(v);
    // SAFETY: u64 has no padding and any byte pattern is a valid u64; the slice covers
    // exactly the words' bytes and borrows them mutably for its lifetime.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), len) }
}

/// Runs the passes on every thread at once.
pub fn run(spec: &MemSpec) -> Result<MemResult, String> {
    spec.validate()?;
    let block =
        usize::try_from(spec.block.bytes()).map_err(|_| "`block` is too large".to_string())?;
    let threads = crate::parallel::resolve(spec.threads);
    let min_time = Duration::from_secs_f64(spec.min_time);
    let barrier = std::sync::Barrier::new(threads);
    let results = crate::parallel::each(threads, |_| {
        passes(spec.op.as_str(), block, min_time, &barrier)
    });
    let mut bytes = 0;
    let mut seconds: f64 = 0.0;
    for r in results {
        let (b, s) = r?;
        bytes += b;
        seconds = seconds.max(s);
    }
    Ok(MemResult {
        op: spec.op.clone(),
        block: block as u64,
        threads,
        bytes,
        seconds,
        gb_s: bytes as f64 / seconds / 1e9,
    })
}

/// The store's view of a result.
pub fn measurement(r: &MemResult) -> Measurement {
    Measurement {
        metrics: vec![MetricValue::new("gb_s", "GB/s", r.gb_s, "higher")],
        ..Measurement::default()
    }
}

impl Workload for MemSpec {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        crate::parallel::in_trial(ctx, || run(self).map(|r| measurement(&r)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_moves_bytes_and_checks_itself() {
        for op in OPS {
            for threads in [1, 2] {
                let r = run(&MemSpec {
                    op: op.to_string(),
                    block: ByteSize(64 << 10),
                    threads,
                    min_time: 0.02,
                })
                .unwrap();
                assert!(r.bytes >= (64 << 10) * threads as u64, "{op}");
                assert!(r.gb_s > 0.0);
                assert_eq!(r.threads, threads);
            }
        }
    }

    #[test]
    fn bad_options_name_the_field() {
        let s = MemSpec {
            op: "zero".into(),
            block: ByteSize(4096),
            threads: 1,
            min_time: 0.1,
        };
        assert!(s.validate().unwrap_err().contains("`op`"));
        let s = MemSpec {
            op: "read".into(),
            block: ByteSize(0),
            threads: 1,
            min_time: 0.1,
        };
        assert!(s.validate().unwrap_err().contains("`block` 0"));
        let s = MemSpec {
            op: "read".into(),
            block: ByteSize(4096),
            threads: 1,
            min_time: 0.0,
        };
        assert!(s.validate().unwrap_err().contains("`min_time`"));
    }
}
