//! `perflab net`: loopback stream and rr in the `show --json` contract, a sink started
//! with `--serve` in another process as the peer, and an unreachable peer (exit 1) or
//! bad flags (exit 2) said clearly.

mod common;
use common::*;

use std::io::BufRead;
use std::process::{Command, Stdio};

fn names(c: &serde_json::Value) -> Vec<String> {
    c["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn loopback_stream_and_rr() {
    let lab = Lab::new();
    let v = lab.json(&["net", "-d", "0.3", "-r", "2", "-P", "2", "--json"]);
    let n = names(&v["configs"][0]);
    for m in ["mb_s", "sender_cpu_s_per_gb", "receiver_cpu_s_per_gb"] {
        assert!(n.iter().any(|x| x == m), "{m} in {n:?}");
    }
    let v = lab.json(&[
        "net", "--mode", "rr", "--size", "64", "-d", "0.3", "-r", "1", "--json",
    ]);
    let n = names(&v["configs"][0]);
    for m in ["transactions_s", "latency_p50_us", "latency_p99_us"] {
        assert!(n.iter().any(|x| x == m), "{m} in {n:?}");
    }
    assert_eq!(v["run"]["kind"], "net");
}

#[test]
fn a_sink_in_another_process_is_the_peer() {
    let mut sink = Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["net", "--serve", "--bind", "127.0.0.1", "--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(sink.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    let lab = Lab::new();
    let out = lab.run(&["net", &addr, "-d", "0.3", "-r", "1", "--json"]);
    let _ = sink.kill();
    let _ = sink.wait();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = names(&v["configs"][0]);
    assert!(n.iter().any(|x| x == "mb_s"));
    // The sink's CPU is on the other host: not claimed here.
    assert!(!n.iter().any(|x| x == "receiver_cpu_s_per_gb"), "{n:?}");
}

#[test]
fn unreachable_peer_and_bad_flags() {
    let lab = Lab::new();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    drop(l);
    let out = lab.run(&["net", &addr, "-d", "0.1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("cannot reach {addr}")),
        "{}",
        stderr(&out)
    );
    for (args, words) in [
        (vec!["net", "--mode", "udp"], "--mode"),
        (vec!["net", "-P", "0"], "-P"),
        (vec!["net", "nohostport"], "PEER"),
    ] {
        let out = lab.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(words), "{args:?}: {}", stderr(&out));
    }
}
