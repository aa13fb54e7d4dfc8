//! What `perflab compress`, `mem`, `crypto`, `net` and `suite machine` share: each maps
//! its flags to a typed experiment value (`perflab_lab::experiment::Draft`, its
//! workload's typed spec) and has the runner run it (interleaved repetitions,
//! Ctrl-C, stored like any run), then prints the summary or its JSON — one path, as
//! `perflab bench` and `scimark` take it.

use std::process::ExitCode;

use anyhow::Context;
use perflab_analysis::summary::summarize_run;
use perflab_lab::experiment::{Draft, DraftError, Experiment, Order, Repetitions};
use perflab_lab::runner::{self, RunOptions, RunOutcome};
use perflab_store::Store;

use crate::exit::{self, InvalidInput};
use crate::progress::Progress;
use crate::Global;

/// Runs the experiment `draft`; `title` heads the table.
pub fn run(g: &Global, draft: &Draft, json: bool, title: &str) -> anyhow::Result<ExitCode> {
    let (store, outcome) = measure(g, draft, None)?;
    let summary = summarize_run(&store, outcome.run_id, 0.95)?;
    if json {
        let v = crate::commands::show::json(&store, &summary)?;
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "run {} · {title} · store {}",
            outcome.run_id,
            g.store.display()
        );
        println!("{}", crate::format::summary_table(&summary));
    }
    Ok(ExitCode::from(exit::for_outcome(&outcome, "trials", "run")))
}

/// The checked experiment of `draft` (its file named `perflab-KIND.toml` in messages);
/// a file error stays one, for its exit code.
pub fn experiment(draft: &Draft) -> anyhow::Result<Experiment> {
    let path = format!("perflab-{}.toml", draft.kind);
    draft
        .check(std::path::Path::new(&path))
        .map_err(|e| match e {
            DraftError::File(f) => anyhow::Error::new(f),
            other => anyhow::Error::new(other),
        })
}

/// Has the runner run the experiment `draft` into the store as a run of its kind, with
/// progress on stderr and Ctrl-C keeping what finished. `pin`: the command's flag
/// that pins CPUs, for the noise warning (`--cpus 1`).
pub fn measure(
    g: &Global,
    draft: &Draft,
    pin: Option<&'static str>,
) -> anyhow::Result<(Store, RunOutcome)> {
    let exp = experiment(draft)?;
    let store = Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let flag = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    let progress = match pin {
        Some(pin) => Progress::new(g.quiet).pinning_with(pin),
        None => Progress::new(g.quiet),
    };
    let opts = RunOptions {
        kind: Some(draft.kind.name().into()),
        ..Default::default()
    };
    let outcome = runner::run(&exp, &store, &opts, flag, &progress)?;
    progress.finish();
    Ok((store, outcome))
}

/// A duration flag (`--min-time`, `-d`): perflab's one duration grammar (crates/units:
/// `500ms`, `2.5s`, `1m`; a plain number is seconds), in seconds.
pub fn seconds(s: &str) -> Result<f64, String> {
    perflab_units::parse_duration(s)
        .map(|d| d.as_secs_f64())
        .map_err(|e| e.to_string())
}

/// A fixed number of repetitions, interleaved, without the noise check (the one-line
/// commands measure the machine as it is and say so in their help).
pub fn fixed(draft: Draft, runs: u32, warmup: u32) -> Draft {
    Draft {
        repetitions: Some(Repetitions::Fixed(runs)),
        warmup: Some(warmup),
        order: Some(Order::Interleaved),
        noise_check: Some(false),
        ..draft
    }
}

/// A library value's error as the usage error it is (the flags' values were wrong).
pub fn usage(e: impl std::fmt::Display) -> InvalidInput {
    InvalidInput(e.to_string())
}

/// `--threads`: a number above 0, or `all` (0 to the workloads: every CPU).
pub fn threads(t: &str) -> Result<usize, InvalidInput> {
    match t {
        "all" => Ok(0),
        t => t.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
            InvalidInput(format!(
                "--threads {t:?}: expected a number above 0 or `all`"
            ))
        }),
    }
}

/// `--min-time`: more than 0, at most 600 seconds.
pub fn min_time(s: f64) -> Result<f64, InvalidInput> {
    if s > 0.0 && s <= 600.0 {
        Ok(s)
    } else {
        Err(InvalidInput(format!(
            "--min-time {s}: expected more than 0 and at most 600 seconds"
        )))
    }
}

/// `--runs`: at least 1.
pub fn runs(n: u32) -> Result<u32, InvalidInput> {
    if n == 0 {
        Err(InvalidInput("--runs must be at least 1".into()))
    } else {
        Ok(n)
    }
}

/// The property every command's experiment keeps: its serialised file reads back as
/// the value it was built from (`Experiment::parse(draft.to_toml()) == draft` in what
/// the run uses).
#[cfg(test)]
pub(crate) mod round_trip {
    use perflab_lab::experiment::{Draft, Experiment, WorkloadSpec};

    /// The flags `argv` of a command, parsed as clap parses them.
    pub fn args<A: clap::Args>(argv: &[&str]) -> A {
        #[derive(clap::Parser)]
        struct Wrap<A: clap::Args> {
            #[command(flatten)]
            a: A,
        }
        let argv = std::iter::once("perflab").chain(argv.iter().copied());
        <Wrap<A> as clap::Parser>::try_parse_from(argv)
            .map(|w| w.a)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Reads `draft`'s file back and checks it says what the draft says.
    pub fn check(draft: &Draft) -> Experiment {
        let text = draft.to_toml().unwrap();
        let e = Experiment::parse(std::path::Path::new("t.toml"), &text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(e.to_toml(), text);
        assert_eq!(e.name, draft.name);
        assert_eq!(e.description, draft.description);
        assert_eq!(e.workload.kind(), draft.kind);
        if let Some(r) = &draft.repetitions {
            assert_eq!(&e.repetitions, r, "{text}");
        }
        if let Some(w) = draft.warmup {
            assert_eq!(e.warmup, w);
        }
        if let Some(o) = draft.order {
            assert_eq!(e.order, o);
        }
        if let Some(n) = draft.noise_check {
            assert_eq!(e.noise_check, n);
        }
        assert_eq!(e.cpus.as_ref().map(|c| c.to_string()), draft.cpus);
        assert_eq!(e.timeout.is_some(), draft.timeout.is_some());
        let hooks = [(&e.prepare, &draft.prepare), (&e.setup, &draft.setup)];
        for (got, want) in hooks.into_iter().chain([(&e.teardown, &draft.teardown)]) {
            assert_eq!(got.as_ref().map(|t| t.source().to_string()), *want);
        }
        let matrix: Vec<(String, Vec<serde_json::Value>)> = draft
            .matrix
            .iter()
            .map(|(n, v)| {
                (
                    n.clone(),
                    serde_json::to_value(v).unwrap().as_array().unwrap().clone(),
                )
            })
            .collect();
        let got: Vec<(String, Vec<serde_json::Value>)> = e
            .matrix
            .iter()
            .map(|p| (p.name.clone(), p.values.clone()))
            .collect();
        assert_eq!(got, matrix, "{text}");
        match &e.workload {
            WorkloadSpec::Options { table, .. } => assert_eq!(table, &draft.options, "{text}"),
            WorkloadSpec::Command(c) => {
                let opt = |k: &str| draft.options.get(k).cloned();
                assert_eq!(opt("command"), Some(c.command.source().into()));
                assert_eq!(opt("shell"), Some(c.shell.into()));
                assert_eq!(opt("allow_failure"), Some(c.allow_failure.into()));
            }
        }
        e
    }
}
