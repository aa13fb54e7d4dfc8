//! `perflab mem` and `kind = "mem"`: one config per operation × block size with GB/s
//! in the `show --json` contract, and bad input as usage errors naming the flag.

mod common;
use common::*;

#[test]
fn every_op_and_block_is_a_config_with_gb_s() {
    let lab = Lab::new();
    let v = lab.json(&[
        "mem",
        "-b",
        "4K,1M",
        "--op",
        "write,copy",
        "--min-time",
        "0.02",
        "-r",
        "2",
        "--json",
    ]);
    let configs = v["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 4);
    for c in configs {
        let m = &c["metrics"].as_array().unwrap()[0];
        assert_eq!(m["name"], "gb_s");
        assert_eq!(m["unit"], "GB/s");
        assert!(m["mean"].as_f64().unwrap() > 0.0, "{c}");
        assert_eq!(m["n"], 2);
        assert!(
            ["4k", "1M"].contains(&c["params"]["block"].as_str().unwrap()),
            "{c}"
        );
    }
    assert_eq!(v["run"]["kind"], "mem");
}

#[test]
fn all_threads_run() {
    let lab = Lab::new();
    let v = lab.json(&[
        "mem",
        "-b",
        "64K",
        "--op",
        "read",
        "--threads",
        "all",
        "--min-time",
        "0.02",
        "-r",
        "1",
        "--json",
    ]);
    assert_eq!(v["configs"].as_array().unwrap().len(), 1);
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    let lab = Lab::new();
    for (args, words) in [
        (vec!["mem", "-b", "0"], "--block-size"),
        (vec!["mem", "-b", "1MB"], "ambiguous"),
        (vec!["mem", "--op", "zero"], "--op"),
        (vec!["mem", "--threads", "none"], "--threads"),
        (vec!["mem", "--min-time", "0"], "--min-time"),
    ] {
        let out = lab.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(words), "{args:?}: {}", stderr(&out));
    }
}
