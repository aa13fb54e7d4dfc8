//! `perflab crypto` and `kind = "crypto"`: the `show --json` contract (ops/s for
//! signatures, MB/s too for bulk algorithms) and bad input as usage errors.

mod common;
use common::*;

#[test]
fn signatures_and_ciphers_in_one_run() {
    let lab = Lab::new();
    let v = lab.json(&[
        "crypto",
        "-a",
        "ed25519-sign,rsa2048-verify,aes-256-gcm",
        "--block",
        "1K",
        "--min-time",
        "0.05",
        "-r",
        "2",
        "--json",
    ]);
    let configs = v["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 3);
    for c in configs {
        let names: Vec<&str> = c["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        let bulk = c["params"]["algorithm"] == "aes-256-gcm";
        assert_eq!(names.contains(&"mb_s"), bulk, "{c}");
        assert!(names.contains(&"ops_s"));
        assert!(c["metrics"][0]["mean"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(v["run"]["kind"], "crypto");
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    let lab = Lab::new();
    for (args, words) in [
        (vec!["crypto", "-a", "rot13"], "--algorithm"),
        (vec!["crypto", "--block", "0"], "--block"),
        (vec!["crypto", "--threads", "x"], "--threads"),
        (vec!["crypto", "--min-time=0"], "--min-time"),
    ] {
        let out = lab.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(words), "{args:?}: {}", stderr(&out));
    }
}
