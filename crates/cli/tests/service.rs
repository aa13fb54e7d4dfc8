//! The service under test: started per config, ready checks, and a service that
//! crashes mid-run fails just its trials (with its log tail) while the next config's
//! service starts normally.

mod common;
use common::*;

const CRASHY: &str = r#"
[experiment]
repetitions = 2
warmup = 0
[matrix]
mode = ["steady", "crash"]
[service]
shell = true
command = """
echo ready
if [ {mode} = crash ]; then sleep 0.1; echo "fatal: out of widgets" >&2; exit 3; fi
exec sleep 60
"""
ready.log = "ready"
[workload]
kind = "command"
command = "sleep 0.5"
"#;

#[test]
fn a_crashing_service_fails_its_trial_with_the_log_tail_and_the_next_starts() {
    let lab = Lab::new();
    let file = lab.write("e.toml", CRASHY);
    let out = lab.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let store = lab.open_store();
    let run = store.latest_run().unwrap();
    let configs = store.configs(run.id).unwrap();
    let trials = store.trials(run.id).unwrap();
    assert_eq!(trials.len(), 4);
    for t in &trials {
        let c = configs.iter().find(|c| c.id == t.config_id).unwrap();
        if c.params["mode"] == "crash" {
            assert_eq!(t.status, "failed");
            let e = t.error.as_deref().unwrap();
            assert!(e.contains("exit status 3"), "{e}");
            assert!(e.contains("fatal: out of widgets"), "{e}");
        } else {
            assert_eq!(t.status, "ok", "{:?}", t.error);
            // The service log is kept with the trial.
            let arts = store.trial_artifacts(t.id).unwrap();
            assert!(arts
                .iter()
                .any(|a| a.0 == "service.log" && a.2.starts_with(b"ready")));
        }
    }
}

#[test]
fn a_service_that_never_gets_ready_fails_the_trial_and_is_stopped() {
    let lab = Lab::new();
    let file = lab.write(
        "e.toml",
        r#"
[experiment]
repetitions = 1
warmup = 0
[service]
command = "sh -c 'echo starting; exec sleep 60'"
ready.tcp = "127.0.0.1:{port}"
ready.timeout = "300ms"
[workload]
kind = "command"
command = "true"
"#,
    );
    let out = lab.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let store = lab.open_store();
    let t = &store.trials(1).unwrap()[0];
    let e = t.error.as_deref().unwrap();
    assert!(e.contains("not ready") && e.contains("starting"), "{e}");
}

#[test]
fn services_get_rendered_files_and_a_port() {
    let lab = Lab::new();
    let file = lab.write(
        "e.toml",
        r#"
[experiment]
repetitions = 2
warmup = 0
[matrix]
greeting = ["hello", "bonjour"]
[service]
command = "python3 -m http.server {port} --bind 127.0.0.1 --directory {run_dir}"
files."index.html" = "{greeting} from port {port}"
ready.http = "http://127.0.0.1:{port}/"
[workload]
kind = "command"
command = "python3 -c \"import urllib.request as u; print('len', len(u.urlopen('http://127.0.0.1:{port}/index.html').read()))\""
metrics.len = { regex = 'len (\d+)', unit = "B" }
"#,
    );
    let out = lab.run(&["run", file.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let show: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let hello = metric(&show, "greeting", &serde_json::json!("hello"), "len")["mean"]
        .as_f64()
        .unwrap();
    let bonjour = metric(&show, "greeting", &serde_json::json!("bonjour"), "len")["mean"]
        .as_f64()
        .unwrap();
    assert_eq!(
        bonjour - hello,
        2.0,
        "each config's service served its own rendered file"
    );
}
