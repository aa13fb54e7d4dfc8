//! Which perflab runs on a host: the inventory's `perflab` when it names one; else
//! this very binary, stripped of debug info, copied to a per-user cache directory
//! there (`~/.cache/perflab/bin/perflab-VERSION-HASH`, written under a temporary name
//! and renamed, so a half-copied file is never run) when the host's `uname -m` and C
//! library match this one's; else a `perflab` on the host's PATH; else an error that
//! says which.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use crate::inventory::Host;
use crate::ssh::Ssh;

/// This machine's architecture as `uname -m` prints it, and its C library family.
pub fn local_platform() -> (String, &'static str) {
    let arch = match std::env::consts::ARCH {
        "x86" => "i686",
        a => a,
    };
    (
        arch.to_string(),
        if cfg!(target_env = "musl") {
            "musl"
        } else {
            "glibc"
        },
    )
}

/// The C library family of `ldd --version`'s first line.
fn libc_of(ldd: &str) -> &'static str {
    let l = ldd.to_ascii_lowercase();
    if l.contains("musl") {
        "musl"
    } else if l.contains("glibc") || l.contains("gnu libc") || l.contains("gnu c library") {
        "glibc"
    } else {
        "unknown"
    }
}

/// This perflab, stripped, and the name of its copy on a host — prepared once per
/// process, however many hosts (in parallel) it goes to.
fn local_binary(scratch: &Path) -> Result<&'static (String, Vec<u8>), String> {
    static BIN: OnceLock<Result<(String, Vec<u8>), String>> = OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().map_err(|e| format!("this perflab's path: {e}"))?;
        let bin = stripped(&exe, scratch);
        let bytes = std::fs::read(&bin).map_err(|e| format!("{}: {e}", bin.display()));
        if bin != exe {
            let _ = std::fs::remove_file(&bin);
        }
        let bytes = bytes?;
        let name = format!(
            "perflab-{}-{}",
            env!("CARGO_PKG_VERSION"),
            fingerprint(&bytes)
        );
        Ok((name, bytes))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The local binary with its debug info stripped (a copy, when `strip` is there).
fn stripped(exe: &Path, scratch: &Path) -> PathBuf {
    let out = scratch.join(format!("perflab-stripped.{}", std::process::id()));
    let ok = std::fs::copy(exe, &out).is_ok()
        && std::process::Command::new("strip")
            .arg("--strip-debug")
            .arg(&out)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if ok {
        out
    } else {
        exe.to_path_buf()
    }
}

/// FNV-1a of the file: names the cached copy, so a new build is a new file.
fn fingerprint(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Runs a short script on the host: its stdout, or why not (ssh's own words).
pub fn probe(ssh: &Ssh, host: &Host, script: &str, stdin: Option<&[u8]>) -> Result<String, String> {
    let mut child = ssh
        .script(host, script)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", ssh.program))?;
    if let (Some(data), Some(mut w)) = (stdin, child.stdin.take()) {
        let data = data.to_vec();
        std::thread::spawn(move || {
            let _ = w.write_all(&data);
        });
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("ssh to {}: {e}", host.name))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        Err(format!(
            "host {} ({}): {}",
            host.name,
            host.address(),
            if last.is_empty() {
                format!("exit {}", out.status)
            } else {
                last.trim().to_string()
            }
        ))
    }
}

/// The perflab to run on `host` — as a word for its shell — copying this one there
/// when it fits.
pub fn ensure(ssh: &Ssh, host: &Host, scratch: &Path) -> Result<String, String> {
    if let Some(p) = &host.perflab {
        return Ok(crate::ssh::quote(&[p]));
    }
    let (name, bytes) = local_binary(scratch)?;
    let facts = probe(
        ssh,
        host,
        &format!(
            "uname -m; (ldd --version 2>&1 || true) | head -n 1; \
             test -x \"$HOME/.cache/perflab/bin/{name}\" && echo have || echo missing; \
             command -v perflab || true"
        ),
        None,
    )?;
    let lines: Vec<&str> = facts.lines().collect();
    let (arch, libc) = (
        lines.first().copied().unwrap_or(""),
        libc_of(lines.get(1).unwrap_or(&"")),
    );
    let (my_arch, my_libc) = local_platform();
    if arch.trim() == my_arch && libc == my_libc {
        if lines.get(2) == Some(&"have") {
            return Ok(format!("\"$HOME/.cache/perflab/bin/{name}\""));
        }
        probe(
            ssh,
            host,
            &format!(
                "set -e; d=\"$HOME/.cache/perflab/bin\"; mkdir -p \"$d\"; t=\"$d/.{name}.$$\"; \
                 cat > \"$t\"; chmod 755 \"$t\"; mv -f \"$t\" \"$d/{name}\""
            ),
            Some(bytes),
        )?;
        return Ok(format!("\"$HOME/.cache/perflab/bin/{name}\""));
    }
    match lines.get(3).map(|l| l.trim()).filter(|l| !l.is_empty()) {
        Some(p) => Ok(crate::ssh::quote(&[p])),
        None => Err(format!(
            "host {} is {} with {libc}, this perflab is built for {my_arch} with {my_libc}, and no perflab is on its PATH: install one there, or name it with `perflab = \"PATH\"` in the inventory",
            host.name,
            arch.trim()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libc_families_from_ldd() {
        assert_eq!(libc_of("ldd (Debian GLIBC 2.36-9+deb12u4) 2.36"), "glibc");
        assert_eq!(libc_of("musl libc (x86_64)"), "musl");
        assert_eq!(libc_of("sh: ldd: not found"), "unknown");
    }

    #[test]
    fn the_fingerprint_changes_with_the_bytes() {
        assert_ne!(fingerprint(b"a"), fingerprint(b"b"));
        assert_eq!(fingerprint(b"a").len(), 16);
    }
}
