//! `--hdr-log FILE`: an HdrHistogram interval log, one histogram per second, in the
//! format HdrHistogram's own tools read (`HistogramLogProcessor`, the Rust
//! `IntervalLogIterator`, HdrHistogram plotters): a `#[StartTime: ...]` header, the
//! legend line, then `start,length,max,base64(compressed V2 histogram)` lines.
//!
//! Values are microseconds (pass `-outputValueUnitRatio 1000` to HistogramLogProcessor
//! for milliseconds). The corrected latency is untagged; in open loop the uncorrected
//! latency follows each interval with `Tag=uncorrected`.

use crate::error::LoadError;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// An open interval log.
pub(crate) struct HdrLog {
    path: PathBuf,
    out: BufWriter<File>,
    serializer: V2DeflateSerializer,
}

impl HdrLog {
    /// Creates the file and writes the header.
    pub fn create(path: &Path, start: SystemTime) -> Result<Self, LoadError> {
        let err = |e: &dyn std::fmt::Display| LoadError::HdrLog {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let file = File::create(path).map_err(|e| err(&e))?;
        let mut log = HdrLog {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
            serializer: V2DeflateSerializer::new(),
        };
        IntervalLogWriterBuilder::new()
            .add_comment("perflab http: latency in microseconds")
            .with_start_time(start)
            .with_base_time(start)
            .begin_log_with(&mut log.out, &mut log.serializer)
            .map_err(|e| err(&e))?;
        log.out
            .write_all(b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n")
            .map_err(|e| err(&e))?;
        Ok(log)
    }

    /// Appends one interval (`start`: offset from the base time).
    pub fn interval(
        &mut self,
        start: Duration,
        len: Duration,
        hist: &Histogram<u64>,
        tag: Option<&str>,
    ) -> Result<(), LoadError> {
        let path = self.path.clone();
        let err = |e: &dyn std::fmt::Display| LoadError::HdrLog {
            path: path.clone(),
            reason: e.to_string(),
        };
        let mut w = IntervalLogWriterBuilder::new()
            .begin_log_with(&mut self.out, &mut self.serializer)
            .map_err(|e| err(&e))?;
        w.write_histogram(hist, start, len, tag.and_then(Tag::new))
            .map_err(|e| err(&e))
    }

    /// Flushes the file.
    pub fn finish(mut self) -> Result<(), LoadError> {
        self.out.flush().map_err(|e| LoadError::HdrLog {
            path: self.path.clone(),
            reason: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    #[test]
    fn log_reads_back_with_hdrhistogram_reader() {
        let dir = std::env::temp_dir().join(format!("perflab-hdrlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.hlog");
        let mut log = HdrLog::create(&path, SystemTime::now()).unwrap();
        let mut h = crate::record::new_histogram();
        h.record(1500).unwrap();
        log.interval(Duration::from_secs(1), Duration::from_secs(1), &h, None)
            .unwrap();
        log.interval(
            Duration::from_secs(1),
            Duration::from_secs(1),
            &h,
            Some("uncorrected"),
        )
        .unwrap();
        log.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let mut hists = 0;
        for entry in IntervalLogIterator::new(&bytes) {
            if let LogEntry::Interval(i) = entry.unwrap() {
                let raw = base64_decode(i.encoded_histogram());
                let back: Histogram<u64> = Deserializer::new()
                    .deserialize(&mut raw.as_slice())
                    .unwrap();
                assert_eq!(back.len(), 1);
                hists += 1;
            }
        }
        assert_eq!(hists, 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn base64_decode(s: &str) -> Vec<u8> {
        let val = |c: u8| match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            _ => 63,
        };
        let clean: Vec<u8> = s.bytes().filter(|c| *c != b'=').collect();
        let mut out = Vec::new();
        for chunk in clean.chunks(4) {
            let mut acc = 0u32;
            for (k, c) in chunk.iter().enumerate() {
                acc |= u32::from(val(*c)) << (18 - 6 * k);
            }
            let bytes = acc.to_be_bytes();
            out.extend_from_slice(&bytes[1..chunk.len()]);
        }
        out
    }
}
