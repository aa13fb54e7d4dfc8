//! `perflab top` end to end: the JSON-lines contract, the table with its header, and
//! bad flags exiting 2.

use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;

fn perflab() -> Command {
    let mut c = Command::cargo_bin("perflab").unwrap();
    c.timeout(Duration::from_secs(30));
    c
}

#[test]
fn json_lines_have_the_documented_fields() {
    let out = perflab()
        .args(["top", "--count", "2", "--interval", "100ms", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let mut last_t = 0.0;
    for line in lines {
        let v: Value = serde_json::from_str(line).unwrap();
        let t = v["t"].as_f64().expect("t");
        assert!(t > last_t, "t grows: {t}");
        last_t = t;
        for k in ["user", "system", "softirq", "iowait", "idle", "steal"] {
            let x = v["cpu"][k]
                .as_f64()
                .unwrap_or_else(|| panic!("cpu.{k} in {line}"));
            assert!((0.0..=100.0).contains(&x), "cpu.{k} = {x}");
        }
        for k in ["ctxt_per_s", "procs_running", "procs_blocked"] {
            assert!(v["sched"][k].as_f64().is_some(), "sched.{k} in {line}");
        }
        let disks = v["disk"].as_object().expect("disk object");
        for (dev, d) in disks {
            for k in ["r_s", "w_s", "rkb_s", "wkb_s", "aqu_sz", "await", "util"] {
                assert!(d[k].as_f64().is_some(), "disk.{dev}.{k} in {line}");
            }
        }
        for k in ["retrans_per_s", "listen_overflows_per_s"] {
            assert!(v["net"][k].as_f64().is_some(), "net.{k} in {line}");
        }
        for k in ["close_wait", "established", "time_wait"] {
            assert!(v["sockets"][k].as_u64().is_some(), "sockets.{k} in {line}");
        }
    }
}

#[test]
fn table_has_a_header_and_one_line_per_interval() {
    let out = perflab()
        .args(["top", "-n", "2", "-i", "50ms"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    for col in [
        "r",
        "b",
        "cs/s",
        "in/s",
        "us",
        "sy",
        "si",
        "wa",
        "st",
        "%util",
        "await",
        "retrans/s",
        "ovfl/s",
        "close_wait",
    ] {
        assert!(
            lines[0].split_whitespace().any(|c| c == col),
            "column {col} in {}",
            lines[0]
        );
    }
    assert!(lines[1].split_whitespace().count() >= 14, "{}", lines[1]);
}

#[test]
fn header_repeats_every_20_lines() {
    let out = perflab()
        .args(["top", "-n", "21", "-i", "50ms"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let headers: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("cs/s"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(headers, [0, 21], "{text}");
    assert_eq!(text.lines().count(), 23);
}

#[test]
fn bad_intervals_exit_2() {
    for bad in ["10ms", "soon", "0s"] {
        let out = perflab()
            .args(["top", "--interval", bad, "--count", "1"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--interval {bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error: --interval"), "{err}");
    }
    let out = perflab().args(["top", "--count", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
