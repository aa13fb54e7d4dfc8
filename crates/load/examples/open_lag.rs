//! Measures how late the open loop keeps its schedule against a server that answers at
//! once: `cargo run --release -p perflab-load --example open_lag -- URL [RATE] [SECONDS]`.
//! Prints the corrected and uncorrected latency; their difference is the generator's lag.

use perflab_load::{run, LoadSpec};
use std::time::Duration;

fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("usage: open_lag URL [RATE] [SECONDS]");
    let rate: f64 = args.next().map_or(2000.0, |a| a.parse().expect("rate"));
    let secs: f64 = args.next().map_or(3.0, |a| a.parse().expect("seconds"));
    let spec = LoadSpec {
        connections: 1,
        max_connections: Some(1),
        rate: Some(rate),
        duration: Some(Duration::from_secs_f64(secs)),
        ..LoadSpec::new(url)
    };
    let r = run(&spec).expect("load test ran");
    let u = r.latency_uncorrected_ms.expect("open loop");
    let c = &r.latency_ms;
    println!(
        "rps {:.0} corrected p50 {:.3} p90 {:.3} p99 {:.3} | uncorrected p50 {:.3} p90 {:.3} p99 {:.3} ms | late {}",
        r.rps, c.p50, c.p90, c.p99, u.p50, u.p90, u.p99, r.late
    );
}
