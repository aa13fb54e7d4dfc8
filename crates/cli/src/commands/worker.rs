//! `perflab worker` (hidden): the far end of every trial on a host — `perflab run --on`
//! and the one-trial commands' `--on` (`http`, `disk`, `doctor`, `profile`) — one trial
//! from a JSON spec on stdin to JSON events on stdout, stopped by the end of its stdin
//! (perflab_fleet::worker); of `[service] host` / `[monitor] host`: a session that
//! runs the service under test and its monitor here until its stdin ends
//! (perflab_fleet::session); and of a distributed load's agent (perflab_fleet::agent).

use std::process::ExitCode;

use perflab_workloads::spec::Builtin;

/// Run one trial sent as JSON on stdin and answer on stdout (started over ssh by
/// `perflab run --on`), or serve a session (the service under test and its monitor,
/// for `[service] host` and `[monitor] host`) until stdin ends.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {}

pub fn run(_a: &WorkerArgs) -> anyhow::Result<ExitCode> {
    let _ = perflab_workloads::tree::become_subreaper();
    let host = serde_json::to_value(perflab_lab::env::host())?;
    let scratch = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("perflab")
        .join("worker");
    let stdin = std::io::BufReader::new(std::io::stdin());
    let code = perflab_fleet::worker::serve(stdin, std::io::stdout(), &Builtin, host, &scratch);
    Ok(ExitCode::from(code as u8))
}
