//! `perflab compare` end to end on synthetic runs whose metric `v` is printed by
//! `sh -c` with a known mean per config and the same zero-mean noise per repetition,
//! so every mean, ratio and ratio of ratios is known exactly.

mod common;
use common::*;
use serde_json::{json, Value};

/// Noise added per repetition 1..=8: mean 0, sd ≈ 5.
const NOISE: &str = "0 7 -5 3 -8 6 -2 -1";

/// An experiment over `param` whose metric `v` (higher is better) has mean `base` for
/// each value; `u` is a copy of `v` (so that a geometric mean has two metrics); `extra`
/// adds a metric `w` the other side does not have. The CPU-loop noise check is off:
/// compared across runs, a difference within the runs' measured noise is "within
/// noise" (tests/compare_across.rs), and the verdicts here are about the statistics.
fn experiment(name: &str, param: &str, levels: &[(&str, i64)], extra: bool) -> String {
    let values: Vec<String> = levels.iter().map(|(l, _)| format!("{l:?}")).collect();
    let cases: String = levels
        .iter()
        .map(|(l, b)| format!("{l}) b={b};; "))
        .collect();
    let w = if extra { " w=1" } else { "" };
    let wmetric = if extra {
        "metrics.w = { regex = 'w=(\\d+)', unit = \"x\", better = \"higher\" }\n"
    } else {
        ""
    };
    format!(
        r#"
[experiment]
name = "{name}"
repetitions = 8
warmup = 0
noise_check = false
[matrix]
{param} = [{}]
[workload]
kind = "command"
command = "sh -c 'case {{{param}}} in {cases}esac; set -- {NOISE}; shift $(( {{repetition}} - 1 )); echo v=$(( b + $1 )){w}'"
metrics.v = {{ regex = 'v=(\d+)', unit = "ops/s", better = "higher" }}
metrics.u = {{ regex = 'v=(\d+)', unit = "ops/s", better = "higher" }}
{wmetric}"#,
        values.join(", ")
    )
}

/// Runs an experiment file in the lab and returns the new run's id.
fn run(lab: &Lab, file: &str, text: &str) -> String {
    let path = lab.write(file, text);
    let out = lab.run(&["run", path.to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    lab.open_store().latest_run().unwrap().id.to_string()
}

/// Run 1: baseline at 1000; run 2: candidates 10 % and 1 % lower, 10 % higher.
fn baseline_and_candidates(lab: &Lab) -> (String, String) {
    let base = run(
        lab,
        "base.toml",
        &experiment("base", "speed", &[("fast", 1000)], false),
    );
    let cand = run(
        lab,
        "cand.toml",
        &experiment(
            "cand",
            "speed",
            &[("minus10", 900), ("minus1", 990), ("plus10", 1100)],
            true,
        ),
    );
    (base, cand)
}

fn find<'a>(doc: &'a Value, metric: &str) -> &'a Value {
    doc["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == metric)
        .unwrap_or_else(|| panic!("no comparison of {metric} in {doc}"))
}

#[test]
fn fail_on_regression_5_exits_3_on_a_10_percent_regression_and_0_on_1_percent() {
    let lab = Lab::new();
    let (base, cand) = baseline_and_candidates(&lab);
    let gate = |sel: &str| {
        lab.run(&[
            "compare",
            &base,
            &format!("{cand}:speed={sel}"),
            "--metric",
            "v",
            "--fail-on-regression",
            "5",
        ])
    };
    let out = gate("minus10");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("regression: v is 10.0% worse"), "{err}");
    assert!(stdout(&out).contains("slower"), "{}", stdout(&out));

    // 1 % lower is significant (the noise is small) but under the limit.
    let out = gate("minus1");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("slower"), "{}", stdout(&out));

    // Higher is better: 10 % higher is an improvement, not a regression.
    let out = gate("plus10");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("faster"), "{}", stdout(&out));
}

#[test]
fn json_carries_every_documented_field() {
    let lab = Lab::new();
    let (base, cand) = baseline_and_candidates(&lab);
    // The measured whole-tree metrics (peak_rss_bytes, ...) are left out: their values
    // often tie, and ties can give a Mann–Whitney z of exactly 0, on which
    // perflab-stats' normal_sf panics (statrs gamma_ur(0.5, 0)).
    let cand_sel = format!("{cand}:speed=minus10");
    let mut args = vec!["compare", base.as_str(), cand_sel.as_str()];
    args.extend([
        "--metric", "v", "--metric", "u", "--metric", "w", "--metric", "wall_s",
    ]);
    let mut json_args = args.clone();
    json_args.push("--json");
    let doc = lab.json(&json_args);
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["baseline"]["run"], base.parse::<i64>().unwrap());
    assert_eq!(doc["baseline"]["params"], json!({"speed": "fast"}));
    assert_eq!(doc["candidate"]["params"], json!({"speed": "minus10"}));
    let v = find(&doc, "v");
    for key in [
        "metric",
        "unit",
        "better",
        "baseline_mean",
        "candidate_mean",
        "ratio",
        "ratio_ci_low",
        "ratio_ci_high",
        "ci_method",
        "rel_diff_pct",
        "p_welch",
        "p_mwu",
        "verdict",
        "significant",
    ] {
        assert!(!v[key].is_null(), "{key} missing in {v}");
    }
    assert_eq!(v["baseline_mean"], 1000.0);
    assert_eq!(v["candidate_mean"], 900.0);
    assert!((v["ratio"].as_f64().unwrap() - 0.9).abs() < 1e-12);
    assert!(
        v["ratio_ci_low"].as_f64().unwrap() < 0.9 && v["ratio_ci_high"].as_f64().unwrap() > 0.9
    );
    assert_eq!(v["verdict"], "slower");
    assert_eq!(v["significant"], true);
    assert_eq!(v["better"], "higher");
    assert_eq!(v["ci_method"], "fieller");
    // A measured metric is compared too; the geometric mean is per direction and
    // needs two metrics: only `v` and `u` (higher is better) have one.
    find(&doc, "wall_s");
    let geo = doc["geomean"].as_array().unwrap();
    assert_eq!(geo.len(), 1, "{geo:?}");
    assert_eq!(geo[0]["better"], "higher");
    assert_eq!(geo[0]["metrics"], json!(["v", "u"]));
    assert!((geo[0]["ratio"].as_f64().unwrap() - 0.9).abs() < 1e-12);
    for key in ["ci_low", "ci_high", "n_metrics"] {
        assert!(!geo[0][key].is_null(), "{key} missing in {}", geo[0]);
    }
    // `w` is only measured by the candidate.
    assert!(
        doc["skipped"]
            .as_array()
            .unwrap()
            .contains(&json!({"metric": "w", "only_in": "candidate"})),
        "{}",
        doc["skipped"]
    );

    let out = lab.run(&args);
    let text = stdout(&out);
    for part in [
        "geomean ↑ (2 metrics)",
        "ratio [95% CI]",
        "p (Welch)",
        "0.9000 [",
        "-10.0%",
        "w (candidate only)",
    ] {
        assert!(text.contains(part), "{part:?} missing in\n{text}");
    }
}

#[test]
fn a_side_must_name_one_config_and_metrics_must_exist() {
    let lab = Lab::new();
    let (base, cand) = baseline_and_candidates(&lab);
    let out = lab.run(&["compare", &base, &cand]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("has 3 configs") && err.contains("speed=minus10; speed=minus1; speed=plus10"),
        "{err}"
    );
    let out = lab.run(&["compare", &base, &format!("{cand}:speed=other")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = lab.run(&["compare", &base, &format!("{cand}:level=1")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no parameter \"level\""),
        "{}",
        stderr(&out)
    );
    let out = lab.run(&[
        "compare",
        &base,
        &format!("{cand}:speed=minus1"),
        "--metric",
        "vv",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no metric \"vv\""),
        "{}",
        stderr(&out)
    );
    let out = lab.run(&["compare", &base, "99"]);
    assert_eq!(out.status.code(), Some(2));
    let out = lab.run(&["compare", &base]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn baseline_mode_compares_every_other_config_with_one() {
    let lab = Lab::new();
    let (_, cand) = baseline_and_candidates(&lab);
    let doc = lab.json(&[
        "compare",
        &cand,
        "--baseline",
        "speed=minus1",
        "--metric",
        "v",
        "--json",
    ]);
    assert_eq!(doc["baseline"]["params"], json!({"speed": "minus1"}));
    let c = doc["comparisons"].as_array().unwrap();
    assert_eq!(c.len(), 2, "{doc}");
    assert_eq!(c[0]["candidate_params"], json!({"speed": "minus10"}));
    assert_eq!(c[1]["candidate_params"], json!({"speed": "plus10"}));
    assert_eq!(c[0]["verdict"], "slower");
    assert_eq!(c[1]["verdict"], "faster");

    let out = lab.run(&[
        "compare",
        &cand,
        "--baseline",
        "speed=minus1",
        "--fail-on-regression",
        "5",
        "--metric",
        "v",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(stdout(&out).matches("candidate:").count(), 2);
    assert!(stderr(&out).contains("speed=minus10"), "{}", stderr(&out));
}

#[test]
fn a_metric_with_one_trial_is_shown_as_too_few_trials() {
    let lab = Lab::new();
    let id = run(
        &lab,
        "one.toml",
        &experiment("one", "x", &[("a", 10), ("b", 20)], false)
            .replace("repetitions = 8", "repetitions = 1"),
    );
    let out = lab.run(&["compare", &format!("{id}:x=a"), &format!("{id}:x=b")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("too few trials"), "{}", stdout(&out));
    let doc = lab.json(&[
        "compare",
        &format!("{id}:x=a"),
        &format!("{id}:x=b"),
        "--json",
    ]);
    let v = find(&doc, "v");
    assert_eq!(v["verdict"], "too few trials");
    assert_eq!(v["n_baseline"], 1);
    assert!(v["ratio"].is_null());
}

/// Checks an interaction entry: ratio of ratios 2.0 inside both intervals.
fn assert_ratio_of_ratios_2(doc: &Value) {
    assert_eq!(doc["schema_version"], 1);
    let i = doc["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metric"] == "v")
        .unwrap_or_else(|| panic!("no v in {doc}"));
    assert_eq!(i["factor"], "lang");
    assert_eq!(i["numerator"], "c");
    assert_eq!(i["denominator"], "java");
    let rr = i["ratio_of_ratios"].as_f64().unwrap();
    assert!((rr - 2.0).abs() < 1e-12, "{i}");
    for (lo, hi) in [
        ("ci_low", "ci_high"),
        ("bootstrap_ci_low", "bootstrap_ci_high"),
    ] {
        let (lo, hi) = (i[lo].as_f64().unwrap(), i[hi].as_f64().unwrap());
        assert!(lo < 2.0 && 2.0 < hi, "{lo} … {hi} in {i}");
    }
    let ratios = i["ratios"].as_array().unwrap();
    assert_eq!(ratios.len(), 2);
    assert!((ratios[0]["ratio"].as_f64().unwrap() - 2.0).abs() < 1e-12);
    assert!((ratios[1]["ratio"].as_f64().unwrap() - 1.0).abs() < 1e-12);
    for r in ratios {
        for key in ["level", "ci_low", "ci_high"] {
            assert!(!r[key].is_null(), "{key} missing in {r}");
        }
    }
}

#[test]
fn interaction_of_two_runs_recovers_a_ratio_of_ratios_of_2() {
    let lab = Lab::new();
    // x86: c 1000, java 500 → c/java = 2; arm: both 1000 → 1.
    let x = run(
        &lab,
        "x.toml",
        &experiment("x86", "lang", &[("c", 1000), ("java", 500)], false),
    );
    let y = run(
        &lab,
        "y.toml",
        &experiment("arm", "lang", &[("c", 1000), ("java", 1000)], false),
    );
    let doc = lab.json(&[
        "compare",
        &x,
        &y,
        "--interaction",
        "lang",
        "--metric",
        "v",
        "--json",
    ]);
    assert_ratio_of_ratios_2(&doc);
    let i = &doc["interactions"][0];
    assert_eq!(i["ratios"][0]["level"], x.parse::<i64>().unwrap());
    assert_eq!(i["ratios"][1]["level"], y.parse::<i64>().unwrap());
    assert!(i["by"].is_null());

    let out = lab.run(&["compare", &x, &y, "--interaction", "lang", "--metric", "v"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("lang: c / java"), "{text}");
    assert!(text.contains("2.000 ["), "{text}");

    // Exactly two levels are needed.
    let three = run(
        &lab,
        "three.toml",
        &experiment(
            "three",
            "lang",
            &[("c", 100), ("java", 200), ("go", 300)],
            false,
        ),
    );
    let out = lab.run(&["compare", &three, &y, "--interaction", "lang"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("found 3: c, java, go"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn interaction_by_a_second_parameter_within_one_run() {
    let lab = Lab::new();
    let text = format!(
        r#"
[experiment]
name = "two-by-two"
repetitions = 8
warmup = 0
[matrix]
platform = ["x86", "arm"]
lang = ["c", "java"]
[workload]
kind = "command"
command = "sh -c 'case {{platform}}-{{lang}} in x86-java) b=500;; *) b=1000;; esac; set -- {NOISE}; shift $(( {{repetition}} - 1 )); echo v=$(( b + $1 ))'"
metrics.v = {{ regex = 'v=(\d+)', unit = "ops/s", better = "higher" }}
"#
    );
    let id = run(&lab, "grid.toml", &text);
    let doc = lab.json(&[
        "compare",
        &id,
        "--interaction",
        "lang",
        "--by",
        "platform",
        "--metric",
        "v",
        "--json",
    ]);
    assert_ratio_of_ratios_2(&doc);
    let i = &doc["interactions"][0];
    assert_eq!(i["by"], "platform");
    assert_eq!(i["ratios"][0]["level"], "x86");
    assert_eq!(i["ratios"][1]["level"], "arm");

    // The same design, the settings named by selectors.
    let doc = lab.json(&[
        "compare",
        &format!("{id}:platform=x86"),
        &format!("{id}:platform=arm"),
        "--interaction",
        "lang",
        "--metric",
        "v",
        "--json",
    ]);
    assert_ratio_of_ratios_2(&doc);

    let out = lab.run(&["compare", &id, "--interaction", "lang"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = lab.run(&["compare", &id, "--interaction", "lang", "--by", "lang"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
