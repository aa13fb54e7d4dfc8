//! `net`: /proc/net/snmp, /proc/net/netstat, /proc/net/softnet_stat and /proc/net/dev.
//!
//! /proc/net/snmp and /proc/net/netstat come in pairs of lines, a header of names and a
//! line of values with the same `Prefix:`. Counters are looked up by `Prefix.Name`
//! (`Tcp.RetransSegs`, `TcpExt.ListenOverflows`), never by position: every kernel release
//! adds fields, and not always at the end. A counter the running kernel does not have is
//! simply absent from the figures (its series is not recorded), not 0.
//!
//! /proc/net/softnet_stat has one line of hexadecimal columns per CPU; the first three
//! (packets processed, dropped because the backlog was full, times net_rx_action ran out
//! of budget or time: `time_squeeze`) have been there since 2.6 and are summed over CPUs.
//! /proc/net/dev is one line per interface, 8 receive then 8 transmit columns.
//!
//! The retransmit percentage is ΔRetransSegs / ΔOutSegs × 100, the figure sar and nstat
//! users quote. All these files are per network namespace: the sampler reads the
//! namespace it runs in.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::counter::{delta, pct, rate};
use crate::error::ParseError;

/// Counters of /proc/net/snmp or /proc/net/netstat by `Prefix.Name`. Negative values
/// (only `Tcp.MaxConn`, which is -1) are left out.
pub fn parse_snmp(file: &str, text: &str) -> Result<BTreeMap<String, u64>, ParseError> {
    let mut out = BTreeMap::new();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut i = 0;
    while i < lines.len() {
        let (Some((p1, names)), Some((p2, values))) = (
            lines[i].split_once(':'),
            lines.get(i + 1).and_then(|l| l.split_once(':')),
        ) else {
            return Err(ParseError::new(
                file,
                Some(i + 1),
                "expected a `Prefix: names` line followed by `Prefix: values`",
            ));
        };
        if p1 != p2 {
            return Err(ParseError::new(
                file,
                Some(i + 2),
                format!("values line `{p2}:` does not follow its header `{p1}:`"),
            ));
        }
        let names: Vec<&str> = names.split_ascii_whitespace().collect();
        let values: Vec<&str> = values.split_ascii_whitespace().collect();
        if names.len() != values.len() {
            return Err(ParseError::new(
                file,
                Some(i + 2),
                format!(
                    "`{p1}:` has {} names but {} values",
                    names.len(),
                    values.len()
                ),
            ));
        }
        for (n, v) in names.iter().zip(values) {
            match v.parse::<i64>() {
                Ok(x) if x < 0 => {}
                _ => {
                    let x = v.parse::<u64>().map_err(|_| {
                        ParseError::new(file, Some(i + 2), format!("`{p1}.{n}`: bad value `{v}`"))
                    })?;
                    out.insert(format!("{p1}.{n}"), x);
                }
            }
        }
        i += 2;
    }
    Ok(out)
}

/// /proc/net/softnet_stat summed over CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Softnet {
    pub processed: u64,
    pub dropped: u64,
    pub time_squeeze: u64,
}

/// Parses /proc/net/softnet_stat.
pub fn parse_softnet(text: &str) -> Result<Softnet, ParseError> {
    const F: &str = "/proc/net/softnet_stat";
    let mut s = Softnet::default();
    for (i, line) in text.lines().enumerate() {
        let cols: Vec<&str> = line.split_ascii_whitespace().collect();
        if cols.is_empty() {
            continue;
        }
        if cols.len() < 3 {
            return Err(ParseError::new(
                F,
                Some(i + 1),
                format!("expected at least 3 columns, found {}", cols.len()),
            ));
        }
        let hex = |c: &str| {
            u64::from_str_radix(c, 16)
                .map_err(|_| ParseError::new(F, Some(i + 1), format!("bad hex number `{c}`")))
        };
        s.processed += hex(cols[0])?;
        s.dropped += hex(cols[1])?;
        s.time_squeeze += hex(cols[2])?;
    }
    Ok(s)
}

/// One interface of /proc/net/dev.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IfaceCounters {
    pub name: String,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_errs: u64,
    pub rx_drop: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errs: u64,
    pub tx_drop: u64,
}

/// Parses /proc/net/dev (the two header lines are skipped; `eth0:123` without a space,
/// as old kernels print large counters, is read too).
pub fn parse_net_dev(text: &str) -> Result<Vec<IfaceCounters>, ParseError> {
    const F: &str = "/proc/net/dev";
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        if name.contains('|') {
            continue;
        }
        let v: Vec<u64> = rest
            .split_ascii_whitespace()
            .map(|s| {
                s.parse::<u64>()
                    .map_err(|_| ParseError::new(F, Some(i + 1), format!("bad number `{s}`")))
            })
            .collect::<Result<_, _>>()?;
        if v.len() < 16 {
            return Err(ParseError::new(
                F,
                Some(i + 1),
                format!("expected 16 counters, found {}", v.len()),
            ));
        }
        out.push(IfaceCounters {
            name: name.trim().to_string(),
            rx_bytes: v[0],
            rx_packets: v[1],
            rx_errs: v[2],
            rx_drop: v[3],
            tx_bytes: v[8],
            tx_packets: v[9],
            tx_errs: v[10],
            tx_drop: v[11],
        });
    }
    Ok(out)
}

/// Everything the `net` probe reads at one instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetCounters {
    /// /proc/net/snmp and /proc/net/netstat merged, by `Prefix.Name`.
    pub snmp: BTreeMap<String, u64>,
    pub softnet: Option<Softnet>,
    pub ifaces: Vec<IfaceCounters>,
}

/// The counters turned into per-second rates: (series suffix, `Prefix.Name`).
pub const RATES: [(&str, &str); 12] = [
    ("in_segs_per_s", "Tcp.InSegs"),
    ("out_segs_per_s", "Tcp.OutSegs"),
    ("retrans_segs_per_s", "Tcp.RetransSegs"),
    ("active_opens_per_s", "Tcp.ActiveOpens"),
    ("passive_opens_per_s", "Tcp.PassiveOpens"),
    ("estab_resets_per_s", "Tcp.EstabResets"),
    ("out_rsts_per_s", "Tcp.OutRsts"),
    ("listen_overflows_per_s", "TcpExt.ListenOverflows"),
    ("listen_drops_per_s", "TcpExt.ListenDrops"),
    ("backlog_drops_per_s", "TcpExt.TCPBacklogDrop"),
    ("reasm_fails_per_s", "Ip.ReasmFails"),
    ("udp_rcvbuf_errors_per_s", "Udp.RcvbufErrors"),
];

/// Rates of one interface.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IfaceRates {
    pub name: String,
    pub rx_bytes_per_s: f64,
    pub tx_bytes_per_s: f64,
    pub rx_packets_per_s: f64,
    pub tx_packets_per_s: f64,
    pub rx_drop_per_s: f64,
    pub tx_drop_per_s: f64,
}

/// The `net` figures of one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NetRates {
    /// Per-second rates by the names of [`RATES`]; a counter the kernel lacks is absent.
    pub rates: BTreeMap<String, f64>,
    /// Counts over the interval by the same `Prefix.Name` keys as [`RATES`].
    pub counts: BTreeMap<String, u64>,
    /// ΔRetransSegs / ΔOutSegs × 100 (0 when nothing was sent).
    pub retrans_pct: Option<f64>,
    pub softnet_dropped_per_s: Option<f64>,
    pub softnet_time_squeeze_per_s: Option<f64>,
    pub ifaces: Vec<IfaceRates>,
}

impl NetRates {
    /// A rate by its name in [`RATES`] (0 when the kernel lacks the counter).
    pub fn get(&self, name: &str) -> f64 {
        self.rates.get(name).copied().unwrap_or(0.0)
    }
}

/// Rates between two reads `secs` seconds apart.
pub fn net_rates(prev: &NetCounters, cur: &NetCounters, secs: f64) -> NetRates {
    let mut r = NetRates::default();
    for (name, key) in RATES {
        if let (Some(&a), Some(&b)) = (prev.snmp.get(key), cur.snmp.get(key)) {
            r.rates.insert(name.to_string(), rate(a, b, secs));
            r.counts.insert(key.to_string(), delta(a, b));
        }
    }
    if let (Some(&re), Some(&out)) = (r.counts.get("Tcp.RetransSegs"), r.counts.get("Tcp.OutSegs"))
    {
        r.retrans_pct = Some(pct(re as f64, out as f64));
    }
    if let (Some(a), Some(b)) = (prev.softnet, cur.softnet) {
        r.softnet_dropped_per_s = Some(rate(a.dropped, b.dropped, secs));
        r.softnet_time_squeeze_per_s = Some(rate(a.time_squeeze, b.time_squeeze, secs));
    }
    for c in &cur.ifaces {
        let Some(p) = prev.ifaces.iter().find(|p| p.name == c.name) else {
            continue;
        };
        r.ifaces.push(IfaceRates {
            name: c.name.clone(),
            rx_bytes_per_s: rate(p.rx_bytes, c.rx_bytes, secs),
            tx_bytes_per_s: rate(p.tx_bytes, c.tx_bytes, secs),
            rx_packets_per_s: rate(p.rx_packets, c.rx_packets, secs),
            tx_packets_per_s: rate(p.tx_packets, c.tx_packets, secs),
            rx_drop_per_s: rate(p.rx_drop, c.rx_drop, secs),
            tx_drop_per_s: rate(p.tx_drop, c.tx_drop, secs),
        });
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snmp_by_name_not_position() {
        let a = "Tcp: OutSegs RetransSegs MaxConn\nTcp: 100 1 -1\n";
        // A newer kernel with a field inserted in front and the order changed.
        let b = "Tcp: NewThing MaxConn RetransSegs OutSegs\nTcp: 7 -1 3 300\n";
        let p = parse_snmp("/proc/net/snmp", a).unwrap();
        let c = parse_snmp("/proc/net/snmp", b).unwrap();
        assert!(!p.contains_key("Tcp.MaxConn"));
        let pc = NetCounters {
            snmp: p,
            ..Default::default()
        };
        let cc = NetCounters {
            snmp: c,
            ..Default::default()
        };
        let r = net_rates(&pc, &cc, 2.0);
        assert_eq!(r.get("out_segs_per_s"), 100.0);
        assert_eq!(r.retrans_pct, Some(1.0));
        // Counters the kernel lacks are absent, not 0.
        assert!(!r.rates.contains_key("listen_overflows_per_s"));
    }

    #[test]
    fn malformed_snmp() {
        let e = parse_snmp("/proc/net/snmp", "Tcp: A B\nTcp: 1\n").unwrap_err();
        assert!(e.to_string().contains("2 names but 1 values"), "{e}");
        assert!(parse_snmp("/proc/net/snmp", "Tcp: A\nUdp: 1\n").is_err());
        assert!(parse_snmp("/proc/net/snmp", "Tcp: A\n").is_err());
        assert!(parse_snmp("/proc/net/snmp", "Tcp: A\nTcp: x\n").is_err());
    }

    #[test]
    fn net_dev_without_space_after_colon() {
        let t = "Inter-|   Receive\n face |bytes\n  eth0:123 4 0 0 0 0 0 0 567 8 0 0 0 0 0 0\n";
        let v = parse_net_dev(t).unwrap();
        assert_eq!(
            (v[0].name.as_str(), v[0].rx_bytes, v[0].tx_packets),
            ("eth0", 123, 8)
        );
        assert!(parse_net_dev("  eth0: 1 2 3\n").is_err());
    }
}
