//! Memory stays flat whatever the duration: a longer run must not raise the peak RSS
//! of a shorter one by more than a few MB. (Own test binary, so other tests' threads do
//! not disturb the numbers.) The long run lasts the full 60 s;
//! `PERFLAB_QUICK_TESTS=1` shortens it to 4 s for quick local iterations.
mod common;

use common::{ok, Reply, TestServer};
use perflab_load::{run, LoadSpec};
use std::time::Duration;

fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn long_run_keeps_memory_flat() {
    let srv = TestServer::start(|_| Reply::Send(ok("m")));
    let spec = |secs: u64| LoadSpec {
        connections: 2,
        duration: Some(Duration::from_secs(secs)),
        ..LoadSpec::new(srv.url("/"))
    };
    let short = run(&spec(1)).unwrap();
    let after_short = peak_rss_kb();
    let long_secs = if std::env::var_os("PERFLAB_QUICK_TESTS").is_some() {
        4
    } else {
        60
    };
    let long = run(&spec(long_secs)).unwrap();
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
        "peak RSS {after_short} kB after 1 s, {after_long} kB after {long_secs} s ({} requests)",
        long.requests
    );
    assert!(growth < 4 * 1024, "peak RSS grew by {growth} kB");
}
