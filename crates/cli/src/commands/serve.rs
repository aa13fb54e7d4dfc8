//! `perflab serve` — owned by the serve work; replaced wholesale by it.
use std::process::ExitCode;

/// Arguments of `perflab serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {}

pub fn run(_args: &ServeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("perflab serve is not built yet")
}
