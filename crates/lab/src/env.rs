//! The environment of a run, captured once: the host (CPU, memory, kernel,
//! distribution, governor, server sysctls) and versions of the tools the experiment
//! file names.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use perflab_store::HostInfo;
use perflab_workloads::command::which;

/// Sysctls that matter to servers, as (name, /proc path).
pub const SYSCTLS: &[(&str, &str)] = &[
    ("net.core.somaxconn", "/proc/sys/net/core/somaxconn"),
    ("fs.file-max", "/proc/sys/fs/file-max"),
    (
        "net.ipv4.tcp_max_syn_backlog",
        "/proc/sys/net/ipv4/tcp_max_syn_backlog",
    ),
    (
        "net.core.netdev_max_backlog",
        "/proc/sys/net/core/netdev_max_backlog",
    ),
];

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Describes this machine.
pub fn host() -> HostInfo {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| {
            l.starts_with("model name") || l.starts_with("Model") || l.starts_with("cpu model")
        })
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string());
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024);
    let distribution = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        });
    HostInfo {
        hostname: read_trim("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into()),
        cpu_model,
        cores: std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u32),
        memory_bytes,
        kernel: read_trim("/proc/sys/kernel/osrelease"),
        distribution,
        arch: Some(std::env::consts::ARCH.to_string()),
        governor: read_trim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        sysctls: SYSCTLS
            .iter()
            .filter_map(|(n, p)| Some((n.to_string(), read_trim(p)?)))
            .collect(),
        facts: facts(),
    }
}

/// The active choice of a sysfs list such as `always [madvise] never`.
fn bracketed(s: &str) -> Option<String> {
    let start = s.find('[')? + 1;
    let end = start + s[start..].find(']')?;
    Some(s[start..end].to_string())
}

/// Cache sizes, THP, SMT, turbo, online CPUs, NUMA nodes and the top clock, where
/// this kernel shows them.
fn facts() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let cpu = "/sys/devices/system/cpu";
    for i in 0..8 {
        let dir = format!("{cpu}/cpu0/cache/index{i}");
        let (Some(level), Some(kind), Some(size)) = (
            read_trim(format!("{dir}/level")),
            read_trim(format!("{dir}/type")),
            read_trim(format!("{dir}/size")),
        ) else {
            continue;
        };
        let suffix = match kind.as_str() {
            "Data" => "d",
            "Instruction" => "i",
            _ => "",
        };
        let shared = read_trim(format!("{dir}/shared_cpu_list"))
            .map(|l| format!(" (shared by cpus {l})"))
            .unwrap_or_default();
        out.insert(format!("cache.l{level}{suffix}"), format!("{size}{shared}"));
    }
    let thp = "/sys/kernel/mm/transparent_hugepage";
    if let Some(v) = read_trim(format!("{thp}/enabled")).and_then(|s| bracketed(&s)) {
        out.insert("thp".into(), v);
    }
    if let Some(v) = read_trim(format!("{thp}/defrag")).and_then(|s| bracketed(&s)) {
        out.insert("thp_defrag".into(), v);
    }
    if let Some(v) = read_trim(format!("{cpu}/smt/control")) {
        out.insert("smt".into(), v);
    }
    let turbo = read_trim(format!("{cpu}/intel_pstate/no_turbo"))
        .map(|v| if v == "1" { "off" } else { "on" })
        .or_else(|| {
            read_trim(format!("{cpu}/cpufreq/boost")).map(|v| if v == "1" { "on" } else { "off" })
        });
    if let Some(v) = turbo {
        out.insert("turbo".into(), v.into());
    }
    if let Some(v) = read_trim(format!("{cpu}/online")) {
        out.insert("cpus_online".into(), v);
    }
    if let Ok(d) = std::fs::read_dir("/sys/devices/system/node") {
        let n = d
            .flatten()
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.strip_prefix("node")
                    .is_some_and(|r| r.chars().all(|c| c.is_ascii_digit()))
            })
            .count();
        if n > 0 {
            out.insert("numa_nodes".into(), n.to_string());
        }
    }
    if let Some(khz) = read_trim(format!("{cpu}/cpu0/cpufreq/cpuinfo_max_freq"))
        .and_then(|v| v.parse::<u64>().ok())
    {
        out.insert("max_mhz".into(), (khz / 1000).to_string());
    }
    out
}

/// Tools whose version flag is known; anything else is recorded by its resolved path
/// only (running an unknown program with `--version` could do real work).
const VERSION_FLAGS: &[(&str, &[&str])] = &[
    ("gzip", &["--version"]),
    ("bzip2", &["--version"]),
    ("xz", &["--version"]),
    ("zstd", &["--version"]),
    ("gcc", &["--version"]),
    ("cc", &["--version"]),
    ("clang", &["--version"]),
    ("java", &["-version"]),
    ("node", &["--version"]),
    ("python3", &["--version"]),
    ("go", &["version"]),
    ("nginx", &["-v"]),
    ("wrk", &["--version"]),
    ("ab", &["-V"]),
    ("curl", &["--version"]),
    ("openssl", &["version"]),
    ("dd", &["--version"]),
    ("perl", &["--version"]),
    ("bash", &["--version"]),
    ("perflab", &["--version"]),
];

/// Version (or path) of each named program.
pub fn tool_versions(programs: &[String]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for prog in programs {
        let name = Path::new(prog)
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| prog.clone());
        if out.contains_key(&name) {
            continue;
        }
        let Some(path) = which(prog) else {
            out.insert(name, "not found".into());
            continue;
        };
        let version = VERSION_FLAGS
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, flags)| first_line_of(&path, flags));
        out.insert(
            name,
            match version {
                Some(v) => v,
                None => path.display().to_string(),
            },
        );
    }
    out
}

fn first_line_of(path: &Path, args: &[&str]) -> Option<String> {
    let mut child = Command::new(path)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.chars().take(200).collect())
}

/// The first word of a shell command line (skipping `VAR=value` assignments).
pub fn program_of(command: &str) -> Option<String> {
    shlex::split(command)?
        .into_iter()
        .find(|w| !w.contains('=') || w.starts_with('='))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bracketed_choice_is_the_active_one() {
        assert_eq!(
            bracketed("always [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(bracketed("never"), None);
    }

    #[test]
    fn this_host_has_facts_beyond_the_cpu_model() {
        let h = host();
        // Every Linux machine shows its online CPUs.
        assert!(h.facts.contains_key("cpus_online"), "{:?}", h.facts);
    }
}
