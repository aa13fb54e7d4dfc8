//! Resuming a stored run: the experiment it ran is read back from the store (the file
//! text is kept with every run the runner starts) and handed to the runner with
//! `RunOptions::resume`, which runs only the (config, repetition) pairs without a
//! successful trial, under the same run id and seed. `perflab run --resume` and
//! `perflab scimark --resume` both come here.

use std::path::PathBuf;

use perflab_store::{RunId, Store};

use crate::experiment::Experiment;

/// Why a run cannot be resumed.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error(transparent)]
    Store(#[from] perflab_store::StoreError),
    /// The run was not started by the runner, or by another command (a usage error).
    #[error("{0}")]
    NotResumable(String),
    #[error(transparent)]
    File(#[from] crate::FileError),
}

/// The experiment of run `id`: any run that stored one (every run the runner started:
/// `perflab run`, bench and the one-line commands), or with `only`, a run of that kind
/// alone (`perflab scimark --resume` resumes scimark runs).
pub fn stored_experiment(
    store: &Store,
    id: RunId,
    only: Option<&str>,
) -> Result<Experiment, ResumeError> {
    let row = store.run(id)?;
    let text = row.file_text.clone().ok_or_else(|| {
        ResumeError::NotResumable(format!(
            "run {id} is a {} run, not an experiment: it cannot be resumed",
            row.kind
        ))
    })?;
    if let Some(only) = only.filter(|k| *k != row.kind) {
        return Err(ResumeError::NotResumable(format!(
            "run {id} is a {} run; only {only} runs can be resumed here",
            row.kind,
        )));
    }
    let path = PathBuf::from(
        row.file_path
            .clone()
            .unwrap_or_else(|| format!("run-{id}.toml")),
    );
    Ok(Experiment::parse(&path, &text)?)
}
