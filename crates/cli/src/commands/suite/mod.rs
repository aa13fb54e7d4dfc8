//! `perflab suite machine` and `perflab suite compare`: the machine suite (memory,
//! network, compression, crypto, SciMark and web, `kind = "suite"` in
//! crates/workloads/src/suite.rs) as one stored run, and two such runs — from two
//! machines, moved with `export`/`import` — side by side (crates/analysis/src/suite.rs).

mod compare;
mod machine;

use std::process::ExitCode;

use crate::Global;

/// The machine suite: one command per machine, and an honest side-by-side.
///
/// Examples:
///   perflab suite machine --quick                  # ~2 min on 2 cores
///   perflab suite machine --only mem,crypto --cpus 0
///   perflab export 7 > a.json    # on machine A; `perflab import a.json` on B, then:
///   perflab suite compare 7 9                      # B/A per item, geomean, host facts
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct SuiteArgs {
    #[command(subcommand)]
    command: SuiteCommand,
}

#[derive(Debug, clap::Subcommand)]
enum SuiteCommand {
    Machine(machine::MachineArgs),
    Compare(compare::CompareArgs),
}

pub fn run(g: &Global, a: &SuiteArgs) -> anyhow::Result<ExitCode> {
    match &a.command {
        SuiteCommand::Machine(m) => machine::run(g, m),
        SuiteCommand::Compare(c) => compare::run(g, c),
    }
}
