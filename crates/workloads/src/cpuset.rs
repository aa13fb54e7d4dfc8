//! CPU lists (`"1"`, `"0-1"`, `"0,2-3"`) and pinning a process to them.

use std::fmt;

/// A set of logical CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSet {
    cpus: Vec<usize>,
    text: String,
}

impl CpuSet {
    /// Parses a Linux-style CPU list. Errors name what is wrong and the expected form.
    pub fn parse(s: &str) -> Result<CpuSet, String> {
        let mut cpus = Vec::new();
        let expected = "expected a CPU list such as \"1\", \"0-1\" or \"0,2-3\"";
        if s.trim().is_empty() {
            return Err(format!("empty CPU list; {expected}"));
        }
        for part in s.split(',') {
            let part = part.trim();
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let a: usize = a
                .parse()
                .map_err(|_| format!("bad CPU number {a:?} in {s:?}; {expected}"))?;
            let b: usize = b
                .parse()
                .map_err(|_| format!("bad CPU number {b:?} in {s:?}; {expected}"))?;
            if a > b {
                return Err(format!("CPU range {part:?} runs backwards; {expected}"));
            }
            if b >= libc::CPU_SETSIZE as usize {
                return Err(format!("CPU {b} is beyond what Linux can address"));
            }
            cpus.extend(a..=b);
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuSet {
            cpus,
            text: s.to_string(),
        })
    }

    /// The CPUs, sorted.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// Checks every CPU exists on this machine.
    pub fn check_online(&self) -> Result<(), String> {
        let n = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        match self.cpus.iter().find(|&&c| c >= n) {
            Some(c) => Err(format!(
                "CPU {c} in {:?} does not exist: this machine has CPUs 0-{}",
                self.text,
                n - 1
            )),
            None => Ok(()),
        }
    }

    /// The raw `cpu_set_t`, built before fork so that pinning after fork allocates nothing.
    pub fn to_raw(&self) -> libc::cpu_set_t {
        // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in &self.cpus {
            // SAFETY: c < CPU_SETSIZE was checked in parse.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        set
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Pins the calling process (used in `pre_exec`, so async-signal-safe only).
pub fn pin_raw(set: &libc::cpu_set_t) -> std::io::Result<()> {
    // SAFETY: sched_setaffinity with a valid pointer and size.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_ranges() {
        assert_eq!(CpuSet::parse("1").unwrap().cpus(), &[1]);
        assert_eq!(CpuSet::parse("0-1").unwrap().cpus(), &[0, 1]);
        assert_eq!(CpuSet::parse("0,2-3").unwrap().cpus(), &[0, 2, 3]);
    }

    #[test]
    fn rejects_bad_lists() {
        for bad in ["", "a", "3-1", "1-", "0,,1"] {
            assert!(CpuSet::parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }
}
