//! `perflab compare` — being written (issue 3); replaced wholesale.
use std::process::ExitCode;

use crate::Global;

/// (being written)
#[derive(Debug, clap::Args)]
pub struct CompareArgs {}

pub fn run(_g: &Global, _a: &CompareArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("perflab compare is not built yet")
}
