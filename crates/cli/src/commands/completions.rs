//! `perflab completions SHELL`: shell completion scripts.

use std::process::ExitCode;

use clap::CommandFactory;

/// Print a completion script for a shell.
///
/// Examples:
///   perflab completions bash > /etc/bash_completion.d/perflab
///   perflab completions zsh > ~/.zfunc/_perflab
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    shell: clap_complete::Shell,
}

pub fn run(a: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = crate::Cli::command();
    clap_complete::generate(a.shell, &mut cmd, "perflab", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}
