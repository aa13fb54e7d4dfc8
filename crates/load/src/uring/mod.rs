//! The io_uring driver: plain-http closed-loop load with one system call per loop turn.
//!
//! Why: on loopback, ~90 % of an epoll client's CPU is kernel time — a `write` and a
//! `read` per request and an `epoll_wait` — and a large part of it is the scheduler:
//! the thread sleeps and is woken about once per response. Here each turn queues the
//! sends that the last completions called for and makes *one* `io_uring_enter`, which
//! submits them and, if nothing is waiting, sleeps until a *batch* of responses has
//! arrived. The ring is set up with `SINGLE_ISSUER | DEFER_TASKRUN`: completion work
//! runs only inside that wait, on this thread, so the kernel wakes the worker once per
//! batch, not once per response. Receives are multishot, armed once per connection
//! (`rx`), so a request costs one queued send and a response one completion.
//!
//! The batch: a wait that has to sleep asks for [`BATCH_SHARE`] of the completions the
//! worker can count on (connections with a request in flight or a connect), at least
//! one, never more — and no more than arrive in [`BATCH_WAIT`] at the completion rate
//! measured over the last few milliseconds, so against a slow server (or a stalling
//! one: the rate falls) a response is not kept waiting for others for long. Completions
//! that are already there (`IORING_SQ_TASKRUN`) are taken without sleeping.
//!
//! Deadlines: the coarse ones (timeout scan, tick, end) are kept by timer operations in
//! the ring rather than by a timeout on each wait (see [`UringDriver::wait`]).
//!
//! Latency: a response that waits for the rest of its batch must not be charged that
//! wait. So latency is not read on the user-space clock after the wake-up, as the epoll
//! driver does, but taken from the kernel's software receive timestamp
//! (`SO_TIMESTAMPNS`) of the data that completed the response — when its last segment
//! reached the socket — converted from real time to the monotonic clock with an offset
//! sampled once per turn (`rx::Clock`). That is more honest than a clock read after a
//! wake-up: it leaves out the client's own scheduling delay. Only a step of the wall
//! clock between a timestamp and the sample (NTP stepping it) could skew one batch; a
//! response that comes without a timestamp (the kernel enables timestamping a moment
//! after the first socket asks) is timed by the clock read after the wait. Requests are
//! stamped when their submission goes in.
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
use rx::{Clock, RxRing};
use setup::build_ring;
pub(crate) use setup::support;
use std::io;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Share of the awaited completions a sleeping wait asks for
/// (`BATCH_SHARE.0 / BATCH_SHARE.1`, rounded up). Measured against nginx with 10
/// connections (`bench/http-vs-peers.sh`): 3/10, 1/2 and 7/10 cost about the same CPU
/// per request, 1/2 kept the most req/s; waiting for all of them left the server idle
/// (a third fewer req/s on a quiet machine).
const BATCH_SHARE: (usize, usize) = (1, 2);
/// About how long the first completion of a batch may wait for the rest: a batch asks
/// for no more completions than arrive in this time at the measured rate.
const BATCH_WAIT: Duration = Duration::from_micros(200);
/// The completion rate is measured over windows of this length.
const RATE_WINDOW: Duration = Duration::from_millis(2);
/// Period of the backstop timer (see [`UringDriver::wait`]).
const BACKSTOP: Duration = SCAN_EVERY;
/// How long the final drain waits for cancelled receives.
const DRAIN_FOR: Duration = Duration::from_secs(1);
/// `IORING_RECVSEND_POLL_FIRST` (uapi): arm the poll before trying to receive.
const RECVSEND_POLL_FIRST: u16 = 1;
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
    /// Slots with requests queued since the last submission (see `UringConn::stamp`).
    pub unstamped: Vec<usize>,
    /// Connections that expect a completion: a response or a connect.
    pub awaiting: usize,
    /// Multishot receives armed, those of dropped connections included.
    recvs: usize,
    /// Mean time between completions, measured over `RATE_WINDOW`s.
    gap: Duration,
    window_start: Instant,
    window_events: u32,
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
    /// submission queue is full. (That early submission goes in before the turn's
    /// requests are stamped, so they would read a few µs late; the queue is sized so
    /// that it does not happen in a normal turn.)
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
        let e = opcode::RecvMsgMulti::new(Fd(fd), &*self.rx.template, BUFFER_GROUP)
            .ioprio(RECVSEND_POLL_FIRST)
            .build()
            .user_data(user_data);
        // The template is boxed in the ring of buffers, which outlives the io_uring;
        // the kernel writes only into the provided buffers (see `rx`).
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

    /// How many completions a sleeping wait asks for: a share of those awaited, no
    /// more than arrive in [`BATCH_WAIT`] at the measured rate, at least one.
    fn batch(&self) -> usize {
        let (num, den) = BATCH_SHARE;
        let share = (self.awaiting * num).div_ceil(den);
        let by_rate = 1 + (BATCH_WAIT.as_nanos() / self.gap.as_nanos().max(1)) as usize;
        share.min(by_rate).max(1)
    }

    /// Counts `n` completions reaped at `now` into the rate.
    fn observe(&mut self, n: usize, now: Instant) {
        self.window_events = self.window_events.saturating_add(n as u32);
        let span = now.saturating_duration_since(self.window_start);
        if span >= RATE_WINDOW {
            let sample = span / self.window_events.max(1);
            self.gap = (self.gap + sample) / 2;
            self.window_start = now;
            self.window_events = 0;
        }
    }

    /// Submits what is queued and, unless completions are already there, sleeps until
    /// a batch of them has arrived or `deadline` has passed.
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
        let want = if self.ring.submission().taskrun() {
            1 // completions are waiting: take them without sleeping
        } else {
            self.batch()
        };
        tolerate(self.ring.submitter().submit_and_wait(want))
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
            unstamped: Vec::with_capacity(cfg.connections),
            awaiting: 0,
            recvs: 0,
            gap: BATCH_WAIT,
            window_start: Instant::now(),
            window_events: 0,
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
        let core = &mut w.core;
        let d = &mut core.driver;
        let mut now = now;
        if !d.unstamped.is_empty() {
            now = Instant::now();
            for &i in &d.unstamped {
                core.slots[i].conn.stamp(now);
            }
            d.unstamped.clear();
        }
        d.wait(now, deadline)?;
        let clock = Clock::read();
        d.reap();
        d.observe(d.cqes.len(), clock.now);
        for k in 0..w.core.driver.cqes.len() {
            let (user_data, res, flags) = w.core.driver.cqes[k];
            complete(w, user_data, res, flags, &clock);
        }
        Ok(())
    }
}

/// Handles one completion.
fn complete(w: &mut Worker<UringDriver>, user_data: u64, res: i32, flags: u32, clock: &Clock) {
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
        let (res, at) = slot.conn.on_recv(d, res, flags, clock, &mut core.done);
        core.record_done(i, at);
        w.progress(i, res, clock.now);
    } else if op == Op::Connect as u64 {
        if slot.conn.awaits_connect(gen) {
            let res = slot.conn.on_connect(d, res);
            w.progress(i, res, clock.now);
        }
    } else if op == Op::Send as u64 {
        // Only failed (or, impossibly with MSG_WAITALL, short) sends post completions.
        if slot.conn.is_current(gen) {
            let kind = if res < 0 {
                errno_kind(-res)
            } else {
                crate::conn::ErrorKind::Closed
            };
            w.progress(i, Err(kind), clock.now);
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

// The rule for a test whose tool or kernel feature is missing (a failure under
// PERFLAB_REQUIRE), shared by every crate's tests: at the workspace root.
#[cfg(test)]
#[path = "../../../../tests/require.rs"]
mod require;

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::types::RecvMsgOut;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn user_data_round_trips() {
        let u = ud(Op::Recv, 70_000, GEN_MASK);
        assert_eq!(decode(u), (Op::Recv as u64, GEN_MASK, 70_000));
        assert_eq!(decode(ud(Op::Close, 0, 0)).0, Op::Close as u64);
    }

    /// A receive through the ring carries the kernel's receive timestamp, and it
    /// converts to an instant between the write and the reaping of the completion.
    #[test]
    fn receives_carry_kernel_timestamps() {
        if require::have(support()).is_none() {
            return;
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let fd = OwnedFd::from(client);
        conn::set_option(&fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS).unwrap();
        let mut ring = build_ring(8).unwrap();
        let mut rx = RxRing::new(4);
        let (addr, count) = rx.descriptors();
        // SAFETY: `rx` outlives the ring, which is dropped first (below).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(addr, count, BUFFER_GROUP, 0)
                .unwrap()
        };
        let e = opcode::RecvMsgMulti::new(Fd(fd.as_raw_fd()), &*rx.template, BUFFER_GROUP)
            .build()
            .user_data(7);
        // SAFETY: the template and the buffers live in `rx`, which outlives the ring.
        unsafe { ring.submission().push(&e).unwrap() };
        ring.submit().unwrap();
        // The kernel turns receive timestamping on for the first socket that asks from a
        // work queue, a moment later: the first segments may come without one.
        let give_up = Instant::now() + Duration::from_secs(2);
        loop {
            let before = Clock::read();
            server.write_all(b"hello").unwrap();
            ring.submit_and_wait(1).unwrap();
            let after = Clock::read();
            let c = ring.completion().next().unwrap();
            assert_eq!(c.user_data(), 7);
            assert!(io_uring::cqueue::more(c.flags()), "the receive stays armed");
            let bid = io_uring::cqueue::buffer_select(c.flags()).unwrap();
            let msg = RecvMsgOut::parse(rx.filled(bid, c.result() as usize), &rx.template).unwrap();
            assert_eq!(msg.payload_data(), b"hello");
            let ts = rx::timestamp(msg.control_data());
            rx.give(bid);
            let Some(ts) = ts else {
                assert!(Instant::now() < give_up, "no receive timestamp");
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            let at = after.instant(ts);
            let slack = Duration::from_micros(200);
            assert!(
                at + slack >= before.now && at <= after.now,
                "received {:?} after the write started, {:?} before the reap",
                at.saturating_duration_since(before.now),
                after.now.saturating_duration_since(at)
            );
            break;
        }
        drop(ring);
    }
}
