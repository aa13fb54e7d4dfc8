//! `perflab run`: run (or resume) an experiment, store it, print the summary.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use perflab_analysis::compare::Baseline;
use perflab_analysis::summary::summarize_run;

use crate::commands::thresholds;
use perflab_lab::runner::{self, RunOptions};
use perflab_lab::Experiment;
use perflab_store::Store;

use crate::exit::InvalidInput;
use crate::progress::Progress;
use crate::Global;

/// Run an experiment: its matrix × repetitions, stored trial by trial, then the summary.
///
/// Examples:
///   perflab run examples/compress.toml
///   perflab run examples/compress.toml --json > summary.json
///   perflab run --resume 3                 # finish an interrupted run, same id
///   perflab run --resume 3 --retry-failed  # ... and re-run its failed trials
///   perflab run exp.toml --on a,b --hosts hosts.toml   # every config on hosts a and b
///
/// Ctrl-C stops the current trial, keeps every finished one and exits 130; a second
/// Ctrl-C kills at once.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct RunArgs {
    /// The experiment file (TOML; see docs/experiment-file.md).
    #[arg(required_unless_present = "resume", conflicts_with = "resume")]
    file: Option<PathBuf>,

    /// Resume a stored run: run every (config, repetition) without a successful trial.
    #[arg(long, value_name = "RUN_ID")]
    resume: Option<i64>,

    /// With --resume: re-run failed trials too.
    #[arg(long, requires = "resume")]
    retry_failed: bool,

    /// Confidence level of the printed intervals.
    #[arg(long, default_value_t = 0.95, value_parser = crate::commands::show::parse_confidence)]
    confidence: f64,

    /// Print the summary as JSON (the `show --json` contract) instead of a table.
    #[arg(long)]
    json: bool,

    /// Check the file and print the plan without running anything.
    #[arg(long)]
    dry_run: bool,

    /// Run the file's quick form: its [quick] tables merged over it (fewer
    /// repetitions, a smaller matrix), for a first look in a few minutes.
    #[arg(long, conflicts_with = "resume")]
    quick: bool,

    /// Run every config on these inventory hosts over ssh (the host is one more
    /// dimension, `host`; each trial runs `perflab worker` there).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "HOST,...",
        conflicts_with = "resume"
    )]
    on: Vec<String>,

    /// The inventory of `--on`, `on = [...]` and `host = "..."` in the service, monitor,
    /// profile and workload sections: `[[hosts]]` tables (.toml) or an Ansible INI file [default:
    /// hosts.toml beside the experiment, else the experiment's own [[hosts]]].
    #[arg(long, value_name = "FILE")]
    hosts: Option<PathBuf>,

    /// Trust a host's key the first time it is seen (StrictHostKeyChecking=accept-new).
    #[arg(long)]
    accept_new_host_keys: bool,
}

/// This command's flag for a field the lab's messages name (`on`, `quick`): `--field`.
fn flag_of(field: &str) -> String {
    perflab_units::flag_for(&[], field)
}

/// The factory (and opener of host sessions) of a run on hosts, its placement
/// checked by crate fleet ([`perflab_fleet::Fleet::for_experiment`]): every problem is
/// bad input.
fn fleet(a: &RunArgs, exp: &Experiment) -> anyhow::Result<Option<perflab_fleet::Fleet>> {
    let opts = perflab_fleet::FleetOptions {
        hosts: a.hosts.clone(),
        accept_new_host_keys: a.accept_new_host_keys,
    };
    crate::commands::on_host::placement(exp, &opts)
}

pub fn run(g: &Global, a: &RunArgs) -> anyhow::Result<ExitCode> {
    let store_err = || format!("cannot open the store {}", g.store.display());
    let (exp, store) = match (a.resume, &a.file) {
        (Some(id), _) => {
            let store = Store::open(&g.store).with_context(store_err)?;
            // Any run that stored its experiment (`perflab run`, bench, mem, ...).
            let exp = perflab_lab::resume::stored_experiment(&store, id, None)
                .map_err(crate::exit::resume_error)?;
            (exp, store)
        }
        (None, Some(file)) => {
            let exp = if a.quick {
                Experiment::quick_form(file, &flag_of)?
            } else {
                Experiment::from_path(file)?
            };
            let missing = exp.missing();
            let cannot = (!missing.is_empty()).then(|| {
                format!(
                    "cannot run here: this machine lacks {}{}",
                    missing.join(", "),
                    exp.requires
                        .why
                        .as_ref()
                        .map(|w| format!(" — it needs {w}"))
                        .unwrap_or_default()
                )
            });
            if a.dry_run {
                print_plan(&exp);
                if let Some(c) = cannot {
                    println!("{c}");
                }
                return Ok(ExitCode::SUCCESS);
            }
            if let Some(c) = cannot {
                // Exit 1 (could not run), before anything is created or stored.
                anyhow::bail!("{}: {c}", file.display());
            }
            (exp, Store::open(&g.store).with_context(store_err)?)
        }
        (None, None) => {
            return Err(InvalidInput("give an experiment file or --resume RUN_ID".into()).into())
        }
    };
    let exp = if a.on.is_empty() {
        exp
    } else {
        exp.on_hosts(&a.on, &flag_of)?
    };
    let fleet = fleet(a, &exp)?;
    let flag = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    let progress = Progress::new(g.quiet);
    let opts = RunOptions {
        resume: a.resume,
        retry_failed: a.retry_failed,
        ..Default::default()
    };
    let outcome = match &fleet {
        Some(f) => runner::run_on(
            &exp,
            &store,
            &opts,
            &runner::RunContext {
                interrupted: flag,
                observer: &progress,
                factory: f,
                sites: Some(f),
            },
        ),
        None => runner::run(&exp, &store, &opts, flag, &progress),
    };
    crate::commands::on_host::clean(fleet.as_ref());
    let outcome = outcome?;
    progress.finish();
    report(g, a, &exp, &store, &outcome)
}

/// Prints the run's summary (table or `--json`), its comparisons and thresholds, and
/// maps its outcome to the exit status.
fn report(
    g: &Global,
    a: &RunArgs,
    exp: &Experiment,
    store: &Store,
    outcome: &runner::RunOutcome,
) -> anyhow::Result<ExitCode> {
    let summary = summarize_run(store, outcome.run_id, a.confidence)?;
    let verdicts = thresholds::judge(&thresholds::of(exp)?, &summary);
    if verdicts.iter().any(|v| !v.verdict.passed) {
        // The run's state says so too (`gate_failed`), unless it did not finish.
        store.mark_gate_failed(outcome.run_id)?;
    }
    if a.json {
        let mut v = crate::commands::show::json(store, &summary)?;
        if !verdicts.is_empty() {
            v["thresholds"] = serde_json::to_value(&verdicts)?;
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "run {} · {} · {} trials ok, {} failed · store {}",
            outcome.run_id,
            exp.name,
            outcome.trials_ok,
            outcome.trials_failed,
            g.store.display()
        );
        println!("{}", crate::format::summary_table(&summary));
        print_comparisons(store, outcome.run_id, exp, a.confidence)?;
        thresholds::print(&verdicts, a.confidence);
    }
    let code = crate::exit::for_outcome(outcome, "trials", "run");
    // A failed threshold (3) wins over failed trials (4), not over an interrupt (130).
    let gate = verdicts.iter().any(|v| !v.verdict.passed);
    Ok(ExitCode::from(
        if gate && code != crate::exit::INTERRUPTED {
            crate::exit::GATE_FAILED
        } else {
            code
        },
    ))
}

/// With several configs, each is compared with the first (the baseline) on the
/// metrics that matter for the workload — the `perflab compare RUN --baseline ...`
/// view, printed at the end of every run.
fn print_comparisons(
    store: &Store,
    run: i64,
    exp: &Experiment,
    confidence: f64,
) -> anyhow::Result<()> {
    if exp.workload.kind().compares_machines() {
        // Its configs are unlike items: machines are compared, not items.
        println!("\nCompare this machine with another: perflab suite compare {run} OTHER_RUN");
        return Ok(());
    }
    let metrics: Vec<String> = if !exp.primary.is_empty() {
        exp.primary.clone()
    } else {
        exp.workload.default_primary()
    };
    let mut opts = perflab_analysis::CompareOptions {
        confidence,
        ..Default::default()
    };
    // `stop = "decided"`'s margin is the margin its verdicts are read with.
    if let perflab_lab::experiment::Stop::Decided { equivalence } = exp.stop {
        opts.equivalence = equivalence;
    }
    crate::compare::print_against_baseline(store, run, &Baseline::First, &metrics, &opts)?;
    Ok(())
}

fn print_plan(exp: &Experiment) {
    let configs = perflab_lab::plan::configs(exp);
    let reps = exp.repetitions.initial();
    let auto = match (&exp.repetitions, exp.stop) {
        (
            perflab_lab::experiment::Repetitions::Auto { max, .. },
            perflab_lab::experiment::Stop::Decided { equivalence },
        ) => format!(
            " at first, then more rounds until every comparison with the first config is decided: its paired ratio CI excludes 1 or lies within ±{:.1}% (at most {max})",
            equivalence * 100.0
        ),
        (perflab_lab::experiment::Repetitions::Auto { max, target, .. }, _) => format!(
            " at first, then more rounds until every primary metric's CI is within ±{:.1}% of its mean (at most {max})",
            target * 100.0
        ),
        _ => String::new(),
    };
    println!(
        "{}: {} config(s) × {} repetition(s) = {} trials (+ {} warm-up){auto}, order {}",
        exp.name,
        configs.len(),
        reps,
        configs.len() * reps as usize,
        configs.len() * exp.warmup as usize,
        exp.order.as_str()
    );
    for c in configs {
        println!("  {}", c.label());
    }
}
