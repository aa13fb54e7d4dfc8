//! Which I/O driver runs a load test, decided in one place ([`select`]).
//!
//! Two drivers sit behind the worker's `Driver` seam:
//!
//! * `epoll` (mio): readiness events, one `read`/`write` syscall each. It runs
//!   everything — TLS, the open loop (whose send schedule wakes on a `timerfd`), ramps
//!   and the knee search.
//! * `uring` (io_uring): completions, for plain `http://` in the closed loop. Requests
//!   and receives are queued and submitted in one `io_uring_enter` per loop turn, which
//!   sleeps until the first response (never a batch of them: a closed loop keeps `c`
//!   requests in flight); with `DEFER_TASKRUN` whatever arrived while the worker was
//!   busy is reaped in that one call. Fewer system calls per request than epoll's
//!   `epoll_wait` + `read` + `write`.
//!
//! Both take latency on the same clock (the user-space monotonic clock read after the
//! response was handed over, `report::LATENCY_CLOCK`), so the engine changes how much
//! CPU the client spends, not what is measured.
//!
//! `--io auto` (the default) takes io_uring when the run is a plain-http closed loop
//! and the kernel allows it (see [`uring_support`]), epoll otherwise; `--io uring`
//! insists (an https URL or an open-loop run is then a usage error, an unusable
//! io_uring an error); `--io epoll` never uses io_uring. The report says which ran.

use crate::error::{LoadError, SpecError};
use crate::request::Prepared;
use crate::spec::{uring_misfit, IoChoice, LoadSpec};
use serde::{Deserialize, Serialize};

/// The I/O engine that ran (the report's `io`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Io {
    /// mio / epoll readiness.
    #[default]
    Epoll,
    /// io_uring completions.
    Uring,
}

impl Io {
    /// `epoll` or `uring`.
    pub fn name(self) -> &'static str {
        match self {
            Io::Epoll => "epoll",
            Io::Uring => "uring",
        }
    }
}

/// Whether this process can use the io_uring driver: `Err` says why not (the kernel
/// or a sandbox forbids io_uring, or lacks a feature the driver needs). Probed once.
pub fn uring_support() -> Result<(), String> {
    crate::uring::support()
}

/// Picks the driver of a run.
pub(crate) fn select(spec: &LoadSpec, prepared: &Prepared) -> Result<Io, LoadError> {
    let tls = prepared.groups.iter().any(|g| g.tls.is_some());
    match spec.io {
        IoChoice::Epoll => Ok(Io::Epoll),
        IoChoice::Uring => {
            if let Some(why) = uring_misfit(spec, tls) {
                return Err(SpecError::Conflict(why).into());
            }
            uring_support().map_err(LoadError::Uring)?;
            Ok(Io::Uring)
        }
        IoChoice::Auto => Ok(
            if uring_misfit(spec, tls).is_none() && uring_support().is_ok() {
                Io::Uring
            } else {
                Io::Epoll
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_choices() {
        assert_eq!(IoChoice::parse("auto").unwrap(), IoChoice::Auto);
        assert_eq!(IoChoice::parse("epoll").unwrap(), IoChoice::Epoll);
        assert_eq!(IoChoice::parse("uring").unwrap(), IoChoice::Uring);
        assert!(IoChoice::parse("kqueue").is_err());
    }

    #[test]
    fn open_loop_and_tls_never_run_on_uring() {
        let mut spec = LoadSpec::new("http://127.0.0.1:1/");
        assert!(uring_misfit(&spec, false).is_none());
        assert!(uring_misfit(&spec, true)
            .unwrap()
            .to_string()
            .contains("https"));
        spec.rate = Some(10.0);
        assert!(uring_misfit(&spec, false)
            .unwrap()
            .to_string()
            .contains("closed-loop"));
    }
}
