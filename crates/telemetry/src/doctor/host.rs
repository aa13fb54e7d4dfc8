//! Host settings that skew every measurement: swap in use and the CPU frequency
//! governor.
//!
//! Both are static checks; active swapping over the watch is the sampled rule
//! `swapping` in [`super::sampled`]. A governor other than `performance` makes latency
//! depend on how long the CPU has been busy (it ramps up under load), which is noise in
//! a benchmark and a tail-latency cost in a service. `powersave` is a warning only with
//! the classic cpufreq drivers, where it pins the lowest frequency; with intel_pstate
//! and amd-pstate it is a dynamic policy and only worth knowing.

use super::{thousands, Checked, Context, Finding, Observation, Rule, RuleKind, Severity};

/// Swap in use from which it is mentioned, kB (64 MiB).
pub const SWAP_USED_KB: u64 = 64 * 1024;

pub const SWAP: Rule = Rule {
    id: "swap",
    kind: RuleKind::Static,
    summary: "≥ 64 MiB of swap in use (info)",
    check: swap,
};

pub const CPU_GOVERNOR: Rule = Rule {
    id: "cpu-governor",
    kind: RuleKind::Static,
    summary: "a CPU not on the `performance` governor (info; powersave on acpi-cpufreq: warn)",
    check: cpu_governor,
};

fn mib(kb: u64) -> String {
    format!("{} MiB", thousands(kb / 1024))
}

fn swap(_: &Observation, a: &Observation, _: &Context) -> Checked {
    let Some(m) = &a.snap.meminfo else {
        return Checked::only_missing("/proc/meminfo not readable");
    };
    let mut c = Checked::none();
    let used = m.swap_total_kb.saturating_sub(m.swap_free_kb);
    if m.swap_total_kb > 0 && used >= SWAP_USED_KB {
        let avail = m
            .available_kb
            .map(|a| format!("; MemAvailable {}", mib(a)))
            .unwrap_or_default();
        c.push(Finding::new(
            SWAP.id,
            Severity::Info,
            format!(
                "{} of swap in use ({:.0} % of {}){avail}",
                mib(used),
                used as f64 / m.swap_total_kb as f64 * 100.0,
                mib(m.swap_total_kb)
            ),
            "a page in swap costs a disk read the next time it is touched: requests that \
             touch it take milliseconds instead of microseconds, and measurements taken now \
             include those stalls",
            "prefer dropping page cache over swapping: sysctl -w vm.swappiness=10 (persist: \
             echo 'vm.swappiness = 10' >> /etc/sysctl.d/90-perflab.conf); once memory is free \
             again, `swapoff -a && swapon -a` brings the pages back",
        ));
    }
    c
}

/// `0–3, 6` for a sorted list of CPU numbers.
fn cpu_list(cpus: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}–{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(", ")
}

fn cpu_governor(_: &Observation, a: &Observation, _: &Context) -> Checked {
    if a.cpufreq.is_empty() {
        return Checked::only_missing(
            "no /sys/devices/system/cpu/cpu*/cpufreq: no frequency scaling driver (usual in \
             virtual machines and containers)",
        );
    }
    let mut c = Checked::none();
    let mut by: std::collections::BTreeMap<(&str, &str), Vec<u32>> = Default::default();
    for f in a.cpufreq.iter().filter(|f| f.governor != "performance") {
        by.entry((&f.governor, &f.driver)).or_default().push(f.cpu);
    }
    for ((gov, driver), cpus) in by {
        let dynamic = driver.starts_with("intel_pstate") || driver.starts_with("amd-pstate");
        let sev = if gov == "powersave" && !dynamic {
            Severity::Warn
        } else {
            Severity::Info
        };
        let driver = if driver.is_empty() {
            String::new()
        } else {
            format!(" (driver {driver})")
        };
        c.push(Finding::new(
            CPU_GOVERNOR.id,
            sev,
            format!(
                "CPU{} {} on the `{gov}` governor{driver}",
                if cpus.len() > 1 { "s" } else { "" },
                cpu_list(&cpus)
            ),
            "the frequency follows recent load: the first milliseconds of a burst run \
             slowly, so latency depends on what ran before and benchmark results drift \
             between runs",
            "cpupower frequency-set -g performance  (or: echo performance | tee \
             /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)",
        ));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ranges() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 6]), "0–3, 6");
        assert_eq!(cpu_list(&[5]), "5");
    }
}
