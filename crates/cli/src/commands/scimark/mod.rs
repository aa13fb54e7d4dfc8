//! `perflab scimark`: SciMark 2 in several languages. Each language is built and
//! verified against C first by the library's pre-flight (a broken one is dropped with
//! its error); the timed rounds are then an experiment over `lang` — built here as a
//! typed value (`Draft`) and serialised, run by the lab
//! runner like any `perflab run` (interleaved, stored trial by trial, Ctrl-C, `--resume`)
//! — and the tables are read back from the store: MFLOPS with intervals, and each
//! language's ratio to C as an analysis comparison with baseline `lang=c`.

mod report;

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;
use perflab_lab::experiment::{Draft, Experiment};
use perflab_lab::runner::{self, RunOptions};
use perflab_store::Store;
use perflab_workloads::scimark::preflight::{self, Checked};
use perflab_workloads::scimark::{self, BuildOptions, ScimarkSpec, KERNELS, LANGS};
use perflab_workloads::spec::Kind;
use perflab_workloads::TrialContext;

use crate::exit::{self, InvalidInput};
use crate::progress::Progress;
use crate::Global;

/// SciMark 2 (FFT, SOR, Monte Carlo, sparse mat-mult, LU) in C, Java, Rust, Go,
/// JavaScript and Python: the same arithmetic on the same data, verified by checksums.
///
/// Examples:
///   perflab scimark --lang c,java --repeat 10
///   perflab scimark --lang c,rust,go --min-time 0.5 --json
///   perflab scimark --lang java --java /usr/lib/jvm/temurin-21/bin/java --jvm-flags "-XX:+UseParallelGC"
///   perflab scimark --resume 4            # after Ctrl-C: run the missing rounds of run 4
///
/// The timed rounds are an experiment over `lang` run by perflab's runner: interleaved,
/// each round stored the moment it ends, Ctrl-C keeps what finished. Builds are cached (~/.cache/perflab/scimark; PERFLAB_CACHE overrides). A missing
/// toolchain, a failed build or a failed verification drops that language only.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct ScimarkArgs {
    /// Languages, comma-separated: c, java, rust, go, js, python.
    #[arg(long, value_delimiter = ',', default_value = "c,java")]
    lang: Vec<String>,
    /// The large problem sizes (FFT 1M points, SOR and LU 1000×1000, sparse N=100000).
    #[arg(long)]
    large: bool,
    /// Minimum time per kernel timing (calibration doubles cycles until reached): 2s,
    /// 500ms, or a number of seconds.
    #[arg(long, default_value = "2s", value_parser = parse_min_time)]
    min_time: f64,
    /// Timed runs per language, interleaved across languages.
    #[arg(long, default_value_t = 5)]
    repeat: u32,
    /// C compiler flags.
    #[arg(long, default_value = "-O3", allow_hyphen_values = true)]
    cflags: String,
    /// JVM flags.
    #[arg(long, allow_hyphen_values = true)]
    jvm_flags: Option<String>,
    /// The java binary (another JDK).
    #[arg(long)]
    java: Option<String>,
    /// A subset of kernels: fft,sor,mc,sparse,lu.
    #[arg(long, value_delimiter = ',')]
    kernels: Option<Vec<String>>,
    /// Confidence level of the intervals.
    #[arg(long, default_value_t = 0.95, value_parser = crate::commands::show::parse_confidence)]
    confidence: f64,
    /// JSON output (see docs/json.md).
    #[arg(long)]
    json: bool,
    /// Finish an interrupted scimark run (same id): only its missing rounds run.
    #[arg(long, value_name = "RUN_ID")]
    resume: Option<i64>,
    /// With --resume: re-run failed rounds too.
    #[arg(long, requires = "resume")]
    retry_failed: bool,
}

/// `--min-time`: perflab's duration grammar (a bare number is seconds).
fn parse_min_time(s: &str) -> Result<f64, String> {
    let d = perflab_units::parse_duration(s).map_err(|e| e.for_field("--min-time").to_string())?;
    if d.is_zero() {
        return Err("--min-time must be greater than zero".into());
    }
    Ok(d.as_secs_f64())
}

pub fn run(g: &Global, a: &ScimarkArgs) -> anyhow::Result<ExitCode> {
    check_args(a)?;
    let flag = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    let store = Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let (exp, langs, resume) = match a.resume {
        Some(id) => {
            let exp = perflab_lab::resume::stored_experiment(&store, id, Some("scimark"))
                .map_err(exit::resume_error)?;
            (exp, Vec::new(), Some(id))
        }
        None => {
            let langs = preflight(g, a, &flag)?;
            let Some(langs) = langs else {
                return Ok(ExitCode::from(exit::INTERRUPTED));
            };
            let ok: Vec<&str> = langs
                .iter()
                .filter(|l| l.error.is_none())
                .map(|l| l.name.as_str())
                .collect();
            if ok.is_empty() {
                let doc = report::document(None, &store, &langs, a.confidence)?;
                report::print(&doc, a.json, a.confidence)?;
                return Ok(ExitCode::from(exit::FAILURES));
            }
            (experiment(a, &ok)?, langs, None)
        }
    };
    if !g.quiet {
        let configs = perflab_lab::plan::configs(&exp);
        let labels: Vec<String> = configs.iter().map(|c| c.label()).collect();
        eprintln!("scimark: timing {}, interleaved", labels.join(" · "));
    }
    let opts = RunOptions {
        resume,
        retry_failed: a.retry_failed,
        kind: Some("scimark".into()),
        ..Default::default()
    };
    let progress = Progress::new(g.quiet);
    let outcome = runner::run(&exp, &store, &opts, flag, &progress)?;
    drop(progress);
    let doc = report::document(Some(outcome.run_id), &store, &langs, a.confidence)?;
    report::print(&doc, a.json, a.confidence)?;
    let code = exit::for_outcome(&outcome, "rounds", "scimark");
    let lang_failed = langs.iter().any(|l| l.error.is_some());
    Ok(ExitCode::from(if code == exit::OK && lang_failed {
        exit::FAILURES
    } else {
        code
    }))
}

fn check_args(a: &ScimarkArgs) -> Result<(), InvalidInput> {
    for l in &a.lang {
        if !LANGS.contains(&l.as_str()) {
            return Err(InvalidInput(format!(
                "--lang {l:?}: expected some of {}",
                LANGS.join(", ")
            )));
        }
    }
    for k in a.kernels.iter().flatten() {
        if !KERNELS.contains(&k.as_str()) {
            return Err(InvalidInput(format!(
                "--kernels {k:?}: expected some of {}",
                KERNELS.join(", ")
            )));
        }
    }
    if a.repeat == 0 {
        return Err(InvalidInput("--repeat must be at least 1".into()));
    }
    Ok(())
}

/// Builds every language and verifies it against C (the library's pre-flight,
/// `perflab_workloads::scimark::preflight`), saying which it builds and what failed.
/// None: interrupted.
fn preflight(
    g: &Global,
    a: &ScimarkArgs,
    flag: &Arc<AtomicBool>,
) -> anyhow::Result<Option<Vec<Checked>>> {
    let ctx = TrialContext {
        cpus: None,
        timeout: None,
        interrupted: flag.clone(),
        run_dir: std::env::temp_dir(),
        attach: None,
        jit: false,
    };
    let bopts = BuildOptions {
        cache_dir: None,
        cflags: Some(a.cflags.clone()),
        jvm_flags: a.jvm_flags.clone(),
        java: a.java.clone(),
    };
    let ropts = scimark::RunOptions {
        large: a.large,
        kernels: a.kernels.clone(),
        ..Default::default()
    };
    let mut building = |name: &str| {
        if !g.quiet {
            eprintln!("scimark: building {name}…");
        }
    };
    // The library names the `java` binary as a field; here it is `--java`.
    let flag_of = |field: &str| perflab_units::flag_for(&[], field);
    let Some(langs) = preflight::preflight(&a.lang, &bopts, &ropts, &ctx, &mut building, &flag_of)
    else {
        return Ok(None);
    };
    for e in langs.iter().filter_map(|l| l.error.as_ref()) {
        eprintln!("error: {e}");
    }
    Ok(Some(langs))
}

/// The timed rounds as an experiment: the matrix is the verified languages, the
/// workload `kind = "scimark"` with this command's options.
fn experiment(a: &ScimarkArgs, langs: &[&str]) -> anyhow::Result<Experiment> {
    crate::commands::oneliner::experiment(&draft(a, langs)?)
}

/// [`experiment`] as a value.
fn draft(a: &ScimarkArgs, langs: &[&str]) -> Result<Draft, InvalidInput> {
    let spec = ScimarkSpec {
        lang: langs.first().copied().unwrap_or("c").to_string(),
        size: if a.large { "large" } else { "default" }.to_string(),
        min_time: Some(a.min_time),
        cflags: Some(a.cflags.clone()),
        jvm_flags: a.jvm_flags.clone(),
        java: a.java.clone(),
        kernels: a.kernels.clone(),
        counters: Vec::new(),
    };
    let size = spec.size.clone();
    let draft = Draft::new(
        &format!("scimark {}", a.lang.join(",")),
        Kind::Scimark,
        &spec,
    )
    .and_then(|d| d.vary("lang", langs.to_vec()))
    .and_then(|d| d.vary("size", vec![size]))
    .map_err(crate::commands::oneliner::usage)?;
    Ok(crate::commands::oneliner::fixed(draft, a.repeat, 0))
}

#[cfg(test)]
mod tests {
    use crate::commands::oneliner::round_trip;

    #[test]
    fn the_experiment_reads_back_as_built() {
        let a = round_trip::args(&["--lang", "c,java", "--min-time", "500ms", "--repeat", "2"]);
        let e = round_trip::check(&super::draft(&a, &["c", "java"]).unwrap());
        assert_eq!(e.config_count(), 2);
        let a = round_trip::args(&["--large", "--kernels", "fft,lu", "--java", "/x/java"]);
        round_trip::check(&super::draft(&a, &["java"]).unwrap());
    }
}
