//! What the machine-suite workloads (compress, mem, crypto, net) share: how many
//! `threads = 0` means, running one closure per thread with the results in order, and
//! the trial around their work ([`in_trial`]).

use crate::{Measurement, TrialContext, WorkloadError};

/// One trial of a suite workload: refused once the run was interrupted, run pinned to
/// the trial's CPUs (threads it spawns inherit the pinning), an error of the work a
/// failed trial.
pub fn in_trial(
    ctx: &TrialContext,
    work: impl FnOnce() -> Result<Measurement, String>,
) -> Result<Measurement, WorkloadError> {
    if ctx.interrupted.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(WorkloadError::Interrupted);
    }
    let pin = ctx.pin_this_thread()?;
    let m = work().map_err(WorkloadError::Setup)?;
    drop(pin);
    Ok(m)
}

/// `0` means every CPU this process may use.
pub fn resolve(threads: usize) -> usize {
    match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// Runs `f(i)` for `i` in `0..n`, each on its own thread, all at once; the results in
/// order (a thread that panicked gives an error).
pub fn each<T: Send>(
    n: usize,
    f: impl Fn(usize) -> Result<T, String> + Sync,
) -> Vec<Result<T, String>> {
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = (0..n).map(|i| s.spawn(move || f(i))).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a worker thread panicked".into()))
            })
            .collect()
    })
}
