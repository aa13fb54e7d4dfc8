//! Who runs a run, and whether it still does.
//!
//! A run in state `running` is only as true as the process behind it. Every run records
//! its owner — the pid, the process's start time (field 22 of `/proc/PID/stat`, clock
//! ticks since boot) and where it lives ([`Scope`]: machine id, boot id and pid
//! namespace, so a pid means the same process only where all three match) — and the
//! owner writes a heartbeat every few seconds while it works.
//!
//! [`judge`] decides, at once and without writing anything:
//! - an owner in this scope is alive while a process with its pid *and* its start time
//!   exists (a reused pid has another start time);
//! - an owner elsewhere (another host, another boot, another pid namespace) is alive
//!   while its heartbeat is younger than [`HEARTBEAT_STALE`];
//! - a run without an owner (stored by a perflab before owners were recorded, or
//!   imported) has no heartbeat either, so it counts as gone.
//!
//! "abandoned" is derived when a run is read, never written: a reader (`perflab runs`,
//! `show`) needs no write access, a late heartbeat from another host cannot be turned
//! into a permanent false verdict, and the one thing that ends the state — a resume that
//! takes the run over ([`crate::Store::claim_run`]) — writes a new owner anyway.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

/// A run's owner is gone when, away from its scope, no heartbeat came for this long.
pub const HEARTBEAT_STALE: Duration = Duration::from_secs(30);

/// How often an owner writes its heartbeat (well under [`HEARTBEAT_STALE`]).
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);

/// The process that runs (or ran) a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    /// Start time of the process, in clock ticks since boot (`/proc/PID/stat` field 22).
    pub start_ticks: u64,
    /// The host name, for people.
    pub host: String,
    /// Where `pid` means this process: see [`Scope`].
    pub scope: String,
}

/// Where a pid names one process: the machine, its boot and the pid namespace.
pub struct Scope;

impl Scope {
    /// `machine-id/boot-id/pid-namespace` of this process, each part where readable.
    pub fn here() -> &'static str {
        static HERE: OnceLock<String> = OnceLock::new();
        HERE.get_or_init(|| {
            let read = |p: &str| {
                std::fs::read_to_string(p)
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default()
            };
            let machine = [read("/etc/machine-id"), read("/var/lib/dbus/machine-id")]
                .into_iter()
                .find(|s| !s.is_empty())
                .unwrap_or_else(|| read("/proc/sys/kernel/hostname"));
            let ns = std::fs::read_link("/proc/self/ns/pid")
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            format!("{machine}/{}/{ns}", read("/proc/sys/kernel/random/boot_id"))
        })
    }
}

impl Owner {
    /// This process.
    pub fn current() -> Owner {
        let pid = std::process::id();
        Owner {
            pid,
            start_ticks: start_ticks(pid).unwrap_or(0),
            host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
            scope: Scope::here().to_string(),
        }
    }

    /// Whether this owner is this very process.
    pub fn is_me(&self) -> bool {
        *self == Owner::current()
    }
}

/// The start time (clock ticks since boot) of process `pid`, if it runs (a zombie,
/// dead but not yet reaped, does not).
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_ticks(&stat)
}

/// Field 22 of a `/proc/PID/stat` line, `None` for a zombie (field 3 `Z` or `X`). The
/// command name (field 2) is in parentheses and may hold spaces and parentheses itself,
/// so fields are counted after the last `)`.
fn parse_start_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // After the name: field 3 (state) is the first; field 22 is the 20th.
    if matches!(fields.next()?, "Z" | "X") {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

/// Whether the process `pid` started at `start_ticks` still runs here: a pid that
/// exists with another start time was reused.
pub fn process_alive(pid: u32, start_ticks: u64) -> bool {
    self::start_ticks(pid) == Some(start_ticks)
}

/// What a reader knows of a stored run's owner.
#[derive(Debug, Clone, Default)]
pub struct OwnerRecord {
    pub pid: Option<u32>,
    pub start_ticks: Option<u64>,
    pub scope: Option<String>,
    /// The last heartbeat (RFC 3339).
    pub heartbeat_at: Option<String>,
}

/// Whether a run's owner is alive, judged from `here` at `now`; `probe(pid, start)`
/// says whether that process runs in this scope ([`process_alive`] outside tests).
pub fn judge(
    rec: &OwnerRecord,
    here: &str,
    now: SystemTime,
    probe: impl Fn(u32, u64) -> bool,
) -> bool {
    if let (Some(pid), Some(start), Some(scope)) = (rec.pid, rec.start_ticks, &rec.scope) {
        if scope == here {
            return probe(pid, start);
        }
    }
    let beat = rec
        .heartbeat_at
        .as_deref()
        .and_then(|t| humantime::parse_rfc3339(t).ok());
    match beat {
        Some(t) => now.duration_since(t).unwrap_or_default() < HEARTBEAT_STALE,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_read_after_the_last_parenthesis() {
        let stat =
            "4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_start_ticks(stat), Some(987654));
        assert_eq!(parse_start_ticks("garbage"), None);
        let zombie = stat.replace(") S ", ") Z ");
        assert_eq!(parse_start_ticks(&zombie), None, "a zombie runs no more");
    }

    #[test]
    fn this_process_is_alive_and_its_pid_with_another_start_time_is_not() {
        let me = Owner::current();
        assert!(me.start_ticks > 0);
        assert!(process_alive(me.pid, me.start_ticks));
        // The same pid, started at another time: a reused pid, another process.
        assert!(!process_alive(me.pid, me.start_ticks + 1));
        let rec = OwnerRecord {
            pid: Some(me.pid),
            start_ticks: Some(me.start_ticks + 1),
            scope: Some(me.scope.clone()),
            heartbeat_at: Some(crate::now_rfc3339()),
        };
        // Even a fresh heartbeat does not keep a reused pid's run alive here.
        assert!(!judge(
            &rec,
            Scope::here(),
            SystemTime::now(),
            process_alive
        ));
        let rec = OwnerRecord {
            start_ticks: Some(me.start_ticks),
            ..rec
        };
        assert!(judge(&rec, Scope::here(), SystemTime::now(), process_alive));
    }

    #[test]
    fn a_process_that_exited_is_gone() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let start = start_ticks(pid);
        child.wait().unwrap();
        assert!(!process_alive(pid, start.unwrap_or(0)));
    }

    #[test]
    fn elsewhere_only_the_heartbeat_counts() {
        let now = SystemTime::now();
        let at = |ago: u64| Some(crate::rfc3339(now - Duration::from_secs(ago)));
        let rec = |beat| OwnerRecord {
            pid: Some(1),
            start_ticks: Some(1),
            scope: Some("another-host/boot/ns".into()),
            heartbeat_at: beat,
        };
        let never = |_, _| panic!("no pid is probed for another scope");
        assert!(judge(&rec(at(3)), "here/boot/ns", now, never));
        assert!(!judge(&rec(at(31)), "here/boot/ns", now, never));
        assert!(!judge(&rec(None), "here/boot/ns", now, never));
        // No owner at all (an older perflab's run): nothing says it is alive.
        assert!(!judge(&OwnerRecord::default(), "here", now, never));
    }
}
