//! `perflab compare A B` across runs and hosts: the noise floor (a difference within it
//! is "within noise", never faster, and no regression), the host facts that differ,
//! and a warning per recorded parameter that differs off the compared axis.
//!
//! The runs are synthetic: their metric `v` is printed by `sh -c` with a known mean
//! and the same noise per repetition (sd ≈ 5 on 1000, a CV of 0.5 %), and their own
//! CPU-loop check is off so that the floor is known. The "other host" is one of them
//! exported, its host facts (and CPU-loop noise) edited, and imported again.

mod common;
use common::*;
use serde_json::{json, Value};

/// Noise added per repetition 1..=8: mean 0, sd ≈ 5.
const NOISE: &str = "0 7 -5 3 -8 6 -2 -1";

/// A run with one config `io = IO` whose metric `v` (higher is better) has mean
/// `mean`; returns its id.
fn run(lab: &Lab, name: &str, io: &str, mean: i64) -> String {
    let text = format!(
        r#"
[experiment]
name = "{name}"
repetitions = 8
warmup = 0
noise_check = false
[matrix]
io = ["{io}"]
[workload]
kind = "command"
command = "sh -c 'set -- {NOISE}; shift $(( {{repetition}} - 1 )); echo v=$(( {mean} + $1 ))'"
metrics.v = {{ regex = 'v=(\d+)', unit = "ops/s", better = "higher" }}
"#
    );
    let path = lab.write(&format!("{name}.toml"), &text);
    let out = lab.run(&["run", path.to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    lab.open_store().latest_run().unwrap().id.to_string()
}

/// Exports run `id`, lets `edit` change the document, and imports it as a new run
/// (a new uuid); returns the new run's id.
fn reimport(lab: &Lab, id: &str, edit: impl FnOnce(&mut Value)) -> String {
    let out = lab.run(&["export", id]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["run"]["uuid"] = json!(format!(
        "{}-elsewhere",
        doc["run"]["uuid"].as_str().unwrap()
    ));
    edit(&mut doc);
    let file = lab.path(&format!("run{id}-edited.json"));
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let imported = lab.json(&["import", file.to_str().unwrap(), "--json"]);
    imported["id"].to_string()
}

/// Makes an exported run's host another machine, as the run and the store saw it.
fn elsewhere(doc: &mut Value) {
    let edit = |host: &mut Value| {
        host["hostname"] = json!("arm-box");
        host["cpu_model"] = json!("Cortex-A72");
        host["cores"] = json!(4);
        host["governor"] = json!("powersave");
    };
    edit(&mut doc["host"]);
    edit(&mut doc["run"]["environment"]["host"]);
}

fn comparison<'a>(doc: &'a Value, metric: &str) -> &'a Value {
    doc["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == metric)
        .unwrap_or_else(|| panic!("no comparison of {metric} in {doc}"))
}

#[test]
fn runs_from_different_hosts_list_the_facts_that_differ_and_a_noise_floor() {
    let lab = Lab::new();
    let a = run(&lab, "here", "uring", 1000);
    let b = run(&lab, "there", "uring", 1100);
    let b = reimport(&lab, &b, |doc| {
        elsewhere(doc);
        doc["run"]["environment"]["noise_cv"] = json!(0.004);
    });
    let args = ["compare", a.as_str(), b.as_str(), "--metric", "v"];
    let doc = lab.json(&[&args[..], &["--json"]].concat());
    let differ = doc["host_facts_differ"].as_array().unwrap();
    for (fact, there) in [
        ("hostname", "arm-box"),
        ("cpu model", "Cortex-A72"),
        ("cores", "4"),
        ("governor", "powersave"),
    ] {
        let f = differ
            .iter()
            .find(|f| f["fact"] == fact)
            .unwrap_or_else(|| panic!("{fact} not in {differ:?}"));
        assert_eq!(f["b"], there, "{f}");
        assert_ne!(f["a"], f["b"], "{f}");
    }
    assert!(
        differ.iter().all(|f| f["a"] != f["b"]),
        "only facts that differ: {differ:?}"
    );
    assert_eq!(doc["noise_cv"], json!({"a": null, "b": 0.004}));
    let v = comparison(&doc, "v");
    // The floor is the larger of each side's own CV (≈ 0.5 %) and B's CPU loop (0.4 %).
    let floor = v["noise_floor"].as_f64().unwrap();
    assert!(floor > 0.004 && floor < 0.01, "{v}");
    assert_eq!(v["verdict"], "faster", "10 % is far beyond the floor: {v}");
    assert_eq!(doc["params_differ"], json!([]));

    let out = lab.run(&args);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    for part in [
        "noise floor: A's CPU loop was not measured, B's CPU loop varied 0.4% (CV)",
        "v ±0.",
        "host facts that differ",
        "arm-box",
        "Cortex-A72",
        "powersave",
    ] {
        assert!(text.contains(part), "{part:?} missing in\n{text}");
    }
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
}

#[test]
fn a_significant_difference_within_the_noise_floor_is_within_noise_and_no_regression() {
    let lab = Lab::new();
    let a = run(&lab, "base", "uring", 1000);
    // 1 % faster with the same noise: significant, and beyond both sides' CV.
    let b = run(&lab, "plus1", "uring", 1010);
    let doc = lab.json(&["compare", &a, &b, "--metric", "v", "--json"]);
    let v = comparison(&doc, "v");
    assert_eq!(v["verdict"], "faster", "{v}");
    assert_eq!(v["significant"], true, "{v}");
    // The same trials from a run whose machine was noisier (its CPU loop varied 2 %).
    let noisy = reimport(&lab, &b, |doc| {
        doc["run"]["environment"]["noise_cv"] = json!(0.02);
    });
    let doc = lab.json(&["compare", &a, &noisy, "--metric", "v", "--json"]);
    let v = comparison(&doc, "v");
    assert_eq!(v["noise_floor"], 0.02, "{v}");
    assert_eq!(v["verdict"], "within noise", "{v}");
    // Still significant as a statistic: the floor is what decides it is no difference.
    assert_eq!(v["significant"], true, "{v}");
    let out = lab.run(&["compare", &a, &noisy, "--metric", "v"]);
    let text = stdout(&out);
    assert!(text.contains("within noise"), "{text}");
    assert!(!text.contains("faster"), "{text}");
    // The same host (only its noise differs): no host fact is listed.
    assert!(
        text.contains("host facts: the same on both sides"),
        "{text}"
    );

    // The other way round it is 1 % slower: a regression over 0.5 % on the quiet
    // run, none within the noisy run's floor.
    let gate = |base: &str| {
        lab.run(&[
            "compare",
            base,
            &a,
            "--metric",
            "v",
            "--fail-on-regression",
            "0.5",
        ])
    };
    let out = gate(&b);
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("regression: v is"),
        "{}",
        stderr(&out)
    );
    let out = gate(&noisy);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).contains("within noise"), "{}", stdout(&out));
}

#[test]
fn parameters_that_differ_off_the_compared_axis_are_warned_about() {
    let lab = Lab::new();
    let a = run(&lab, "uring", "uring", 1000);
    let b = run(&lab, "epoll", "epoll", 1000);
    let out = lab.run(&["compare", &a, &b, "--metric", "v"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning: the runs differ in io: A used uring, B used epoll — "),
        "{err}"
    );
    let doc = lab.json(&["compare", &a, &b, "--metric", "v", "--json"]);
    assert_eq!(
        doc["params_differ"],
        json!([{"param": "io", "a": "uring", "b": "epoll"}])
    );
    // Named in the sides, io is the axis compared: no warning.
    let (sa, sb) = (format!("{a}:io=uring"), format!("{b}:io=epoll"));
    let out = lab.run(&["compare", &sa, &sb, "--metric", "v"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
}

#[test]
fn a_comparison_inside_one_run_on_one_host_has_no_floor() {
    let lab = Lab::new();
    let a = run(&lab, "one", "uring", 1000);
    let doc = lab.json(&["compare", &a, &a, "--metric", "v", "--json"]);
    assert!(doc.get("host_facts_differ").is_none(), "{doc}");
    assert!(comparison(&doc, "v").get("noise_floor").is_none(), "{doc}");
}
