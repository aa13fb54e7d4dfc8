//! Closed-loop load: each connection sends its next request (or pipelined batch) as
//! soon as the previous response is complete, for a duration or until a shared request
//! count is used up. Warm-up requests are sent the same way but not recorded and do not
//! use up the count. Closed-loop latency is measured from the actual write (there is no
//! schedule to be late for); this is what wrk, ab and siege report.

use crate::conn::{Connection, ErrorKind};
use crate::worker::{Core, Driver};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Closed-loop state of one worker.
pub(crate) struct ClosedLoop {
    tickets: Option<Arc<AtomicI64>>,
    exhausted: bool,
}

impl ClosedLoop {
    /// `tickets`: the request count shared by all workers (`None`: no count).
    pub fn new(tickets: Option<Arc<AtomicI64>>) -> Self {
        ClosedLoop {
            tickets,
            exhausted: false,
        }
    }

    /// Whether the shared request count is used up.
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }

    /// Takes `want` requests from the count, or 1 when fewer remain, or 0 when none.
    fn take(&mut self, want: usize) -> usize {
        let Some(t) = &self.tickets else { return want };
        let mut cur = t.load(Ordering::Relaxed);
        loop {
            if cur <= 0 {
                self.exhausted = true;
                return 0;
            }
            let n = if cur >= want as i64 { want } else { 1 };
            match t.compare_exchange_weak(cur, cur - n as i64, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return n,
                Err(c) => cur = c,
            }
        }
    }

    /// A connect failed: it stands for one failed request of the count. Returns
    /// whether it does (false once the count is used up: nothing more was to be sent).
    pub fn consume_failed(&mut self) -> bool {
        self.take(1) > 0
    }

    /// Slot `i` is free: send the next request or batch — or, on an HTTP/2
    /// connection, one request per free stream.
    pub fn on_ready<D: Driver>(
        &mut self,
        core: &mut Core<D>,
        i: usize,
        now: Instant,
    ) -> Result<(), ErrorKind> {
        let depth = core.cfg.prepared.pipeline;
        let recording = core.recording;
        if depth > 1 {
            let n = if recording { self.take(depth) } else { depth };
            if n == 0 {
                return Ok(());
            }
            return core.send(i, now, now, now, n == depth, recording);
        }
        for _ in 0..core.slots[i].conn.free() {
            if recording && self.take(1) == 0 {
                break;
            }
            core.send(i, now, now, now, false, recording)?;
        }
        Ok(())
    }
}
