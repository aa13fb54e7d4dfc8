//! The io_uring driver: plain-http closed-loop load with one system call per loop turn.
//!
//! Why: on loopback, ~90 % of an epoll client's CPU is kernel time — a `write` and a
//! `read` per request and an `epoll_wait`. Here each turn queues the sends that the
//! last completions called for and makes *one* `io_uring_enter`, which submits them
//! and, if no completion is waiting, sleeps until the first one arrives. The ring is
//! set up with `SINGLE_ISSUER | DEFER_TASKRUN`: completion work runs only inside that
//! wait, on this thread, so whatever arrived while the worker was busy is reaped in one
//! go, without a wake-up each. Receives are multishot, armed once per connection
//! (`rx`), so a request costs one queued send and a response one completion.
//!
//! Closed loop means `c` in flight: a wait never asks for more than one completion.
//! (It used to ask for half of those awaited, to be woken once per batch; the
//! responses that had arrived then sat in the kernel until the batch was full, and with
//! 10 connections only ~7 requests were in flight on average — a lighter experiment
//! than the one asked for. The batching that is left is the kernel's: what arrives
//! while the worker runs is taken by its next turn.)
//!
//! Deadlines: the coarse ones (timeout scan, tick, end) are kept by timer operations in
//! the ring rather than by a timeout on each wait (see [`UringDriver::wait`]).
//!
//! Latency is read on the user-space monotonic clock, as on epoll, so both engines
//! measure the same thing: the clock is read once per turn, right after the wait that
//! handed the responses over; it stamps the responses completed in that turn and the
//! requests that they free their connections to send. A request's latency therefore
//! runs from the moment its connection was found free to the turn that reaped its
//! response, the client's own queueing included, exactly as on epoll, where one clock
//! read after a `read` serves the completed responses and the next `write`.
//!
//! Memory the kernel writes after a submission returns is only the ring of provided
//! receive buffers, which the driver owns and frees after the io_uring is closed; at
//! the end (and on any early exit) every operation is cancelled and the receives are
//! awaited first (`Drop`). Send buffers are the run's pre-serialized requests, which
//! the driver holds an `Arc` to until after the io_uring is closed.

pub(crate) mod conn;
mod rx;
mod setup;

use crate::request::Prepared;
use crate::worker::{Driver, Worker, WorkerConfig, SCAN_EVERY};
use conn::{errno_kind, UringConn};
use io_uring::opcode;
use io_uring::squeue::{Entry, Flags};
use io_uring::types::{CancelBuilder, Fd, SubmitArgs, TimeoutFlags, Timespec};
use io_uring::IoUring;
use rx::RxRing;
use setup::build_ring;
pub(crate) use setup::support;
use std::io;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Period of the backstop timer (see [`UringDriver::wait`]).
const BACKSTOP: Duration = SCAN_EVERY;
/// How long the final drain waits for cancelled receives.
const DRAIN_FOR: Duration = Duration::from_secs(1);
/// `IORING_ENTER_GETEVENTS` (uapi).
const GETEVENTS: u32 = 1;
/// The provided-buffer group of the receives.
const BUFFER_GROUP: u16 = 0;
/// Provided receive buffers per worker: two per connection, within these bounds.
const MIN_BUFFERS: usize = 64;
const MAX_BUFFERS: usize = 4096;

/// Generation numbers use 24 bits of the user data.
pub(crate) const GEN_MASK: u32 = 0xFF_FFFF;

/// What a completion is for (the top byte of its user data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Connect = 1,
    Send = 2,
    Recv = 3,
    Cancel = 4,
    Close = 5,
    /// The one-shot timer for the worker's next deadline.
    Deadline = 6,
    /// The periodic backstop timer.
    Backstop = 7,
}

/// User data: operation, connection generation (or timer number), slot.
pub(crate) fn ud(op: Op, slot: u32, gen: u32) -> u64 {
    (op as u64) << 56 | u64::from(gen & GEN_MASK) << 32 | u64::from(slot)
}

fn decode(ud: u64) -> (u64, u32, usize) {
    (
        ud >> 56,
        ((ud >> 32) as u32) & GEN_MASK,
        (ud & 0xFFFF_FFFF) as usize,
    )
}

/// A worker's ring, receive buffers and bookkeeping.
pub(crate) struct UringDriver {
    /// Declared first: closed before the memory below can be freed.
    ring: IoUring,
    /// The provided receive buffers (buffer group [`BUFFER_GROUP`]).
    pub rx: RxRing,
    /// Socket address of each group of the run (never resized: connects point into it).
    addrs: Box<[socket2::SockAddr]>,
    /// The requests that sends point into.
    prepared: Arc<Prepared>,
    cqes: Vec<(u64, i32, u32)>,
    /// Multishot receives armed, those of dropped connections included.
    recvs: usize,
    /// The armed deadline timer: when it fires, and its number (user data).
    deadline_at: Option<(Instant, u32)>,
    deadline_ts: Box<Timespec>,
    deadlines_armed: u32,
    /// The periodic backstop timer is armed.
    backstop: bool,
    backstop_ts: Box<Timespec>,
    /// The open loop's next send (the open loop runs on epoll; kept for the contract).
    wake_at: Option<Instant>,
}

impl UringDriver {
    /// Queues `entries` (all or none), submitting what is queued first if the
    /// submission queue is full.
    fn push(&mut self, entries: &[Entry]) -> io::Result<()> {
        for _ in 0..2 {
            // SAFETY: every entry's memory satisfies the callers' contracts (see
            // `push_send`, `push_connect`, `push_recv`, `wait`); cancel and close carry
            // none.
            if unsafe { self.ring.submission().push_multiple(entries) }.is_ok() {
                return Ok(());
            }
            self.ring.submit()?;
        }
        Err(io::Error::other("the io_uring submission queue is full"))
    }

    /// Queues a connect of `fd` to group `group`'s address.
    pub fn push_connect(&mut self, fd: RawFd, group: usize, user_data: u64) -> io::Result<()> {
        let addr = &self.addrs[group];
        let e = opcode::Connect::new(Fd(fd), addr.as_ptr().cast(), addr.len())
            .build()
            .user_data(user_data);
        // The address lives in `self.addrs`, which is never resized and outlives the ring.
        self.push(&[e])
    }

    /// Queues a send of `bytes` on `fd`; only a failure posts a completion.
    ///
    /// # Safety
    /// `bytes` must stay valid and unchanged until the send completes.
    pub unsafe fn push_send(&mut self, fd: RawFd, bytes: &[u8], user_data: u64) -> io::Result<()> {
        let e = opcode::Send::new(Fd(fd), bytes.as_ptr(), bytes.len() as u32)
            .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
            .build()
            .flags(Flags::SKIP_SUCCESS)
            .user_data(user_data);
        self.push(&[e])
    }

    /// Arms a multishot receive on `fd` into the provided buffers.
    pub fn push_recv(&mut self, fd: RawFd, user_data: u64) -> io::Result<()> {
        let e = opcode::RecvMulti::new(Fd(fd), BUFFER_GROUP)
            .build()
            .user_data(user_data);
        // The kernel writes only into the provided buffers, which outlive the io_uring
        // (see `rx`).
        self.push(&[e])?;
        self.recvs += 1;
        Ok(())
    }

    /// Cancels every operation on `fd`'s socket and closes it, in submission order.
    /// If the ring cannot take them, shuts the socket down (which completes whatever
    /// is in flight on it) and closes it here.
    pub fn cancel_and_close(&mut self, fd: OwnedFd) {
        let raw = fd.as_raw_fd();
        let cancel = opcode::AsyncCancel2::new(CancelBuilder::fd(Fd(raw)).all())
            .build()
            .flags(Flags::SKIP_SUCCESS)
            .user_data(ud(Op::Cancel, 0, 0));
        let close = opcode::Close::new(Fd(raw))
            .build()
            .flags(Flags::SKIP_SUCCESS)
            .user_data(ud(Op::Close, 0, 0));
        if self.push(&[cancel, close]).is_ok() {
            let _ = fd.into_raw_fd(); // the queued close owns it now
        } else {
            // SAFETY: shutdown on a descriptor we own; the result does not matter.
            unsafe { libc::shutdown(raw, libc::SHUT_RDWR) };
        }
    }

    /// Submits what is queued and, unless completions are already there, sleeps until
    /// the first one arrives or `deadline` has passed.
    ///
    /// The deadline is kept by timer *operations*, not by a timeout on the wait
    /// (`IORING_ENTER_EXT_ARG`): a wait timeout sets up and cancels a kernel timer on
    /// every wait, which measured at ~10 % of the client's CPU here (a VM); a timer
    /// operation is armed once per deadline, and its expiry ends the wait whatever the
    /// count. It cannot end a wait that had not started when it fired (the kernel counts
    /// expiries from the wait's start): a periodic backstop timer bounds that race (a
    /// worker preempted at the wrong moment) to one [`BACKSTOP`] period.
    fn wait(&mut self, now: Instant, deadline: Instant) -> io::Result<()> {
        let deadline = self.wake_at.map_or(deadline, |at| deadline.min(at));
        if deadline <= now {
            // Only reap: submit, run the completion work, do not sleep.
            let n = self.ring.submission().len() as u32;
            // SAFETY: no argument structure is passed.
            let r = unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(n, 0, GETEVENTS, None)
            };
            return tolerate(r);
        }
        if !self.backstop {
            let e = opcode::Timeout::new(&*self.backstop_ts)
                .flags(TimeoutFlags::MULTISHOT)
                .build()
                .user_data(ud(Op::Backstop, 0, 0));
            // The timespec is boxed in the driver and never changes; the kernel copies it.
            self.push(&[e])?;
            self.backstop = true;
        }
        if self.deadline_at.is_none_or(|(at, _)| at > deadline) {
            self.deadlines_armed = self.deadlines_armed.wrapping_add(1) & GEN_MASK;
            *self.deadline_ts = Timespec::from(deadline - now);
            let e = opcode::Timeout::new(&*self.deadline_ts)
                .build()
                .user_data(ud(Op::Deadline, 0, self.deadlines_armed));
            // The timespec is boxed in the driver and rewritten only in a later turn,
            // after this entry has been submitted (below), which copies it.
            self.push(&[e])?;
            self.deadline_at = Some((deadline, self.deadlines_armed));
        }
        // One completion is enough: a response that is in must free its connection now,
        // not when others have joined it (closed loop means `c` in flight).
        tolerate(self.ring.submitter().submit_and_wait(1))
    }

    /// A timer operation completed.
    fn timer_done(&mut self, op: u64, number: u32, flags: u32) {
        if op == Op::Deadline as u64 {
            if self.deadline_at.is_some_and(|(_, n)| n == number) {
                self.deadline_at = None;
            }
        } else if !io_uring::cqueue::more(flags) {
            self.backstop = false; // stopped (it should not): armed again next turn
        }
    }

    /// Moves the completions out of the queue.
    fn reap(&mut self) {
        self.cqes.clear();
        for c in self.ring.completion() {
            self.cqes.push((c.user_data(), c.result(), c.flags()));
        }
    }
}

/// Interrupted or timed-out waits are normal; a full completion queue is reaped next.
fn tolerate(r: io::Result<usize>) -> io::Result<()> {
    match r {
        Err(e)
            if !matches!(
                e.raw_os_error(),
                Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN)
            ) =>
        {
            Err(e)
        }
        _ => Ok(()),
    }
}

impl Driver for UringDriver {
    type Conn = UringConn;

    fn new(cfg: &WorkerConfig, _open_loop: bool) -> io::Result<Self> {
        // Room for a turn in which every connection drops, reconnects and sends.
        let entries = (8 * cfg.connections + 16)
            .next_power_of_two()
            .clamp(64, 32768) as u32;
        let ring = build_ring(entries)?;
        let rx = RxRing::new(
            (2 * cfg.connections)
                .next_power_of_two()
                .clamp(MIN_BUFFERS, MAX_BUFFERS) as u16,
        );
        let (addr, count) = rx.descriptors();
        // SAFETY: the descriptors stay allocated, unmoved, until `rx` is dropped, which
        // happens after the ring (a field declared before it) is closed.
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(addr, count, BUFFER_GROUP, 0)?
        };
        let addrs = cfg
            .prepared
            .groups
            .iter()
            .map(|g| socket2::SockAddr::from(g.addr))
            .collect();
        Ok(UringDriver {
            ring,
            rx,
            addrs,
            prepared: Arc::clone(&cfg.prepared),
            cqes: Vec::with_capacity(entries as usize),
            recvs: 0,
            deadline_at: None,
            deadline_ts: Box::new(Timespec::new()),
            deadlines_armed: 0,
            backstop: false,
            backstop_ts: Box::new(Timespec::from(BACKSTOP)),
            wake_at: None,
        })
    }

    fn wake_at(&mut self, at: Instant) -> io::Result<()> {
        self.wake_at = Some(at);
        Ok(())
    }

    fn turn(w: &mut Worker<Self>, now: Instant, deadline: Instant) -> io::Result<()> {
        let d = &mut w.core.driver;
        d.wait(now, deadline)?;
        // The latency clock: one read serves every completion of the turn and the
        // requests they free their connections to send (see the module doc).
        let now = Instant::now();
        d.reap();
        for k in 0..w.core.driver.cqes.len() {
            let (user_data, res, flags) = w.core.driver.cqes[k];
            complete(w, user_data, res, flags, now);
        }
        Ok(())
    }
}

/// Handles one completion.
fn complete(w: &mut Worker<UringDriver>, user_data: u64, res: i32, flags: u32, now: Instant) {
    let (op, gen, i) = decode(user_data);
    let core = &mut w.core;
    let d = &mut core.driver;
    if op == Op::Deadline as u64 || op == Op::Backstop as u64 {
        return d.timer_done(op, gen, flags);
    }
    let Some(slot) = core.slots.get_mut(i) else {
        return;
    };
    if op == Op::Recv as u64 {
        if !io_uring::cqueue::more(flags) {
            d.recvs -= 1;
        }
        if !slot.conn.is_current(gen) {
            if let Some(bid) = io_uring::cqueue::buffer_select(flags) {
                d.rx.give(bid);
            }
            return;
        }
        let res = slot.conn.on_recv(d, res, flags, &mut core.done);
        core.record_done(i, now);
        w.progress(i, res, now);
    } else if op == Op::Connect as u64 {
        if slot.conn.awaits_connect(gen) {
            let res = slot.conn.on_connect(d, res);
            w.progress(i, res, now);
        }
    } else if op == Op::Send as u64 {
        // Only failed (or, impossibly with MSG_WAITALL, short) sends post completions.
        if slot.conn.is_current(gen) {
            let kind = if res < 0 {
                errno_kind(-res)
            } else {
                crate::conn::ErrorKind::Closed
            };
            w.progress(i, Err(kind), now);
        }
    }
    // Cancel and close post completions only when they fail: nothing to do.
}

impl Drop for UringDriver {
    /// Cancels everything in flight and waits for the receives, so their buffers can be
    /// freed; if some never come back, the buffers (and the requests) are leaked rather
    /// than freed under the kernel.
    fn drop(&mut self) {
        let cancel = opcode::AsyncCancel2::new(CancelBuilder::any().all())
            .build()
            .user_data(ud(Op::Cancel, 0, 0));
        let _ = self.push(&[cancel]);
        let deadline = Instant::now() + DRAIN_FOR;
        loop {
            let ts = Timespec::from(Duration::from_millis(20));
            let args = SubmitArgs::new().timespec(&ts);
            let _ = self.ring.submitter().submit_with_args(1, &args);
            for c in self.ring.completion() {
                if decode(c.user_data()).0 == Op::Recv as u64 {
                    if let Some(bid) = io_uring::cqueue::buffer_select(c.flags()) {
                        self.rx.give(bid);
                    }
                    if !io_uring::cqueue::more(c.flags()) {
                        self.recvs -= 1;
                    }
                }
            }
            if self.recvs == 0 || Instant::now() >= deadline {
                break;
            }
        }
        if self.recvs > 0 {
            // Never seen: leak rather than free memory the kernel might still write.
            self.rx.leak();
            std::mem::forget(Arc::clone(&self.prepared));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_data_round_trips() {
        let u = ud(Op::Recv, 70_000, GEN_MASK);
        assert_eq!(decode(u), (Op::Recv as u64, GEN_MASK, 70_000));
        assert_eq!(decode(ud(Op::Close, 0, 0)).0, Op::Close as u64);
    }
}
