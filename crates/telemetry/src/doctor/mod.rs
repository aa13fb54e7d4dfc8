//! `doctor`: rules that read the system's configuration and counters and say what is
//! wrong, why it matters and the exact line that fixes it.
//!
//! The published tuning studies perflab reproduces (docs/studies.md §5 and §7) found their
//! problems with a handful of counters and sysctls: connection resets under ~400
//! concurrent clients that went away with fs.file-max, netdev_max_backlog, somaxconn and
//! tcp_max_syn_backlog raised; NFS retransmits above 3 % of calls; rising ReasmFails;
//! nfsd threads all busy; CLOSE_WAIT sockets piling up behind a `recv() == 0` bug. Each
//! of those checks is one [`Rule`] here.
//!
//! # Shape
//!
//! - [`observe`] is the only part that reads anything: one [`Observation`] is the
//!   telemetry [`crate::Snapshot`] plus what only the doctor needs — sysctls, the TCP
//!   listeners with their accept-queue length and backlog (netlink sock_diag, see
//!   [`diag`]), CLOSE_WAIT sockets by inode and owner, the target's RLIMIT_NOFILE, the
//!   CPU frequency governors. Everything is read relative to a /proc and a /sys root, so
//!   committed fixture directories drive the same code as the live system.
//! - Every rule is a pure function `fn(before, after, ctx) -> Checked` over two
//!   observations taken `--watch` seconds apart. Static rules look at `after` only;
//!   sampled rules at the difference and do nothing when the two are the same instant
//!   (`--watch 0`). A rule whose inputs this host does not provide (no NFS, no cpufreq
//!   in a VM, no permission to read other users' fds) says so in
//!   [`Checked::not_available`] instead of staying silent.
//! - [`diagnose`] runs all of [`RULES`] and sorts the findings, most severe first.
//!
//! Every threshold is a named constant next to its rule and documented, with the reason
//! for it, in `docs/doctor.md` (one section per rule id, which is what
//! [`Finding::doc`] links to).

pub mod diag;
mod host;
mod limits;
mod net_sampled;
mod net_static;
pub mod observe;
mod sampled;
pub mod watch;

use std::time::Duration;

use serde::Serialize;

pub use observe::{CloseWaitSocket, Listener, Observation, ProcInfo, Source, TcpTable};

/// How bad a finding is; the CLI's exit status follows the worst one (info 0, warn 4,
/// critical 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing, not a problem by itself (a default below what the studies used).
    Info,
    /// A limit that the stated load will hit, or a counter that shows harm happening.
    Warn,
    /// Harm happening fast, or a limit already (nearly) reached.
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Critical => "critical",
        }
    }
}

/// One thing the doctor found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The rule's id: `listen-overflows`, `close-wait`, ...
    pub id: &'static str,
    pub severity: Severity,
    /// What was seen, with the numbers.
    pub evidence: String,
    /// Why it matters.
    pub why: String,
    /// The exact fix: the sysctl line, ulimit or configuration directive.
    pub fix: String,
    /// The docs section that explains the rule: `docs/doctor.md#ID`.
    pub doc: String,
    /// The process concerned, where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// That process's name (/proc/PID/comm).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// The local TCP port concerned, where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

impl Finding {
    /// A finding of rule `id` with its docs link; `pid`/`port` are set by the caller.
    pub fn new(
        id: &'static str,
        severity: Severity,
        evidence: impl Into<String>,
        why: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding {
            id,
            severity,
            evidence: evidence.into(),
            why: why.into(),
            fix: fix.into(),
            doc: format!("docs/doctor.md#{id}"),
            pid: None,
            program: None,
            port: None,
        }
    }

    fn with_pid(mut self, pid: Option<i32>, program: Option<String>) -> Finding {
        self.pid = pid;
        self.program = program;
        self
    }

    fn with_port(mut self, port: u16) -> Finding {
        self.port = Some(port);
        self
    }
}

/// A check (or part of one) this host could not run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotAvailable {
    pub rule: &'static str,
    pub reason: String,
}

/// What one rule found, and what it could not look at.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checked {
    pub findings: Vec<Finding>,
    /// Reasons this rule could not run (fully or in part) here.
    pub not_available: Vec<String>,
}

impl Checked {
    fn push(&mut self, f: Finding) {
        self.findings.push(f);
    }
    fn missing(&mut self, why: impl Into<String>) {
        self.not_available.push(why.into());
    }
    fn none() -> Checked {
        Checked::default()
    }
    fn only_missing(why: impl Into<String>) -> Checked {
        let mut c = Checked::default();
        c.missing(why);
        c
    }
}

/// What the user told the doctor about the load to expect, and who is asking.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The process under examination (`--pid`): its RLIMIT_NOFILE and open fds.
    pub pid: Option<i32>,
    /// Concurrent connections the service must take (`--connections N`).
    pub connections: Option<u64>,
    /// Concurrent outgoing connections to one destination (`--outgoing N`).
    pub outgoing: Option<u64>,
    /// RLIMIT_NOFILE (soft, hard) that a process started from the doctor's own shell
    /// inherits: the limit checked when there is no `--pid`.
    pub inherited_nofile: Option<(u64, u64)>,
    /// Running with effective uid 0 (other users' /proc/PID/fd are readable).
    pub is_root: bool,
}

impl Context {
    /// The doctor's own RLIMIT_NOFILE and effective uid.
    pub fn live() -> Context {
        // SAFETY: getrlimit writes one rlimit struct we own; geteuid has no preconditions.
        let (nofile, euid) = unsafe {
            let mut r: libc::rlimit = std::mem::zeroed();
            let ok = libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0;
            (
                ok.then_some((r.rlim_cur as u64, r.rlim_max as u64)),
                libc::geteuid(),
            )
        };
        Context {
            inherited_nofile: nofile,
            is_root: euid == 0,
            ..Context::default()
        }
    }
}

/// Whether a rule looks at one observation or at the change between two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleKind {
    /// Configuration and levels: runs on `after` alone.
    Static,
    /// Counters over the watch: needs `after` later than `before`.
    Sampled,
}

/// One check.
#[derive(Clone, Copy)]
pub struct Rule {
    pub id: &'static str,
    pub kind: RuleKind,
    /// One line: what it checks and its threshold.
    pub summary: &'static str,
    pub check: fn(&Observation, &Observation, &Context) -> Checked,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .finish()
    }
}

/// Every rule, static ones first, in the order their findings are listed on a tie.
pub const RULES: &[Rule] = &[
    limits::NOFILE_LIMIT,
    limits::FILE_MAX,
    limits::NR_OPEN,
    net_static::SOMAXCONN,
    net_static::LISTEN_BACKLOG,
    net_static::SYN_BACKLOG,
    net_static::NETDEV_BACKLOG,
    net_static::PORT_RANGE,
    net_static::IPFRAG,
    host::SWAP,
    host::CPU_GOVERNOR,
    net_sampled::LISTEN_OVERFLOWS,
    net_sampled::SOFTNET_DROPS,
    net_sampled::TCP_RETRANSMITS,
    net_sampled::REASM_FAILS,
    net_sampled::CLOSE_WAIT,
    sampled::NFS_RETRANS,
    sampled::NFSD_THREADS,
    sampled::SOFTIRQ_CPU,
    sampled::THUNDERING_HERD,
    sampled::DISK_SATURATED,
    sampled::SWAPPING,
];

/// A rule by id.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// Everything the doctor found over one watch.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Diagnosis {
    /// Seconds between the two observations (0: static checks only).
    pub watch_s: f64,
    /// Most severe first; rule order on a tie.
    pub findings: Vec<Finding>,
    pub not_available: Vec<NotAvailable>,
}

impl Diagnosis {
    /// The worst severity found, if anything was.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }
    /// How many findings have severity `s`.
    pub fn count(&self, s: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == s).count()
    }
}

/// Runs every rule over `before` and `after` (the same observation twice, or two equal
/// instants, for static checks only).
pub fn diagnose(before: &Observation, after: &Observation, ctx: &Context) -> Diagnosis {
    let watch_s = (after.snap.at - before.snap.at).max(0.0);
    let mut d = Diagnosis {
        watch_s,
        ..Diagnosis::default()
    };
    for r in RULES {
        if r.kind == RuleKind::Sampled && watch_s <= 0.0 {
            continue;
        }
        let c = (r.check)(before, after, ctx);
        d.findings.extend(c.findings);
        d.not_available.extend(
            c.not_available
                .into_iter()
                .map(|reason| NotAvailable { rule: r.id, reason }),
        );
    }
    if watch_s <= 0.0 {
        d.not_available.push(NotAvailable {
            rule: "sampled",
            reason: "--watch 0: the sampled checks (counters over time) were not run".into(),
        });
    }
    // Stable: rule order is kept within a severity.
    d.findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    d
}

/// The shortest watch that gives meaningful rates (jiffy- and ms-granular counters).
pub const MIN_WATCH: Duration = Duration::from_millis(100);

/// Parses `--watch`: a duration (`5s`, `500ms`, `1m`), a plain number of seconds, or
/// `0` for static checks only.
pub fn parse_watch(s: &str) -> Result<Duration, String> {
    // perflab's one duration grammar (crates/units).
    let d = perflab_units::parse_duration(s).map_err(|_| {
        format!("invalid duration `{s}`: expected 0 or a duration such as 5s, 500ms, 1m30s")
    })?;
    if !d.is_zero() && d < MIN_WATCH {
        return Err(format!(
            "watch {d:?} is too short: the shortest is 100ms (0 = static checks only)"
        ));
    }
    Ok(d)
}

/// `n` rounded up to a power of two, at least `floor`, at most `cap`: the values the
/// fixes suggest (`somaxconn = 4096`, not 3117).
pub(crate) fn suggest(n: u64, floor: u64, cap: u64) -> u64 {
    n.max(floor)
        .checked_next_power_of_two()
        .unwrap_or(cap)
        .min(cap)
}

/// `p` as a percentage with the precision the evidence needs.
pub(crate) fn pct(p: f64) -> String {
    if p >= 10.0 {
        format!("{p:.0} %")
    } else {
        format!("{p:.1} %")
    }
}

/// A rate with sensible precision.
pub(crate) fn per_s(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}/s")
    } else {
        format!("{x:.1}/s")
    }
}

/// `12,345`.
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        let left = s.len() - i;
        if i > 0 && left / 3 * 3 == left {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The line that makes a sysctl change survive a reboot.
pub(crate) fn persist(name: &str, value: &str) -> String {
    format!("echo '{name} = {value}' >> /etc/sysctl.d/90-perflab.conf")
}

/// `sysctl -w NAME=VALUE` and how to persist it.
pub(crate) fn sysctl_fix(name: &str, value: &str) -> String {
    format!(
        "sysctl -w {name}={value}  (persist: {})",
        persist(name, value.trim_matches('"'))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_durations() {
        assert_eq!(parse_watch("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_watch("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_watch("5").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_watch("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_watch("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_watch("1m30s").unwrap(), Duration::from_secs(90));
        assert!(parse_watch("10ms").unwrap_err().contains("too short"));
        assert!(parse_watch("soon")
            .unwrap_err()
            .contains("invalid duration"));
        assert!(parse_watch("-1").is_err());
    }

    #[test]
    fn suggestions_and_numbers() {
        assert_eq!(suggest(3117, 4096, 65535), 4096);
        assert_eq!(suggest(5000, 4096, 65535), 8192);
        assert_eq!(suggest(100_000, 4096, 65535), 65535);
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(123), "123");
        assert_eq!(pct(3.456), "3.5 %");
        assert_eq!(pct(45.6), "46 %");
    }

    #[test]
    fn every_rule_has_a_unique_kebab_case_id() {
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        assert!(ids
            .iter()
            .all(|i| i.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')));
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
    }
}
