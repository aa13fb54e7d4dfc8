//! Talking to the `perf` binary: finding it, checking that it may profile here,
//! choosing the event, and reading a recording back (`perf script`, `perf evlist`).
//!
//! Permission problems are found with a tiny trial recording of the same kind as the
//! real one (same target, same event, workload `true`) whose stderr is read, because
//! the rules (perf_event_paranoid, CAP_PERFMON, CAP_SYS_ADMIN, kptr_restrict, seccomp
//! in containers) are too many to predict; the real recording then runs with perf's
//! stderr shared with the profiled command.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{ProfileError, Result};
use crate::script::SCRIPT_FIELDS;

/// The `perf` to use: `$PERFLAB_PERF`, else `perf` on PATH.
pub fn find_perf() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("PERFLAB_PERF").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(ProfileError::PerfMissing)
        };
    }
    which("perf").ok_or(ProfileError::PerfMissing)
}

/// A program on PATH (or a path with a slash, as is).
pub fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `perf --version`, e.g. `perf version 6.1.187`.
pub fn version(perf: &Path) -> Option<String> {
    let out = Command::new(perf).arg("--version").output().ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!v.is_empty()).then_some(v)
}

/// kernel.perf_event_paranoid, as written in /proc (or `unknown`).
pub fn paranoid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Whether the hardware `cycles` event can be counted here. Virtual machines without
/// a virtual PMU report it `<not supported>`; perf record would then silently fall
/// back to cpu-clock, so the choice is made here, explicitly.
pub fn cycles_supported(perf: &Path) -> bool {
    let out = Command::new(perf)
        .args(["stat", "-x", ",", "-e", "cycles", "--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output();
    match out {
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            o.status.success()
                && err
                    .lines()
                    .any(|l| l.contains("cycles") && !l.contains("<not"))
        }
        Err(_) => false,
    }
}

/// Runs a trial recording with `args` (target and event flags) and workload `true`,
/// turning a refusal into [`ProfileError::PermissionDenied`].
pub fn preflight(perf: &Path, args: &[String]) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| ProfileError::io("cannot make a temp dir", e))?;
    let data = dir.path().join("preflight.data");
    let out = Command::new(perf)
        .arg("record")
        .args(args)
        .arg("-o")
        .arg(&data)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .map_err(|e| ProfileError::io(format!("cannot run {}", perf.display()), e))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    Err(classify_failure(
        &format!("perf record {}", args.join(" ")),
        &out.status.to_string(),
        &stderr,
    ))
}

/// A failed perf command: a permission problem, or anything else (with perf's words).
pub fn classify_failure(command: &str, status: &str, stderr: &str) -> ProfileError {
    let lower = stderr.to_lowercase();
    // Before the permission words: perf's tracefs hints say "No permissions to read".
    if let Some(e) = crate::offcpu::tracepoint_failure(stderr) {
        return e;
    }
    let denied = [
        "perf_event_paranoid",
        "permission",
        "access to performance monitoring",
        "operation not permitted",
        "no permission",
    ];
    if denied.iter().any(|d| lower.contains(d)) {
        let detail = stderr
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("Error"))
            .unwrap_or("access denied")
            .to_string();
        return ProfileError::PermissionDenied {
            paranoid: paranoid(),
            detail,
        };
    }
    ProfileError::PerfFailed {
        command: command.to_string(),
        status: status.to_string(),
        stderr: last_lines(stderr, 6),
    }
}

fn last_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}

/// The event names in a recording (`perf evlist`), e.g. `["cpu-clock"]`.
pub fn evlist(perf: &Path, data: &Path) -> Result<Vec<String>> {
    let out = Command::new(perf)
        .arg("evlist")
        .arg("-i")
        .arg(data)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| ProfileError::io("cannot run perf evlist", e))?;
    if !out.status.success() {
        return Err(classify_failure(
            "perf evlist",
            &out.status.to_string(),
            &String::from_utf8_lossy(&out.stderr),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect())
}

/// The sampling frequency of a recording's first event (`perf evlist -F`:
/// `cpu-clock: sample_freq=999`); None where it samples by period.
pub fn sample_frequency(perf: &Path, data: &Path) -> Option<u32> {
    let out = Command::new(perf)
        .args(["evlist", "-F", "-i"])
        .arg(data)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))?;
    let v = first.split("sample_freq=").nth(1)?;
    v.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// `perf script` text with perflab's fields. Samples recorded without the CPU (an
/// older recording, or one not made by perflab) are read again without that field.
///
/// `--no-inline`: otherwise perf names inlined frames by running `addr2line -i` on
/// every binary in the stacks, which took over 14 minutes (not finished) on a 10 s
/// system-wide DWARF recording of a machine running rustc (librustc_driver, libLLVM),
/// against 7 s without.
pub fn script(perf: &Path, data: &Path) -> Result<String> {
    let run = |fields: &str| {
        Command::new(perf)
            .arg("script")
            .arg("--no-inline")
            .arg("-i")
            .arg(data)
            .arg("-F")
            .arg(fields)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| ProfileError::io("cannot run perf script", e))
    };
    let mut out = run(SCRIPT_FIELDS)?;
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    if !out.status.success() || err.contains("Cannot print 'cpu' field") {
        out = run(&SCRIPT_FIELDS.replace("cpu,", ""))?;
    }
    if !out.status.success() {
        return Err(classify_failure(
            "perf script",
            &out.status.to_string(),
            &String::from_utf8_lossy(&out.stderr),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `perf script` of an off-CPU recording (perflab's fields, the tracepoints' fields,
/// the context-switch records), handed to `on_line` one line at a time as perf writes
/// it: such a recording holds every context switch, too many to keep as text.
pub fn script_each(perf: &Path, data: &Path, mut on_line: impl FnMut(&str)) -> Result<()> {
    use std::io::BufRead;
    let err = tempfile::tempfile().map_err(|e| ProfileError::io("cannot make a temp file", e))?;
    let err_w = err
        .try_clone()
        .map_err(|e| ProfileError::io("cannot make a temp file", e))?;
    let mut child = Command::new(perf)
        .arg("script")
        .arg("-i")
        .arg(data)
        .arg("-F")
        .arg(format!("{SCRIPT_FIELDS},trace"))
        .arg("--show-switch-events")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(err_w)
        .spawn()
        .map_err(|e| ProfileError::io("cannot run perf script", e))?;
    if let Some(out) = child.stdout.take() {
        let mut r = std::io::BufReader::with_capacity(1 << 16, out);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => on_line(String::from_utf8_lossy(&buf).trim_end_matches(['\n', '\r'])),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(ProfileError::io("cannot read perf script's output", e));
                }
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| ProfileError::io("cannot wait for perf script", e))?;
    if status.success() {
        return Ok(());
    }
    let mut stderr = String::new();
    let mut err = err;
    let _ = std::io::Seek::rewind(&mut err);
    let _ = std::io::Read::read_to_string(&mut err, &mut stderr);
    Err(classify_failure(
        "perf script",
        &status.to_string(),
        &stderr,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_told_apart_from_other_failures() {
        let e = classify_failure(
            "perf record -a",
            "exit status: 255",
            "Error:\nAccess to performance monitoring and observability operations is limited.\n",
        );
        assert!(matches!(e, ProfileError::PermissionDenied { .. }), "{e}");
        assert!(e
            .to_string()
            .contains("sysctl kernel.perf_event_paranoid=1"));
        let e = classify_failure("perf script", "exit status: 1", "Error:\nfile is corrupt\n");
        assert!(matches!(e, ProfileError::PerfFailed { .. }));
    }

    #[test]
    fn which_finds_sh() {
        assert!(which("sh").is_some());
        assert!(which("no-such-program-perflab").is_none());
    }
}
