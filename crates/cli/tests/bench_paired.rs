//! `perflab bench` compares its commands round by round (issue 29, items 2 and 4): the
//! wall-time verdict rests on the paired ratio, Welch's is kept beside it, and the
//! minimum detectable effect is printed and exported.

mod common;
use common::*;

use serde_json::Value;

#[test]
fn two_sleeps_are_compared_paired_with_their_minimum_detectable_effect() {
    let lab = Lab::new();
    let out = lab.run(&[
        "bench",
        "sleep 0.1",
        "sleep 0.5",
        "-r",
        "8",
        "--export-json",
        "out.json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for part in [
        "paired (8 rounds)",
        "Welch (unpaired)",
        "minimum detectable effect ±",
    ] {
        assert!(text.contains(part), "{part:?} missing in\n{text}");
    }

    let doc: Value = serde_json::from_str(&std::fs::read_to_string(lab.path("out.json")).unwrap())
        .expect("export is JSON");
    let wall = doc["comparison"]
        .as_array()
        .expect("comparison")
        .iter()
        .find(|c| c["metric"] == "wall_s")
        .expect("a wall_s comparison");
    assert_eq!(wall["basis"], "paired", "{wall}");
    let p = &wall["paired"];
    assert_eq!(p["n_pairs"], 8, "{wall}");
    let mde = wall["mde_pct"].as_f64().expect("mde_pct");
    assert!(mde > 0.0, "{wall}");
    assert!(wall["rounds_for_1pct"].as_u64().is_some(), "{wall}");
    // Welch's estimate stays in its own fields.
    assert!(wall["p_welch"].is_number() && wall["ratio_ci_low"].is_number());
    // The numbers: the ratio is 5 on an idle machine; start-up time a loaded machine
    // adds to both commands pulls it towards 1, and jitter widens the interval, never
    // past these.
    let (lo, hi) = (p["lo"].as_f64().unwrap(), p["hi"].as_f64().unwrap());
    assert!(
        lo > 1.0 && lo <= 5.1 && (lo..=10.0).contains(&hi),
        "paired ratio CI [{lo}, {hi}] must lie inside (1, 10] and start at most at 5.1"
    );
    assert_eq!(wall["verdict"], "slower", "{wall}");
    assert!(text.contains("slower"), "{text}");
    assert!(p["p_wilcoxon"].as_f64().unwrap() < 0.05, "{wall}");
}

/// Two configs of one interleaved run whose metric is computed from the round (no
/// timing): `same` differs from `base` by noise alone (±0.3 %), `slow` is 10 % lower.
const ROUNDS: &str = r#"
[experiment]
name = "rounds"
repetitions = 8
warmup = 0
noise_check = false
[matrix]
cfg = ["base", "same", "slow"]
[workload]
kind = "command"
command = "sh -c 'r={repetition}; case {cfg} in base) v=$((1000 + r * 7 % 5));; same) v=$((1000 + r * 3 % 5));; slow) v=$((900 + r * 7 % 5));; esac; echo v=$v'"
metrics.v = { regex = 'v=(\d+)', unit = "ops/s", better = "higher" }
"#;

#[test]
fn compare_within_a_run_is_paired_and_says_equivalent_when_the_interval_is_inside_the_margin() {
    let lab = Lab::new();
    let path = lab.write("rounds.toml", ROUNDS);
    let out = lab.run(&["run", path.to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json = |cand: &str, extra: &[&str]| -> Value {
        let mut args = vec!["compare", "1:cfg=base", cand, "--metric", "v", "--json"];
        args.extend(extra);
        let out = lab.run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
        doc["comparisons"][0].clone()
    };
    let same = json("1:cfg=same", &[]);
    assert_eq!(same["basis"], "paired", "{same}");
    assert_eq!(same["paired"]["n_pairs"], 8, "{same}");
    assert_eq!(same["verdict"], "equivalent", "{same}");
    assert!(same["mde_pct"].as_f64().unwrap() < 1.0, "{same}");
    // A margin narrower than the interval: no longer equivalent, and not significant.
    let tight = json("1:cfg=same", &["--equivalence", "0.1"]);
    assert_eq!(tight["verdict"], "undecided", "{tight}");
    let slow = json("1:cfg=slow", &[]);
    assert_eq!(slow["verdict"], "slower", "{slow}");
    let p = &slow["paired"];
    assert!(p["lo"].as_f64().unwrap() > 0.89 && p["hi"].as_f64().unwrap() < 0.91);

    let out = lab.run(&["compare", "1:cfg=base", "1:cfg=same", "--metric", "v"]);
    let text = stdout(&out);
    for part in [
        "paired (8 rounds)",
        "equivalent",
        "Welch (unpaired)",
        "minimum detectable effect ±",
    ] {
        assert!(text.contains(part), "{part:?} missing in\n{text}");
    }
}
