//! `kind = "mem"`: memory bandwidth by block size — write (memset), read (a sum of
//! 64-bit words) and copy (memcpy) over a buffer of `block` bytes, passed over again
//! and again for `min_time`, on one thread or several (each with its own buffers).
//! The buffers are filled before the clock starts (no page fault is timed), and each
//! starts on a page boundary: where malloc happens to put them (the main thread's
//! arena and a worker thread's place them differently) otherwise sets the figure —
//! a 1M memcpy ran 56–85 GB/s and a 4K streaming copy 10–53 GB/s on one VM by the
//! source's and destination's offsets alone (docs/benchmarks.md, "suite vs reference").
//! Small blocks stay in the caches, large ones go to DRAM: run it over 4K … 256M to
//! draw the cache-to-DRAM curve. GB means 10^9 bytes.
//!
//! `write-nt` and `copy-nt` do the same with non-temporal (streaming) stores
//! (`movntdq`, `_mm_stream_si128`, then `sfence` after each pass): the stores go to
//! memory through write-combining buffers, without first reading each line into the
//! cache (no read-for-ownership) and without filling the cache with what they write.
//! They show what a DRAM-sized write can reach when the cache is out of the way, and
//! what a cache-sized one loses when it is forced out to memory. SSE2 is part of
//! every x86_64 CPU, so there is no run-time check; on other architectures the two ops
//! are a setup error. 16-byte stores rather than AVX's 32-byte ones: the
//! write-combining buffer fills a whole line either way (a C loop of each streamed
//! 43.7–44.5 GB/s at 1M and at 256M on the test VM, 2026-11-25).
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
pub const OPS: &[&str] = &["write", "read", "copy", "write-nt", "copy-nt"];
/// Metrics a mem trial records.
pub const METRICS: &[&str] = &["gb_s"];

/// One mem trial's options (`[workload] kind = "mem"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemSpec {
    /// `write`, `read`, `copy`, `write-nt` or `copy-nt`.
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

/// An operation, parsed once so the pass loop does not compare strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Write,
    Read,
    Copy,
    WriteNt,
    CopyNt,
}

impl Op {
    fn parse(op: &str) -> Result<Op, String> {
        let op = match op {
            "write" => Op::Write,
            "read" => Op::Read,
            "copy" => Op::Copy,
            "write-nt" => Op::WriteNt,
            "copy-nt" => Op::CopyNt,
            _ => return Err(format!("`op` {op:?}: expected one of {}", OPS.join(", "))),
        };
        if op.non_temporal() && !nt::AVAILABLE {
            return Err(nt::missing(op.name()));
        }
        Ok(op)
    }

    fn name(self) -> &'static str {
        match self {
            Op::Write => "write",
            Op::Read => "read",
            Op::Copy => "copy",
            Op::WriteNt => "write-nt",
            Op::CopyNt => "copy-nt",
        }
    }

    fn non_temporal(self) -> bool {
        matches!(self, Op::WriteNt | Op::CopyNt)
    }

    fn copies(self) -> bool {
        matches!(self, Op::Copy | Op::CopyNt)
    }
}

impl MemSpec {
    /// Checks the options; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        Op::parse(&self.op)?;
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
    op: Op,
    block: usize,
    min_time: Duration,
    ready: &std::sync::Barrier,
) -> Result<(u64, f64), String> {
    let words = block / 8;
    let mut va = vec![0u64; words + PAGE_WORDS];
    let a = page_aligned(&mut va, words);
    match op {
        Op::Copy | Op::CopyNt => a.iter_mut().zip(0..).for_each(|(w, i)| *w = i),
        Op::Read => a.fill(3),
        Op::Write | Op::WriteNt => a.fill(1),
    }
    let mut vb = vec![0u64; if op.copies() { words + PAGE_WORDS } else { 0 }];
    let b: &mut [u64] = if op.copies() {
        page_aligned(&mut vb, words)
    } else {
        &mut []
    };
    b.fill(u64::MAX); // touch every page

    // Read the clock once per CHECK_BYTES or more, not after every pass: at 4K a clock
    // read is a large part of a pass.
    let per_check = (CHECK_BYTES / (words * 8).max(1)).max(1) as u64;
    ready.wait();
    let start = Instant::now();
    let mut moved = 0u64;
    let mut pass = 0u64;
    loop {
        pass += 1;
        match op {
            Op::Write => {
                // A byte pattern, so this is the C library's memset (the tools'
                // reference loop), with its large-buffer stores.
                let bytes: &mut [u8] = bytemuck_u8(a);
                bytes.fill(pass as u8);
                black_box(&mut *a);
            }
            Op::WriteNt => {
                nt::fill(a, pass as u8)?;
                black_box(&mut *a);
            }
            Op::Read => {
                let sum = black_box(&*a).iter().fold(pass, |s, &w| s.wrapping_add(w));
                if black_box(sum) != pass.wrapping_add(3 * words as u64) {
                    return Err(format!("read pass {pass}: the sum is not the buffer's"));
                }
            }
            Op::Copy | Op::CopyNt => {
                // Alternate directions so every pass copies what the last one wrote.
                let (src, dst) = if pass % 2 == 1 {
                    (&*a, &mut *b)
                } else {
                    (&*b, &mut *a)
                };
                if op == Op::CopyNt {
                    nt::copy(dst, src)?;
                } else {
                    dst.copy_from_slice(src);
                }
                black_box(dst);
            }
        }
        moved += (words * 8) as u64;
        if pass.is_multiple_of(per_check) && start.elapsed() >= min_time {
            break;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    verify(op, pass, a, b)?;
    Ok((moved, seconds))
}

/// The proof of work, after the clock stops: a write's last pass (fill byte `pass`)
/// reached every word; a copy's two buffers both hold the original `0, 1, 2, …`.
fn verify(op: Op, pass: u64, a: &[u64], b: &[u64]) -> Result<(), String> {
    let byte = u64::from_ne_bytes([pass as u8; 8]);
    match op {
        Op::Write | Op::WriteNt if a.iter().any(|&w| w != byte) => Err(format!(
            "{}: the last pass did not reach every word",
            op.name()
        )),
        Op::Copy | Op::CopyNt
            if a.iter()
                .chain(b)
                .enumerate()
                .any(|(i, &w)| w != (i % a.len().max(1)) as u64) =>
        {
            Err(format!("{}: a copy did not arrive whole", op.name()))
        }
        _ => Ok(()),
    }
}

/// Bytes moved between two reads of the clock (blocks this big or bigger read it
/// after every pass). A clock read after every 4K pass held a C memset loop to
/// 96–103 GB/s against 140–145 GB/s with one read per 16 passes (the test VM,
/// 2026-11-25); 64 KiB of passes past `min_time` cost microseconds.
const CHECK_BYTES: usize = 64 << 10;

/// Words in a page: every buffer is allocated a page longer than its block, and used
/// from its first page boundary on.
const PAGE_WORDS: usize = 4096 / 8;

/// The `words` words of `v` that start at its first page boundary (`v` is at least
/// `PAGE_WORDS` longer than that).
fn page_aligned(v: &mut [u64], words: usize) -> &mut [u64] {
    let addr = v.as_ptr() as usize;
    let skip = (addr.next_multiple_of(4096) - addr) / 8; // `addr` is 8-aligned
    &mut v[skip..skip + words]
}

/// The bytes of a word buffer.
fn bytemuck_u8(v: &mut [u64]) -> &mut [u8] {
    let len = std::mem::size_of_val(v);
    // SAFETY: u64 has no padding and any byte pattern is a valid u64; the slice covers
    // exactly the words' bytes and borrows them mutably for its lifetime.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), len) }
}

/// Non-temporal stores: SSE2's `movntdq` on the 16-byte-aligned middle of a buffer,
/// ordinary stores for the word or so before and after it, `sfence` at the end so
/// the streamed lines are ordered before anything that follows (the next pass, the
/// check).
#[cfg(target_arch = "x86_64")]
mod nt {
    use std::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_set1_epi8, _mm_sfence, _mm_stream_si128,
    };

    pub const AVAILABLE: bool = true;

    pub fn missing(op: &str) -> String {
        format!("{op} needs x86_64 non-temporal stores")
    }

    /// Fills `dst` with `byte`.
    pub fn fill(dst: &mut [u64], byte: u8) -> Result<(), String> {
        let word = u64::from_ne_bytes([byte; 8]);
        // SAFETY: any bit pattern is a valid __m128i and a valid u64; align_to_mut
        // only splits the slice where the 16-byte alignment starts and ends.
        let (head, body, tail) = unsafe { dst.align_to_mut::<__m128i>() };
        head.fill(word);
        tail.fill(word);
        // SAFETY (here and for the sfences): SSE and SSE2 are in every x86_64 CPU.
        let v = unsafe { _mm_set1_epi8(byte as i8) };
        for x in body {
            // SAFETY: `x` is a live, 16-byte-aligned __m128i of the slice.
            unsafe { _mm_stream_si128(x, v) };
        }
        unsafe { _mm_sfence() };
        Ok(())
    }

    /// Copies `src` into `dst` (same length): unaligned loads, streaming stores.
    pub fn copy(dst: &mut [u64], src: &[u64]) -> Result<(), String> {
        assert_eq!(dst.len(), src.len(), "copy between buffers of one size");
        // SAFETY: as in `fill`.
        let (head, body, tail) = unsafe { dst.align_to_mut::<__m128i>() };
        let (h, m) = (head.len(), body.len() * 2);
        // A word at most on each side (none on page-aligned buffers); the checks save
        // two calls of memcpy for nothing per pass, which a 4K pass notices.
        if h > 0 {
            head.copy_from_slice(&src[..h]);
        }
        if !tail.is_empty() {
            tail.copy_from_slice(&src[h + m..]);
        }
        let from = src[h..h + m].as_ptr().cast::<__m128i>();
        for (i, x) in body.iter_mut().enumerate() {
            // SAFETY: `from.add(i)` lies inside `src[h..h + m]` (2 words per vector;
            // loadu needs no alignment); `x` is a 16-byte-aligned element of `dst`.
            unsafe { _mm_stream_si128(x, _mm_loadu_si128(from.add(i))) };
        }
        unsafe { _mm_sfence() };
        Ok(())
    }
}

/// Elsewhere the non-temporal ops are refused by `validate`; these are never reached
/// through it and fail rather than fall back to ordinary stores.
#[cfg(not(target_arch = "x86_64"))]
mod nt {
    pub const AVAILABLE: bool = false;

    pub fn missing(op: &str) -> String {
        format!("{op} needs x86_64 non-temporal stores")
    }

    pub fn fill(_dst: &mut [u64], _byte: u8) -> Result<(), String> {
        Err(missing("write-nt"))
    }

    pub fn copy(_dst: &mut [u64], _src: &[u64]) -> Result<(), String> {
        Err(missing("copy-nt"))
    }
}

/// Runs the passes on every thread at once.
pub fn run(spec: &MemSpec) -> Result<MemResult, String> {
    spec.validate()?;
    let op = Op::parse(&spec.op)?;
    let block =
        usize::try_from(spec.block.bytes()).map_err(|_| "`block` is too large".to_string())?;
    let threads = crate::parallel::resolve(spec.threads);
    let min_time = Duration::from_secs_f64(spec.min_time);
    let barrier = std::sync::Barrier::new(threads);
    let results = crate::parallel::each(threads, |_| passes(op, block, min_time, &barrier));
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
        // Where there are no non-temporal stores, their ops are a setup error (below).
        for op in OPS
            .iter()
            .filter(|op| nt::AVAILABLE || !op.ends_with("-nt"))
        {
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

    #[test]
    fn buffers_start_on_a_page_boundary() {
        for words in [0, 1, 8, 512, 513, 100_000] {
            let mut v = vec![0u64; words + PAGE_WORDS];
            let s = page_aligned(&mut v, words);
            assert_eq!(s.len(), words);
            assert_eq!(s.as_ptr() as usize % 4096, 0, "{words} words");
        }
    }

    #[test]
    fn unknown_op_is_an_error_that_lists_every_op() {
        for bad in ["memset", "write_nt", "WRITE", ""] {
            let spec = MemSpec {
                op: bad.into(),
                block: ByteSize(4096),
                threads: 1,
                min_time: 0.01,
            };
            let e = run(&spec).unwrap_err();
            assert!(
                e.starts_with(&format!("`op` {bad:?}: expected one of")),
                "{e}"
            );
            assert!(e.contains("write, read, copy, write-nt, copy-nt"), "{e}");
        }
    }

    /// Odd lengths and a start 8 bytes past 16-byte alignment, so the head, the
    /// streamed middle and the tail are all used.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn non_temporal_fill_and_copy_reach_every_word() {
        for len in [0, 1, 2, 3, 7, 64, 1001] {
            for skip in [0, 1] {
                let mut buf = vec![7u64; len + skip];
                let dst = &mut buf[skip..];
                nt::fill(dst, 0xa5).unwrap();
                assert!(
                    dst.iter().all(|&w| w == 0xa5a5_a5a5_a5a5_a5a5),
                    "{len}+{skip}"
                );
                assert!(
                    buf[..skip].iter().all(|&w| w == 7),
                    "wrote before the slice"
                );

                let src: Vec<u64> = (0..len as u64 + 1).map(|i| i * 3 + 1).collect();
                let mut out = vec![0u64; len + skip];
                nt::copy(&mut out[skip..], &src[1..]).unwrap();
                assert_eq!(&out[skip..], &src[1..], "{len}+{skip}");
                assert!(
                    out[..skip].iter().all(|&w| w == 0),
                    "wrote before the slice"
                );
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn non_temporal_ops_leave_the_last_pass_in_memory() {
        // 1M + 8 bytes: not a multiple of 16, so every pass has a tail word.
        for op in [Op::WriteNt, Op::CopyNt] {
            let barrier = std::sync::Barrier::new(1);
            let (bytes, secs) =
                passes(op, (1 << 20) + 8, Duration::from_millis(20), &barrier).unwrap();
            assert_eq!(bytes % ((1 << 20) + 8), 0, "{op:?}: whole passes");
            assert!(bytes > 0 && secs > 0.0);
        }
    }

    #[test]
    fn the_check_catches_a_pass_that_missed_a_word() {
        let pass = 3u64;
        let mut a = vec![u64::from_ne_bytes([3; 8]); 100];
        assert!(verify(Op::WriteNt, pass, &a, &[]).is_ok());
        a[99] = u64::from_ne_bytes([2; 8]);
        let e = verify(Op::WriteNt, pass, &a, &[]).unwrap_err();
        assert!(e.starts_with("write-nt:"), "{e}");

        let a: Vec<u64> = (0..100).collect();
        let mut b = a.clone();
        assert!(verify(Op::CopyNt, pass, &a, &b).is_ok());
        b[50] = 0;
        let e = verify(Op::CopyNt, pass, &a, &b).unwrap_err();
        assert!(e.starts_with("copy-nt:"), "{e}");
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[test]
    fn non_temporal_ops_are_a_setup_error_elsewhere() {
        for op in ["write-nt", "copy-nt"] {
            let spec = MemSpec {
                op: op.into(),
                block: ByteSize(4096),
                threads: 1,
                min_time: 0.01,
            };
            let e = spec.validate().unwrap_err();
            assert_eq!(e, format!("{op} needs x86_64 non-temporal stores"));
        }
    }
}
