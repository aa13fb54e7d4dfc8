//! The `iostat -x` figures of one device over an interval, computed as sysstat does
//! from two reads of `/proc/diskstats`.
//!
//! Deliberately small and local: the disk workload only needs one device's deltas over
//! one interval, and it must not wait for the telemetry crate's samplers. Formulas are
//! those of sysstat's `compute_ext_disk_stats` (iostat.c / common.c): rates are deltas
//! over the interval, sectors are 512 bytes whatever the device's block size, `await`
//! is (read + write + discard ticks) / (read + write + discard I/Os), `aqu-sz` is the
//! delta of the weighted time in queue over the interval, `%util` the delta of the time
//! the device was busy over the interval (capped at 100, as iostat prints it).

use serde::Serialize;

/// One line of `/proc/diskstats`. Discard and flush counters exist from Linux 4.18 and
/// 5.5; older kernels leave them at zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskStats {
    pub rd_ios: u64,
    pub rd_merges: u64,
    pub rd_sectors: u64,
    pub rd_ticks: u64,
    pub wr_ios: u64,
    pub wr_merges: u64,
    pub wr_sectors: u64,
    pub wr_ticks: u64,
    pub in_flight: u64,
    pub io_ticks: u64,
    pub time_in_queue: u64,
    pub dc_ios: u64,
    pub dc_merges: u64,
    pub dc_sectors: u64,
    pub dc_ticks: u64,
}

/// Finds `device` in the text of `/proc/diskstats`.
pub fn parse_line(text: &str, device: &str) -> Option<DiskStats> {
    text.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 14 || f[2] != device {
            return None;
        }
        let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        Some(DiskStats {
            rd_ios: n(3),
            rd_merges: n(4),
            rd_sectors: n(5),
            rd_ticks: n(6),
            wr_ios: n(7),
            wr_merges: n(8),
            wr_sectors: n(9),
            wr_ticks: n(10),
            in_flight: n(11),
            io_ticks: n(12),
            time_in_queue: n(13),
            dc_ios: n(14),
            dc_merges: n(15),
            dc_sectors: n(16),
            dc_ticks: n(17),
        })
    })
}

/// Reads `device`'s counters now (`None` when the device or the file is missing).
pub fn read(device: &str) -> Option<DiskStats> {
    let text = std::fs::read_to_string("/proc/diskstats").ok()?;
    parse_line(&text, device)
}

/// `iostat -x` figures of one device over one interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
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

/// The figures between two snapshots `seconds` apart (counter wraps read as zero).
pub fn delta(before: &DiskStats, after: &DiskStats, seconds: f64) -> Iostat {
    let d = |a: u64, b: u64| b.saturating_sub(a) as f64;
    let itv = if seconds > 0.0 { seconds } else { f64::NAN };
    let rd = d(before.rd_ios, after.rd_ios);
    let wr = d(before.wr_ios, after.wr_ios);
    let dc = d(before.dc_ios, after.dc_ios);
    let ios = rd + wr + dc;
    let ratio = |num: f64, den: f64| if den > 0.0 { num / den } else { 0.0 };
    let rd_ticks = d(before.rd_ticks, after.rd_ticks);
    let wr_ticks = d(before.wr_ticks, after.wr_ticks);
    let dc_ticks = d(before.dc_ticks, after.dc_ticks);
    let sectors = d(before.rd_sectors, after.rd_sectors)
        + d(before.wr_sectors, after.wr_sectors)
        + d(before.dc_sectors, after.dc_sectors);
    Iostat {
        r_s: rd / itv,
        rkb_s: d(before.rd_sectors, after.rd_sectors) / 2.0 / itv,
        rrqm_s: d(before.rd_merges, after.rd_merges) / itv,
        w_s: wr / itv,
        wkb_s: d(before.wr_sectors, after.wr_sectors) / 2.0 / itv,
        wrqm_s: d(before.wr_merges, after.wr_merges) / itv,
        aqu_sz: d(before.time_in_queue, after.time_in_queue) / 1000.0 / itv,
        await_ms: ratio(rd_ticks + wr_ticks + dc_ticks, ios),
        r_await: ratio(rd_ticks, rd),
        w_await: ratio(wr_ticks, wr),
        areq_sz: ratio(sectors / 2.0, ios),
        util: (d(before.io_ticks, after.io_ticks) / 10.0 / itv).min(100.0),
        reads: rd as u64,
        writes: wr as u64,
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
            ..a
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
