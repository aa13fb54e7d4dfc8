//! `perflab suite machine` and `perflab suite compare`: the quick suite as one run with
//! a score per item, a "slower machine" made with `--cpus 0`, moved between stores with
//! export/import, and the side-by-side (per-item ratios, geomean, host facts).

mod common;
use std::time::{Duration, Instant};

use common::*;

fn suite_json(lab: &Lab, args: &[&str]) -> serde_json::Value {
    let started = Instant::now();
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(300))
        .args(["suite", "machine", "--quick", "--json"])
        .args(args)
        .output()
        .expect("run perflab");
    eprintln!("suite machine --quick {args:?}: {:?}", started.elapsed());
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

#[test]
fn the_quick_suite_then_a_pinned_run_compared_across_stores() {
    let lab = Lab::new();
    let a = suite_json(&lab, &[]);
    let items = a["items"].as_array().unwrap();
    let names: Vec<&str> = items.iter().map(|i| i["item"].as_str().unwrap()).collect();
    for want in [
        "mem.write.4K",
        "mem.copy.256M",
        "net.stream",
        "net.rr",
        "compress.gzip",
        "compress.zstd",
        "compress.lz4",
        "crypto.rsa4096-sign",
        "crypto.sha256",
        "http.perflab-serve",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    // Every item ran all its repetitions and has a positive score with an interval.
    for i in items {
        assert_eq!(i["n"], 3, "{i}");
        let mean = i["mean"].as_f64().unwrap();
        assert!(mean > 0.0, "{i}");
        assert!(i["ci_low"].as_f64().unwrap() <= mean, "{i}");
    }
    // Programs missing here are skipped by name, not silently.
    // Under PERFLAB_REQUIRE none may be (tests/require.rs).
    for s in a["skipped"].as_array().unwrap() {
        assert!(s["why"].as_str().unwrap().contains("not found"), "{s}");
        require::missing(format!("suite item {}: {}", s["item"], s["why"]));
    }
    assert!(
        a["host"]["facts"]["cpus_online"].is_string(),
        "{}",
        a["host"]
    );
    let run_a = a["run"].as_i64().unwrap();
    // The HTML report draws the memory curve and each group's scores.
    let out = lab.run(&["report", &run_a.to_string(), "--html", "suite.html"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(lab.path("suite.html")).unwrap();
    assert!(html.contains("<h2>Machine suite</h2>"), "no suite section");
    assert!(
        html.contains("memory bandwidth by block size"),
        "no memory curve"
    );
    assert!(html.contains("crypto score"), "no crypto chart");

    // The "slower machine": every workload on CPU 0, measured into another store.
    let other = Lab::new();
    let b = suite_json(&other, &["--cpus", "0", "--only", "mem,crypto"]);
    let exported = other.run(&["export", &b["run"].to_string()]);
    assert!(exported.status.success(), "{}", stderr(&exported));
    std::fs::write(lab.path("b.json"), &exported.stdout).unwrap();
    let imported = lab.run(&["import", "b.json"]);
    assert!(imported.status.success(), "{}", stderr(&imported));
    let run_b = run_a + 1;

    let out = lab.run(&["suite", "compare", &run_a.to_string(), &run_b.to_string()]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}{}", text, stderr(&out));
    assert!(text.contains("geomean B/A over"), "{text}");
    assert!(
        text.contains("mem.write.4K") && text.contains("crypto.sha256"),
        "{text}"
    );
    assert!(text.contains("only in A: net.stream"), "{text}");
    // The host-facts diff shows what made B the slower machine.
    assert!(text.contains("pinned to cpus *"), "{text}");

    let v: serde_json::Value = serde_json::from_slice(
        &lab.run(&[
            "suite",
            "compare",
            &run_a.to_string(),
            &run_b.to_string(),
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    let geo = &v["geomean"];
    assert!(geo["ratio"].as_f64().unwrap() > 0.0, "{v}");
    assert!(geo["ci_low"].as_f64() <= geo["ratio"].as_f64(), "{v}");
    let pinned = v["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "pinned to cpus")
        .unwrap();
    assert_eq!(
        (pinned["a"].as_str(), pinned["b"].as_str()),
        (Some("all"), Some("0"))
    );
    // Every item of B has a ratio and a verdict (which one depends on this machine's
    // noise: the verdict rule itself is tested in crates/analysis/src/suite.rs).
    for row in v["items"].as_array().unwrap() {
        assert!(row["ratio"].as_f64().unwrap() > 0.0, "{row}");
        let verdict = row["verdict"].as_str().unwrap();
        assert!(
            ["faster", "slower", "within noise"].contains(&verdict),
            "{row}"
        );
    }
}

#[test]
fn a_quick_run_is_not_compared_with_a_full_one() {
    let lab = Lab::new();
    for quick in [true, false] {
        let mut args = vec!["suite", "machine", "--only", "crypto.sha256", "-r", "2"];
        if quick {
            args.push("--quick");
        }
        let out = lab.run(&args);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = lab.run(&["suite", "compare", "1", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--quick"), "{}", stderr(&out));
    // Nor a run of anything else.
    lab.run(&["bench", "true", "-r", "2"]);
    let out = lab.run(&["suite", "compare", "1", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a machine-suite run"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    let lab = Lab::new();
    for (args, words) in [
        (vec!["suite", "machine", "--only", "gpu"], "--only \"gpu\""),
        (vec!["suite", "machine", "--cpus", "x"], "--cpus"),
        (vec!["suite", "machine", "-r", "0"], "--runs"),
    ] {
        let out = lab.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(words), "{args:?}: {}", stderr(&out));
    }
    let out = lab.run(&["suite", "machine", "--list"]);
    assert!(stdout(&out).contains("mem.write.256M"), "{}", stdout(&out));
}
