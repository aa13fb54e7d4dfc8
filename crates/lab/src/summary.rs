//! Per-config, per-metric summaries of a stored run. They are computed by
//! `perflab-analysis` (the one reader of stored runs); this re-export keeps
//! `perflab_lab::summary` for the runner's adaptive repetitions and older callers.

pub use perflab_analysis::summary::*;
