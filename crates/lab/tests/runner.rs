//! The runner with a fake workload on an in-memory store: no workload process is
//! spawned. The fake builds from each trial's `TrialSpec` (so these tests also check
//! what the runner puts in it), logs every trial it runs, returns a metric derived from
//! the config, fails the trials it is told to, and can play the user pressing Ctrl-C.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use perflab_lab::experiment::Experiment;
use perflab_lab::observe::Observer;
use perflab_lab::runner::{self, RunOptions, RunOutcome};
use perflab_store::{MetricValue, RunStatus, Store};
use perflab_workloads::spec::{KindSpec, TrialSpec, WorkloadFactory};
use perflab_workloads::{Measurement, TrialContext, Workload, WorkloadError};

/// One trial the fake ran: (ordinal, mode parameter, repetition, warm-up).
type Ran = (u32, String, u32, bool);

#[derive(Default)]
struct Fake {
    ran: Mutex<Vec<Ran>>,
    /// Recorded trials (by ordinal) that fail.
    fail: Mutex<BTreeSet<u32>>,
    /// Interrupt during the n-th workload call (1-based), as Ctrl-C would.
    interrupt_at: Option<usize>,
    /// Values handed out in turn for `score`; empty: 10 × the config's `n`.
    values: Mutex<Vec<f64>>,
    /// Every trial spec it was built from, as JSON.
    specs: Mutex<Vec<String>>,
}

struct FakeTrial {
    spec: TrialSpec,
    fake: Arc<Fake>,
}

/// The runner's factory: every trial gets a [`FakeTrial`] sharing the one [`Fake`].
struct FakeFactory(Arc<Fake>);

impl WorkloadFactory for FakeFactory {
    fn build(&self, trial: &TrialSpec) -> Result<Box<dyn Workload>, WorkloadError> {
        let json = serde_json::to_string(trial).map_err(|e| WorkloadError::Setup(e.to_string()))?;
        self.0.specs.lock().unwrap().push(json);
        Ok(Box::new(FakeTrial {
            spec: trial.clone(),
            fake: self.0.clone(),
        }))
    }
}

impl Workload for FakeTrial {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        let s = &self.spec;
        let KindSpec::Command(c) = &s.workload else {
            panic!("the file's workload is a command: {:?}", s.workload)
        };
        let mode = c.argv.last().cloned().unwrap_or_default();
        let calls = {
            let mut ran = self.fake.ran.lock().unwrap();
            ran.push((s.ordinal, mode, s.repetition, s.warmup));
            ran.len()
        };
        if self.fake.interrupt_at == Some(calls) {
            ctx.interrupted.store(true, Ordering::SeqCst);
            return Err(WorkloadError::Interrupted);
        }
        if !s.warmup && self.fake.fail.lock().unwrap().contains(&s.ordinal) {
            return Err(WorkloadError::failed("the fake was told to fail"));
        }
        let n = s.params.get("n").and_then(|v| v.as_f64()).unwrap_or(1.0);
        let v = {
            let mut vals = self.fake.values.lock().unwrap();
            if vals.is_empty() {
                10.0 * n
            } else {
                vals.remove(0)
            }
        };
        Ok(Measurement {
            metrics: vec![MetricValue::new("score", "pts", v, "higher")],
            ..Default::default()
        })
    }
}

#[derive(Default)]
struct Notes(Mutex<Vec<String>>);
impl Observer for Notes {
    fn warn(&self, message: &str) {
        self.0.lock().unwrap().push(message.to_string());
    }
}
impl Notes {
    fn any(&self, words: &str) -> bool {
        self.0.lock().unwrap().iter().any(|m| m.contains(words))
    }
}

/// Tests that start real processes (services, hooks) run one at a time: a hook's
/// leftovers are found among this process's children, and so would another test's.
static PROCESSES: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn experiment(head: &str) -> Experiment {
    let text = format!(
        "[experiment]\nnoise_check = false\n{head}\n[matrix]\nn = [1, 2]\n\
         [workload]\nkind = \"command\"\ncommand = \"fake {{n}}\"\nmetrics.score = {{ regex = '(\\d+)' }}\n"
    );
    Experiment::parse(Path::new("fake.toml"), &text).unwrap()
}

struct Bench {
    store: Store,
    scratch: tempfile::TempDir,
    notes: Notes,
}

impl Bench {
    fn new() -> Bench {
        Bench {
            store: Store::in_memory().unwrap(),
            scratch: tempfile::tempdir().unwrap(),
            notes: Notes::default(),
        }
    }

    fn run(
        &self,
        exp: &Experiment,
        fake: &Arc<Fake>,
        resume: Option<i64>,
        retry: bool,
    ) -> RunOutcome {
        let opts = RunOptions {
            resume,
            retry_failed: retry,
            scratch: Some(self.scratch.path().to_path_buf()),
            ..Default::default()
        };
        let flag = Arc::new(AtomicBool::new(false));
        let factory = FakeFactory(fake.clone());
        runner::run_with(exp, &self.store, &opts, flag, &self.notes, &factory).unwrap()
    }

    /// Stored trials: (ordinal, status) in order.
    fn trials(&self, run: i64) -> Vec<(u32, String)> {
        let mut t: Vec<_> = self
            .store
            .trials(run)
            .unwrap()
            .into_iter()
            .map(|t| (t.ordinal, t.status))
            .collect();
        t.sort();
        t
    }
}

fn modes(ran: &[Ran]) -> Vec<&str> {
    ran.iter().map(|r| r.1.as_str()).collect()
}

#[test]
fn interleaved_warmups_first_then_rounds_and_warmups_are_not_recorded() {
    let b = Bench::new();
    let fake = Arc::new(Fake::default());
    let out = b.run(
        &experiment("repetitions = 3\nwarmup = 1"),
        &fake,
        None,
        false,
    );
    assert_eq!(out.status, RunStatus::Complete);
    assert_eq!((out.trials_ok, out.trials_failed), (6, 0));
    let ran = fake.ran.lock().unwrap();
    // Warm-ups in file order, then rounds: each holds both configs, in the order the
    // run's seed gave it.
    let m = modes(&ran);
    assert_eq!(m[..2], ["1", "2"]);
    for round in m[2..].chunks(2) {
        let mut r = round.to_vec();
        r.sort();
        assert_eq!(r, ["1", "2"], "{m:?}");
    }
    assert!(ran[..2].iter().all(|r| r.3) && ran[2..].iter().all(|r| !r.3));
    assert_eq!(b.trials(out.run_id).len(), 6, "warm-ups are not stored");
    // Each config's mean is what the fake gave it.
    let m = b.store.metrics(out.run_id).unwrap();
    assert_eq!(m.iter().filter(|m| m.name == "score").count(), 6);
}

#[test]
fn random_order_follows_the_seed_and_gives_every_config_its_repetitions() {
    let order = |seed: u64| {
        let b = Bench::new();
        let fake = Arc::new(Fake::default());
        let exp = experiment(&format!(
            "repetitions = 6\nwarmup = 0\norder = \"random\"\nseed = {seed}"
        ));
        b.run(&exp, &fake, None, false);
        let ran = fake.ran.lock().unwrap().clone();
        ran.into_iter().map(|r| (r.1, r.2)).collect::<Vec<_>>()
    };
    let (a, again, other) = (order(7), order(7), order(8));
    assert_eq!(a, again, "the same seed gives the same order");
    assert_ne!(a, other, "another seed gives another order");
    for n in ["1", "2"] {
        let reps: BTreeSet<u32> = a.iter().filter(|r| r.0 == n).map(|r| r.1).collect();
        assert_eq!(reps, (1..=6).collect(), "config n={n}");
    }
}

#[test]
fn ctrl_c_keeps_finished_trials_and_resume_runs_only_what_is_missing() {
    let b = Bench::new();
    let exp = experiment("repetitions = 3\nwarmup = 0");
    let fake = Arc::new(Fake {
        interrupt_at: Some(3),
        ..Default::default()
    });
    let out = b.run(&exp, &fake, None, false);
    assert_eq!(out.status, RunStatus::Interrupted);
    let kept: Vec<_> = b
        .trials(out.run_id)
        .into_iter()
        .filter(|t| t.1 == "ok")
        .collect();
    assert_eq!(kept, [(1, "ok".to_string()), (2, "ok".to_string())]);

    let again = Arc::new(Fake::default());
    let resumed = b.run(&exp, &again, Some(out.run_id), false);
    assert_eq!(resumed.run_id, out.run_id, "the same run");
    assert_eq!(resumed.status, RunStatus::Complete);
    assert_eq!(resumed.trials_ok, 6);
    let ran: Vec<u32> = again.ran.lock().unwrap().iter().map(|r| r.0).collect();
    assert_eq!(ran, [3, 4, 5, 6], "only the trials not yet done");
}

#[test]
fn failed_trials_stay_failed_on_resume_unless_retry_failed() {
    let b = Bench::new();
    let exp = experiment("repetitions = 2\nwarmup = 0");
    let fake = Arc::new(Fake::default());
    fake.fail.lock().unwrap().insert(2);
    let out = b.run(&exp, &fake, None, false);
    assert_eq!(out.status, RunStatus::CompleteWithFailures);
    assert_eq!((out.trials_ok, out.trials_failed), (3, 1));

    let plain = Arc::new(Fake::default());
    let r = b.run(&exp, &plain, Some(out.run_id), false);
    assert!(plain.ran.lock().unwrap().is_empty(), "nothing left to run");
    assert_eq!(r.trials_failed, 1);

    let retry = Arc::new(Fake::default());
    let r = b.run(&exp, &retry, Some(out.run_id), true);
    let ran: Vec<u32> = retry.ran.lock().unwrap().iter().map(|r| r.0).collect();
    assert_eq!(ran, [2], "only the failed trial again");
    assert_eq!(
        (r.status, r.trials_ok, r.trials_failed),
        (RunStatus::Complete, 4, 0)
    );
}

#[test]
fn adaptive_repetitions_stop_when_precise_or_at_the_maximum() {
    let head = "repetitions = \"auto\"\nmin_repetitions = 3\nmax_repetitions = 6\ntarget_precision = \"2%\"\nwarmup = 0\nprimary = [\"score\"]";
    // Constant values: precise after the minimum.
    let b = Bench::new();
    let fake = Arc::new(Fake::default());
    let out = b.run(&experiment(head), &fake, None, false);
    assert_eq!(out.trials_ok, 6, "3 repetitions × 2 configs");
    assert!(
        b.notes.any("precision target met"),
        "{:?}",
        b.notes.0.lock().unwrap()
    );

    // Wildly varying values: never precise, stops at max_repetitions.
    let b = Bench::new();
    let fake = Arc::new(Fake::default());
    *fake.values.lock().unwrap() = (0..40)
        .map(|i| if i % 3 == 0 { 1.0 } else { 90.0 })
        .collect();
    let out = b.run(&experiment(head), &fake, None, false);
    assert_eq!(out.trials_ok, 12, "6 repetitions × 2 configs");
    assert!(
        b.notes.any("max_repetitions (6) reached"),
        "{:?}",
        b.notes.0.lock().unwrap()
    );
}

#[test]
fn a_service_that_exits_or_is_never_ready_fails_its_trials_and_the_run_goes_on() {
    let _one = PROCESSES.lock().unwrap_or_else(|e| e.into_inner());
    for (service, expect) in [
        ("command = \"sh -c 'exit 3'\"\nready.tcp = \"127.0.0.1:{port}\"\nready.timeout = \"2s\"", "exit"),
        ("command = \"sleep 30\"\nready.tcp = \"127.0.0.1:{port}\"\nready.timeout = \"300ms\"", "not ready"),
    ] {
        let text = format!(
            "[experiment]\nnoise_check = false\nrepetitions = 1\nwarmup = 0\n[matrix]\nn = [1, 2]\n\
             [service]\n{service}\n[workload]\nkind = \"command\"\ncommand = \"fake {{n}}\"\n"
        );
        let exp = Experiment::parse(Path::new("svc.toml"), &text).unwrap();
        let b = Bench::new();
        let fake = Arc::new(Fake::default());
        let out = b.run(&exp, &fake, None, false);
        assert_eq!(out.status, RunStatus::CompleteWithFailures, "{expect}");
        assert_eq!(out.trials_failed, 2, "both configs tried: {expect}");
        assert!(fake.ran.lock().unwrap().is_empty(), "no workload without its service");
        let errors: Vec<String> = b
            .store
            .trials(out.run_id)
            .unwrap()
            .into_iter()
            .filter_map(|t| t.error)
            .collect();
        assert!(
            errors.iter().all(|e| e.contains("service did not start") && e.contains(expect)),
            "{errors:?}"
        );
    }
}

#[test]
fn prepare_and_cleanup_hooks_leave_the_service_running() {
    let _one = PROCESSES.lock().unwrap_or_else(|e| e.into_inner());
    // The service is perflab's child, like a hook's leftovers: killing what a hook
    // leaves behind must not take the service with it.
    let text = "[experiment]\nnoise_check = false\nrepetitions = 3\nwarmup = 0\n\
         prepare = \"true\"\ncleanup = \"sleep 0.01 &\"\n[matrix]\nn = [1]\n\
         [service]\ncommand = \"sh -c 'echo up; exec sleep 30'\"\nready.log = \"up\"\n\
         [workload]\nkind = \"command\"\ncommand = \"fake {n}\"\n";
    let exp = Experiment::parse(Path::new("hooks.toml"), text).unwrap();
    let b = Bench::new();
    let fake = Arc::new(Fake::default());
    let out = b.run(&exp, &fake, None, false);
    let errors: Vec<String> = b
        .store
        .trials(out.run_id)
        .unwrap()
        .into_iter()
        .filter_map(|t| t.error)
        .collect();
    assert_eq!(out.status, RunStatus::Complete, "{errors:?}");
    assert_eq!(fake.ran.lock().unwrap().len(), 3);
}

#[test]
fn the_trial_spec_carries_the_config_limits_and_rendered_command_as_data() {
    let b = Bench::new();
    let fake = Arc::new(Fake::default());
    let exp = experiment("repetitions = 1\nwarmup = 0\ntimeout = \"1m30s\"\ncpus = \"0\"");
    let out = b.run(&exp, &fake, None, false);
    assert_eq!(out.trials_ok, 2);
    let ran = fake.ran.lock().unwrap();
    // The round's order comes from the run's seed.
    let mut rendered = modes(&ran);
    rendered.sort();
    assert_eq!(rendered, ["1", "2"], "{{n}} rendered per config");
    let specs = fake.specs.lock().unwrap();
    let (at, second): (usize, TrialSpec) = specs
        .iter()
        .map(|s| serde_json::from_str::<TrialSpec>(s).unwrap())
        .enumerate()
        .find(|(_, s)| s.params.get("n") == Some(&serde_json::json!(2)))
        .unwrap();
    assert_eq!(
        (second.ordinal, second.repetition, second.warmup),
        (at as u32 + 1, 1, false)
    );
    assert_eq!(
        (second.timeout_s, second.cpus.as_deref()),
        (Some(90.0), Some("0"))
    );
    assert!(second.attachments.doctor && second.attachments.monitor.is_none());
    let KindSpec::Command(c) = &second.workload else {
        panic!("{second:?}")
    };
    assert_eq!(c.argv, ["fake", "2"]);
    assert_eq!(
        c.metrics[0].name, "score",
        "the file's metric regexes travel too"
    );
}

/// Keeps the specs it is given; its workloads measure nothing.
#[derive(Default)]
struct Keeps(Mutex<Vec<TrialSpec>>);

impl WorkloadFactory for Keeps {
    fn build(&self, trial: &TrialSpec) -> Result<Box<dyn Workload>, WorkloadError> {
        self.0.lock().unwrap().push(trial.clone());
        Ok(Box::new(Nothing))
    }
}

struct Nothing;

impl Workload for Nothing {
    fn run(&self, _: &TrialContext) -> Result<Measurement, WorkloadError> {
        Ok(Measurement::default())
    }
}

/// The per-trial doctor watches every trial but the doctor's own (which would store a
/// second `doctor.json`) and a profile's (whose system-wide samples it would be in).
#[test]
fn the_doctor_and_profile_kinds_are_not_watched_by_the_trial_doctor() {
    for (workload, watched) in [
        ("kind = \"doctor\"\nwatch = \"0\"", false),
        (
            "kind = \"profile\"\ntarget = \"system\"\nduration = \"1s\"",
            false,
        ),
        ("kind = \"mem\"\nop = \"read\"\nblock = \"4k\"", true),
    ] {
        let b = Bench::new();
        let text = format!(
            "[experiment]\nnoise_check = false\nrepetitions = 1\nwarmup = 0\n[workload]\n{workload}\n"
        );
        let exp = Experiment::parse(Path::new("k.toml"), &text).unwrap();
        let opts = RunOptions {
            scratch: Some(b.scratch.path().to_path_buf()),
            ..Default::default()
        };
        let keeps = Keeps::default();
        let flag = Arc::new(AtomicBool::new(false));
        runner::run_with(&exp, &b.store, &opts, flag, &b.notes, &keeps).unwrap();
        let specs = keeps.0.lock().unwrap();
        assert_eq!(specs.len(), 1, "{workload}");
        assert_eq!(specs[0].attachments.doctor, watched, "{workload}");
    }
}

/// `kind = "doctor"` through the runner with perflab's own workloads: each trial stores
/// the doctor's measurement — one `doctor.json` — and its counts by severity.
#[test]
fn a_doctor_trial_stores_one_diagnosis_with_its_counts() {
    let b = Bench::new();
    // 100 million connections fit in no file limit: nofile-limit, a warning at least.
    let text = "[experiment]\nnoise_check = false\nrepetitions = 2\nwarmup = 0\n\
                [workload]\nkind = \"doctor\"\nwatch = \"0\"\nconnections = 100000000\n";
    let exp = Experiment::parse(Path::new("doctor.toml"), text).unwrap();
    let opts = RunOptions {
        scratch: Some(b.scratch.path().to_path_buf()),
        ..Default::default()
    };
    let flag = Arc::new(AtomicBool::new(false));
    let out = runner::run(&exp, &b.store, &opts, flag, &b.notes).unwrap();
    assert_eq!(out.trials_ok, 2);
    let export = b.store.export_run(out.run_id).unwrap();
    for t in &export.trials {
        let docs: Vec<_> = t
            .artifacts
            .iter()
            .filter(|a| a.name == "doctor.json")
            .collect();
        assert_eq!(docs.len(), 1, "one diagnosis per trial: {:?}", t.artifacts);
        let v: serde_json::Value = serde_json::from_slice(&docs[0].content).unwrap();
        assert!(
            v["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["id"] == "nofile-limit"),
            "{v}"
        );
        let warn = t
            .metrics
            .iter()
            .find(|m| m.name == "findings_warn")
            .unwrap();
        assert!(warn.value >= 1.0, "{t:?}");
    }
}

#[test]
fn in_interleaved_rounds_every_trial_starts_its_own_service() {
    let _one = PROCESSES.lock().unwrap_or_else(|e| e.into_inner());
    // Two configs in blocks of two rounds (A B | B A, or B A | A B): one config always
    // runs twice in a row across the rounds' boundary. It still gets a fresh service,
    // as every other trial does, not the one its previous trial warmed.
    let text = "[experiment]\nnoise_check = false\nrepetitions = 2\nwarmup = 0\n\
         [matrix]\nn = [1, 2]\n\
         [service]\ncommand = \"sh -c 'echo start >> {run_dir}/starts; echo up; exec sleep 30'\"\n\
         ready.log = \"up\"\n\
         [workload]\nkind = \"command\"\ncommand = \"fake {n}\"\n";
    let exp = Experiment::parse(Path::new("fresh.toml"), text).unwrap();
    let b = Bench::new();
    let fake = Arc::new(Fake::default());
    let out = b.run(&exp, &fake, None, false);
    assert_eq!(out.status, RunStatus::Complete);
    let run_dir = b.scratch.path().join("runs").join(out.run_id.to_string());
    let starts = std::fs::read_to_string(run_dir.join("starts")).unwrap();
    assert_eq!(starts.lines().count(), 4, "one service start per trial");
}
