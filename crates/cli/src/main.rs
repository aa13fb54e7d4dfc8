//! `perflab`: the command-line front of the lab. Thin by design: it parses arguments,
//! calls the libraries, prints. Errors are printed once, here, as
//! `error: <what> — <context>`, and mapped to the exit codes documented in `--help`.

mod commands;
mod compare;
mod exit;
mod format;
mod progress;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

const EXIT_CODES: &str = "\
Exit codes:
  0    ok
  1    error (could not run)
  2    usage or invalid input (bad flag, malformed experiment file)
  3    a gate failed (regression or threshold)
  4    finished with failures (some trials, some requests, doctor warnings)
  5    doctor found something critical
  130  interrupted (finished work is kept in the store)";

/// perflab — a performance lab for Linux servers: drive load, watch the system,
/// and turn repeated measurements into statistics you can trust.
#[derive(Debug, Parser)]
#[command(name = "perflab", version, after_help = EXIT_CODES, max_term_width = 100)]
pub struct Cli {
    /// Results store (SQLite).
    #[arg(
        long,
        global = true,
        env = "PERFLAB_STORE",
        default_value = ".perflab/results.db",
        value_name = "PATH"
    )]
    store: PathBuf,

    /// No progress output on stderr.
    #[arg(long, short = 'q', global = true)]
    quiet: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Run(commands::run::RunArgs),
    Bench(commands::bench::BenchArgs),
    Runs(commands::runs::RunsArgs),
    Show(commands::show::ShowArgs),
    Compare(commands::compare::CompareArgs),
    Export(commands::export::ExportArgs),
    Import(commands::import::ImportArgs),
    Serve(commands::serve::ServeArgs),
    Http(Box<commands::http::HttpArgs>),
    Scimark(commands::scimark::ScimarkArgs),
    Disk(commands::disk::DiskArgs),
    Compress(commands::compress::CompressArgs),
    Mem(commands::mem::MemArgs),
    Crypto(commands::crypto::CryptoArgs),
    Net(commands::net::NetArgs),
    Suite(commands::suite::SuiteArgs),
    Top(commands::top::TopArgs),
    Doctor(commands::doctor::DoctorArgs),
    Profile(commands::profile::ProfileArgs),
    Report(commands::report::ReportArgs),
    Completions(commands::completions::CompletionsArgs),
    #[command(hide = true)]
    Worker(commands::worker::WorkerArgs),
}

/// Options every command sees.
pub struct Global {
    pub store: PathBuf,
    pub quiet: bool,
}

impl Global {
    /// The store, which must already exist (commands that only read it).
    pub fn existing_store(&self) -> anyhow::Result<perflab_store::Store> {
        use anyhow::Context;
        if !self.store.exists() {
            return Err(perflab_store::StoreError::Empty)
                .with_context(|| format!("no store at {}", self.store.display()));
        }
        perflab_store::Store::open(&self.store)
            .with_context(|| format!("cannot open the store {}", self.store.display()))
    }

    /// The store and the run id asked for, or the latest run.
    pub fn store_and_run(&self, run: Option<i64>) -> anyhow::Result<(perflab_store::Store, i64)> {
        let store = self.existing_store()?;
        let id = match run {
            Some(id) => id,
            None => store.latest_run()?.id,
        };
        Ok((store, id))
    }
}

/// `perflab runs | head` must end quietly, as Unix tools do, not with a panic. SIGPIPE
/// stays ignored (the load generator and the server write to sockets that peers close),
/// so a failed write to a closed stdout is recognised here and ends the process with
/// the status a SIGPIPE death would give (128 + 13).
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if text.contains("Broken pipe") && text.contains("stdout") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    let g = Global {
        store: cli.store,
        quiet: cli.quiet,
    };
    match &cli.command {
        Command::Run(a) => commands::run::run(&g, a),
        Command::Bench(a) => commands::bench::run(&g, a),
        Command::Runs(a) => commands::runs::run(&g, a),
        Command::Show(a) => commands::show::run(&g, a),
        Command::Compare(a) => commands::compare::run(&g, a),
        Command::Export(a) => commands::export::run(&g, a),
        Command::Import(a) => commands::import::run(&g, a),
        Command::Serve(a) => commands::serve::run(a),
        Command::Http(a) => commands::http::run(&g, a),
        Command::Scimark(a) => commands::scimark::run(&g, a),
        Command::Disk(a) => commands::disk::run(&g, a),
        Command::Compress(a) => commands::compress::run(&g, a),
        Command::Mem(a) => commands::mem::run(&g, a),
        Command::Crypto(a) => commands::crypto::run(&g, a),
        Command::Net(a) => commands::net::run(&g, a),
        Command::Suite(a) => commands::suite::run(&g, a),
        Command::Top(a) => commands::top::run(&g, a),
        Command::Doctor(a) => commands::doctor::run(&g, a),
        Command::Profile(a) => commands::profile::run(&g, a),
        Command::Report(a) => commands::report::run(&g, a),
        Command::Completions(a) => commands::completions::run(a),
        Command::Worker(a) => commands::worker::run(a),
    }
}

fn main() -> ExitCode {
    quiet_broken_pipe();
    match run() {
        Ok(code) => code,
        Err(e) => {
            let code = exit::code_for(&e);
            eprintln!("error: {}", exit::describe(&e));
            if let Some(hint) = exit::hint_for(&e) {
                eprintln!("hint: {hint}");
            }
            code
        }
    }
}
