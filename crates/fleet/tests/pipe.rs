//! The fleet's controller without sshd: experiments run over "hosts" reached by a pipe
//! link (`perflab_fleet::pipe`), each worker `perflab worker`'s own loop in a child
//! process (this test binary run again: [`worker_process`]) running real `sh`
//! commands — so the runner's lanes, the remote trial's bounds and messages,
//! `--resume`, a host lost mid-trial and Ctrl-C are tested with no ssh, no network
//! namespace and no perflab binary. Every run is bounded (the trials' own `timeout`),
//! and every test checks that no worker is left running.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use perflab_fleet::pipe::{PipeLink, HOST_VAR};
use perflab_fleet::{Fleet, Inventory, Ssh};
use perflab_lab::experiment::Experiment;
use perflab_lab::observe::{Observer, Silent};
use perflab_lab::runner::{self, RunOptions, RunOutcome};
use perflab_store::{RunExport, RunStatus, Store};
use perflab_workloads::spec::Builtin;

/// Not a test: the body of a pipe host's worker process, which [`Lab`]'s link starts
/// as this test binary with `--ignored --exact worker_process` and the host's name in
/// [`HOST_VAR`] (ignored, so a plain run neither runs it nor counts it as passed).
#[test]
#[ignore = "the worker process of the pipe hosts, started by the tests' link"]
fn worker_process() {
    let host = std::env::var(HOST_VAR).expect("started by a pipe link, with the host's name");
    let stdin = std::io::BufReader::new(std::io::stdin());
    let facts = serde_json::json!({ "hostname": host });
    let scratch = std::env::temp_dir();
    let code = perflab_fleet::worker::serve(stdin, std::io::stdout(), &Builtin, facts, &scratch);
    std::process::exit(code);
}

/// A temporary lab: a store, a scratch directory and a pipe link to hosts h0 and h1.
struct Lab {
    dir: tempfile::TempDir,
    link: PipeLink,
    store: Store,
}

impl Lab {
    fn new() -> Lab {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("scratch")).unwrap();
        let me = std::env::current_exe().unwrap();
        let args = [
            "--ignored",
            "--exact",
            "worker_process",
            "--nocapture",
            "-q",
        ];
        let link = PipeLink::child(&me, &args);
        let store = Store::open(dir.path().join("results.db")).unwrap();
        Lab { dir, link, store }
    }

    fn fleet(&self) -> Fleet {
        let inventory = Inventory::from_toml(
            Path::new("hosts.toml"),
            "[[hosts]]\nname = \"h0\"\n\n[[hosts]]\nname = \"h1\"\n",
        )
        .unwrap();
        Fleet::with_link(
            inventory,
            Ssh::default(),
            Arc::new(self.link.clone()),
            self.dir.path().join("scratch"),
        )
    }

    /// `text` with `{dir}` replaced by this lab's directory, on hosts h0 and h1
    /// (`on` in the file, so that its commands may say `{host}`).
    fn experiment(&self, text: &str) -> Experiment {
        let text = text
            .replace("{dir}", &self.dir.path().display().to_string())
            .replace("[experiment]\n", "[experiment]\non = [\"h0\", \"h1\"]\n");
        Experiment::parse(Path::new("e.toml"), &text).unwrap()
    }

    fn run(
        &self,
        exp: &Experiment,
        opts: RunOptions,
        flag: Arc<AtomicBool>,
        obs: &dyn Observer,
    ) -> RunOutcome {
        let fleet = self.fleet();
        let opts = RunOptions {
            scratch: Some(self.dir.path().join("runs")),
            ..opts
        };
        runner::run_on(
            exp,
            &self.store,
            &opts,
            &runner::RunContext {
                interrupted: flag,
                observer: obs,
                factory: &fleet,
                sites: Some(&fleet),
            },
        )
        .unwrap()
    }

    /// The errors of run `out`'s trials, for messages.
    fn errors(&self, out: &RunOutcome) -> Vec<String> {
        let export = self.store.export_run(out.run_id).unwrap();
        export
            .trials
            .iter()
            .filter_map(|t| t.error.clone())
            .collect()
    }

    /// Waits (bounded) until every worker loop has ended.
    fn no_worker_left(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.link.running() > 0 {
            assert!(
                Instant::now() < deadline,
                "{} worker loops still run",
                self.link.running()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The `host` parameter of each trial of `export`, in order.
fn hosts_of(export: &RunExport) -> Vec<String> {
    export
        .trials
        .iter()
        .map(|t| {
            let c = export.configs.iter().find(|c| c.ordinal == t.config);
            c.unwrap().params["host"].as_str().unwrap().to_string()
        })
        .collect()
}

fn metric(t: &perflab_store::ExportedTrial, name: &str) -> f64 {
    let m = t.metrics.iter().find(|m| m.name == name);
    m.unwrap_or_else(|| panic!("no {name} in {t:?}")).value
}

const WHERE: &str = r#"
[experiment]
name = "where"
repetitions = 2
warmup = 0
noise_check = false
timeout = "30s"

[matrix]
n = [1, 2]

[workload]
kind = "command"
shell = true
command = "echo n={n}; echo on={host}"
metrics.n = { regex = 'n=(\d+)', unit = "" }
"#;

#[test]
fn an_experiment_over_two_pipe_hosts_records_every_trial_with_its_host() {
    let lab = Lab::new();
    let exp = lab.experiment(WHERE);
    let out = lab.run(
        &exp,
        RunOptions::default(),
        Arc::new(AtomicBool::new(false)),
        &Silent,
    );
    assert_eq!(out.status, RunStatus::Complete, "{out:?}");
    assert_eq!((out.trials_ok, out.trials_failed), (8, 0));
    let export = lab.store.export_run(out.run_id).unwrap();
    let hosts = hosts_of(&export);
    assert_eq!(hosts.iter().filter(|h| *h == "h0").count(), 4, "{hosts:?}");
    assert_eq!(hosts.iter().filter(|h| *h == "h1").count(), 4, "{hosts:?}");
    for (t, host) in export.trials.iter().zip(&hosts) {
        assert_eq!(t.status, "ok", "{t:?}");
        let c = export
            .configs
            .iter()
            .find(|c| c.ordinal == t.config)
            .unwrap();
        assert_eq!(metric(t, "n"), c.params["n"].as_f64().unwrap());
        // The measurement came back through the worker: its host.json names the host.
        let a = t.artifacts.iter().find(|a| a.name == "host.json");
        let a = a.unwrap_or_else(|| panic!("no host.json: {t:?}"));
        let doc: serde_json::Value = serde_json::from_slice(&a.content).unwrap();
        assert_eq!(doc["name"], host.as_str());
        assert_eq!(doc["facts"]["hostname"], host.as_str());
        assert!(doc["clock"]["uncertainty_ms"].as_f64().unwrap() >= 0.0);
    }
    lab.no_worker_left();
}

const SPAN: &str = r#"
[experiment]
name = "span"
repetitions = 2
warmup = 0
noise_check = false
timeout = "30s"

[workload]
kind = "command"
shell = true
command = "echo start=$(date +%s.%N); sleep 1; echo end=$(date +%s.%N)"
metrics.start = { regex = 'start=([0-9.]+)', unit = "s" }
metrics.end = { regex = 'end=([0-9.]+)', unit = "s" }
"#;

#[test]
fn hosts_run_their_trials_in_parallel_each_one_at_a_time() {
    let lab = Lab::new();
    let out = lab.run(
        &lab.experiment(SPAN),
        RunOptions::default(),
        Arc::new(AtomicBool::new(false)),
        &Silent,
    );
    assert_eq!(
        (out.trials_ok, out.trials_failed),
        (4, 0),
        "{out:?} {:?}",
        lab.errors(&out)
    );
    let export = lab.store.export_run(out.run_id).unwrap();
    let spans: Vec<(String, f64, f64)> = hosts_of(&export)
        .into_iter()
        .zip(&export.trials)
        .map(|(h, t)| (h, metric(t, "start"), metric(t, "end")))
        .collect();
    let overlap = |a: &(String, f64, f64), b: &(String, f64, f64)| a.1 < b.2 && b.1 < a.2;
    let mut across = 0;
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            if a.0 == b.0 {
                assert!(!overlap(a, b), "two trials at once on {}: {spans:?}", a.0);
            } else if overlap(a, b) {
                across += 1;
            }
        }
    }
    assert!(across >= 1, "the hosts ran one after the other: {spans:?}");
    lab.no_worker_left();
}

#[test]
fn a_run_with_a_host_down_fails_its_trials_and_resumes_once_it_is_back() {
    let lab = Lab::new();
    let exp = lab.experiment(WHERE);
    lab.link.down("h1");
    let first = lab.run(
        &exp,
        RunOptions::default(),
        Arc::new(AtomicBool::new(false)),
        &Silent,
    );
    assert_eq!(first.status, RunStatus::CompleteWithFailures, "{first:?}");
    assert_eq!((first.trials_ok, first.trials_failed), (4, 4));
    let export = lab.store.export_run(first.run_id).unwrap();
    for (t, host) in export.trials.iter().zip(hosts_of(&export)) {
        if host == "h1" {
            assert_eq!(t.status, "failed", "{t:?}");
            let e = t.error.as_deref().unwrap();
            assert!(e.contains("host h1") && e.contains("down"), "{e}");
        } else {
            assert_eq!(t.status, "ok", "{t:?}");
        }
    }
    lab.link.up("h1");
    let again = lab.run(
        &exp,
        RunOptions {
            resume: Some(first.run_id),
            retry_failed: true,
            ..Default::default()
        },
        Arc::new(AtomicBool::new(false)),
        &Silent,
    );
    assert_eq!(again.run_id, first.run_id);
    assert_eq!(again.status, RunStatus::Complete, "{again:?}");
    let export = lab.store.export_run(first.run_id).unwrap();
    let ok: Vec<String> = hosts_of(&export)
        .into_iter()
        .zip(&export.trials)
        .filter(|(_, t)| t.status == "ok")
        .map(|(h, _)| h)
        .collect();
    assert_eq!(ok.iter().filter(|h| *h == "h1").count(), 4, "{ok:?}");
    assert_eq!(ok.len(), 8, "{ok:?}");
    lab.no_worker_left();
}

const LONG: &str = r#"
[experiment]
name = "long"
repetitions = 1
warmup = 0
noise_check = false
timeout = "30s"

[workload]
kind = "command"
shell = true
command = "touch {dir}/started-{host}; sleep 3; echo done=1"
metrics.done = { regex = 'done=(\d+)', unit = "" }
"#;

#[test]
fn a_host_lost_mid_trial_fails_that_trial_naming_it_and_the_other_host_goes_on() {
    let lab = Lab::new();
    let exp = lab.experiment(LONG);
    let marker = lab.dir.path().join("started-h1");
    let link = lab.link.clone();
    let cutter = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !marker.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        // h1's trial runs: its link dies now.
        link.down("h1");
    });
    let t0 = Instant::now();
    let out = lab.run(
        &exp,
        RunOptions::default(),
        Arc::new(AtomicBool::new(false)),
        &Silent,
    );
    cutter.join().unwrap();
    assert_eq!(
        (out.trials_ok, out.trials_failed),
        (1, 1),
        "{out:?} {:?}",
        lab.errors(&out)
    );
    let export = lab.store.export_run(out.run_id).unwrap();
    for (t, host) in export.trials.iter().zip(hosts_of(&export)) {
        if host == "h1" {
            assert_eq!(t.status, "failed", "{t:?}");
            let e = t.error.as_deref().unwrap();
            assert!(
                e.contains("host h1") && e.contains("without an answer"),
                "{e}"
            );
            // It failed when the link died, not when its command would have ended.
            assert!(t.duration_s < 2.5, "{t:?}");
        } else {
            assert_eq!(t.status, "ok", "{t:?}");
            assert_eq!(metric(t, "done"), 1.0);
        }
    }
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    // The worker read the end of its stdin, stopped its `sleep` and ended.
    lab.no_worker_left();
}

/// Plays the user pressing Ctrl-C once the first trial has finished.
struct CtrlC(Arc<AtomicBool>);

impl Observer for CtrlC {
    fn trial_finished(&self, _index: usize, _config: &str, _error: Option<&str>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

const STEPS: &str = r#"
[experiment]
name = "steps"
repetitions = 4
warmup = 0
noise_check = false
timeout = "30s"

[workload]
kind = "command"
shell = true
command = "sleep 0.{host_delay}; echo done=1"
metrics.done = { regex = 'done=(\d+)', unit = "" }
"#;

#[test]
fn ctrl_c_mid_run_keeps_finished_trials_and_ends_every_worker() {
    let lab = Lab::new();
    // h0's trials are short, h1's long: Ctrl-C comes while h1's first one runs.
    let text = STEPS.replace(
        "sleep 0.{host_delay}",
        "case {host} in h0) sleep 0.2;; *) sleep 60;; esac",
    );
    let exp = lab.experiment(&text);
    let flag = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let out = lab.run(
        &exp,
        RunOptions::default(),
        flag.clone(),
        &CtrlC(flag.clone()),
    );
    assert_eq!(out.status, RunStatus::Interrupted, "{out:?}");
    assert!(out.trials_ok >= 1, "{out:?}");
    // h1's 60 s trial (cut at the 30 s timeout) was stopped, not waited for; the
    // bound leaves room for a loaded machine.
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    let export = lab.store.export_run(out.run_id).unwrap();
    let ok = export.trials.iter().filter(|t| t.status == "ok").count();
    assert_eq!(ok, out.trials_ok, "finished trials are kept");
    lab.no_worker_left();
}
