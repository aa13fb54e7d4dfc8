//! perflab-lab: experiment files → plans → trials → the store.
//!
//! The runner owns the lifecycle of a trial (service, prepare, workload, cleanup,
//! record); workloads only measure. See DESIGN.md for the data flow.

pub mod doctor;
pub mod env;
pub mod error;
pub mod experiment;
pub mod noise;
pub mod plan;
mod raw;
pub mod record;
pub mod resume;
pub mod runner;
pub mod service;
pub mod signals;
pub mod single;
pub mod site;
pub mod summary;
pub mod template;
pub mod workload;

pub use error::FileError;
pub use experiment::Experiment;
