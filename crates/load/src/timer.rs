//! The open loop's send timer: a `timerfd` on `CLOCK_MONOTONIC` (the clock behind
//! [`Instant`] on Linux), armed with an absolute, nanosecond deadline for the next
//! intended send time and registered in the worker's mio [`Poll`](mio::Poll), so the
//! poll wakes when the next request is due rather than when a whole-millisecond
//! `epoll_wait` timeout runs out. It never spins: the thread sleeps in the poll until
//! the kernel's high-resolution timer (which `timerfd` arms with no slack) fires.

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// A one-shot `timerfd` re-armed for each deadline.
pub(crate) struct SendTimer {
    fd: OwnedFd,
    /// An [`Instant`] and the `CLOCK_MONOTONIC` reading taken just after it: instants
    /// are converted to timer deadlines by their distance from it.
    origin: Instant,
    origin_mono: Duration,
    /// The deadline the timer is armed for, if it has not fired since.
    armed: Option<Instant>,
}

impl SendTimer {
    /// Creates the timer (disarmed).
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall with constant arguments; the result is checked.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a freshly created descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // The clock is read *after* the instant, so a converted deadline is never earlier
        // than the instant it stands for (by the few ns between the two reads at most
        // later): the timer cannot fire before the request is due.
        let origin = Instant::now();
        let origin_mono = monotonic()?;
        Ok(SendTimer {
            fd,
            origin,
            origin_mono,
            armed: None,
        })
    }

    /// Registers the timer's readability (an expiry) under `token`.
    pub fn register(&self, registry: &Registry, token: Token) -> io::Result<()> {
        registry.register(
            &mut SourceFd(&self.fd.as_raw_fd()),
            token,
            Interest::READABLE,
        )
    }

    /// Arms the timer to fire at `at`, unless it is already armed for it. A deadline
    /// already past fires at once.
    pub fn arm(&mut self, at: Instant) -> io::Result<()> {
        if self.armed == Some(at) {
            return Ok(());
        }
        let t = self.origin_mono + at.saturating_duration_since(self.origin);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: t.as_secs() as libc::time_t,
                // A zero it_value would disarm; `origin_mono` is never zero after boot.
                tv_nsec: t.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: valid fd, a fully initialized itimerspec, and a null old value.
        let rc = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed = Some(at);
        Ok(())
    }

    /// The timer's token came up: consume the expiry count so the descriptor is no
    /// longer readable, and forget the deadline so the next [`SendTimer::arm`] re-arms.
    pub fn fired(&mut self) {
        let mut count = [0u8; 8];
        // SAFETY: reads at most 8 bytes into an 8-byte buffer from a valid fd. A
        // non-blocking read with nothing to consume fails with EAGAIN, which is fine.
        let _ = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                count.as_mut_ptr() as *mut libc::c_void,
                count.len(),
            )
        };
        self.armed = None;
    }
}

/// The current `CLOCK_MONOTONIC` time.
fn monotonic() -> io::Result<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, exclusively borrowed timespec for the call's duration.
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(test)]
mod tests {
    use super::SendTimer;
    use mio::{Events, Poll, Token};
    use std::time::{Duration, Instant};

    #[test]
    fn wakes_the_poll_at_the_deadline_not_the_next_millisecond() {
        let mut poll = Poll::new().unwrap();
        let mut timer = SendTimer::new().unwrap();
        timer.register(poll.registry(), Token(7)).unwrap();
        let mut events = Events::with_capacity(4);
        let mut lateness = Vec::new();
        for _ in 0..101 {
            let at = Instant::now() + Duration::from_micros(300);
            timer.arm(at).unwrap();
            loop {
                poll.poll(&mut events, Some(Duration::from_secs(1)))
                    .unwrap();
                if events.iter().any(|e| e.token() == Token(7)) {
                    break;
                }
            }
            let now = Instant::now();
            timer.fired();
            assert!(now >= at, "fired {:?} early", at - now);
            lateness.push(now - at);
        }
        lateness.sort();
        let median = lateness[lateness.len() / 2];
        eprintln!(
            "wake-up lateness: best {:?}, median {median:?}, worst {:?}",
            lateness[0], lateness[100]
        );
        // A millisecond-rounded epoll timeout would be ~700 µs late every time, the
        // best wake-up included; a loaded machine delays many wake-ups (the median
        // too), but not every one of 101.
        assert!(lateness[0] < Duration::from_micros(500), "{lateness:?}");
    }
}
