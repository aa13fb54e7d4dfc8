//! `perflab import FILE.json`: add a run exported elsewhere (`perflab export RUN`) to
//! this store, keeping its host, uuid, trials and everything they measured.
//!
//! The run gets a new local id; its uuid is how a second import of the same run is
//! recognised, and refused (exit 2) rather than silently doubling its trials.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use perflab_store::{RunExport, Store, StoreError};
use serde_json::json;

use crate::exit::InvalidInput;
use crate::Global;

/// Import a run exported with `perflab export RUN` (JSON) into this store.
///
/// Examples:
///   perflab import run3.json               # prints the new local run id
///   perflab --store other.db import run3.json --json
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct ImportArgs {
    /// The JSON document written by `perflab export RUN --format json`.
    file: PathBuf,

    /// JSON: {"schema_version", "id", "uuid", "name", "host", "trials"}.
    #[arg(long)]
    json: bool,
}

pub fn run(g: &Global, a: &ImportArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&a.file)
        .with_context(|| format!("cannot read {}", a.file.display()))?;
    let doc = RunExport::from_json(&text).map_err(|e| {
        InvalidInput(format!(
            "{} is not a perflab run export: {e} (write one with `perflab export RUN --format json`)",
            a.file.display()
        ))
    })?;
    let store = Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let id = match store.import_run(&doc) {
        Ok(id) => id,
        Err(StoreError::AlreadyImported { id, uuid }) => {
            return Err(InvalidInput(format!(
                "run {:?} (uuid {uuid}) is already in {} as run {id}; nothing imported",
                doc.run.name,
                g.store.display()
            ))
            .into())
        }
        Err(e) => {
            return Err(e).with_context(|| format!("cannot import {}", a.file.display()));
        }
    };
    if a.json {
        let out = json!({
            "schema_version": 1, "id": id, "uuid": doc.run.uuid, "name": doc.run.name,
            "host": doc.host.hostname, "trials": doc.trials.len(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "imported run {id}: {} (measured on {}, {} trials, was run {} there)",
            doc.run.name,
            doc.host.hostname,
            doc.trials.len(),
            doc.run.id
        );
    }
    Ok(ExitCode::SUCCESS)
}
