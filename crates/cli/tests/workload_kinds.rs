//! Table workloads in experiments: `kind = "http"` against `perflab serve` as the
//! service under test, and `kind = "scimark"`; their options are checked before
//! anything runs.

mod common;
use common::*;

#[test]
fn http_workload_against_the_built_in_server_stores_rps_and_histograms() {
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
[workload]
kind = "http"
urls = ["http://127.0.0.1:{port}/"]
connections = 2
threads = 1
duration = "400ms"
"#,
    );
    let out = lab.run(&["run", f.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let show: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for w in [1, 2] {
        let rps = metric(&show, "workers", &serde_json::json!(w), "rps");
        assert!(rps["mean"].as_f64().unwrap() > 100.0, "{rps}");
        assert_eq!(rps["n"], 2);
        let errors = metric(&show, "workers", &serde_json::json!(w), "errors");
        assert_eq!(errors["mean"], 0.0);
    }
    let store = lab.open_store();
    let t = &store.trials(1).unwrap()[0];
    let h = store.histograms(t.id).unwrap();
    assert_eq!(h[0].name, "latency");
    assert!(h[0].data.len() > 10, "the merged histogram is kept whole");
}

/// `cpus` pins the in-process HTTP engine: with no `threads`, its default thread count
/// follows the pinned CPUs (one), where unpinned it takes the default rule
/// (`perflab_load::default_threads`: half the cores, at most one per connection).
#[test]
fn http_workload_honours_cpus() {
    let server = HelloServer::start();
    let lab = Lab::new();
    let cores = std::thread::available_parallelism().unwrap().get();
    let unpinned = perflab_load::default_threads(cores, 4);
    for (cpus, expected) in [("cpus = \"0\"\n", 1), ("", unpinned)] {
        let f = lab.write(
            "e.toml",
            &format!(
                "[experiment]\nrepetitions = 1\nwarmup = 0\nnoise_check = false\n{cpus}\
                 [workload]\nkind = \"http\"\nurls = [\"{}\"]\nconnections = 4\nrequests = 200\n",
                server.url
            ),
        );
        let out = lab.run(&["run", f.to_str().unwrap(), "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let show: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let run = show["run"]["id"].as_i64().unwrap();
        let store = lab.open_store();
        let t = &store.trials(run).unwrap()[0];
        let arts = store.trial_artifacts(t.id).unwrap();
        let report = arts.iter().find(|a| a.0 == "http-report.json").unwrap();
        let report: serde_json::Value = serde_json::from_slice(&report.2).unwrap();
        assert_eq!(report["threads"], expected, "cpus {cpus:?}: {report}");
    }
}

#[test]
fn scimark_workload_runs_a_kernel_subset() {
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        "[experiment]\nrepetitions = 2\nwarmup = 0\nnoise_check = false\n[matrix]\nlang = [\"c\"]\n[workload]\nkind = \"scimark\"\nlang = \"{lang}\"\nmin_time = 0.02\nkernels = [\"mc\", \"lu\"]\n",
    );
    let out = lab
        .cmd()
        .env("PERFLAB_CACHE", lab.path("cache"))
        .args(["run", f.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let show: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let lu = metric(&show, "lang", &serde_json::json!("c"), "lu_mflops");
    assert!(lu["mean"].as_f64().unwrap() > 1.0);
}

#[test]
fn table_workload_errors_are_located_and_nothing_runs() {
    let lab = Lab::new();
    for (text, at, word) in [
        (
            "[workload]\nkind = \"http\"\nurls = [\"http://127.0.0.1:{prot}/\"]\n",
            "4:27",
            "unknown placeholder {prot}",
        ),
        (
            "[workload]\nkind = \"http\"\nurls = [\"http://127.0.0.1:1/\"]\nconections = 2\n",
            "5:1",
            "conections",
        ),
        (
            "[workload]\nkind = \"http\"\nurls = [\"ftp://127.0.0.1/\"]\n",
            "4:10",
            "ftp",
        ),
        (
            "[workload]\nkind = \"scimark\"\nlang = \"cobol\"\n",
            "4:",
            "cobol",
        ),
    ] {
        let f = lab.write("bad.toml", &format!("[experiment]\n{text}"));
        let out = lab.run(&["run", f.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(&format!("bad.toml:{at}")), "{text}: {err}");
        assert!(err.contains(word), "{text}: {err}");
        assert!(!lab.store().exists());
    }
}

#[test]
fn monitor_stores_series_and_summary_metrics_that_show_prints() {
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        r#"
[experiment]
repetitions = 2
warmup = 0
noise_check = false
[service]
command = "{perflab} serve --hello --port {port} --workers 1"
ready.http = "http://127.0.0.1:{port}/"
[monitor]
interval = "100ms"
[workload]
kind = "http"
urls = ["http://127.0.0.1:{port}/"]
connections = 2
threads = 1
duration = "500ms"
"#,
    );
    let out = lab.run(&["run", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    for name in [
        "cpu.softirq_pct",
        "sched.ctxt_per_s",
        "process.cpu_s",
        "service_cpu_per_req_us",
    ] {
        assert!(table.contains(name), "{name} missing from:\n{table}");
    }
    let export = lab.json(&["export", "1", "--format", "json"]);
    let series = export["trials"][0]["series"].as_array().unwrap();
    assert!(
        series
            .iter()
            .any(|s| s["name"] == "cpu.softirq_pct" && s["points"].as_array().unwrap().len() >= 3),
        "per-trial series are stored"
    );
    let show = lab.json(&["show", "--json"]);
    let m = show["configs"][0]["metrics"].as_array().unwrap();
    let cpu = m.iter().find(|m| m["name"] == "process.cpu_s").unwrap();
    assert!(
        cpu["mean"].as_f64().unwrap() > 0.0,
        "the service did work: {cpu}"
    );
}

#[test]
fn the_pressure_probe_stores_stall_shares() {
    let lab = Lab::new();
    let f = lab.write(
        "psi.toml",
        "[experiment]\nrepetitions = 1\nwarmup = 0\nnoise_check = false\n[monitor]\ninterval = \"100ms\"\nprobes = [\"pressure\"]\n[workload]\nkind = \"command\"\ncommand = \"sleep 0.4\"\n",
    );
    let out = lab.run(&["run", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let show = lab.json(&["show", "--json"]);
    let m = show["configs"][0]["metrics"].as_array().unwrap();
    let has = m.iter().any(|m| m["name"] == "pressure.cpu.some_pct");
    if std::path::Path::new("/proc/pressure/cpu").exists() {
        assert!(has, "pressure.cpu.some_pct missing from {show}");
    } else {
        // A kernel without PSI: not available, never an error.
        assert!(!has);
    }
}

#[test]
fn a_process_probe_without_a_service_is_an_error() {
    let lab = Lab::new();
    let f = lab.write(
        "bad.toml",
        "[experiment]\n[monitor]\nprobes = [\"cpu\", \"process\"]\n[workload]\nkind = \"command\"\ncommand = \"true\"\n",
    );
    let out = lab.run(&["run", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("bad.toml:3:18") && stderr(&out).contains("no [service]"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn disk_workload_runs_in_experiments_and_checks_its_options() {
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        "[experiment]\nrepetitions = 2\nwarmup = 0\nnoise_check = false\n[matrix]\nbs = [\"16k\", \"64k\"]\n[workload]\nkind = \"disk\"\npath = \"{run_dir}\"\nmode = \"write\"\nbs = \"{bs}\"\nsize = \"2M\"\nfdatasync_end = true\n",
    );
    let out = lab.run(&["run", f.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let show: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mbs = metric(&show, "bs", &serde_json::json!("64k"), "mb_s");
    assert!(mbs["mean"].as_f64().unwrap() > 0.0);
    assert_eq!(mbs["n"], 2);

    let bad = lab.write(
        "bad.toml",
        "[experiment]\n[workload]\nkind = \"disk\"\npath = \"/tmp\"\nbs = \"0\"\n",
    );
    let out = lab.run(&["run", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("bad.toml:5:"), "{}", stderr(&out));
}
