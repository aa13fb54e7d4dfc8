//! The `iostat -x` figures of one device over an interval, computed as sysstat does
//! from two reads of `/proc/diskstats`.
//!
//! The counters are read by telemetry's `/proc/diskstats` parser and the rates computed
//! by its `iostat` (no sampler: the disk workload reads one device twice). Formulas are
//! those of sysstat's `compute_ext_disk_stats` (iostat.c / common.c): rates are deltas
//! over the interval, sectors are 512 bytes whatever the device's block size, `await`
//! is (read + write + discard ticks) / (read + write + discard I/Os), `aqu-sz` is the
//! delta of the weighted time in queue over the interval, `%util` the delta of the time
//! the device was busy over the interval (capped at 100, as iostat prints it).

use serde::{Deserialize, Serialize};

/// One line of `/proc/diskstats`, read by telemetry's parser (the one in perflab).
pub use perflab_telemetry::disk::DiskStats;

/// Finds `device` in the text of `/proc/diskstats`.
pub fn parse_line(text: &str, device: &str) -> Option<DiskStats> {
    perflab_telemetry::disk::parse_diskstats(text)
        .ok()?
        .into_iter()
        .find(|d| d.name == device)
}

/// Reads `device`'s counters now (`None` when the device or the file is missing).
pub fn read(device: &str) -> Option<DiskStats> {
    let text = std::fs::read_to_string("/proc/diskstats").ok()?;
    parse_line(&text, device)
}

/// `iostat -x` figures of one device over one interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Iostat {
    /// Completed reads per second.
    pub r_s: f64,
    /// kB (1024 bytes, as iostat) read per second.
    pub rkb_s: f64,
    /// Read requests merged per second.
    pub rrqm_s: f64,
    /// Completed writes per second.
    pub w_s: f64,
    /// kB (1024 bytes) written per second.
    pub wkb_s: f64,
    /// Write requests merged per second.
    pub wrqm_s: f64,
    /// Average queue length (`aqu-sz`).
    pub aqu_sz: f64,
    /// Mean time of an I/O, queue included, ms.
    #[serde(rename = "await")]
    pub await_ms: f64,
    pub r_await: f64,
    pub w_await: f64,
    /// Mean request size, kB.
    pub areq_sz: f64,
    /// Busy time over the interval, percent.
    pub util: f64,
    /// Counts over the interval (not rates): what the tests compare with what was done.
    pub reads: u64,
    pub writes: u64,
    pub read_bytes: u64,
    pub written_bytes: u64,
    /// Length of the interval, s.
    pub interval_s: f64,
}

/// The figures between two snapshots `seconds` apart: telemetry's `iostat -x`
/// rates (sysstat's formulas, in one place), with this interval's counts beside them.
pub fn delta(before: &DiskStats, after: &DiskStats, seconds: f64) -> Iostat {
    let r = perflab_telemetry::disk::iostat(before, after, seconds);
    Iostat {
        r_s: r.r_s,
        rkb_s: r.rkb_s,
        rrqm_s: r.rrqm_s,
        w_s: r.w_s,
        wkb_s: r.wkb_s,
        wrqm_s: r.wrqm_s,
        aqu_sz: r.aqu_sz,
        await_ms: r.r#await,
        r_await: r.r_await,
        w_await: r.w_await,
        areq_sz: r.areq_sz,
        util: r.util.min(100.0),
        reads: after.rd_ios.saturating_sub(before.rd_ios),
        writes: after.wr_ios.saturating_sub(before.wr_ios),
        read_bytes: after.rd_sectors.saturating_sub(before.rd_sectors) * 512,
        written_bytes: after.wr_sectors.saturating_sub(before.wr_sectors) * 512,
        interval_s: seconds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Linux 6.x (20 fields) and 4.4 (14 fields, no discard/flush counters).
    const NEW: &str = " 254       0 vda 316621 12330 15100258 588666 33774 76520 29841536 185395 0 32232 778618 13476 37 4858400 4246 1851 310\n 254       1 vda1 10 0 80 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n";
    const OLD: &str = "   8       0 sda 1000 10 8000 500 2000 300 64000 4000 0 3000 4500\n";

    #[test]
    fn both_layouts_parse() {
        let s = parse_line(NEW, "vda").unwrap();
        assert_eq!(
            (s.rd_ios, s.wr_sectors, s.time_in_queue),
            (316621, 29841536, 778618)
        );
        assert_eq!((s.dc_ios, s.dc_ticks), (13476, 4246));
        assert_eq!(parse_line(NEW, "vda1").unwrap().rd_ios, 10);
        let o = parse_line(OLD, "sda").unwrap();
        assert_eq!((o.wr_ios, o.io_ticks, o.dc_ios), (2000, 3000, 0));
        assert!(parse_line(NEW, "sdb").is_none());
    }

    #[test]
    fn deltas_follow_sysstat() {
        // Over 2 s: 200 writes of 64 KiB (25600 sectors), 50 merged, 400 ms of write
        // ticks, busy 1500 ms, 3000 ms weighted in queue.
        let a = DiskStats::default();
        let b = DiskStats {
            wr_ios: 200,
            wr_merges: 50,
            wr_sectors: 25600,
            wr_ticks: 400,
            io_ticks: 1500,
            time_in_queue: 3000,
            ..a.clone()
        };
        let x = delta(&a, &b, 2.0);
        assert_eq!(x.w_s, 100.0);
        assert_eq!(x.wkb_s, 6400.0);
        assert_eq!(x.wrqm_s, 25.0);
        assert_eq!(x.await_ms, 2.0);
        assert_eq!(x.w_await, 2.0);
        assert_eq!(x.areq_sz, 64.0);
        assert_eq!(x.aqu_sz, 1.5);
        assert_eq!(x.util, 75.0);
        assert_eq!(x.written_bytes, 25600 * 512);
        assert_eq!((x.r_s, x.r_await), (0.0, 0.0));
    }
}
