//! `disk`: /proc/diskstats and the `iostat -x` figures, computed as sysstat computes them.
//!
//! /proc/diskstats has grown over the years: 14 fields per line (major, minor, name and 11
//! counters) up to Linux 4.17, 18 from 4.18 (discard counters), 20 from 5.5 (flush
//! counters). Very old kernels printed 7 fields for partitions (4 counters); those lines
//! are read with the counters they have. Everything absent reads as 0.
//!
//! The formulas are those of sysstat's `iostat.c` (`write_ext_stat`) and `common.c`
//! (`compute_ext_disk_stats`), with the interval in seconds from a monotonic clock
//! instead of sysstat's 1/100 s uptime ticks (so the figures are the same, minus
//! sysstat's rounding of the interval):
//!
//! | figure | formula (Δ = current − previous) |
//! |---|---|
//! | r/s, w/s | Δrd_ios / t, Δwr_ios / t |
//! | rkB/s, wkB/s | Δrd_sectors / 2 / t, Δwr_sectors / 2 / t |
//! | rrqm/s, wrqm/s | Δrd_merges / t, Δwr_merges / t |
//! | r_await, w_await (ms) | Δrd_ticks / Δrd_ios, Δwr_ticks / Δwr_ios (0 without I/O) |
//! | await (ms) | (Δrd_ticks + Δwr_ticks + Δdc_ticks) / (Δrd_ios + Δwr_ios + Δdc_ios) |
//! | areq-sz (kB) | (Δrd_sectors + Δwr_sectors + Δdc_sectors) / (Δrd_ios + Δwr_ios + Δdc_ios) / 2 |
//! | aqu-sz | Δtime_in_queue (ms) / (t × 1000) |
//! | %util | Δio_ticks (ms) / (t × 1000) × 100 |
//!
//! Flushes are not in `await` or `areq-sz` (sysstat counts only discards beside reads
//! and writes there); they have their own `f/s` and `f_await`. A device whose counters
//! all went down was removed and added again: like iostat, its previous values are taken
//! as zero.
//!
//! By default the sampler keeps whole devices and drops partitions (a name that is
//! another listed device's name plus a number, e.g. `sda1`, `nvme0n1p2`, `mmcblk0p1`)
//! and RAM-backed or file-backed devices (`ram*`, `loop*`); [`DiskFilter`] changes that.

use serde::Serialize;

use crate::counter::{delta, pct};
use crate::error::{num, ParseError};

const DISKSTATS: &str = "/proc/diskstats";

/// One line of /proc/diskstats.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiskStats {
    pub major: u32,
    pub minor: u32,
    pub name: String,
    pub rd_ios: u64,
    pub rd_merges: u64,
    pub rd_sectors: u64,
    pub rd_ticks: u64,
    pub wr_ios: u64,
    pub wr_merges: u64,
    pub wr_sectors: u64,
    pub wr_ticks: u64,
    pub ios_in_progress: u64,
    /// Milliseconds the device had I/O in flight (`%util`).
    pub io_ticks: u64,
    /// Weighted milliseconds: Σ in-flight × time (`aqu-sz`).
    pub time_in_queue: u64,
    pub dc_ios: u64,
    pub dc_merges: u64,
    pub dc_sectors: u64,
    pub dc_ticks: u64,
    pub fl_ios: u64,
    pub fl_ticks: u64,
    /// How many fields the kernel printed on this line: 7, 14, 18 or 20.
    pub fields: usize,
}

impl DiskStats {
    fn total_ios(&self) -> u64 {
        self.rd_ios + self.wr_ios + self.dc_ios + self.fl_ios
    }
}

/// Parses /proc/diskstats (all lines: partitions and virtual devices included).
pub fn parse_diskstats(text: &str) -> Result<Vec<DiskStats>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        if f.len() != 7 && f.len() < 14 {
            return Err(ParseError::new(
                DISKSTATS,
                Some(n),
                format!("expected 7, 14, 18 or 20 fields, found {}", f.len()),
            ));
        }
        let v = |k: usize| -> Result<u64, ParseError> {
            match f.get(k) {
                Some(s) => num(DISKSTATS, n, s),
                None => Ok(0),
            }
        };
        let mut d = DiskStats {
            major: v(0)? as u32,
            minor: v(1)? as u32,
            name: f[2].to_string(),
            fields: f.len(),
            ..Default::default()
        };
        if f.len() == 7 {
            // Partition line of kernels before 2.6.25: reads, sectors read, writes,
            // sectors written.
            d.rd_ios = v(3)?;
            d.rd_sectors = v(4)?;
            d.wr_ios = v(5)?;
            d.wr_sectors = v(6)?;
        } else {
            d.rd_ios = v(3)?;
            d.rd_merges = v(4)?;
            d.rd_sectors = v(5)?;
            d.rd_ticks = v(6)?;
            d.wr_ios = v(7)?;
            d.wr_merges = v(8)?;
            d.wr_sectors = v(9)?;
            d.wr_ticks = v(10)?;
            d.ios_in_progress = v(11)?;
            d.io_ticks = v(12)?;
            d.time_in_queue = v(13)?;
            d.dc_ios = v(14)?;
            d.dc_merges = v(15)?;
            d.dc_sectors = v(16)?;
            d.dc_ticks = v(17)?;
            d.fl_ios = v(18)?;
            d.fl_ticks = v(19)?;
        }
        out.push(d);
    }
    Ok(out)
}

/// Which devices the `disk` probe reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiskFilter {
    /// Also report partitions (`sda1`).
    pub partitions: bool,
    /// Also report RAM disks and loop devices (`ram0`, `loop3`).
    pub virtual_devices: bool,
    /// When not empty: only these device names (the other two flags are then ignored).
    pub only: Vec<String>,
}

impl DiskFilter {
    /// The devices of `all` this filter keeps, in /proc/diskstats order.
    pub fn select<'a>(&self, all: &'a [DiskStats]) -> Vec<&'a DiskStats> {
        all.iter()
            .filter(|d| {
                if !self.only.is_empty() {
                    return self.only.iter().any(|o| o == &d.name);
                }
                (self.virtual_devices || !is_virtual(&d.name))
                    && (self.partitions || !is_partition(&d.name, all))
            })
            .collect()
    }
}

/// RAM disks and loop devices: their I/O is memory traffic, not disk traffic.
pub fn is_virtual(name: &str) -> bool {
    let numbered = |p: &str| {
        name.strip_prefix(p)
            .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
    };
    numbered("ram") || numbered("loop")
}

/// A partition: its name is another listed device's name followed by a number, with a
/// `p` between them when the parent's name ends in a digit (`nvme0n1p1`, `mmcblk0p2`).
pub fn is_partition(name: &str, all: &[DiskStats]) -> bool {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if stem.len() == name.len() || stem.is_empty() {
        return false;
    }
    let listed = |p: &str| p != name && all.iter().any(|d| d.name == p);
    if listed(stem) {
        return true;
    }
    match stem.strip_suffix('p') {
        Some(parent) if parent.ends_with(|c: char| c.is_ascii_digit()) => listed(parent),
        _ => false,
    }
}

/// The `iostat -x` figures of one device over one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DiskRates {
    pub r_s: f64,
    pub w_s: f64,
    pub d_s: f64,
    pub f_s: f64,
    pub rkb_s: f64,
    pub wkb_s: f64,
    pub dkb_s: f64,
    pub rrqm_s: f64,
    pub wrqm_s: f64,
    /// Share of read requests merged before reaching the device, %.
    pub rrqm_pct: f64,
    pub wrqm_pct: f64,
    /// Average request size, kB.
    pub areq_sz: f64,
    pub rareq_sz: f64,
    pub wareq_sz: f64,
    /// Average queue length (requests in flight, time-weighted).
    pub aqu_sz: f64,
    /// Average time per request, ms (queue + service).
    pub r#await: f64,
    pub r_await: f64,
    pub w_await: f64,
    pub d_await: f64,
    pub f_await: f64,
    /// Share of the interval the device had I/O in flight, %.
    pub util: f64,
}

/// `iostat -x` figures of a device between two reads `secs` seconds apart.
pub fn iostat(prev: &DiskStats, cur: &DiskStats, secs: f64) -> DiskRates {
    // iostat: a device whose counters all went down was removed and inserted again.
    let zero = DiskStats::default();
    let removed = cur.total_ios() < prev.total_ios()
        && (prev.rd_sectors == 0 || cur.rd_sectors < prev.rd_sectors)
        && (prev.wr_sectors == 0 || cur.wr_sectors < prev.wr_sectors)
        && (prev.dc_sectors == 0 || cur.dc_sectors < prev.dc_sectors);
    let p = if removed { &zero } else { prev };
    let d = |f: fn(&DiskStats) -> u64| delta(f(p), f(cur)) as f64;
    let per_s = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };

    let (rd_ios, wr_ios, dc_ios, fl_ios) = (
        d(|s| s.rd_ios),
        d(|s| s.wr_ios),
        d(|s| s.dc_ios),
        d(|s| s.fl_ios),
    );
    let (rd_sec, wr_sec, dc_sec) = (
        d(|s| s.rd_sectors),
        d(|s| s.wr_sectors),
        d(|s| s.dc_sectors),
    );
    let (rd_ticks, wr_ticks, dc_ticks, fl_ticks) = (
        d(|s| s.rd_ticks),
        d(|s| s.wr_ticks),
        d(|s| s.dc_ticks),
        d(|s| s.fl_ticks),
    );
    let (rd_merges, wr_merges) = (d(|s| s.rd_merges), d(|s| s.wr_merges));
    let nr_ios = rd_ios + wr_ios + dc_ios;
    DiskRates {
        r_s: per_s(rd_ios),
        w_s: per_s(wr_ios),
        d_s: per_s(dc_ios),
        f_s: per_s(fl_ios),
        rkb_s: per_s(rd_sec) / 2.0,
        wkb_s: per_s(wr_sec) / 2.0,
        dkb_s: per_s(dc_sec) / 2.0,
        rrqm_s: per_s(rd_merges),
        wrqm_s: per_s(wr_merges),
        rrqm_pct: pct(rd_merges, rd_merges + rd_ios),
        wrqm_pct: pct(wr_merges, wr_merges + wr_ios),
        areq_sz: ratio(rd_sec + wr_sec + dc_sec, nr_ios) / 2.0,
        rareq_sz: ratio(rd_sec, rd_ios) / 2.0,
        wareq_sz: ratio(wr_sec, wr_ios) / 2.0,
        aqu_sz: per_s(d(|s| s.time_in_queue)) / 1000.0,
        r#await: ratio(rd_ticks + wr_ticks + dc_ticks, nr_ios),
        r_await: ratio(rd_ticks, rd_ios),
        w_await: ratio(wr_ticks, wr_ios),
        d_await: ratio(dc_ticks, dc_ios),
        f_await: ratio(fl_ticks, fl_ios),
        util: per_s(d(|s| s.io_ticks)) / 1000.0 * 100.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(name: &str) -> DiskStats {
        DiskStats {
            name: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn partitions_and_virtual_devices() {
        let all: Vec<DiskStats> = [
            "sda",
            "sda1",
            "nvme0n1",
            "nvme0n1p1",
            "mmcblk0",
            "mmcblk0p2",
            "md0",
            "dm-0",
            "loop0",
            "ram1",
            "zram0",
            "sr0",
            "vdb",
        ]
        .iter()
        .map(|n| dev(n))
        .collect();
        let kept: Vec<&str> = DiskFilter::default()
            .select(&all)
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(
            kept,
            ["sda", "nvme0n1", "mmcblk0", "md0", "dm-0", "zram0", "sr0", "vdb"]
        );
        let everything = DiskFilter {
            partitions: true,
            virtual_devices: true,
            only: vec![],
        };
        assert_eq!(everything.select(&all).len(), all.len());
        let only = DiskFilter {
            only: vec!["sda1".into()],
            ..Default::default()
        };
        assert_eq!(only.select(&all)[0].name, "sda1");
        // A number-ending name is a partition only when its parent is listed.
        assert!(!is_partition("nvme0n1", &all));
        assert!(!is_partition("md0", &all));
    }

    #[test]
    fn bad_lines() {
        let e = parse_diskstats("   8 0 sda 1 2 3\n").unwrap_err();
        assert!(e.to_string().contains("found 6"), "{e}");
        assert!(parse_diskstats("8 0 sda 1 2 3 4 5 6 7 8 9 10 x\n").is_err());
    }

    #[test]
    fn removed_and_reinserted_device_counts_from_zero() {
        let prev = DiskStats {
            wr_ios: 1000,
            wr_sectors: 8000,
            ..dev("sdb")
        };
        let cur = DiskStats {
            wr_ios: 10,
            wr_sectors: 80,
            ..dev("sdb")
        };
        let r = iostat(&prev, &cur, 1.0);
        assert_eq!(r.w_s, 10.0);
        assert_eq!(r.wkb_s, 40.0);
    }
}
