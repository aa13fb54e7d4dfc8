//! `kind = "compress"`: gzip, zstd or lz4 on generated data of a chosen
//! compressibility, one thread or several — MB/s in (compression) and out
//! (decompression), the ratio, and proof that the work was done: every output is
//! decompressed and compared with its input.
//!
//! Maintained codecs, not hand-written ones: `flate2` (gzip; its default Rust backend,
//! miniz_oxide), `zstd` (the reference C library, bundled) and `lz4_flex` (a Rust LZ4
//! with the frame format the `lz4` tool reads; one level, comparable to `lz4 -1`).
//! With several threads the input is cut into equal chunks compressed independently
//! (as `pigz` and `zstd -T` do), so the ratio can be a little worse than one stream's.
//! Sizes are powers of 1024 (`64M`); rates are 10^6 bytes per second, as the tools
//! print them.

use std::io::{Read, Write};
use std::time::Instant;

use perflab_units::Phrase;
use serde::{Deserialize, Serialize};

use crate::disk::ByteSize;
use crate::{Measurement, MetricValue, TrialContext, Workload, WorkloadError};

/// The algorithms, as written.
pub const ALGORITHMS: &[&str] = &["gzip", "zstd", "lz4"];
/// The kinds of data, as written.
pub const DATA: &[&str] = &["zeros", "text", "random"];

/// Metrics a compress trial records.
pub const METRICS: &[&str] = &[
    "compress_mb_s",
    "decompress_mb_s",
    "ratio",
    "compressed_bytes",
];

/// One compress trial's options (`[workload] kind = "compress"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompressSpec {
    /// `gzip`, `zstd` or `lz4`.
    pub algorithm: String,
    /// gzip 1–9 (default 6), zstd 1–19 (default 3); lz4 has one level.
    #[serde(default)]
    pub level: Option<i32>,
    /// `zeros`, `text` (access-log-like lines) or `random`.
    #[serde(default = "default_data")]
    pub data: String,
    /// Input bytes (default 64M).
    #[serde(default = "default_size")]
    pub size: ByteSize,
    /// Threads (default 1); `0` means every CPU this process may use.
    #[serde(default = "default_threads")]
    pub threads: usize,
}

fn default_data() -> String {
    "text".into()
}
fn default_size() -> ByteSize {
    ByteSize(64 << 20)
}
fn default_threads() -> usize {
    1
}

impl CompressSpec {
    /// Checks the options; the error names the option as a field (`level`).
    pub fn validate(&self) -> Result<(), Phrase> {
        if !ALGORITHMS.contains(&self.algorithm.as_str()) {
            return Err(Phrase::field("algorithm").then(format!(
                " {:?}: expected one of {}",
                self.algorithm,
                ALGORITHMS.join(", ")
            )));
        }
        if !DATA.contains(&self.data.as_str()) {
            return Err(Phrase::field("data").then(format!(
                " {:?}: expected one of {}",
                self.data,
                DATA.join(", ")
            )));
        }
        if self.size.bytes() == 0 {
            return Err(Phrase::field("size").then(" 0: expected at least one byte"));
        }
        match (self.algorithm.as_str(), self.level) {
            (_, None) => Ok(()),
            ("gzip", Some(l)) if (1..=9).contains(&l) => Ok(()),
            ("zstd", Some(l)) if (1..=19).contains(&l) => Ok(()),
            ("lz4", Some(_)) => Err(Phrase::field("level")
                .then(": lz4 has one level here (lz4_flex, like lz4 -1); leave it out")),
            (a, Some(l)) => Err(Phrase::field("level").then(format!(
                " {l} for {a}: expected {}",
                if a == "gzip" { "1 to 9" } else { "1 to 19" }
            ))),
        }
    }

    /// The level used: the given one or the algorithm's default.
    pub fn effective_level(&self) -> Option<i32> {
        match self.algorithm.as_str() {
            "gzip" => Some(self.level.unwrap_or(6)),
            "zstd" => Some(self.level.unwrap_or(3)),
            _ => None,
        }
    }

    /// The threads used.
    pub fn effective_threads(&self) -> usize {
        crate::parallel::resolve(self.threads)
    }
}

/// What one run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompressResult {
    pub algorithm: String,
    pub level: Option<i32>,
    pub data: String,
    pub threads: usize,
    pub input_bytes: u64,
    pub compressed_bytes: u64,
    /// input / compressed.
    pub ratio: f64,
    pub compress_s: f64,
    pub decompress_s: f64,
    /// Input MB (10^6 bytes) per second of compression.
    pub compress_mb_s: f64,
    /// Output MB per second of decompression.
    pub decompress_mb_s: f64,
    /// Every chunk decompressed back to its input.
    pub verified: bool,
}

/// Deterministic input: the same bytes for every run of a spec.
pub fn generate(kind: &str, size: usize) -> Vec<u8> {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    match kind {
        "zeros" => vec![0; size],
        "random" => {
            let mut v = Vec::with_capacity(size + 8);
            while v.len() < size {
                v.extend_from_slice(&next().to_le_bytes());
            }
            v.truncate(size);
            v
        }
        _ => {
            // Web-server access-log lines: repetitive structure, varying fields.
            const WORDS: [&str; 12] = [
                "GET",
                "POST",
                "/index.html",
                "/api/v1/users",
                "/api/v1/orders",
                "/static/app.js",
                "/static/style.css",
                "/images/logo.png",
                "/login",
                "/search?q=perf",
                "HTTP/1.1",
                "Mozilla/5.0",
            ];
            let mut v = Vec::with_capacity(size + 200);
            let mut i = 0u64;
            while v.len() < size {
                let r = next();
                let line = format!(
                    "{} 10.0.{}.{} {} {} {} {} {}\n",
                    1_700_000_000 + i,
                    r % 4,
                    (r >> 8) % 250,
                    WORDS[(r >> 16) as usize % 2],
                    WORDS[2 + (r >> 20) as usize % 8],
                    if (r >> 28) % 20 == 0 { 404 } else { 200 },
                    (r >> 32) % 50_000,
                    WORDS[11]
                );
                v.extend_from_slice(line.as_bytes());
                i += 1;
            }
            v.truncate(size);
            v
        }
    }
}

fn compress_one(algorithm: &str, level: Option<i32>, input: &[u8]) -> std::io::Result<Vec<u8>> {
    match algorithm {
        "gzip" => {
            let lvl = flate2::Compression::new(level.unwrap_or(6) as u32);
            let mut e = flate2::write::GzEncoder::new(Vec::new(), lvl);
            e.write_all(input)?;
            e.finish()
        }
        "zstd" => zstd::bulk::compress(input, level.unwrap_or(3)),
        _ => {
            let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
            e.write_all(input)?;
            e.finish().map_err(std::io::Error::other)
        }
    }
}

/// Decompresses `data` into `out`, which must be exactly the input's size: the buffer
/// is allocated and touched before the clock starts (as `zstd -b` and `lz4 -b` reuse
/// theirs), so page faults of a fresh 64 MiB allocation are not timed as
/// decompression (they cost lz4 half its figure: 1.6 vs 3.1 GB/s, docs/benchmarks.md).
fn decompress_into(algorithm: &str, data: &[u8], out: &mut [u8]) -> std::io::Result<()> {
    let trailing = |r: &mut dyn Read| -> std::io::Result<()> {
        let mut one = [0u8; 1];
        match r.read(&mut one)? {
            0 => Ok(()),
            _ => Err(std::io::Error::other("more output than the input had")),
        }
    };
    match algorithm {
        "gzip" => {
            let mut d = flate2::read::GzDecoder::new(data);
            d.read_exact(out)?;
            trailing(&mut d)
        }
        "zstd" => {
            let n = zstd::bulk::Decompressor::new()?.decompress_to_buffer(data, out)?;
            if n == out.len() {
                Ok(())
            } else {
                Err(std::io::Error::other(format!(
                    "{n} bytes out, expected {}",
                    out.len()
                )))
            }
        }
        _ => {
            let mut d = lz4_flex::frame::FrameDecoder::new(data);
            d.read_exact(out)?;
            trailing(&mut d)
        }
    }
}

/// Compresses and decompresses `spec`'s data once; an output that does not decompress
/// to its input is an error.
pub fn run(spec: &CompressSpec) -> Result<CompressResult, String> {
    spec.validate()?;
    let size = usize::try_from(spec.size.bytes()).map_err(|_| "`size` is too large".to_string())?;
    let input = generate(&spec.data, size);
    let threads = spec.effective_threads().min(size).max(1);
    let per = size.div_ceil(threads);
    let chunks: Vec<&[u8]> = input.chunks(per).collect();
    let level = spec.effective_level();
    let alg = spec.algorithm.as_str();
    let t0 = Instant::now();
    let packed = crate::parallel::each(chunks.len(), |i| {
        compress_one(alg, level, chunks[i]).map_err(|e| format!("{alg} compression failed: {e}"))
    })
    .into_iter()
    .collect::<Result<Vec<_>, String>>()?;
    let compress_s = t0.elapsed().as_secs_f64();
    // Output buffers, written once before the clock (a fresh allocation's page faults
    // are not decompression).
    let unpacked: Vec<std::sync::Mutex<Vec<u8>>> = chunks
        .iter()
        .map(|c| std::sync::Mutex::new(vec![0xa5u8; c.len()]))
        .collect();
    let t1 = Instant::now();
    crate::parallel::each(packed.len(), |i| {
        let mut out = unpacked[i].lock().unwrap_or_else(|e| e.into_inner());
        decompress_into(alg, &packed[i], &mut out)
            .map_err(|e| format!("{alg} decompression failed: {e}"))
    })
    .into_iter()
    .collect::<Result<Vec<_>, String>>()?;
    let decompress_s = t1.elapsed().as_secs_f64();
    let verified = unpacked
        .iter()
        .zip(&chunks)
        .all(|(u, c)| u.lock().unwrap_or_else(|e| e.into_inner()).as_slice() == *c);
    if !verified {
        return Err(format!("{alg} output did not decompress to its input"));
    }
    let compressed: u64 = packed.iter().map(|p| p.len() as u64).sum();
    let mb = size as f64 / 1e6;
    Ok(CompressResult {
        algorithm: spec.algorithm.clone(),
        level,
        data: spec.data.clone(),
        threads: chunks.len(),
        input_bytes: size as u64,
        compressed_bytes: compressed,
        ratio: size as f64 / compressed.max(1) as f64,
        compress_s,
        decompress_s,
        compress_mb_s: mb / compress_s.max(1e-9),
        decompress_mb_s: mb / decompress_s.max(1e-9),
        verified,
    })
}

/// The store's view of a result.
pub fn measurement(r: &CompressResult) -> Measurement {
    Measurement {
        metrics: vec![
            MetricValue::new("compress_mb_s", "MB/s", r.compress_mb_s, "higher"),
            MetricValue::new("decompress_mb_s", "MB/s", r.decompress_mb_s, "higher"),
            MetricValue::new("ratio", "x", r.ratio, "higher"),
            MetricValue::new("compressed_bytes", "B", r.compressed_bytes as f64, "lower"),
        ],
        ..Measurement::default()
    }
}

impl Workload for CompressSpec {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        crate::parallel::in_trial(ctx, || run(self).map(|r| measurement(&r)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(alg: &str, data: &str, threads: usize) -> CompressSpec {
        CompressSpec {
            algorithm: alg.into(),
            level: None,
            data: data.into(),
            size: ByteSize(1 << 20),
            threads,
        }
    }

    #[test]
    fn every_algorithm_round_trips_on_every_kind_of_data() {
        for alg in ALGORITHMS {
            for data in DATA {
                for threads in [1, 3] {
                    let r = run(&spec(alg, data, threads)).unwrap();
                    assert!(r.verified);
                    assert_eq!(r.input_bytes, 1 << 20);
                    assert_eq!(r.threads, threads);
                    match *data {
                        "zeros" => assert!(r.ratio > 50.0, "{alg} zeros {}", r.ratio),
                        "random" => assert!(r.ratio < 1.01, "{alg} random {}", r.ratio),
                        _ => assert!((1.5..50.0).contains(&r.ratio), "{alg} text {}", r.ratio),
                    }
                }
            }
        }
    }

    #[test]
    fn outputs_are_the_tools_formats() {
        let input = generate("text", 100_000);
        let gz = compress_one("gzip", Some(6), &input).unwrap();
        assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip magic");
        let zs = compress_one("zstd", Some(3), &input).unwrap();
        assert_eq!(&zs[..4], &[0x28, 0xb5, 0x2f, 0xfd], "zstd frame magic");
        let lz = compress_one("lz4", None, &input).unwrap();
        assert_eq!(&lz[..4], &[0x04, 0x22, 0x4d, 0x18], "lz4 frame magic");
    }

    #[test]
    fn bad_options_name_the_field() {
        let mut s = spec("brotli", "text", 1);
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("`algorithm`"));
        s.algorithm = "gzip".into();
        s.level = Some(12);
        assert!(s.validate().unwrap_err().to_string().contains("`level` 12"));
        s.level = None;
        s.size = ByteSize(0);
        assert!(s.validate().unwrap_err().to_string().contains("`size` 0"));
        s.size = ByteSize(1);
        s.data = "pictures".into();
        assert!(s.validate().unwrap_err().to_string().contains("`data`"));
        let lz = CompressSpec {
            level: Some(1),
            ..spec("lz4", "text", 1)
        };
        assert!(lz.validate().unwrap_err().to_string().contains("one level"));
    }
}
