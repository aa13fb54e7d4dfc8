//! `perflab http` against `perflab serve`: every run is recorded into the store as a
//! one-trial run with the HTTP metrics and the whole latency histogram.

mod common;
use common::*;

#[test]
fn http_runs_are_recorded_as_one_trial_runs() {
    http_runs_are_recorded_on("epoll");
}

#[test]
fn http_runs_on_io_uring_are_recorded_as_one_trial_runs() {
    match perflab_load::uring_support() {
        Ok(()) => http_runs_are_recorded_on("uring"),
        Err(why) => require::missing(format!("io_uring is unavailable here: {why}")),
    }
}

fn http_runs_are_recorded_on(io: &str) {
    let lab = Lab::new();
    let server = HelloServer::start();
    let url = server.url.clone();
    let out = lab.run(&[
        "http", &url, "-d", "300ms", "-c", "2", "-t", "1", "--io", io, "--json",
    ]);
    drop(server);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["requests"].as_u64().unwrap() > 0);
    assert_eq!(report["io"], io);
    assert!(stderr(&out).contains("recorded as run 1"));

    let runs = lab.json(&["runs", "--json"]);
    assert_eq!(runs[0]["kind"], "http");
    assert_eq!(runs[0]["trials_ok"], 1);
    let show = lab.json(&["show", "1", "--json"]);
    let metrics = show["configs"][0]["metrics"].as_array().unwrap();
    let rps = metrics.iter().find(|m| m["name"] == "rps").unwrap();
    assert!((rps["mean"].as_f64().unwrap() - report["rps"].as_f64().unwrap()).abs() < 1e-6);
    let store = lab.open_store();
    let t = &store.trials(1).unwrap()[0];
    assert!(!store.histograms(t.id).unwrap().is_empty());
}
