//! `perflab http` — owned by the http work; replaced wholesale by it.
use std::process::ExitCode;

/// Arguments of `perflab http`.
#[derive(Debug, clap::Args)]
pub struct HttpArgs {}

pub fn run(_args: &HttpArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("perflab http is not built yet")
}
