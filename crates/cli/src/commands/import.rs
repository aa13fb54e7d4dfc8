//! `perflab import` — being written (issue 3); replaced wholesale.
use std::process::ExitCode;

use crate::Global;

/// (being written)
#[derive(Debug, clap::Args)]
pub struct ImportArgs {}

pub fn run(_g: &Global, _a: &ImportArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("perflab import is not built yet")
}
