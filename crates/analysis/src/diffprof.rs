//! A differential profile from repeated profiled trials (issue 31): every function's
//! CPU time per operation, per trial, on both sides. PLACEHOLDER interface, to be
//! replaced by the diffprof work; the why block calls [`function_evidence`].

use perflab_store::ExportedTrial;

use crate::evidence::Evidence;

/// One [`Evidence`] of kind `Function` per function profiled on either side: its CPU
/// time per operation (ms/op) in each profiled ok trial. Empty when a side has no
/// profiled trials.
pub fn function_evidence(
    _baseline: &[ExportedTrial],
    _candidate: &[ExportedTrial],
) -> Vec<Evidence> {
    Vec::new()
}
