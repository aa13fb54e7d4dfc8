//! `memory`: /proc/meminfo (levels) and /proc/vmstat (paging and swapping rates).
//!
//! Both files are `name value` lists; fields are looked up by name, so a kernel that adds,
//! drops or reorders lines changes nothing here. /proc/vmstat's `pgpgin`/`pgpgout` are
//! already in kB (the kernel halves its sector counts when printing), `pswpin`/`pswpout`
//! are pages, as vmstat's `bi`/`bo` and `si`/`so` read them.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::counter::rate;
use crate::error::{num, ParseError};

const MEMINFO: &str = "/proc/meminfo";
const VMSTAT: &str = "/proc/vmstat";

/// The /proc/meminfo lines perflab records, in kB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct MemInfo {
    pub total_kb: u64,
    pub free_kb: u64,
    /// Absent before 3.14: then `None`.
    pub available_kb: Option<u64>,
    pub buffers_kb: u64,
    pub cached_kb: u64,
    pub dirty_kb: u64,
    pub writeback_kb: u64,
    pub swap_total_kb: u64,
    pub swap_free_kb: u64,
}

/// Parses /proc/meminfo (`Name:   123 kB` lines).
pub fn parse_meminfo(text: &str) -> Result<MemInfo, ParseError> {
    let mut m = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let Some(v) = rest.split_ascii_whitespace().next() else {
            continue;
        };
        m.insert(name.trim(), num(MEMINFO, i + 1, v)?);
    }
    let need = |k: &str| {
        m.get(k)
            .copied()
            .ok_or_else(|| ParseError::new(MEMINFO, None, format!("no `{k}` line")))
    };
    Ok(MemInfo {
        total_kb: need("MemTotal")?,
        free_kb: need("MemFree")?,
        available_kb: m.get("MemAvailable").copied(),
        buffers_kb: m.get("Buffers").copied().unwrap_or(0),
        cached_kb: need("Cached")?,
        dirty_kb: m.get("Dirty").copied().unwrap_or(0),
        writeback_kb: m.get("Writeback").copied().unwrap_or(0),
        swap_total_kb: m.get("SwapTotal").copied().unwrap_or(0),
        swap_free_kb: m.get("SwapFree").copied().unwrap_or(0),
    })
}

/// The /proc/vmstat counters perflab turns into rates.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct VmCounters {
    pub pgpgin_kb: u64,
    pub pgpgout_kb: u64,
    pub pswpin: u64,
    pub pswpout: u64,
}

/// Parses /proc/vmstat (`name value` lines).
pub fn parse_vmstat(text: &str) -> Result<VmCounters, ParseError> {
    let mut c = VmCounters::default();
    let mut seen = 0;
    for (i, line) in text.lines().enumerate() {
        let mut it = line.split_ascii_whitespace();
        let (Some(k), Some(v)) = (it.next(), it.next()) else {
            continue;
        };
        let slot = match k {
            "pgpgin" => &mut c.pgpgin_kb,
            "pgpgout" => &mut c.pgpgout_kb,
            "pswpin" => &mut c.pswpin,
            "pswpout" => &mut c.pswpout,
            _ => continue,
        };
        *slot = num(VMSTAT, i + 1, v)?;
        seen += 1;
    }
    if seen == 0 {
        return Err(ParseError::new(
            VMSTAT,
            None,
            "none of pgpgin, pgpgout, pswpin, pswpout",
        ));
    }
    Ok(c)
}

/// The `memory` figures of one interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct MemoryRates {
    pub free_kb: f64,
    pub available_kb: f64,
    pub cached_kb: f64,
    pub buffers_kb: f64,
    pub dirty_kb: f64,
    pub writeback_kb: f64,
    pub swap_used_kb: f64,
    pub swap_in_pages_per_s: f64,
    pub swap_out_pages_per_s: f64,
    pub page_in_kb_per_s: f64,
    pub page_out_kb_per_s: f64,
}

/// Levels from the later /proc/meminfo, rates from two reads of /proc/vmstat.
pub fn memory_rates(
    info: &MemInfo,
    prev: Option<&VmCounters>,
    cur: Option<&VmCounters>,
    secs: f64,
) -> MemoryRates {
    let (p, c) = match (prev, cur) {
        (Some(p), Some(c)) => (*p, *c),
        _ => (VmCounters::default(), VmCounters::default()),
    };
    MemoryRates {
        free_kb: info.free_kb as f64,
        available_kb: info.available_kb.unwrap_or(info.free_kb) as f64,
        cached_kb: info.cached_kb as f64,
        buffers_kb: info.buffers_kb as f64,
        dirty_kb: info.dirty_kb as f64,
        writeback_kb: info.writeback_kb as f64,
        swap_used_kb: info.swap_total_kb.saturating_sub(info.swap_free_kb) as f64,
        swap_in_pages_per_s: rate(p.pswpin, c.pswpin, secs),
        swap_out_pages_per_s: rate(p.pswpout, c.pswpout, secs),
        page_in_kb_per_s: rate(p.pgpgin_kb, c.pgpgin_kb, secs),
        page_out_kb_per_s: rate(p.pgpgout_kb, c.pgpgout_kb, secs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_by_name_in_any_order() {
        let m = parse_meminfo(
            "Cached: 30 kB\nMemFree: 20 kB\nMemTotal: 100 kB\nDirty: 5 kB\nSwapTotal: 10 kB\nSwapFree: 4 kB\n",
        )
        .unwrap();
        assert_eq!(
            (m.total_kb, m.free_kb, m.cached_kb, m.dirty_kb),
            (100, 20, 30, 5)
        );
        assert_eq!(m.available_kb, None);
        let r = memory_rates(&m, None, None, 1.0);
        assert_eq!(r.available_kb, 20.0);
        assert_eq!(r.swap_used_kb, 6.0);
        assert!(parse_meminfo("MemFree: 1 kB\n").is_err());
    }

    #[test]
    fn vmstat_rates() {
        let a = parse_vmstat("pgpgin 100\npgpgout 200\npswpin 0\npswpout 4\n").unwrap();
        let b = parse_vmstat("pswpout 10\npgpgin 300\npgpgout 200\npswpin 0\n").unwrap();
        let m = MemInfo::default();
        let r = memory_rates(&m, Some(&a), Some(&b), 2.0);
        assert_eq!(r.page_in_kb_per_s, 100.0);
        assert_eq!(r.swap_out_pages_per_s, 3.0);
        assert!(parse_vmstat("nr_free_pages 1\n").is_err());
    }
}
