//! The epoll driver (mio): readiness events for every load model, plain and TLS.
//!
//! Waiting: the loop sleeps in `Poll::poll`, whose timeout mio hands to `epoll_wait` in
//! whole milliseconds, rounded up. That is fine for the coarse deadlines — the timeout
//! and back-off scan, the once-a-second tick, the start of recording and the end —
//! none of which is measured against. It is not fine for the open loop's schedule:
//! latency is measured from each request's intended send time, so every microsecond a
//! send is late is charged to the server, and a rounded timeout sent requests up to
//! ~1 ms late. So an open-loop worker also registers a [`SendTimer`] (a `timerfd` with
//! an absolute, nanosecond deadline) armed for the next intended send, and leaves that
//! deadline out of the poll timeout: the poll wakes when the request is due, within
//! the kernel's wake-up latency (µs), without spinning. The other deadlines stay on
//! the poll timeout rather than moving onto the timer, so the timer is re-armed only
//! when the schedule moves on (once per request), not for every deadline, and the
//! closed loop, which has no schedule, keeps no timer.
//!
//! A connection reads at most a bounded number of times per event (`conn`'s
//! `READS_PER_EVENT`), so a server that never pauses cannot hold the loop past the end
//! of the run; one cut short that way is read again on the next turn, which then does
//! not sleep ([`EpollDriver`]'s `again`), since edge-triggered readiness raises no new
//! event for bytes already waiting.
//!
//! Latency is read on the user-space clock once per event, after the read that
//! completed the response (one clock read also serves the next send) — the clock the
//! io_uring driver reads too (`report::LATENCY_CLOCK`), so the engines measure alike.

mod conn;

use crate::timer::SendTimer;
use crate::worker::{Driver, Worker, WorkerConfig};
pub(crate) use conn::EpollConn;
use mio::{Events, Poll, Token};
use std::io;
use std::time::Instant;

/// The open loop's send timer's token (connections use their slot index).
const TIMER: Token = Token(usize::MAX);

/// A worker's mio poll, its events, and the open loop's send timer.
pub(crate) struct EpollDriver {
    pub poll: Poll,
    events: Events,
    /// (slot, readable, writable, hang-up) of the last poll.
    ready: Vec<(usize, bool, bool, bool)>,
    /// The open loop's send timer (none in the closed loop).
    timer: Option<SendTimer>,
    /// Connections whose last read stopped with bytes left: read again next turn.
    again: Vec<usize>,
}

impl Driver for EpollDriver {
    type Conn = EpollConn;

    fn new(_cfg: &WorkerConfig, open_loop: bool) -> io::Result<Self> {
        let poll = Poll::new()?;
        let timer = if open_loop {
            let t = SendTimer::new()?;
            t.register(poll.registry(), TIMER)?;
            Some(t)
        } else {
            None
        };
        Ok(EpollDriver {
            poll,
            events: Events::with_capacity(1024),
            ready: Vec::with_capacity(1024),
            timer,
            again: Vec::new(),
        })
    }

    fn wake_at(&mut self, at: Instant) -> io::Result<()> {
        match &mut self.timer {
            Some(t) => t.arm(at),
            None => Ok(()),
        }
    }

    fn turn(w: &mut Worker<Self>, now: Instant, deadline: Instant) -> io::Result<()> {
        let d = &mut w.core.driver;
        let timeout = if d.again.is_empty() {
            deadline.saturating_duration_since(now)
        } else {
            std::time::Duration::ZERO
        };
        if let Err(e) = d.poll.poll(&mut d.events, Some(timeout)) {
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(());
            }
            return Err(e);
        }
        d.ready.clear();
        for i in d.again.drain(..) {
            if w.core.slots.get(i).is_some_and(|s| s.conn.read_again) {
                // As after a hang-up: read to EAGAIN, since a close already signalled
                // raises no new edge.
                d.ready.push((i, true, false, true));
            }
        }
        for ev in d.events.iter() {
            if ev.token() == TIMER {
                if let Some(t) = &mut d.timer {
                    t.fired();
                }
                continue;
            }
            let hangup = ev.is_read_closed() || ev.is_error();
            let writable = ev.is_writable() || ev.is_error();
            d.ready
                .push((ev.token().0, ev.is_readable(), writable, hangup));
        }
        for k in 0..w.core.driver.ready.len() {
            let (i, r, wr, h) = w.core.driver.ready[k];
            let core = &mut w.core;
            let Some(slot) = core.slots.get_mut(i) else {
                continue;
            };
            let res = slot.conn.on_event(
                r,
                wr,
                h,
                &core.cfg.prepared,
                &mut core.done,
                &mut core.failed,
            );
            // One clock read serves the completions and the next send.
            let now = Instant::now();
            core.record_done(i, now);
            w.progress(i, res, now);
            // HTTP/2: the frames this turn queued on the connection go in one write.
            w.flush_out(i);
            let again = &mut w.core.driver.again;
            if w.core.slots.get(i).is_some_and(|s| s.conn.read_again) && !again.contains(&i) {
                again.push(i);
            }
        }
        Ok(())
    }
}
