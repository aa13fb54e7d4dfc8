//! `nfs`: RPC counters of the NFS client (/proc/net/rpc/nfs) and server
//! (/proc/net/rpc/nfsd, /proc/fs/nfsd/pool_stats).
//!
//! These files exist only while the nfs / nfsd modules are loaded (pool_stats only while
//! the nfsd filesystem is mounted). Absent files mean "not available" — the sampler
//! records nothing for them and says so once in the recording's notes — never an error.
//!
//! Client: the `rpc` line is `calls retrans authrefresh`; a retransmit share above a few
//! percent means the server or the network drops requests. Server: the `rpc` line is
//! `calls badcalls badfmt badauth badclnt`, the `th` line starts with the number of nfsd
//! threads. pool_stats has a `#` header naming its columns (`packets-arrived
//! sockets-enqueued threads-woken threads-timedout`, one line per pool); columns are read
//! by those names. Sockets enqueued relative to packets arrived is the share of requests
//! that found every nfsd thread busy.

use serde::Serialize;

use crate::counter::{pct, rate};
use crate::error::{num, ParseError};

/// /proc/net/rpc/nfs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NfsClient {
    pub calls: u64,
    pub retrans: u64,
    pub authrefresh: u64,
}

/// /proc/net/rpc/nfsd.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NfsServer {
    pub calls: u64,
    pub badcalls: u64,
    /// nfsd threads (first number of the `th` line), when printed.
    pub threads: Option<u64>,
}

/// /proc/fs/nfsd/pool_stats, summed over pools; a column the kernel does not print is
/// `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NfsPools {
    pub pools: u64,
    pub packets_arrived: Option<u64>,
    pub sockets_enqueued: Option<u64>,
    pub threads_woken: Option<u64>,
    pub threads_timedout: Option<u64>,
}

fn rpc_line<'a>(file: &str, text: &'a str) -> Result<(usize, Vec<&'a str>), ParseError> {
    text.lines()
        .enumerate()
        .find_map(|(i, l)| {
            let mut it = l.split_ascii_whitespace();
            (it.next() == Some("rpc")).then(|| (i + 1, it.collect()))
        })
        .ok_or_else(|| ParseError::new(file, None, "no `rpc` line"))
}

/// Parses /proc/net/rpc/nfs.
pub fn parse_rpc_nfs(text: &str) -> Result<NfsClient, ParseError> {
    const F: &str = "/proc/net/rpc/nfs";
    let (n, v) = rpc_line(F, text)?;
    if v.len() < 3 {
        return Err(ParseError::new(
            F,
            Some(n),
            "`rpc` needs calls, retrans, authrefresh",
        ));
    }
    Ok(NfsClient {
        calls: num(F, n, v[0])?,
        retrans: num(F, n, v[1])?,
        authrefresh: num(F, n, v[2])?,
    })
}

/// Parses /proc/net/rpc/nfsd.
pub fn parse_rpc_nfsd(text: &str) -> Result<NfsServer, ParseError> {
    const F: &str = "/proc/net/rpc/nfsd";
    let (n, v) = rpc_line(F, text)?;
    if v.len() < 2 {
        return Err(ParseError::new(F, Some(n), "`rpc` needs calls, badcalls"));
    }
    let threads = text.lines().enumerate().find_map(|(i, l)| {
        let mut it = l.split_ascii_whitespace();
        (it.next() == Some("th")).then(|| it.next().map(|t| num(F, i + 1, t)))
    });
    Ok(NfsServer {
        calls: num(F, n, v[0])?,
        badcalls: num(F, n, v[1])?,
        threads: threads.flatten().transpose()?,
    })
}

/// Parses /proc/fs/nfsd/pool_stats by its header's column names.
pub fn parse_pool_stats(text: &str) -> Result<NfsPools, ParseError> {
    const F: &str = "/proc/fs/nfsd/pool_stats";
    let mut lines = text.lines().enumerate();
    let header: Vec<&str> = match lines.next() {
        Some((_, h)) if h.starts_with('#') => {
            h.trim_start_matches('#').split_ascii_whitespace().collect()
        }
        _ => {
            return Err(ParseError::new(
                F,
                Some(1),
                "expected a `# pool ...` header",
            ))
        }
    };
    let col = |name: &str| header.iter().position(|h| *h == name);
    let mut p = NfsPools::default();
    let cols = [
        (col("packets-arrived"), &mut p.packets_arrived),
        (col("sockets-enqueued"), &mut p.sockets_enqueued),
        (col("threads-woken"), &mut p.threads_woken),
        (col("threads-timedout"), &mut p.threads_timedout),
    ];
    let mut sums = [0u64; 4];
    let mut pools = 0;
    let body: Vec<(usize, &str)> = lines.filter(|(_, l)| !l.trim().is_empty()).collect();
    for (i, line) in &body {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        if f.len() != header.len() {
            return Err(ParseError::new(
                F,
                Some(i + 1),
                format!("expected {} columns, found {}", header.len(), f.len()),
            ));
        }
        for (k, (c, _)) in cols.iter().enumerate() {
            if let Some(c) = c {
                sums[k] += num(F, i + 1, f[*c])?;
            }
        }
        pools += 1;
    }
    for (k, (c, slot)) in cols.into_iter().enumerate() {
        *slot = c.map(|_| sums[k]);
    }
    p.pools = pools;
    Ok(p)
}

/// What one read of the NFS files gives; `None` where the file is absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NfsCounters {
    pub client: Option<NfsClient>,
    pub server: Option<NfsServer>,
    pub pools: Option<NfsPools>,
}

/// The `nfs` figures of one interval; each part only where its file exists.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NfsRates {
    pub client: Option<NfsClientRates>,
    pub server: Option<NfsServerRates>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NfsClientRates {
    pub calls_per_s: f64,
    pub retrans_per_s: f64,
    /// Δretrans / Δcalls × 100.
    pub retrans_pct: f64,
    pub authrefresh_per_s: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NfsServerRates {
    pub calls_per_s: f64,
    pub badcalls_per_s: f64,
    pub threads: Option<f64>,
    pub packets_arrived_per_s: Option<f64>,
    pub sockets_enqueued_per_s: Option<f64>,
    /// Δsockets-enqueued / Δpackets-arrived × 100: requests that found all threads busy.
    pub enqueued_pct: Option<f64>,
    pub threads_woken_per_s: Option<f64>,
    pub threads_timedout_per_s: Option<f64>,
}

/// Rates between two reads `secs` seconds apart; `None` when neither side is present.
pub fn nfs_rates(prev: &NfsCounters, cur: &NfsCounters, secs: f64) -> Option<NfsRates> {
    let client = match (prev.client, cur.client) {
        (Some(a), Some(b)) => Some(NfsClientRates {
            calls_per_s: rate(a.calls, b.calls, secs),
            retrans_per_s: rate(a.retrans, b.retrans, secs),
            retrans_pct: pct(
                crate::counter::delta(a.retrans, b.retrans) as f64,
                crate::counter::delta(a.calls, b.calls) as f64,
            ),
            authrefresh_per_s: rate(a.authrefresh, b.authrefresh, secs),
        }),
        _ => None,
    };
    let server = match (prev.server, cur.server) {
        (Some(a), Some(b)) => {
            let (pa, pb) = (
                prev.pools.unwrap_or_default(),
                cur.pools.unwrap_or_default(),
            );
            let pools = prev.pools.is_some() && cur.pools.is_some();
            let r = |x: Option<u64>, y: Option<u64>| match (pools, x, y) {
                (true, Some(x), Some(y)) => Some(rate(x, y, secs)),
                _ => None,
            };
            let arrived = r(pa.packets_arrived, pb.packets_arrived);
            let enqueued = r(pa.sockets_enqueued, pb.sockets_enqueued);
            Some(NfsServerRates {
                calls_per_s: rate(a.calls, b.calls, secs),
                badcalls_per_s: rate(a.badcalls, b.badcalls, secs),
                threads: b.threads.map(|t| t as f64),
                packets_arrived_per_s: arrived,
                sockets_enqueued_per_s: enqueued,
                enqueued_pct: arrived.zip(enqueued).map(|(a, e)| pct(e, a)),
                threads_woken_per_s: r(pa.threads_woken, pb.threads_woken),
                threads_timedout_per_s: r(pa.threads_timedout, pb.threads_timedout),
            })
        }
        _ => None,
    };
    (client.is_some() || server.is_some()).then_some(NfsRates { client, server })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_stats_by_column_name() {
        let p = parse_pool_stats(
            "# pool packets-arrived sockets-enqueued threads-woken threads-timedout\n0 100 5 95 1\n1 50 5 45 0\n",
        )
        .unwrap();
        assert_eq!(p.pools, 2);
        assert_eq!(p.packets_arrived, Some(150));
        assert_eq!(p.sockets_enqueued, Some(10));
        // A kernel without a column.
        let q = parse_pool_stats("# pool packets-arrived threads-woken\n0 7 7\n").unwrap();
        assert_eq!((q.packets_arrived, q.sockets_enqueued), (Some(7), None));
        assert!(parse_pool_stats("0 1 2\n").is_err());
        assert!(parse_pool_stats("# pool packets-arrived\n0\n").is_err());
    }

    #[test]
    fn missing_rpc_line() {
        assert!(parse_rpc_nfs("net 0 0 0 0\n").is_err());
        assert!(parse_rpc_nfsd("rc 0 0 0\n").is_err());
        assert!(parse_rpc_nfs("rpc 1 2\n").is_err());
    }

    #[test]
    fn absent_everywhere_is_none() {
        assert_eq!(
            nfs_rates(&NfsCounters::default(), &NfsCounters::default(), 1.0),
            None
        );
    }
}
