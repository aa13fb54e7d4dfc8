//! The one rule for a test whose tool, privilege or kernel feature is missing here,
//! shared by every crate's tests (each includes this file with `#[path]`: a test
//! helper is no library, so it gets no crate of its own).
//!
//! - Under CI (`PERFLAB_REQUIRE=1`, which `scripts/test.sh` exports) such a test
//!   **fails**, and its panic names what is missing and the Debian package that has it:
//!   a suite that passed has run every test.
//! - Outside CI it prints `skipped: <why>` and passes, so a laptop without nginx or
//!   root still runs the rest.
//! - What the CI machine kind can never have is listed once, in [`NEVER_HERE`]; a test
//!   that needs one of those skips with that entry's name and reason, switch or not.
//!
//! Call sites read as one line: `let Some(sshd) = require::program("sshd") else { return };`,
//! `if !require::perf_records() { return; }`, `require::have(probe())`.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::fmt::Display;
use std::path::PathBuf;
use std::process::Command;

/// The switch: set (and not `0` or empty), a missing requirement fails the test.
pub const SWITCH: &str = "PERFLAB_REQUIRE";

/// What the machine kind CI runs on can never have, with why: the only skips left
/// under [`SWITCH`]. A test that needs one calls [`never_here`] with its name.
pub const NEVER_HERE: &[(&str, &str)] = &[
    (
        "pmu",
        "hardware PMU events (cycles, instructions, cache misses): the CI machines are \
         VMs without a virtual PMU (/sys/bus/event_source/devices has no `cpu`)",
    ),
    (
        "lbr",
        "last branch records (perf record -b, --call-graph lbr): they need a hardware PMU \
         with LBR, which a VM does not expose",
    ),
    (
        "netem",
        "the sch_netem qdisc (tc qdisc ... netem): the CI kernel is built without it",
    ),
];

/// Program → the Debian package that provides it. `scripts/test.sh` installs the same
/// pairs (a test in crates/cli/tests/require.rs checks that the two tables agree).
pub const PACKAGES: &[(&str, &str)] = &[
    ("cc", "gcc"),
    ("curl", "curl"),
    ("chromium", "chromium"),
    ("gcc", "gcc"),
    ("go", "golang-go"),
    ("h2load", "nghttp2-client"),
    ("ip", "iproute2"),
    ("java", "default-jdk-headless"),
    ("javac", "default-jdk-headless"),
    ("jcmd", "default-jdk-headless"),
    ("losetup", "mount"),
    ("munged", "munge"),
    ("nginx", "nginx"),
    ("node", "nodejs"),
    ("openssl", "openssl"),
    ("perf", "linux-perf"),
    ("python3", "python3"),
    ("setpriv", "util-linux"),
    ("sinfo", "slurm-wlm"),
    ("slurmctld", "slurm-wlm"),
    ("slurmd", "slurm-wlm"),
    ("srun", "slurm-wlm"),
    ("ssh", "openssh-client"),
    ("ssh-keygen", "openssh-client"),
    ("sshd", "openssh-server"),
    ("unshare", "util-linux"),
    ("wrk", "wrk"),
];

/// Whether the switch is set in this process's environment.
pub fn required() -> bool {
    std::env::var_os(SWITCH).is_some_and(|v| !v.is_empty() && v != "0")
}

/// What the rule makes of a missing requirement: `Err(panic message)` when `required`,
/// `Ok(the skip line)` otherwise. [`missing`] acts on it; tests check it directly.
pub fn verdict(required: bool, why: &str) -> Result<String, String> {
    if required {
        Err(format!(
            "{SWITCH} is set and this test cannot run here: {why} \
             (scripts/test.sh installs what is missing)"
        ))
    } else {
        Ok(format!(
            "skipped: {why} (set {SWITCH}=1 to make this a failure)"
        ))
    }
}

/// A requirement is missing: under the switch this panics with `why`; without it, it
/// prints `skipped: why` and the caller returns.
#[track_caller]
pub fn missing(why: impl Display) {
    match verdict(required(), &why.to_string()) {
        Ok(line) => eprintln!("{line}"),
        Err(message) => panic!("{message}"),
    }
}

/// `Ok` gives its value; `Err(why)` is [`missing`] and gives None.
#[track_caller]
pub fn have<T, E: Display>(r: Result<T, E>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(why) => {
            missing(why);
            None
        }
    }
}

/// `program` on `path` (a `PATH` value), quietly.
pub fn which_in(path: Option<&OsStr>, program: &str) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// `program` on this process's `PATH`, quietly.
pub fn which(program: &str) -> Option<PathBuf> {
    which_in(std::env::var_os("PATH").as_deref(), program)
}

/// The Debian package that provides `program`, from [`PACKAGES`].
pub fn package(program: &str) -> Option<&'static str> {
    PACKAGES
        .iter()
        .find(|(p, _)| *p == program)
        .map(|(_, pkg)| *pkg)
}

/// Why `program` is not there: its name and its Debian package (from [`PACKAGES`]).
pub fn not_found(program: &str) -> String {
    let package = package(program)
        .unwrap_or_else(|| panic!("{program}: add it and its Debian package to PACKAGES"));
    format!("`{program}` is not on PATH (Debian package: {package})")
}

/// `program` on `PATH`, or [`missing`] naming it and its package.
#[track_caller]
pub fn program(program: &str) -> Option<PathBuf> {
    have(which(program).ok_or_else(|| not_found(program)))
}

/// Every one of `programs` on `PATH`, or [`missing`] naming those that are not.
#[track_caller]
pub fn programs(programs: &[&str]) -> bool {
    let absent: Vec<String> = programs
        .iter()
        .filter(|p| which(p).is_none())
        .map(|p| not_found(p))
        .collect();
    have(if absent.is_empty() {
        Ok(())
    } else {
        Err(absent.join("; "))
    })
    .is_some()
}

/// Whether this process runs as root, quietly.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether this process runs as root; if not, [`missing`] saying what needs it.
#[track_caller]
pub fn root(what: &str) -> bool {
    have(if is_root() {
        Ok(())
    } else {
        Err(format!("{what} needs root"))
    })
    .is_some()
}

/// Whether perf can record here (a software event: no PMU needed); if not, [`missing`]
/// with perf's own words.
#[track_caller]
pub fn perf_records() -> bool {
    let Some(perf) = program("perf") else {
        return false;
    };
    // One folder per probe: tests of one process probe at the same time.
    static PROBES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("perflab-require-{}-{n}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let out = Command::new(perf)
        .args(["record", "-q", "-e", "cpu-clock", "-o"])
        .arg(dir.join("probe.data"))
        .args(["--", "true"])
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    have(match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "perf may not record here (needs root or kernel.perf_event_paranoid <= 1): {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("perf does not run: {e}")),
    })
    .is_some()
}

/// A need the CI machine kind can never meet: always a skip, naming the [`NEVER_HERE`]
/// entry (a name not in the list is a bug in the test, and panics).
pub fn never_here(entry: &str, detail: impl Display) {
    let (_, reason) = NEVER_HERE
        .iter()
        .find(|(name, _)| *name == entry)
        .unwrap_or_else(|| panic!("{entry} is not in require::NEVER_HERE"));
    eprintln!("skipped (never here: {entry}, {reason}): {detail}");
}
