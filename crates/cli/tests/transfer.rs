//! `perflab export` and `perflab import`: a run moved to another store compares and
//! summarizes bit for bit as it did where it was measured; a second import is refused.

mod common;
use common::*;

const BASE: &str = r#"
[experiment]
name = "base"
repetitions = 6
warmup = 0
[workload]
kind = "command"
command = "sh -c 'set -- 0 7 -5 3 -8 6; shift $(( {repetition} - 1 )); echo v=$(( 1000 + $1 )) f=0.001562168228035410{repetition}'"
metrics.v = { regex = 'v=(\d+)', unit = "ops/s", better = "higher" }
metrics.f = { regex = 'f=([\d.]+)', unit = "s", better = "lower" }
"#;

const CAND: &str = r#"
[experiment]
name = "cand"
repetitions = 6
warmup = 0
[matrix]
speed = [900, 990]
[workload]
kind = "command"
command = "sh -c 'set -- 0 7 -5 3 -8 6; shift $(( {repetition} - 1 )); echo v=$(( {speed} + $1 ))'"
metrics.v = { regex = 'v=(\d+)', unit = "ops/s", better = "higher" }
"#;

/// A lab with run 1 (BASE) and run 2 (CAND).
fn measured() -> Lab {
    let lab = Lab::new();
    for (name, text) in [("base.toml", BASE), ("cand.toml", CAND)] {
        let f = lab.write(name, text);
        let out = lab.run(&["run", f.to_str().unwrap(), "-q"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    lab
}

#[test]
fn runs_exported_and_imported_elsewhere_compare_exactly_as_before() {
    let a = measured();
    // wall_s: measured floats with up to 17 significant digits, the values a
    // JSON round trip is most likely to change. (Tie-prone metrics are left out; see
    // the note in tests/compare.rs.)
    let cmp = [
        "compare",
        "1",
        "2:speed=900",
        "--metric",
        "v",
        "--metric",
        "wall_s",
        "--json",
    ];
    let before = a.json(&cmp);
    let mut files = Vec::new();
    for id in ["1", "2"] {
        let path = a.path(&format!("run{id}.json"));
        let out = a.run(&["export", id, "-o", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        files.push(path);
    }

    let b = Lab::new();
    for (i, f) in files.iter().enumerate() {
        let imported = b.json(&["import", f.to_str().unwrap(), "--json"]);
        assert_eq!(imported["id"], i as i64 + 1);
        assert_eq!(imported["schema_version"], 1);
    }
    let after = b.json(&cmp);
    // Same ids, uuids, params, and every number bit for bit.
    assert_eq!(after, before);
    // Every summary of every metric, too.
    for id in ["1", "2"] {
        let sa = a.json(&["show", id, "--json"]);
        let sb = b.json(&["show", id, "--json"]);
        assert_eq!(sa["configs"], sb["configs"]);
        assert_eq!(sa["run"]["host_info"], sb["run"]["host_info"]);
        assert_eq!(sa["run"]["started_at"], sb["run"]["started_at"]);
    }
    // Every stored value, bit for bit (`f` holds 17-digit floats that serde_json's
    // default float parser would read one ulp off).
    for id in [1, 2] {
        let bits = |lab: &Lab| -> Vec<(String, u64)> {
            let store = lab.open_store();
            store
                .metrics(id)
                .unwrap()
                .into_iter()
                .map(|m| (m.name, m.value.to_bits()))
                .collect()
        };
        assert_eq!(bits(&a), bits(&b));
    }
    let (ra, rb) = (
        a.open_store().run(2).unwrap(),
        b.open_store().run(2).unwrap(),
    );
    assert_eq!(ra.uuid, rb.uuid);
    assert_eq!(ra.file_text, rb.file_text);
    assert_eq!(ra.status, rb.status);

    // A second import is refused, naming the local run, and changes nothing.
    let out = b.run(&["import", files[1].to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("already in") && err.contains("as run 2"),
        "{err}"
    );
    assert_eq!(b.open_store().runs().unwrap().len(), 2);
    // So is importing a run into the store it was measured in.
    let out = a.run(&["import", files[0].to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn json_export_holds_the_whole_run() {
    let a = measured();
    let doc = a.json(&["export", "2"]);
    assert_eq!(doc["schema_version"], 1);
    for key in ["uuid", "name", "kind", "status", "started_at", "file_text"] {
        assert!(!doc["run"][key].is_null(), "run.{key} missing");
    }
    assert!(!doc["host"]["hostname"].is_null());
    assert_eq!(doc["configs"].as_array().unwrap().len(), 2);
    let trials = doc["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 12);
    let t = &trials[0];
    for key in [
        "config",
        "repetition",
        "ordinal",
        "duration_s",
        "status",
        "metrics",
    ] {
        assert!(!t[key].is_null(), "trial.{key} missing in {t}");
    }
    assert!(t["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["name"] == "v" && m["unit"] == "ops/s"));
}

#[test]
fn csv_has_a_header_and_one_row_per_trial_and_metric() {
    let a = measured();
    let out = a.run(&["export", "2", "--format", "csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "run_id,config,trial,repetition,status,metric,unit,better,value"
    );
    let store = a.open_store();
    assert_eq!(lines.len() - 1, store.metrics(2).unwrap().len());
    // speed=900, repetition 1: v = 900 + 0 (trial 1 or 2: the order within a round
    // comes from the run's seed).
    assert!(
        lines.contains(&"2,speed=900,1,1,ok,v,ops/s,higher,900")
            || lines.contains(&"2,speed=900,2,1,ok,v,ops/s,higher,900"),
        "{text}"
    );
    for l in &lines[1..] {
        assert_eq!(l.split(',').count(), 9, "{l}");
    }
}

#[test]
fn markdown_is_the_summary_table() {
    let a = measured();
    let path = a.path("run2.md");
    let out = a.run(&[
        "export",
        "2",
        "--format",
        "markdown",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.contains("| config | metric | mean ± 95% CI | n | CV |"),
        "{text}"
    );
    assert!(text.contains("| speed=990 | v ↑ | 990.5 ±"), "{text}");
}

#[test]
fn a_file_that_is_not_an_export_is_refused_with_exit_2() {
    let a = Lab::new();
    let f = a.write("bad.json", "{\"schema_version\": 1, \"run\": 3}");
    let out = a.run(&["import", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not a perflab run export"),
        "{}",
        stderr(&out)
    );
    let f = a.write("trunc.json", "{\"schema_version\": 1,\n \"run\": {");
    let out = a.run(&["import", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("line 2"), "{}", stderr(&out));
}
