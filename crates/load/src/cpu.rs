//! The generator watches itself: CPU time of the calling thread, from
//! `getrusage(RUSAGE_THREAD)` (user + system), and the time it was runnable but waited
//! for a CPU, from `/proc/thread-self/schedstat` (its second field, run-queue wait in
//! ns). Used to report CPU per request and to warn when the client, not the server, is
//! the bottleneck: a worker that shares its CPU with something else is on CPU only part
//! of the time, yet cannot go faster — busy plus waiting is what saturation means then.

use std::time::Duration;

/// A worker whose CPU time is at least this fraction of its wall time is saturated.
pub const SATURATION: f64 = 0.9;

/// CPU time (user + system) consumed so far by the calling thread.
pub(crate) fn thread_cpu() -> Duration {
    // SAFETY: an all-zero `rusage` is a valid value, and getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, exclusively borrowed rusage for the call's duration.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Time the calling thread has spent runnable but waiting for a CPU so far; zero where
/// the kernel has no schedstat (CONFIG_SCHED_INFO off): then only `busy` can tell.
pub(crate) fn thread_run_wait() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|t| t.split_ascii_whitespace().nth(1)?.parse::<u64>().ok())
        .map(Duration::from_nanos)
        .unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    #[test]
    fn thread_cpu_grows_with_work() {
        let a = super::thread_cpu();
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(30) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        assert!(super::thread_cpu() > a);
    }

    #[test]
    fn run_wait_is_read_and_never_goes_back() {
        let a = super::thread_run_wait();
        std::thread::yield_now();
        assert!(super::thread_run_wait() >= a);
    }
}
