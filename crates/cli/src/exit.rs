//! Exit codes (`docs/architecture.md`: exit codes) and the mapping from errors to them.
//!
//! Libraries name the options an error is about as fields (`perflab_units::Phrase`);
//! each command names them as its flags with its own small table
//! (`perflab_units::flag_for`), so nothing here reads words back out of a message.

use std::process::ExitCode;

pub const OK: u8 = 0;
pub const ERROR: u8 = 1;
pub const USAGE: u8 = 2;
pub const GATE_FAILED: u8 = 3;
pub const FAILURES: u8 = 4;
#[allow(dead_code)]
pub const CRITICAL: u8 = 5;
pub const INTERRUPTED: u8 = 130;

/// An error that means the input was wrong (exit 2), not that running failed.
#[derive(Debug)]
pub struct InvalidInput(pub String);

impl std::fmt::Display for InvalidInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidInput {}

/// Exit code for an error that reached `main`.
pub fn code_for(e: &anyhow::Error) -> ExitCode {
    let usage = e.chain().any(|c| {
        c.is::<InvalidInput>()
            || c.is::<perflab_lab::FileError>()
            || matches!(
                c.downcast_ref::<perflab_store::StoreError>(),
                Some(
                    perflab_store::StoreError::NoSuchRun(_)
                        | perflab_store::StoreError::Busy { .. }
                )
            )
            || matches!(
                c.downcast_ref::<perflab_lab::runner::RunError>(),
                Some(
                    perflab_lab::runner::RunError::Refused(_)
                        | perflab_lab::runner::RunError::Store(
                            perflab_store::StoreError::Busy { .. }
                        )
                )
            )
    });
    ExitCode::from(if usage { USAGE } else { ERROR })
}

/// The error and its causes on one line, `a — b — c`, leaving out a cause whose text
/// an earlier part already quotes.
pub fn describe(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1).map(|c| c.to_string()) {
        if !msg.contains(&cause) {
            msg.push_str(&format!(" — {cause}"));
        }
    }
    msg
}

/// A hint naming the flag or file to fix, when there is an obvious one.
pub fn hint_for(e: &anyhow::Error) -> Option<String> {
    for c in e.chain() {
        if let Some(perflab_store::StoreError::Empty) = c.downcast_ref() {
            return Some(
                "run an experiment first: perflab run EXPERIMENT.toml (or pass --store PATH)"
                    .into(),
            );
        }
        if let Some(perflab_store::StoreError::NoSuchRun(_)) = c.downcast_ref() {
            return Some("`perflab runs` lists the stored runs".into());
        }
        if let Some(perflab_serve::ServeError::PortInUse { .. }) = c.downcast_ref() {
            return Some(
                "stop the server on that port, choose another --port (0 lets the OS choose), \
                 or pass --reuse-port to share it"
                    .into(),
            );
        }
        if c.downcast_ref::<perflab_lab::FileError>().is_some() {
            return Some(
                "the experiment file format is described in docs/experiment-file.md".into(),
            );
        }
    }
    None
}

/// A run that cannot be resumed, as the CLI reports it: a wrong run is a usage error
/// (exit 2), so is a bad stored file; a store that cannot be read is not.
pub fn resume_error(e: perflab_lab::resume::ResumeError) -> anyhow::Error {
    use perflab_lab::resume::ResumeError;
    match e {
        ResumeError::NotResumable(m) => InvalidInput(m).into(),
        ResumeError::File(f) => f.into(),
        ResumeError::Store(s) => s.into(),
    }
}

/// The exit code of a run the runner finished: 130 interrupted (saying how to finish
/// it: `perflab {command} --resume RUN`), 4 with failed trials, else 0. `noun` is what
/// the command calls a trial (`trials`, `runs`, `rounds`).
pub fn for_outcome(o: &perflab_lab::runner::RunOutcome, noun: &str, command: &str) -> u8 {
    use perflab_store::RunStatus;
    match o.status {
        RunStatus::Interrupted => {
            eprintln!(
                "interrupted: {} finished {noun} are kept; finish with `perflab {command} --resume {}`",
                o.trials_ok + o.trials_failed,
                o.run_id
            );
            INTERRUPTED
        }
        RunStatus::GateFailed => GATE_FAILED,
        RunStatus::CompleteWithFailures | RunStatus::Failed => FAILURES,
        _ => OK,
    }
}
