//! Ctrl-C and SIGTERM during a run.
//!
//! The first signal sets a flag: the runner stops the current trial and its service,
//! records the run as `interrupted` and returns (the CLI exits 130). A second signal
//! kills at once: the handler (async-signal-safe: only `kill` and `_exit`) kills the
//! process groups of the running workload and service and exits 130. Finished trials
//! are already committed, so nothing finished is lost either way.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

static COUNT: AtomicUsize = AtomicUsize::new(0);
/// Process groups to kill on a hard stop (0 = none).
static GROUPS: [AtomicI32; 2] = [AtomicI32::new(0), AtomicI32::new(0)];
static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Slot of a process group registered for hard stops.
#[derive(Debug, Clone, Copy)]
pub enum Slot {
    Service = 0,
    Workload = 1,
}

/// Installs the handlers (once) and returns the interrupt flag.
pub fn install() -> std::io::Result<Arc<AtomicBool>> {
    if let Some(f) = FLAG.get() {
        return Ok(f.clone());
    }
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let f = flag.clone();
        // SAFETY: the handler only touches atomics and calls kill/_exit, which are
        // async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                if COUNT.fetch_add(1, Ordering::SeqCst) >= 1 {
                    for g in &GROUPS {
                        let pgid = g.load(Ordering::SeqCst);
                        if pgid > 0 {
                            libc::kill(-pgid, libc::SIGKILL);
                        }
                    }
                    libc::_exit(130);
                }
                f.store(true, Ordering::SeqCst);
            })?;
        }
    }
    let _ = FLAG.set(flag.clone());
    Ok(flag)
}

/// Registers (pgid > 0) or clears (0) a process group for hard stops.
pub fn register_group(slot: Slot, pgid: i32) {
    GROUPS[slot as usize].store(pgid, Ordering::SeqCst);
}
