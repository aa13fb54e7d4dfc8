//! What `perflab compress`, `mem`, `crypto` and `net` share: each builds an experiment
//! file in memory from its flags and has the runner run it (interleaved repetitions,
//! Ctrl-C, stored like any run), then prints the summary or its JSON — one path, as
//! `perflab bench` and `scimark` take it.

use std::process::ExitCode;

use anyhow::Context;
use perflab_analysis::summary::summarize_run;
use perflab_lab::experiment::Experiment;
use perflab_lab::runner::{self, RunOptions, RunOutcome};
use perflab_store::Store;

use crate::exit::{self, InvalidInput};
use crate::progress::Progress;
use crate::Global;

/// Runs the experiment `text` of workload `kind`; `title` heads the table.
pub fn run(
    g: &Global,
    kind: &str,
    text: &str,
    json: bool,
    title: &str,
) -> anyhow::Result<ExitCode> {
    let (store, outcome) = measure(g, kind, text)?;
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

/// Has the runner run the experiment `text` (of workload `kind`) into the store, with
/// progress on stderr and Ctrl-C keeping what finished.
pub fn measure(g: &Global, kind: &str, text: &str) -> anyhow::Result<(Store, RunOutcome)> {
    let exp = Experiment::parse(std::path::Path::new(&format!("perflab-{kind}.toml")), text)?;
    let store = Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let flag = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    let progress = Progress::new(g.quiet);
    let opts = RunOptions {
        kind: Some(kind.into()),
        ..Default::default()
    };
    let outcome = runner::run(&exp, &store, &opts, flag, &progress)?;
    progress.finish();
    Ok((store, outcome))
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

/// A TOML string literal.
pub fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}
