//! The human report of a disk run: what ran, the rates (MB/s = 10^6 bytes/s, IOPS),
//! the latency percentiles (µs), the device's iostat block and the warnings. Columns
//! are aligned; units always printed.

use std::fmt::Write;

use super::iostat::Iostat;
use super::report::DiskReport;
use super::spec::ByteSize;

/// Renders `r` as aligned text, ending with a newline.
pub fn render(r: &DiskReport) -> String {
    let mut s = String::new();
    job(&mut s, r);
    match (&r.device, &r.iostat) {
        (Some(d), Some(x)) => device(&mut s, d, x),
        _ => {
            let _ = writeln!(s, "device: none (no iostat figures)");
        }
    }
    if let Some(p) = &r.problem {
        let _ = writeln!(s, "PARTIAL: {p}; the figures cover what was done");
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The open flags in words (`buffered` when none).
fn flags(r: &DiskReport) -> Vec<&'static str> {
    let mut flags = Vec::new();
    if r.direct {
        flags.push("O_DIRECT");
    }
    if r.dsync {
        flags.push("O_DSYNC");
    }
    if r.fdatasync_end {
        flags.push("fdatasync at end");
    }
    if r.cached {
        flags.push("cached");
    }
    if flags.is_empty() {
        flags.push("buffered");
    }
    flags
}

/// What ran, where, and what it gave: rates, latency, page cache.
fn job(s: &mut String, r: &DiskReport) {
    let on = match (&r.file_system, &r.device, &r.partition) {
        (Some(fs), Some(d), Some(p)) => format!(" ({fs} on {p}, disk {d})"),
        (Some(fs), Some(d), None) => format!(" ({fs} on {d})"),
        (None, Some(d), _) => format!(" (disk {d})"),
        (Some(fs), None, _) => format!(" ({fs}, no block device)"),
        (None, None, _) => String::new(),
    };
    let _ = writeln!(s, "disk {} {}{on}", r.mode, r.path);
    let _ = writeln!(
        s,
        "  {:<11} {} × {} I/Os = {}, {}, pattern {}",
        "job",
        ByteSize(r.bs),
        r.ios_planned,
        mib(r.bs * r.ios_planned),
        flags(r).join(", "),
        r.pattern.as_str()
    );
    let _ = writeln!(s, "  {:<11} iodepth {}: {}", "issued", r.iodepth, r.method);
    let _ = writeln!(
        s,
        "  {:<11} {:>10.1} MB/s  {:>10.0} IOPS  in {:.3} s",
        "throughput", r.mb_s, r.iops, r.seconds
    );
    let l = &r.latency_us;
    let _ = writeln!(
        s,
        "  {:<11} p50 {} µs  p99 {} µs  max {} µs  mean {} µs",
        "latency",
        us(l.p50),
        us(l.p99),
        us(l.max),
        us(l.mean)
    );
    if let Some(f) = r.resident_before {
        let _ = writeln!(
            s,
            "  {:<11} {:.0} % of the file cached when reading started",
            "page cache",
            f * 100.0
        );
    }
}

/// The device's iostat -x block over the run.
fn device(s: &mut String, d: &str, x: &Iostat) {
    let _ = writeln!(
        s,
        "device {d} (iostat -x over the run, {:.3} s)",
        x.interval_s
    );
    let head = [
        "r/s", "rkB/s", "rrqm/s", "w/s", "wkB/s", "wrqm/s", "aqu-sz", "await", "%util",
    ];
    let vals = [
        x.r_s, x.rkb_s, x.rrqm_s, x.w_s, x.wkb_s, x.wrqm_s, x.aqu_sz, x.await_ms, x.util,
    ];
    let cells: Vec<String> = vals.iter().map(|v| format!("{v:.2}")).collect();
    let widths: Vec<usize> = head
        .iter()
        .zip(&cells)
        .map(|(h, c)| h.len().max(c.len()))
        .collect();
    let line = |items: &[String]| {
        items
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    let head: Vec<String> = head.iter().map(|h| h.to_string()).collect();
    let _ = writeln!(s, "  {}", line(&head));
    let _ = writeln!(s, "  {}", line(&cells));
    let _ = writeln!(
        s,
        "  (await in ms, kB = 1024 bytes; device totals: {} read, {} written)",
        mib(x.read_bytes),
        mib(x.written_bytes)
    );
}

fn mib(b: u64) -> String {
    let m = b as f64 / (1u64 << 20) as f64;
    if m >= 1.0 {
        format!("{m:.1} MiB")
    } else {
        format!("{:.1} KiB", b as f64 / 1024.0)
    }
}

fn us(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}
