//! `[profile]` in an experiment: the service under test is profiled during its trials;
//! the report and flame graph are stored, and the top functions' shares are metrics
//! that `compare` can compare between configs.

mod common;
use common::*;

#[test]
fn profiled_trials_store_reports_flame_graphs_and_function_shares() {
    if !require::perf_records() {
        return;
    }
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        r#"
[experiment]
repetitions = 2
warmup = 0
noise_check = false
[matrix]
workers = [1, 2]
[service]
command = "{perflab} serve --hello --port {port} --workers {workers}"
ready.http = "http://127.0.0.1:{port}/"
[profile]
repetitions = "all"
frequency = 499
top = 5
[workload]
kind = "http"
urls = ["http://127.0.0.1:{port}/"]
connections = 4
threads = 1
duration = "700ms"
"#,
    );
    let out = lab.run(&["run", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let store = lab.open_store();
    let t = &store.trials(1).unwrap()[0];
    let names: Vec<String> = store
        .trial_artifacts(t.id)
        .unwrap()
        .into_iter()
        .map(|a| a.0)
        .collect();
    for want in ["profile.json", "stacks.folded", "flamegraph.svg"] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    drop(store);
    let cmp = lab.json(&["compare", "1", "--baseline", "workers=1", "--json"]);
    let fns: Vec<&serde_json::Value> = cmp["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["metric"].as_str().unwrap().starts_with("fn:"))
        .collect();
    assert!(!fns.is_empty(), "no function shares compared: {cmp}");
    assert_eq!(fns[0]["unit"], "%");
}
