//! What a disk run reports: [`DiskReport`] (also the `--json` document), the metrics
//! and histogram it stores, and the warnings about the classic measurement traps.

use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::iostat::Iostat;
use super::spec::{Mode, Pattern};
use crate::{HistogramData, MetricValue};
use perflab_units::Phrase;

/// Per-I/O latency percentiles, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyUs {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
    pub min: f64,
    pub p90: f64,
    pub p999: f64,
}

impl LatencyUs {
    /// From a histogram in ns.
    pub fn from_ns(h: &Histogram<u64>) -> LatencyUs {
        if h.is_empty() {
            return LatencyUs::default();
        }
        let us = |v: u64| v as f64 / 1000.0;
        LatencyUs {
            p50: us(h.value_at_quantile(0.50)),
            p99: us(h.value_at_quantile(0.99)),
            max: us(h.max()),
            mean: h.mean() / 1000.0,
            min: us(h.min()),
            p90: us(h.value_at_quantile(0.90)),
            p999: us(h.value_at_quantile(0.999)),
        }
    }
}

/// The outcome of one disk run. Field order is the `--json` order; the first ten
/// fields are the documented core (`mode` … `warnings`), the rest describe the run.
/// It reads back from that JSON (a trial run on another host), without its histogram.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiskReport {
    pub mode: Mode,
    /// Block size, bytes.
    pub bs: u64,
    /// Bytes transferred in the timed interval.
    pub bytes: u64,
    /// Length of the timed interval (first I/O to last completion, the final
    /// fdatasync included), s.
    pub seconds: f64,
    /// 10^6 bytes per second, as dd and fio print MB/s.
    pub mb_s: f64,
    pub iops: f64,
    pub latency_us: LatencyUs,
    /// The disk whose iostat figures are shown (`null` when PATH has none).
    pub device: Option<String>,
    pub iostat: Option<Iostat>,
    pub warnings: Vec<String>,
    /// Whole I/Os completed.
    pub ios: u64,
    /// I/Os asked for.
    pub ios_planned: u64,
    /// The file (or device) the I/O went to.
    pub path: String,
    pub partition: Option<String>,
    pub file_system: Option<String>,
    pub direct: bool,
    pub dsync: bool,
    pub fdatasync_end: bool,
    pub pattern: Pattern,
    pub cached: bool,
    pub iodepth: u32,
    /// How the I/O was issued (`pread/pwrite, 1 thread`, or the thread pool).
    pub method: String,
    /// Whether the laid-out file was in the page cache when reading started (read
    /// modes; fraction of its pages, from mincore).
    pub resident_before: Option<f64>,
    /// Set when the run stopped early (ENOSPC, an I/O error, a timeout): the figures
    /// cover what was done.
    pub partial: bool,
    /// What stopped it.
    pub problem: Option<String>,
    /// Latency histogram, ns.
    #[serde(skip, default = "super::engine::new_histogram")]
    pub histogram: Histogram<u64>,
}

impl DiskReport {
    /// Names the options in the trap warnings by `name` (a command's flag for a field)
    /// instead of the stored key form. A warning is replaced only where it is exactly
    /// the key form of one that [`warnings`] gives for this report; others stay.
    pub fn name_fields(&mut self, name: &dyn Fn(&str) -> String) {
        for p in warnings(self) {
            let stored = p.to_string();
            let named = p.render(name);
            for w in self.warnings.iter_mut().filter(|w| **w == stored) {
                w.clone_from(&named);
            }
        }
    }

    /// Metrics stored per trial. `dev_*` are the device's iostat figures over the run
    /// (their `better` direction is nominal: they explain, they are not goals).
    pub fn metrics(&self) -> Vec<MetricValue> {
        let mut m = vec![
            MetricValue::new("mb_s", "MB/s", self.mb_s, "higher"),
            MetricValue::new("iops", "IO/s", self.iops, "higher"),
            MetricValue::new("latency_p50_us", "us", self.latency_us.p50, "lower"),
            MetricValue::new("latency_p99_us", "us", self.latency_us.p99, "lower"),
            MetricValue::new("latency_max_us", "us", self.latency_us.max, "lower"),
            MetricValue::new("latency_mean_us", "us", self.latency_us.mean, "lower"),
            MetricValue::new("bytes", "B", self.bytes as f64, "higher"),
            MetricValue::new("seconds", "s", self.seconds, "lower"),
        ];
        if let Some(x) = &self.iostat {
            m.extend([
                MetricValue::new("dev_r_s", "IO/s", x.r_s, "higher"),
                MetricValue::new("dev_rkb_s", "kB/s", x.rkb_s, "higher"),
                MetricValue::new("dev_rrqm_s", "req/s", x.rrqm_s, "higher"),
                MetricValue::new("dev_w_s", "IO/s", x.w_s, "higher"),
                MetricValue::new("dev_wkb_s", "kB/s", x.wkb_s, "higher"),
                MetricValue::new("dev_wrqm_s", "req/s", x.wrqm_s, "higher"),
                MetricValue::new("dev_aqu_sz", "req", x.aqu_sz, "lower"),
                MetricValue::new("dev_await_ms", "ms", x.await_ms, "lower"),
                MetricValue::new("dev_areq_sz_kb", "kB", x.areq_sz, "higher"),
                MetricValue::new("dev_util_pct", "%", x.util, "lower"),
            ]);
        }
        m
    }

    /// The latency histogram in µs, V2-serialized (readable by every HdrHistogram
    /// decoder). Recorded in ns; each bucket is re-recorded at its µs value.
    pub fn histogram_data(&self) -> HistogramData {
        let mut us =
            Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds");
        for v in self.histogram.iter_recorded() {
            let at = (v.value_iterated_to() as f64 / 1000.0).round().max(1.0) as u64;
            us.saturating_record_n(at, v.count_at_value());
        }
        let mut data = Vec::new();
        // Serializing into a Vec cannot fail.
        let _ = V2Serializer::new().serialize(&us, &mut data);
        HistogramData {
            name: "latency".into(),
            unit: "us".into(),
            data,
        }
    }
}

/// The warnings about the measurement traps a finished run fell into, computed from
/// the report alone (so a report read back from JSON gives the same ones). The options
/// they suggest are fields: the report stores them in the experiment file's words
/// (`` `direct` ``), and `perflab disk` names its flags ([`DiskReport::name_fields`]).
pub fn warnings(r: &DiskReport) -> Vec<Phrase> {
    let mut w = Vec::new();
    let write = r.mode.is_write();
    if write && !r.direct && !r.dsync && !r.fdatasync_end {
        w.push(
            Phrase::text(
                "buffered writes ended with the data still dirty in the page cache: this \
                 measured memory, not the disk; use ",
            )
            .and_field("fdatasync_end")
            .then(" or ")
            .and_field("direct"),
        );
    }
    if !write && r.cached {
        w.push(
            Phrase::text("reads were served from the page cache (")
                .and_field("cached")
                .then("): this measured memory, not the disk"),
        );
    } else if !write && !r.direct {
        if let Some(f) = r.resident_before.filter(|f| *f > 0.05) {
            w.push(
                Phrase::text(format!(
                    "{:.0} % of the file was still in the page cache when reading started \
                     (posix_fadvise DONTNEED did not drop it): part of this measured memory; \
                     try ",
                    f * 100.0
                ))
                .and_field("direct"),
            );
        }
    }
    if r.pattern == Pattern::Zero {
        w.push(
            Phrase::text(
                "all-zero data: compressing or deduplicating file systems and devices \
                 (btrfs/ZFS compression, VDO, some SSDs) store far less than was written; use ",
            )
            .and_setting("pattern", "random"),
        );
    }
    w.extend(device_warnings(r).into_iter().map(Phrase::text));
    w
}

/// The warnings about the device behind the path: none, or one whose figures do not
/// match the run's.
fn device_warnings(r: &DiskReport) -> Vec<String> {
    let mut w = Vec::new();
    let write = r.mode.is_write();
    let has_device = r.device.is_some();
    if !has_device {
        w.push(format!(
            "no block device behind {} ({}): no iostat figures; the data may never reach a disk",
            r.path,
            r.file_system.as_deref().unwrap_or("unknown file system")
        ));
    }
    if let Some(x) = &r.iostat {
        let moved = if write { x.written_bytes } else { x.read_bytes };
        let synced = !write || r.direct || r.dsync || r.fdatasync_end;
        let from_cache = !write && r.cached;
        if synced && !from_cache && r.bytes >= 1 << 20 {
            let ratio = moved as f64 / r.bytes as f64;
            if ratio > 1.5 {
                w.push(format!(
                    "the device {} {:.1}× the bytes this run did: other I/O on the device, readahead or write amplification is mixed into its figures",
                    if write { "wrote" } else { "read" },
                    ratio
                ));
            } else if ratio < 0.5 {
                w.push(format!(
                    "the device {} only {:.0} % of the bytes this run did: a cache, compression or deduplication sits between this run and the disk",
                    if write { "wrote" } else { "read" },
                    ratio * 100.0
                ));
            }
        }
    }
    w
}
