//! `perflab bench 'CMD A' 'CMD B' …`: "is B faster than A?" in one line — hyperfine's
//! interface and short flags on perflab's statistics.
//!
//! A bench is not a second runner: the arguments become an experiment value (`plan`
//! expands them with the lab's planner; `file` builds the `Draft`, serialised into the
//! stored file text), which the lab parses and the one runner runs (interleaved,
//! Ctrl-C safe, stored as a run like any other; see docs/architecture.md). What comes
//! back is read from the store (`stats`, the only link to the statistics code),
//! printed (`output`) and exported (`export`).

mod export;
mod file;
mod output;
mod plan;
mod stats;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use perflab_lab::experiment::Stop;
use perflab_lab::observe::Observer;
use perflab_lab::runner::{self, RunOptions};
use perflab_store::Store;
use perflab_telemetry::perfcount::Event;

use crate::exit::{self, InvalidInput};
use crate::progress::Progress;
use crate::Global;
use plan::{Param, Runs, Shell, Spec};

/// The metrics every bench summarizes and compares.
const METRICS: [&str; 4] = ["wall_s", "user_s", "sys_s", "max_process_rss_bytes"];

/// Benchmark commands hyperfine-style: means with CIs and a verdict against the first.
///
/// Runs are interleaved; each command is compared with the first (or --reference):
/// ratio of mean wall times with its confidence interval, Welch's p-value and a
/// verdict. Flags follow hyperfine's. Commands run without a shell unless --shell is given (a
/// command with |, &&, ;, < or > is refused without one). Output is discarded (kept in
/// the store; --show-output prints it). The bench is stored as a run: `perflab show`,
/// `compare` and `report` read it, and `perflab run --resume RUN` finishes an
/// interrupted one.
///
/// Examples:
///   perflab bench 'sleep 0.1' 'sleep 0.12'
///   perflab bench -r 20 -w 3 'gzip -1 -c big.txt' 'gzip -9 -c big.txt'
///   perflab bench --until-decided 'sleep 0.1' 'sleep 0.1'
///   perflab bench -L level 1,6,9 'gzip -{level} -c big.txt' --export-json out.json
///   perflab bench -P threads 1 8 'make -j {threads}' --prepare 'make clean'
///   perflab bench --shell sh 'cat f | wc -l' 'wc -l < f'
///   perflab bench --reference 'grep -c x f' 'rg -c x f' --export-markdown table.md
///   perflab bench --counters task-clock,page-faults,instructions 'gzip -1 -c f' 'gzip -9 -c f'
///
/// Exit codes: 0 ok, 2 bad arguments, 4 a command failed (non-zero exit; -i ignores
/// that), 130 interrupted (finished runs are kept).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct BenchArgs {
    /// The commands to benchmark; the first is the baseline (unless --reference).
    #[arg(required = true, value_name = "CMD")]
    commands: Vec<String>,

    /// Exactly NUM runs of each command.
    #[arg(short = 'r', long, value_name = "NUM", conflicts_with_all = ["min_runs", "max_runs"])]
    runs: Option<u32>,

    /// At least NUM runs of each command, then more until the wall time's 95% CI is
    /// within ±2% of its mean (up to --max-runs).
    #[arg(short = 'm', long, value_name = "NUM")]
    min_runs: Option<u32>,

    /// At most NUM runs of each command (with --min-runs; default 100).
    #[arg(short = 'M', long, value_name = "NUM")]
    max_runs: Option<u32>,

    /// Add rounds until each command's wall-time comparison with the first is decided
    /// — the paired ratio CI excludes 1, or lies within --equivalence — with the
    /// repeated looks corrected (O'Brien–Fleming-type alpha spending); at least
    /// --min-runs (default 5), at most --max-runs (default 30).
    #[arg(long, conflicts_with = "runs")]
    until_decided: bool,

    /// With --until-decided: the margin within which two commands count as equivalent,
    /// in percent (`2%` or `2`, as `perflab compare --equivalence`; default 2%).
    #[arg(long, value_name = "PCT", requires = "until_decided", value_parser = parse_margin)]
    equivalence: Option<f64>,

    /// NUM unrecorded warm-up runs of each command first.
    #[arg(short = 'w', long, value_name = "NUM", default_value_t = 0)]
    warmup: u32,

    /// Run CMD (with sh -c) before each run.
    #[arg(short = 'p', long, value_name = "CMD")]
    prepare: Option<String>,

    /// Run CMD (with sh -c) once before all runs.
    #[arg(short = 's', long, value_name = "CMD")]
    setup: Option<String>,

    /// Run CMD (with sh -c) once after all runs.
    #[arg(short = 'c', long, value_name = "CMD")]
    cleanup: Option<String>,

    /// Benchmark each value of a comma-separated list, replacing {NAME} in the commands.
    /// Repeat for every combination of several parameters.
    #[arg(short = 'L', long, num_args = 2, value_names = ["NAME", "VALUES"],
          action = clap::ArgAction::Append, allow_hyphen_values = true,
          conflicts_with = "parameter_scan")]
    parameter_list: Vec<String>,

    /// Benchmark each number from LO to HI (step --parameter-step-size, default 1),
    /// replacing {NAME} in the commands.
    #[arg(short = 'P', long, num_args = 3, value_names = ["NAME", "LO", "HI"],
          allow_hyphen_values = true)]
    parameter_scan: Vec<String>,

    /// The step of --parameter-scan.
    #[arg(
        short = 'D',
        long,
        value_name = "STEP",
        requires = "parameter_scan",
        allow_hyphen_values = true
    )]
    parameter_step_size: Option<String>,

    /// Run the commands with SHELL -c: `sh`, a shell's command line like `bash --norc`,
    /// or `none` (the default: split into words and run directly).
    #[arg(short = 'S', long, value_name = "SHELL")]
    shell: Option<String>,

    /// No shell (the default; same as --shell none).
    #[arg(short = 'N', conflicts_with = "shell")]
    no_shell: bool,

    /// Pin every run to these CPUs (a list like `1` or `0-1,3`): steadier timings on a
    /// busy machine.
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,

    /// Keep measuring commands that exit non-zero, and exit 0.
    #[arg(short = 'i', long)]
    ignore_failure: bool,

    /// Compare every command with CMD (benchmarked first) instead of the first command.
    #[arg(long, value_name = "CMD")]
    reference: Option<String>,

    /// A name for a command in the output (repeat: one per command).
    #[arg(short = 'n', long, value_name = "NAME", action = clap::ArgAction::Append)]
    command_name: Vec<String>,

    /// Write the results as JSON in hyperfine's format, plus perflab's comparisons.
    #[arg(long, value_name = "FILE")]
    export_json: Option<PathBuf>,

    /// Write the results as a Markdown table.
    #[arg(long, value_name = "FILE")]
    export_markdown: Option<PathBuf>,

    /// Write the results as CSV (hyperfine's columns).
    #[arg(long, value_name = "FILE")]
    export_csv: Option<PathBuf>,

    /// Print what the commands write (discarded by default).
    #[arg(long, conflicts_with = "json")]
    show_output: bool,

    /// Confidence level of the intervals.
    #[arg(long, default_value_t = 0.95, value_parser = crate::commands::show::parse_confidence)]
    confidence: f64,

    /// Count these events over each run's whole process tree, with perf_event_open
    /// (a comma-separated list of: cycles, instructions, branches, branch-misses,
    /// cache-references, cache-misses, task-clock, context-switches, cpu-migrations,
    /// page-faults). Hardware events on a machine without a PMU (most VMs) are
    /// reported missing, never 0.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    counters: Vec<String>,

    /// Print the --export-json document instead of the summary.
    #[arg(long)]
    json: bool,
}

fn params(a: &BenchArgs) -> Result<Vec<Param>, InvalidInput> {
    let mut out: Vec<Param> = Vec::new();
    for pair in a.parameter_list.chunks(2) {
        out.push(plan::parameter_list(&pair[0], &pair[1])?);
    }
    if let [name, lo, hi] = a.parameter_scan.as_slice() {
        out.push(plan::parameter_scan(
            name,
            lo,
            hi,
            a.parameter_step_size.as_deref(),
        )?);
    }
    for (i, p) in out.iter().enumerate() {
        if out[..i].iter().any(|q| q.name == p.name) {
            return Err(InvalidInput(format!(
                "parameter {:?} is given twice",
                p.name
            )));
        }
    }
    Ok(out)
}

/// `2%`, `2 %` or `2`, read as `perflab compare --equivalence` reads it: the fraction,
/// strictly between 0 and 1.
fn parse_margin(s: &str) -> Result<f64, String> {
    match crate::commands::compare::parse_pct(s)? {
        pct if pct > 0.0 && pct < 100.0 => Ok(pct / 100.0),
        _ => Err(format!(
            "expected a percentage like 2% (between 0 and 100 %), found {s:?}"
        )),
    }
}

/// `--until-decided`: stop when decided, within `--equivalence`.
fn stop(a: &BenchArgs) -> Option<Stop> {
    a.until_decided.then(|| Stop::Decided {
        equivalence: a.equivalence.unwrap_or(Stop::DEFAULT_EQUIVALENCE),
    })
}

fn runs(a: &BenchArgs) -> Result<Runs, InvalidInput> {
    let bad =
        |flag: &str, n: u32| InvalidInput(format!("{flag} must be from 1 to 100000, found {n}"));
    if a.until_decided {
        let min = a.min_runs.unwrap_or(5);
        let max = a.max_runs.unwrap_or(min.max(30));
        if min < 2 || max < min || max > 100_000 {
            return Err(InvalidInput(format!(
                "need 2 <= --min-runs <= --max-runs <= 100000, found {min} and {max}"
            )));
        }
        return Ok(Runs::Auto { min, max });
    }
    match (a.runs, a.min_runs, a.max_runs) {
        (Some(n), _, _) if !(1..=100_000).contains(&n) => Err(bad("--runs", n)),
        (Some(n), _, _) => Ok(Runs::Fixed(n)),
        (None, None, None) => Ok(Runs::Fixed(10)),
        (None, min, max) => {
            let min = min.unwrap_or(10);
            let max = max.unwrap_or(min.max(100));
            if min < 2 || max < min || max > 100_000 {
                return Err(InvalidInput(format!(
                    "need 2 <= --min-runs <= --max-runs <= 100000, found {min} and {max}"
                )));
            }
            Ok(Runs::Auto { min, max })
        }
    }
}

/// The spec, the run's name, its description and the template (see `file::templated`).
fn spec(a: &BenchArgs) -> Result<(Spec, String, Option<String>), InvalidInput> {
    let params = params(a)?;
    let benches = plan::expand(
        &a.commands,
        &a.command_name,
        a.reference.as_deref(),
        &params,
    )?;
    if a.until_decided && benches.len() < 2 {
        return Err(InvalidInput(
            "--until-decided stops when the comparison with the first command is decided: give two commands or more".into(),
        ));
    }
    let spec = Spec {
        benches,
        params,
        shell: Shell::parse(a.shell.as_deref(), a.no_shell)?,
        runs: runs(a)?,
        warmup: a.warmup,
        prepare: a.prepare.clone(),
        setup: a.setup.clone(),
        cleanup: a.cleanup.clone(),
        ignore_failure: a.ignore_failure,
        cpus: a.cpus.clone(),
        stop: stop(a),
        counters: Event::parse_list(&a.counters)
            .map_err(|e| InvalidInput(format!("--counters: {e}")))?,
    };
    let mut name = format!("bench: {}", a.commands.join(" vs "));
    if name.chars().count() > 80 {
        name = name.chars().take(79).collect::<String>() + "…";
    }
    let template = file::templated(&spec, a.commands.len(), a.reference.is_some())
        .then(|| a.commands[0].clone());
    Ok((spec, name, template))
}

pub fn run(g: &Global, a: &BenchArgs) -> anyhow::Result<ExitCode> {
    let (spec, name, template) = spec(a)?;
    let description: Vec<String> = std::iter::once("perflab".to_string())
        .chain(std::env::args().skip(1))
        .map(|w| file::shell_quote(&w))
        .collect();
    let exp = file::experiment(&spec, &name, &description.join(" "), template.as_deref())?;
    let store = Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let flag = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    let progress = Progress::new(g.quiet)
        .pinning_with("--cpus 1")
        .allowing_failure_with("-i");
    let show = output::ShowOutput::new(&progress, &store);
    let observer: &dyn Observer = if a.show_output { &show } else { &progress };
    let outcome = runner::run(&exp, &store, &RunOptions::default(), flag, observer)?;
    if a.show_output {
        show.flush();
    }
    progress.finish();

    let summaries = stats::summaries(&store, outcome.run_id, a.confidence)?;
    let results = export::load(&store, outcome.run_id, &spec.benches, summaries)?;
    let metrics: Vec<String> = METRICS.map(String::from).to_vec();
    let mut comparisons: Vec<(usize, Vec<stats::Versus>)> = stats::versus_baseline(
        &store,
        outcome.run_id,
        0,
        &metrics,
        a.confidence,
        a.equivalence,
    )?
    .into_iter()
    .map(|(ordinal, rows)| (ordinal as usize, rows))
    .filter(|(i, _)| *i < results.len())
    .collect();
    if let Some((_, decided)) = runner::decisions(&store, outcome.run_id, &exp)? {
        settle(&mut comparisons, &decided);
    }
    let whys = whys(&store, outcome.run_id, &comparisons, a.confidence)?;
    let o = export::Outcome {
        run: outcome.run_id,
        confidence: a.confidence,
        results,
        baseline: 0,
        comparisons,
        ignore_failure: a.ignore_failure,
        whys,
        counters: spec.counters.clone(),
    };
    write_exports(a, &o)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&export::json_doc(&o))?);
    } else {
        println!(
            "run {} · {} trials ok, {} failed · store {}",
            outcome.run_id,
            outcome.trials_ok,
            outcome.trials_failed,
            g.store.display()
        );
        output::print(&o);
    }
    Ok(ExitCode::from(exit::for_outcome(&outcome, "runs", "run")))
}

/// The why block of each compared command against the baseline (config 0); the
/// metrics the verdict reads are no reason for themselves.
fn whys(
    store: &Store,
    run: perflab_store::RunId,
    comparisons: &[(usize, Vec<stats::Versus>)],
    confidence: f64,
) -> anyhow::Result<Vec<(usize, perflab_analysis::why::WhyBlock)>> {
    let opts = perflab_analysis::why::WhyOptions {
        confidence,
        exclude: METRICS.map(String::from).to_vec(),
        ..Default::default()
    };
    let mut exports = crate::compare::why::Exports::default();
    comparisons
        .iter()
        .map(|(i, _)| Ok((*i, exports.block(store, (run, 0), (run, *i as u32), &opts)?)))
        .collect()
}

/// `--until-decided`: a comparison the sequential design did not decide is not
/// `faster`/`slower`, whatever a fixed-sample test of the same trials says — the run
/// stopped because it was `equivalent`, or at its maximum, `undecided`.
fn settle(comparisons: &mut [(usize, Vec<stats::Versus>)], decided: &[runner::Compared]) {
    use runner::Decision;
    for (cand, rows) in comparisons.iter_mut() {
        for row in rows.iter_mut() {
            let Some(d) = decided
                .iter()
                .find(|d| d.candidate == *cand && d.metric == row.metric)
            else {
                continue;
            };
            let word = match d.decision {
                Decision::Differs => continue,
                Decision::Equivalent => "equivalent",
                Decision::Continue | Decision::Undecided => "undecided",
            };
            if row.verdict == "faster" || row.verdict == "slower" {
                row.verdict = word.to_string();
                if let Some(v) = row.json.get_mut("verdict") {
                    *v = word.into();
                }
            }
        }
    }
}

fn write_exports(a: &BenchArgs, o: &export::Outcome) -> anyhow::Result<()> {
    let write = |path: &PathBuf, text: String| {
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    if let Some(p) = &a.export_json {
        write(
            p,
            serde_json::to_string_pretty(&export::json_doc(o))? + "\n",
        )?;
    }
    if let Some(p) = &a.export_markdown {
        write(p, export::markdown(o))?;
    }
    if let Some(p) = &a.export_csv {
        write(p, export::csv(o))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::commands::oneliner::round_trip;

    fn draft(argv: &[&str]) -> perflab_lab::experiment::Draft {
        let a: super::BenchArgs = round_trip::args(argv);
        let (spec, name, template) = super::spec(&a).unwrap();
        super::file::draft(&spec, &name, "perflab bench ...", template.as_deref()).unwrap()
    }

    #[test]
    fn the_experiment_reads_back_as_built() {
        let e = round_trip::check(&draft(&["sleep 0.01", "sleep 0.02", "-r", "3", "-w", "1"]));
        assert_eq!(e.config_count(), 2);
        let e = round_trip::check(&draft(&[
            "sleep 0.0{n} # {x}",
            "-L",
            "n",
            "1,2,3",
            "-L",
            "x",
            "a,b",
            "--prepare",
            "echo {n}",
            "-m",
            "3",
            "-M",
            "5",
            "--cpus",
            "0",
            "-i",
        ]));
        assert_eq!(e.config_count(), 6);
        let e = round_trip::check(&draft(&["sleep 0.{n}", "-P", "n", "1", "2", "-D", "0.5"]));
        assert_eq!(e.config_count(), 3);
        round_trip::check(&draft(&[
            "awk '{print}' /dev/null",
            "--shell",
            "bash --norc",
            "-c",
            "true",
        ]));
    }
}
