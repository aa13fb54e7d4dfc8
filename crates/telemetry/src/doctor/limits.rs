//! File-descriptor limits: the target's RLIMIT_NOFILE, fs.file-max and fs.nr_open
//! against the connections it must hold (`--connections N`), and against what is
//! already open.
//!
//! Every TCP connection is a file descriptor, so a server needs `N + headroom` of them
//! (listeners, logs, libraries): [`NOFILE_HEADROOM`]. Three limits stand in the way, and
//! the fix for each is different: the process's own soft limit (`ulimit -n`,
//! `LimitNOFILE=`), the ceiling a hard limit may be raised to (fs.nr_open), and the
//! system-wide count of open files (fs.file-max, the one the ARM nginx study raised
//! from 80,615 to 209,708).

use super::{
    pct, suggest, sysctl_fix, thousands, Checked, Context, Finding, Observation, Rule, RuleKind,
    Severity,
};

/// Descriptors a server needs beyond one per connection.
pub const NOFILE_HEADROOM: u64 = 64;
/// Share of a limit in use that is a warning / critical.
pub const USED_WARN: f64 = 0.80;
pub const USED_CRITICAL: f64 = 0.95;

pub const NOFILE_LIMIT: Rule = Rule {
    id: "nofile-limit",
    kind: RuleKind::Static,
    summary: "RLIMIT_NOFILE of the target below --connections + 64, or ≥ 80 % of it in use",
    check: nofile_limit,
};

pub const FILE_MAX: Rule = Rule {
    id: "file-max",
    kind: RuleKind::Static,
    summary: "fs.file-max below --connections + 64, or ≥ 80 % of it allocated (fs.file-nr)",
    check: file_max,
};

pub const NR_OPEN: Rule = Rule {
    id: "nr-open",
    kind: RuleKind::Static,
    summary: "fs.nr_open (the ceiling for RLIMIT_NOFILE) below --connections + 64",
    check: nr_open,
};

fn need(ctx: &Context) -> Option<u64> {
    ctx.connections.map(|n| n.saturating_add(NOFILE_HEADROOM))
}

fn limit(v: u64) -> String {
    if v == u64::MAX {
        "unlimited".into()
    } else {
        thousands(v)
    }
}

fn used_severity(ratio: f64) -> Option<Severity> {
    if ratio >= USED_CRITICAL {
        Some(Severity::Critical)
    } else if ratio >= USED_WARN {
        Some(Severity::Warn)
    } else {
        None
    }
}

fn nofile_fix(pid: Option<i32>, v: u64) -> String {
    match pid {
        Some(pid) => format!(
            "now: prlimit --pid {pid} --nofile={v}:{v}; for good: LimitNOFILE={v} in the \
             [Service] section of its systemd unit, or `ulimit -n {v}` in its start script \
             (nginx: worker_rlimit_nofile {v};)"
        ),
        None => format!(
            "ulimit -n {v} in the shell or script that starts the server; systemd: \
             LimitNOFILE={v} in [Service]; login sessions: `* soft nofile {v}` and \
             `* hard nofile {v}` in /etc/security/limits.conf"
        ),
    }
}

fn nofile_limit(_: &Observation, a: &Observation, ctx: &Context) -> Checked {
    let mut c = Checked::none();
    let (who, lim, fds) = match ctx.pid {
        Some(pid) => match a.procs.get(&pid) {
            Some(p) => (a.who(pid), p.nofile, p.fds),
            None => return Checked::only_missing(format!("pid {pid} is gone")),
        },
        None if ctx.connections.is_some() => (
            "a process started from this shell".to_string(),
            ctx.inherited_nofile,
            None,
        ),
        None => return c,
    };
    let Some((soft, hard)) = lim else {
        return Checked::only_missing(format!("cannot read the limits of {who}"));
    };
    let program = ctx.pid.and_then(|p| a.comm(p));
    if let Some(need) = need(ctx) {
        if soft < need {
            let v = suggest(need, 65_536, 1 << 30);
            c.push(
                Finding::new(
                    NOFILE_LIMIT.id,
                    Severity::Warn,
                    format!(
                        "{who}: RLIMIT_NOFILE soft limit {} (hard {}) is below the {} \
                         descriptors that --connections {} needs (+{NOFILE_HEADROOM} for \
                         listeners, logs and libraries)",
                        limit(soft),
                        limit(hard),
                        thousands(need),
                        thousands(ctx.connections.unwrap_or(0)),
                    ),
                    "every connection is a file descriptor: past the soft limit accept() \
                     fails with EMFILE (\"Too many open files\") and new clients are refused \
                     or reset while the server looks idle",
                    nofile_fix(ctx.pid, v),
                )
                .with_pid(ctx.pid, program.clone()),
            );
        }
    }
    if let Some(fds) = fds {
        if soft > 0 && soft != u64::MAX {
            let ratio = fds as f64 / soft as f64;
            if let Some(sev) = used_severity(ratio) {
                let v = suggest(soft.saturating_mul(2), 65_536, 1 << 30);
                c.push(
                    Finding::new(
                        NOFILE_LIMIT.id,
                        sev,
                        format!(
                            "{who} has {} files open: {} of its soft limit {}",
                            thousands(fds),
                            pct(ratio * 100.0),
                            limit(soft)
                        ),
                        "when the last descriptor is used, accept() and open() fail with \
                         EMFILE; a steady climb towards the limit is also the sign of a \
                         descriptor leak (see close-wait)",
                        nofile_fix(ctx.pid, v),
                    )
                    .with_pid(ctx.pid, program),
                );
            }
        }
    }
    c
}

fn file_max(_: &Observation, a: &Observation, ctx: &Context) -> Checked {
    let mut c = Checked::none();
    let Some(max) = a.sysctl_u64("fs.file-max") else {
        return Checked::only_missing("/proc/sys/fs/file-max not present");
    };
    if let Some(need) = need(ctx) {
        if max < need {
            let v = suggest(need.saturating_mul(2), 262_144, 1 << 40);
            c.push(Finding::new(
                FILE_MAX.id,
                Severity::Warn,
                format!(
                    "fs.file-max is {} but --connections {} needs at least {} open files",
                    thousands(max),
                    thousands(ctx.connections.unwrap_or(0)),
                    thousands(need)
                ),
                "fs.file-max caps the open files of the whole system: when it is reached \
                 every process's open() and accept() fail with ENFILE and the kernel logs \
                 \"VFS: file-max limit reached\"",
                sysctl_fix("fs.file-max", &v.to_string()),
            ));
        }
    }
    match a.sysctl_nums("fs.file-nr").as_deref() {
        Some([allocated, _, ..]) if max > 0 => {
            let ratio = *allocated as f64 / max as f64;
            if let Some(sev) = used_severity(ratio) {
                let v = suggest(max.saturating_mul(2), 262_144, 1 << 40);
                c.push(Finding::new(
                    FILE_MAX.id,
                    sev,
                    format!(
                        "{} file handles allocated: {} of fs.file-max {} (fs.file-nr)",
                        thousands(*allocated),
                        pct(ratio * 100.0),
                        thousands(max)
                    ),
                    "when the system-wide table is full, open() and accept() fail with \
                     ENFILE in every process",
                    sysctl_fix("fs.file-max", &v.to_string()),
                ));
            }
        }
        _ => c.missing("/proc/sys/fs/file-nr not present"),
    }
    c
}

fn nr_open(_: &Observation, a: &Observation, ctx: &Context) -> Checked {
    let Some(need) = need(ctx) else {
        return Checked::none();
    };
    let Some(nr) = a.sysctl_u64("fs.nr_open") else {
        return Checked::only_missing("/proc/sys/fs/nr_open not present");
    };
    let mut c = Checked::none();
    if nr < need {
        let v = suggest(need, 1 << 20, 1 << 30);
        c.push(Finding::new(
            NR_OPEN.id,
            Severity::Warn,
            format!(
                "fs.nr_open is {} but --connections {} needs an RLIMIT_NOFILE of {}",
                thousands(nr),
                thousands(ctx.connections.unwrap_or(0)),
                thousands(need)
            ),
            "no process can raise its RLIMIT_NOFILE above fs.nr_open: `ulimit -n` and \
             LimitNOFILE= beyond it fail with EPERM, whatever the other limits say",
            sysctl_fix("fs.nr_open", &v.to_string()),
        ));
    }
    c
}
