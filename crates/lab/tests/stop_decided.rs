//! `repetitions = "auto"` with `stop = "decided"`: the file's keys, and the runner
//! adding rounds until the paired comparison with the first config is decided, with a
//! fake workload whose values are a function of the config and the round (so the
//! shuffled order within a round does not change what the comparison sees).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use perflab_lab::experiment::{Draft, Experiment, Repetitions, Stop};
use perflab_lab::observe::Observer;
use perflab_lab::plan;
use perflab_lab::runner::{self, RunOptions, RunOutcome};
use perflab_store::{MetricValue, RunStatus, Store};
use perflab_workloads::spec::{Kind, KindSpec, TrialSpec, WorkloadFactory};
use perflab_workloads::{Measurement, TrialContext, Workload, WorkloadError};

/// `score` = `scale[m]` × (1 + `noise` × a fixed pseudo-random number of the round and
/// config), so every round's pair differs by noise alone when the scales agree.
#[derive(Clone, Default)]
struct Fake {
    scale_b: f64,
    noise: f64,
    /// Play Ctrl-C during the recorded trial of this ordinal (once; 0: never).
    interrupt_at: Arc<AtomicU32>,
    /// Every trial of config `m = "b"` fails.
    fail_b: bool,
}

struct FakeTrial {
    spec: TrialSpec,
    fake: Fake,
}

impl WorkloadFactory for Fake {
    fn build(&self, trial: &TrialSpec) -> Result<Box<dyn Workload>, WorkloadError> {
        Ok(Box::new(FakeTrial {
            spec: trial.clone(),
            fake: self.clone(),
        }))
    }
}

impl Workload for FakeTrial {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        let s = &self.spec;
        let at = self.fake.interrupt_at.load(Ordering::SeqCst);
        if !s.warmup && at != 0 && s.ordinal == at {
            self.fake.interrupt_at.store(0, Ordering::SeqCst);
            ctx.interrupted.store(true, Ordering::SeqCst);
            return Err(WorkloadError::Interrupted);
        }
        let KindSpec::Command(c) = &s.workload else {
            panic!("a command workload: {:?}", s.workload)
        };
        let b = c.argv.last().is_some_and(|m| m == "b");
        if b && self.fake.fail_b {
            return Err(WorkloadError::failed("b always fails"));
        }
        let salt = if b { 7 } else { 3 };
        let u = unit(s.repetition as u64 * 16 + salt);
        let scale = if b { self.fake.scale_b } else { 1.0 };
        let v = 10.0 * scale * (1.0 + self.fake.noise * (u - 0.5));
        Ok(Measurement {
            metrics: vec![MetricValue::new("score", "pts", v, "higher")],
            ..Default::default()
        })
    }
}

/// A fixed pseudo-random number in [0, 1) for `x` (SplitMix64's finaliser).
fn unit(x: u64) -> f64 {
    let mut z = x.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as f64 / 2f64.powi(64)
}

/// What the runner said: warnings and why it stopped.
#[derive(Default)]
struct Said(Mutex<Vec<String>>);
impl Observer for Said {
    fn warn(&self, message: &str) {
        self.0.lock().unwrap().push(format!("warning: {message}"));
    }
    fn stopped(&self, why: &str) {
        self.0.lock().unwrap().push(format!("stopped: {why}"));
    }
}

fn experiment(head: &str) -> Experiment {
    let text = format!(
        "[experiment]\nnoise_check = false\nwarmup = 0\nseed = 11\nprimary = [\"score\"]\n{head}\n\
         [matrix]\nm = [\"a\", \"b\"]\n[workload]\nkind = \"command\"\ncommand = \"fake {{m}}\"\n\
         metrics.score = {{ regex = '(\\d+)' }}\n"
    );
    Experiment::parse(Path::new("decided.toml"), &text).unwrap()
}

const DECIDED: &str =
    "repetitions = \"auto\"\nmin_repetitions = 5\nmax_repetitions = 12\nstop = \"decided\"";

/// Runs `exp` with `fake`; the outcome, the rounds run, and what was said.
fn run(exp: &Experiment, fake: Fake) -> (RunOutcome, u32, Vec<String>) {
    let store = Store::in_memory().unwrap();
    run_in(&store, exp, fake, None)
}

/// [`run`] in `store`, resuming run `resume` if given.
fn run_in(
    store: &Store,
    exp: &Experiment,
    fake: Fake,
    resume: Option<i64>,
) -> (RunOutcome, u32, Vec<String>) {
    let scratch = tempfile::tempdir().unwrap();
    let said = Said::default();
    let opts = RunOptions {
        resume,
        scratch: Some(scratch.path().to_path_buf()),
        ..Default::default()
    };
    let flag = Arc::new(AtomicBool::new(false));
    let out = runner::run_with(exp, store, &opts, flag, &said, &fake).unwrap();
    let rounds = store
        .trials(out.run_id)
        .unwrap()
        .iter()
        .map(|t| t.repetition)
        .max()
        .unwrap_or(0);
    let said = said.0.into_inner().unwrap();
    (out, rounds, said)
}

#[test]
fn identical_configs_stop_equivalent_before_the_maximum() {
    let (out, rounds, said) = run(
        &experiment(DECIDED),
        Fake {
            scale_b: 1.0,
            noise: 0.002,
            ..Default::default()
        },
    );
    assert_eq!(out.status, RunStatus::Complete);
    assert!(rounds < 12, "{rounds} rounds: {said:?}");
    let line = format!("stopped: decided after {rounds} rounds: equivalent within 2 %");
    assert!(said.iter().any(|s| s.starts_with(&line)), "{said:?}");
}

#[test]
fn a_clear_difference_stops_at_the_first_look() {
    let (out, rounds, said) = run(
        &experiment(DECIDED),
        Fake {
            scale_b: 2.0,
            noise: 0.01,
            ..Default::default()
        },
    );
    assert_eq!(out.status, RunStatus::Complete);
    assert_eq!(rounds, 5, "{said:?}");
    assert!(
        said.iter()
            .any(|s| s.starts_with("stopped: decided after 5 rounds: ratio CI excludes 1")),
        "{said:?}"
    );
}

#[test]
fn a_noisy_comparison_runs_to_the_maximum_undecided() {
    let (out, rounds, said) = run(
        &experiment(DECIDED),
        Fake {
            scale_b: 1.0,
            noise: 0.5,
            ..Default::default()
        },
    );
    assert_eq!(out.status, RunStatus::Complete);
    assert_eq!(rounds, 12, "{said:?}");
    assert!(
        said.iter()
            .any(|s| s.starts_with("stopped: reached max_repetitions = 12, undecided")),
        "{said:?}"
    );
}

#[test]
fn a_tighter_equivalence_margin_needs_more_rounds_or_stays_undecided() {
    let loose = run(
        &experiment(DECIDED),
        Fake {
            scale_b: 1.0,
            noise: 0.02,
            ..Default::default()
        },
    );
    let tight = run(
        &experiment(&format!("{DECIDED}\nequivalence = \"0.5%\"")),
        Fake {
            scale_b: 1.0,
            noise: 0.02,
            ..Default::default()
        },
    );
    assert!(tight.1 > loose.1, "{:?} vs {:?}", loose.2, tight.2);
}

#[test]
fn the_precision_rule_stays_the_default() {
    let e = experiment("repetitions = \"auto\"\nmin_repetitions = 3\nmax_repetitions = 6");
    assert_eq!(e.stop, Stop::Precise);
    let (_, _, said) = run(
        &e,
        Fake {
            scale_b: 2.0,
            noise: 0.0,
            ..Default::default()
        },
    );
    assert!(
        said.iter()
            .any(|s| s.starts_with("warning: precision target met")),
        "{said:?}"
    );
}

#[test]
fn stop_and_equivalence_are_checked_where_they_are_written() {
    let e = experiment(&format!("{DECIDED}\nequivalence = \"5%\""));
    assert_eq!(e.stop, Stop::Decided { equivalence: 0.05 });
    assert_eq!(
        experiment(DECIDED).stop,
        Stop::Decided {
            equivalence: Stop::DEFAULT_EQUIVALENCE
        }
    );
    let bad = |head: &str, matrix: &str| {
        let text = format!(
            "[experiment]\n{head}\n[matrix]\n{matrix}\n[workload]\nkind = \"command\"\ncommand = \"true\"\n"
        );
        Experiment::parse(Path::new("bad.toml"), &text)
            .unwrap_err()
            .to_string()
    };
    let two = "m = [1, 2]";
    for (head, matrix, want) in [
        (
            "repetitions = 5\nstop = \"decided\"",
            two,
            "stop only applies with repetitions = \"auto\"",
        ),
        (
            "repetitions = \"auto\"\nstop = \"soon\"",
            two,
            "stop must be \"precise\" or \"decided\"",
        ),
        (
            "repetitions = \"auto\"\nequivalence = \"2%\"",
            two,
            "equivalence only applies with stop = \"decided\"",
        ),
        (
            "repetitions = \"auto\"\nstop = \"decided\"\nequivalence = \"200%\"",
            two,
            "equivalence must be a fraction",
        ),
        (
            "repetitions = \"auto\"\nstop = \"decided\"",
            "m = [1]",
            "two configs or more",
        ),
    ] {
        let msg = bad(head, matrix);
        assert!(msg.contains(want), "{head}: {msg}");
        assert!(msg.contains("bad.toml:"), "located: {msg}");
    }
}

#[test]
fn a_draft_keeps_its_stop_rule() {
    let mut d = Draft::with_options("d", Kind::Command, toml::Table::new())
        .option("command", "{command}")
        .param("command", vec!["true".into(), "false".into()]);
    d.repetitions = Some(Repetitions::Auto {
        min: 5,
        max: 20,
        target: 0.02,
    });
    d.stop = Some(Stop::Decided { equivalence: 0.03 });
    let e = d.check(Path::new("d.toml")).unwrap();
    assert_eq!(e.stop, Stop::Decided { equivalence: 0.03 });
}

#[test]
fn a_resumed_run_rebuilds_the_same_shuffled_rounds() {
    let exp = experiment(DECIDED);
    let store = Store::in_memory().unwrap();
    // Ctrl-C in round 7, one of the rounds the auto loop added.
    let fake = Fake {
        scale_b: 1.0,
        noise: 0.5,
        interrupt_at: Arc::new(AtomicU32::new(13)),
        ..Default::default()
    };
    let (first, _, _) = run_in(&store, &exp, fake.clone(), None);
    assert_eq!(first.status, RunStatus::Interrupted);
    let (again, rounds, said) = run_in(&store, &exp, fake, Some(first.run_id));
    assert_eq!(
        (again.run_id, again.status),
        (first.run_id, RunStatus::Complete)
    );
    assert_eq!(rounds, 12, "{said:?}");
    // Every round whole, in the order the seed's plan gives it (a re-run trial takes
    // the next ordinal).
    let configs = store.configs(first.run_id).unwrap();
    let seen: Vec<(u32, u32)> = store
        .trials(first.run_id)
        .unwrap()
        .iter()
        .filter(|t| t.status == "ok")
        .map(|t| {
            let c = configs.iter().find(|c| c.id == t.config_id).unwrap();
            (c.ordinal, t.repetition)
        })
        .collect();
    let plan: Vec<(u32, u32)> = (1..=12u32)
        .flat_map(|r| plan::round(&exp, 2, 11, r, 0))
        .map(|t| (t.config as u32, t.repetition))
        .collect();
    assert_eq!(seen, plan);
    let firsts = plan.chunks(2).filter(|r| r[0].0 == 0).count();
    assert_eq!(firsts, 6, "balanced: each config first in half the rounds");
}

#[test]
fn a_config_that_always_fails_cannot_keep_the_run_going() {
    let (out, _, said) = run(
        &experiment(DECIDED),
        Fake {
            scale_b: 1.0,
            noise: 0.01,
            fail_b: true,
            ..Default::default()
        },
    );
    assert_eq!(out.status, RunStatus::CompleteWithFailures);
    // The 5 planned rounds, then at most max_repetitions more.
    assert!(out.trials_ok + out.trials_failed <= 2 * (5 + 12), "{out:?}");
    assert!(
        said.iter().any(|s| s.contains("trials keep failing")),
        "{said:?}"
    );
}
