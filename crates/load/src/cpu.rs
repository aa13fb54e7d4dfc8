//! The generator watches itself: CPU time of the calling thread, from
//! `getrusage(RUSAGE_THREAD)` (user + system). Used to report CPU per request and to
//! warn when the client, not the server, is the bottleneck.

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
}
