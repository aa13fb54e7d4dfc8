//! Probe names: what an experiment's `[monitor] probes = [...]` and `perflab top` choose.

use std::fmt;
use std::str::FromStr;

use crate::error::TelemetryError;

/// One group of figures, read from one set of /proc files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Probe {
    /// /proc/stat: per-CPU and total time shares.
    Cpu,
    /// /proc/stat and /proc/loadavg: context switches, interrupts, run queue, load.
    Sched,
    /// /proc/meminfo and /proc/vmstat.
    Memory,
    /// /proc/diskstats, as `iostat -x`.
    Disk,
    /// /proc/net/{snmp,netstat,softnet_stat,dev}.
    Net,
    /// /proc/net/tcp{,6} and CLOSE_WAIT owners.
    Sockets,
    /// /proc/net/rpc/{nfs,nfsd}, /proc/fs/nfsd/pool_stats.
    Nfs,
    /// /proc/pressure/{cpu,memory,io}: pressure stall information.
    Pressure,
    /// The followed pid and its descendants.
    Process,
}

impl Probe {
    /// Every probe, in the order figures are reported.
    pub const ALL: [Probe; 9] = [
        Probe::Cpu,
        Probe::Sched,
        Probe::Memory,
        Probe::Disk,
        Probe::Net,
        Probe::Sockets,
        Probe::Nfs,
        Probe::Pressure,
        Probe::Process,
    ];

    /// The name used in experiment files and series names.
    pub fn name(self) -> &'static str {
        match self {
            Probe::Cpu => "cpu",
            Probe::Sched => "sched",
            Probe::Memory => "memory",
            Probe::Disk => "disk",
            Probe::Net => "net",
            Probe::Sockets => "sockets",
            Probe::Nfs => "nfs",
            Probe::Pressure => "pressure",
            Probe::Process => "process",
        }
    }

    /// Parses a list of names (`["cpu", "disk"]`), rejecting unknown ones and
    /// dropping duplicates.
    pub fn parse_list<S: AsRef<str>>(names: &[S]) -> Result<Vec<Probe>, TelemetryError> {
        let mut out: Vec<Probe> = Vec::new();
        for n in names {
            let p: Probe = n.as_ref().parse()?;
            if !out.contains(&p) {
                out.push(p);
            }
        }
        Ok(out)
    }
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Probe {
    type Err = TelemetryError;
    fn from_str(s: &str) -> Result<Probe, TelemetryError> {
        Probe::ALL
            .iter()
            .copied()
            .find(|p| p.name() == s.trim())
            .ok_or_else(|| TelemetryError::UnknownProbe(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in Probe::ALL {
            assert_eq!(p.name().parse::<Probe>().unwrap(), p);
        }
        let l = Probe::parse_list(&["cpu", "disk", "cpu"]).unwrap();
        assert_eq!(l, [Probe::Cpu, Probe::Disk]);
        let e = Probe::parse_list(&["cpu", "gpu"]).unwrap_err();
        assert!(e.to_string().contains("unknown probe `gpu`"), "{e}");
    }
}
