//! Memory stays flat whatever the duration: a longer run must not raise the peak RSS
//! of a shorter one by more than a few MB. (Own test binary, so other tests' threads do
//! not disturb the numbers.) The long run lasts the full 60 s;
//! `PERFLAB_QUICK_TESTS=1` shortens it to 4 s for quick local iterations. Both I/O
//! engines are checked, one after the other.
mod common;

use common::{ok, run_on, uring_or_skip, Reply, TestServer};
use perflab_load::{IoChoice, LoadSpec};
use std::time::Duration;

fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Resets the peak RSS to the current RSS, so one engine's run does not hide the next
/// one's growth.
fn reset_peak_rss() {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
}

/// One engine after the other (not two tests: they would share the process's peak).
#[test]
fn long_run_keeps_memory_flat() {
    long_run_keeps_memory_flat_on(IoChoice::Epoll);
    if uring_or_skip() {
        long_run_keeps_memory_flat_on(IoChoice::Uring);
    }
}

fn long_run_keeps_memory_flat_on(io: IoChoice) {
    let srv = TestServer::start(|_| Reply::Send(ok("m")));
    let spec = |secs: u64| LoadSpec {
        connections: 2,
        duration: Some(Duration::from_secs(secs)),
        io,
        ..LoadSpec::new(srv.url("/"))
    };
    reset_peak_rss();
    let short = run_on(&spec(1));
    let after_short = peak_rss_kb();
    let long_secs = if std::env::var_os("PERFLAB_QUICK_TESTS").is_some() {
        4
    } else {
        60
    };
    let long = run_on(&spec(long_secs));
    let after_long = peak_rss_kb();
    assert!(
        long.requests > 2 * short.requests,
        "{} vs {}",
        long.requests,
        short.requests
    );
    assert_eq!(long.series.len() as u64, long_secs);
    let growth = after_long.saturating_sub(after_short);
    eprintln!(
        "{io:?}: peak RSS {after_short} kB after 1 s, {after_long} kB after {long_secs} s ({} \
         requests)",
        long.requests
    );
    assert!(growth < 4 * 1024, "peak RSS grew by {growth} kB");
}
