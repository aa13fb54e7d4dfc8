//! `perflab runs`: list the stored runs, each in its state (perflab_store::vocab): a
//! run whose perflab is gone reads `abandoned`, with the command that finishes it.

use std::process::ExitCode;

use anyhow::Context;
use comfy_table::Table;
use perflab_store::Store;
use serde::Serialize;

use crate::Global;

/// List the runs in the store, oldest first.
///
/// Examples:
///   perflab runs
///   perflab runs --json | jq '.[-1].id'
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct RunsArgs {
    /// JSON: [{"schema_version", "id", "name", "status", "started_at", "host", "trials_ok",
    /// "trials_failed", "owner": {"pid", "host"}, "heartbeat_at", "hint"}]. Status is
    /// one of running, complete, complete_with_failures, gate_failed, interrupted, failed,
    /// abandoned (its perflab is gone: `perflab run --resume ID` finishes it).
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct RunJson<'a> {
    schema_version: u32,
    id: i64,
    name: &'a str,
    kind: &'a str,
    status: &'a str,
    started_at: &'a str,
    ended_at: Option<&'a str>,
    host: &'a str,
    trials_ok: u64,
    trials_failed: u64,
    trials_interrupted: u64,
    owner: Option<&'a perflab_store::RunOwner>,
    heartbeat_at: Option<&'a str>,
    /// What to do about the run's state, where there is something (`abandoned`).
    hint: Option<String>,
}

/// What to do about a run in its state: an abandoned run is finished by a resume.
pub fn hint(r: &perflab_store::RunRow) -> Option<String> {
    (r.status == perflab_store::vocab::ABANDONED).then(|| {
        let who = r
            .owner
            .as_ref()
            .map(|o| format!(" (pid {})", o.pid))
            .unwrap_or_default();
        format!(
            "run {} was abandoned: the perflab that ran it{who} is gone; finish it with `perflab run --resume {}`",
            r.id, r.id
        )
    })
}

pub fn run(g: &Global, a: &RunsArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let runs = store.runs()?;
    if a.json {
        let out: Vec<RunJson> = runs
            .iter()
            .map(|r| RunJson {
                schema_version: 1,
                id: r.id,
                name: &r.name,
                kind: &r.kind,
                status: &r.status,
                started_at: &r.started_at,
                ended_at: r.ended_at.as_deref(),
                host: &r.host,
                trials_ok: r.trials_ok,
                trials_failed: r.trials_failed,
                trials_interrupted: r.trials_interrupted,
                owner: r.owner.as_ref(),
                heartbeat_at: r.heartbeat_at.as_deref(),
                hint: hint(r),
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    if runs.is_empty() {
        eprintln!(
            "no runs in {} yet: perflab run EXPERIMENT.toml",
            g.store.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new();
    t.load_style(crate::format::STYLE);
    t.set_header(vec![
        "id", "name", "kind", "status", "started", "host", "ok", "failed",
    ]);
    for r in &runs {
        t.add_row(vec![
            r.id.to_string(),
            r.name.clone(),
            r.kind.clone(),
            r.status.clone(),
            r.started_at.clone(),
            r.host.clone(),
            r.trials_ok.to_string(),
            r.trials_failed.to_string(),
        ]);
    }
    println!("{t}");
    for h in runs.iter().filter_map(hint) {
        eprintln!("hint: {h}");
    }
    Ok(ExitCode::SUCCESS)
}
