//! perflab-lab: experiment files → plans → trials → the store.
//!
//! The runner owns the lifecycle of a trial (service, prepare, workload, cleanup,
//! record); workloads only measure. Every measuring command reaches the store through
//! here: an experiment through [`runner`], a single-shot command as a one-trial run
//! ([`single`]). See docs/architecture.md ("the one-way flow", "the trial seam").

pub mod doctor;
pub mod env;
pub mod error;
pub mod exe;
pub mod experiment;
pub mod noise;
pub mod observe;
pub mod plan;
pub mod precision;
mod raw;
pub mod record;
pub mod resume;
pub mod runner;
pub mod service;
pub mod signals;
pub mod single;
pub mod site;
pub mod template;
pub mod workload;

pub use error::FileError;
pub use experiment::Experiment;
