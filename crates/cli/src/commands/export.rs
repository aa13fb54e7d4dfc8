//! `perflab export` — being written (issue 3); replaced wholesale.
use std::process::ExitCode;

use crate::Global;

/// (being written)
#[derive(Debug, clap::Args)]
pub struct ExportArgs {}

pub fn run(_g: &Global, _a: &ExportArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("perflab export is not built yet")
}
