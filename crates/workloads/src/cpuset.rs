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

    /// Checks every CPU is online on this machine. Reads the kernel's online list, not
    /// this process's affinity: under `taskset` a narrower affinity must not hide CPUs
    /// the user may still pin to.
    pub fn check_online(&self) -> Result<(), String> {
        self.check_within(&online_cpus())
    }

    fn check_within(&self, online: &CpuSet) -> Result<(), String> {
        match self
            .cpus
            .iter()
            .find(|c| online.cpus.binary_search(c).is_err())
        {
            Some(c) => Err(format!(
                "CPU {c} in {:?} is not online: this machine's online CPUs are {}",
                self.text, online.text
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

/// The online CPUs: `/sys/devices/system/cpu/online`, or `0..sysconf(NPROCESSORS_ONLN)`
/// where sysfs is not mounted.
fn online_cpus() -> CpuSet {
    if let Ok(text) = std::fs::read_to_string("/sys/devices/system/cpu/online") {
        if let Ok(set) = CpuSet::parse(text.trim()) {
            return CpuSet {
                text: text.trim().to_string(),
                ..set
            };
        }
    }
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    CpuSet {
        cpus: (0..n).collect(),
        text: format!("0-{}", n - 1),
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

/// The calling thread pinned to a CPU set until dropped, when its previous affinity
/// comes back. For workloads that run inside perflab (HTTP load, disk): threads they
/// spawn while the guard lives inherit the set, and `available_parallelism` (which
/// sizes the HTTP engine's default thread count) sees only the pinned CPUs.
pub struct PinnedThread {
    previous: libc::cpu_set_t,
}

impl PinnedThread {
    /// Pins the calling thread to `set`; the error names the set.
    pub fn pin(set: &CpuSet) -> Result<PinnedThread, String> {
        // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
        let mut previous: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: valid pointer and size; pid 0 is the calling thread.
        if unsafe { libc::sched_getaffinity(0, size, &mut previous) } != 0 {
            return Err(format!(
                "cannot read this thread's CPU affinity: {}",
                std::io::Error::last_os_error()
            ));
        }
        pin_raw(&set.to_raw()).map_err(|e| format!("cannot pin to CPUs {set}: {e}"))?;
        Ok(PinnedThread { previous })
    }
}

impl Drop for PinnedThread {
    fn drop(&mut self) {
        // Restoring a mask this thread had a moment ago cannot sensibly fail; if it
        // does, the thread merely stays pinned.
        let _ = pin_raw(&self.previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPUs the calling thread may run on.
    fn current_affinity() -> Vec<usize> {
        // SAFETY: as in PinnedThread::pin.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: c < CPU_SETSIZE.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }

    #[test]
    fn pinned_thread_restores_affinity_and_children_inherit() {
        let before = current_affinity();
        assert!(!before.is_empty());
        let one = CpuSet::parse(&before[0].to_string()).unwrap();
        std::thread::spawn(move || {
            let outer = current_affinity();
            {
                let _pin = PinnedThread::pin(&one).unwrap();
                assert_eq!(current_affinity(), one.cpus());
                let child = std::thread::spawn(current_affinity).join().unwrap();
                assert_eq!(child, one.cpus(), "a thread spawned while pinned inherits");
                assert_eq!(std::thread::available_parallelism().unwrap().get(), 1);
            }
            assert_eq!(current_affinity(), outer, "dropping the guard restores");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn online_check_uses_the_online_list_not_the_affinity() {
        let online = CpuSet::parse("0-1,4").unwrap();
        assert!(CpuSet::parse("0,4").unwrap().check_within(&online).is_ok());
        let err = CpuSet::parse("1-2")
            .unwrap()
            .check_within(&online)
            .unwrap_err();
        assert!(err.contains("CPU 2") && err.contains("0-1,4"), "{err}");
        // The real list holds every CPU this process may run on, whatever its affinity.
        for c in current_affinity() {
            let one = CpuSet::parse(&c.to_string()).unwrap();
            assert!(one.check_online().is_ok(), "CPU {c}");
        }
        assert!(CpuSet::parse("1023").unwrap().check_online().is_err());
    }

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
