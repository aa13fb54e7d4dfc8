//! Receive buffers lent to the kernel, and the kernel's receive timestamps.
//!
//! Receives are *multishot* `IORING_OP_RECVMSG`s: one per connection, armed once, that
//! post a completion for every batch of bytes that arrives, each in a buffer the kernel
//! picks from a ring of provided buffers ([`RxRing`], `IORING_REGISTER_PBUF_RING`).
//! That spares each request the arming of a receive (its preparation, a poll of the
//! socket, a wait-queue entry added and removed). The bytes are copied out of the
//! provided buffer into the connection's own buffer (responses are small; the parser
//! wants them contiguous) and the buffer goes straight back to the ring, so the kernel
//! never writes into memory a connection owns: only into the ring's buffers, which live
//! as long as the driver — longer than the io_uring instance, which is closed first.
//!
//! Timestamps: every socket has `SO_TIMESTAMPNS`, so each completion that carries data
//! also carries (as a control message, in the buffer beside the payload) the
//! `CLOCK_REALTIME` time at which the kernel received the last segment read.
//! [`Clock`] converts that to the monotonic [`Instant`] domain the rest of the engine
//! measures in, with an offset sampled (`Instant::now` and `SystemTime::now` back to
//! back) once per loop turn.

use io_uring::types::BufRingEntry;
use std::alloc::Layout;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// Control space reserved in every buffer: one `SCM_TIMESTAMPNS` (a 16-byte header and
/// a 16-byte timespec) with room to spare.
pub(crate) const CONTROL_LEN: usize = 64;
/// Size of one provided buffer (the receive header, the control space, the payload).
pub(crate) const BUF_LEN: usize = 4096;

/// A ring of provided receive buffers (buffer group `group`).
pub(crate) struct RxRing {
    /// The ring of buffer descriptors (page-aligned, shared with the kernel).
    entries: *mut BufRingEntry,
    layout: Layout,
    /// The buffers themselves: `count` × [`BUF_LEN`] bytes.
    bufs: *mut u8,
    bufs_layout: Layout,
    count: u16,
    tail: u16,
    /// The template the kernel lays each buffer out by (name and control lengths).
    pub template: Box<libc::msghdr>,
}

impl RxRing {
    /// Allocates `count` buffers (a power of two, at most 32768) and offers them all.
    pub fn new(count: u16) -> RxRing {
        assert!(count.is_power_of_two());
        let layout = Layout::from_size_align(
            usize::from(count) * std::mem::size_of::<BufRingEntry>(),
            4096,
        )
        .expect("a valid ring layout");
        let bufs_layout =
            Layout::from_size_align(usize::from(count) * BUF_LEN, 64).expect("a valid layout");
        // SAFETY: both layouts have a non-zero size. The descriptors are zeroed: the
        // kernel reads the tail from the first one.
        let (entries, bufs) = unsafe {
            (
                std::alloc::alloc_zeroed(layout).cast::<BufRingEntry>(),
                std::alloc::alloc(bufs_layout),
            )
        };
        if entries.is_null() || bufs.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // SAFETY: all-zero bytes are a valid msghdr (null pointers, zero lengths).
        let mut template: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        template.msg_controllen = CONTROL_LEN as _;
        let mut ring = RxRing {
            entries,
            layout,
            bufs,
            bufs_layout,
            count,
            tail: 0,
            template,
        };
        for bid in 0..count {
            ring.give(bid);
        }
        ring
    }

    /// Where the descriptors are, and how many (for `register_buf_ring`).
    pub fn descriptors(&self) -> (u64, u16) {
        (self.entries as u64, self.count)
    }

    /// The first `len` bytes of buffer `bid`, which a completion just handed over.
    pub fn filled(&self, bid: u16, len: usize) -> &[u8] {
        assert!(bid < self.count);
        // SAFETY: buffer `bid` lies within the allocation; the kernel handed it over with
        // this completion and does not write it again until `give` offers it back.
        unsafe {
            std::slice::from_raw_parts(self.bufs.add(usize::from(bid) * BUF_LEN), len.min(BUF_LEN))
        }
    }

    /// Offers buffer `bid` to the kernel again.
    pub fn give(&mut self, bid: u16) {
        let mask = self.count - 1;
        // SAFETY: the index is masked into the ring; the buffer address lies within the
        // buffers' allocation; the tail (the `resv` field of the first descriptor) is a
        // u16 the kernel reads, published with release ordering after the descriptor.
        unsafe {
            let e = &mut *self.entries.add(usize::from(self.tail & mask));
            e.set_addr(self.bufs.add(usize::from(bid) * BUF_LEN) as u64);
            e.set_len(BUF_LEN as u32);
            e.set_bid(bid);
            self.tail = self.tail.wrapping_add(1);
            let tail = BufRingEntry::tail(self.entries) as *const AtomicU16;
            (*tail).store(self.tail, Ordering::Release);
        }
    }
}

impl RxRing {
    /// Never frees the memory (the kernel may still write it: see the driver's drop).
    pub fn leak(&mut self) {
        self.count = 0;
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        if self.count == 0 {
            return; // leaked
        }
        // SAFETY: allocated in `new` with these layouts. The driver closes its io_uring
        // (which unregisters the ring) before dropping this.
        unsafe {
            std::alloc::dealloc(self.entries.cast(), self.layout);
            std::alloc::dealloc(self.bufs, self.bufs_layout);
        }
    }
}

/// `CMSG_ALIGN`.
const fn cmsg_align(n: usize) -> usize {
    let a = std::mem::size_of::<usize>();
    (n + a - 1) & !(a - 1)
}

/// The `SCM_TIMESTAMPNS` time in `control` (control messages as the kernel lays them
/// out), as real time since the epoch.
pub(crate) fn timestamp(control: &[u8]) -> Option<Duration> {
    let head = cmsg_align(std::mem::size_of::<libc::cmsghdr>());
    let ts_len = std::mem::size_of::<libc::timespec>();
    let mut at = 0;
    while at + head <= control.len() {
        // SAFETY: a cmsghdr's worth of bytes lies within `control` at `at`, read unaligned.
        let h: libc::cmsghdr = unsafe {
            control
                .as_ptr()
                .add(at)
                .cast::<libc::cmsghdr>()
                .read_unaligned()
        };
        #[allow(clippy::unnecessary_cast)] // `cmsg_len` is a u32 on musl
        let len = h.cmsg_len as usize;
        if len < head || at + len > control.len() {
            return None;
        }
        if h.cmsg_level == libc::SOL_SOCKET
            && h.cmsg_type == libc::SCM_TIMESTAMPNS
            && len >= head + ts_len
        {
            // SAFETY: the timespec lies within this message, inside `control`.
            let ts: libc::timespec = unsafe {
                control
                    .as_ptr()
                    .add(at + head)
                    .cast::<libc::timespec>()
                    .read_unaligned()
            };
            if ts.tv_sec <= 0 || !(0..1_000_000_000).contains(&ts.tv_nsec) {
                return None;
            }
            return Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
        }
        at += cmsg_align(len);
    }
    None
}

/// The monotonic clock and the real-time clock read back to back: converts kernel
/// receive timestamps (real time) to [`Instant`]s.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    /// The monotonic reading.
    pub now: Instant,
    /// The real-time reading, since the epoch.
    real: Duration,
}

impl Clock {
    /// Reads both clocks.
    pub fn read() -> Clock {
        let now = Instant::now();
        let real = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        Clock { now, real }
    }

    /// The instant of real time `ts`, never later than the reading itself (a timestamp
    /// "in the future" can only be a clock step or rounding; it counts as now).
    pub fn instant(&self, ts: Duration) -> Instant {
        match self.real.checked_sub(ts) {
            Some(ago) => self.now.checked_sub(ago).unwrap_or(self.now),
            None => self.now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_time_converts_to_the_instant_that_far_back() {
        let c = Clock::read();
        let at = c.instant(c.real - Duration::from_millis(3));
        assert_eq!(c.now - at, Duration::from_millis(3));
        assert_eq!(c.instant(c.real + Duration::from_secs(1)), c.now);
    }

    /// Control messages as the kernel writes them: an unrelated one, then the timestamp.
    #[test]
    fn timestamp_is_found_among_control_messages() {
        let head = cmsg_align(std::mem::size_of::<libc::cmsghdr>());
        let mut control = vec![0u8; CONTROL_LEN];
        let mut put = |at: usize, level: i32, kind: i32, data: &[u8]| {
            let h = libc::cmsghdr {
                cmsg_len: (head + data.len()) as _,
                cmsg_level: level,
                cmsg_type: kind,
            };
            // SAFETY: writes a cmsghdr inside `control` (checked by the slice below).
            unsafe {
                control[at..at + head]
                    .as_mut_ptr()
                    .cast::<libc::cmsghdr>()
                    .write_unaligned(h)
            };
            control[at + head..at + head + data.len()].copy_from_slice(data);
            at + cmsg_align(head + data.len())
        };
        let next = put(0, libc::IPPROTO_IP, 1, &[7; 4]);
        let mut ts = [0u8; 16];
        ts[..8].copy_from_slice(&1_700_000_000i64.to_ne_bytes());
        ts[8..].copy_from_slice(&123_456_789i64.to_ne_bytes());
        put(next, libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, &ts);
        assert_eq!(
            timestamp(&control),
            Some(Duration::new(1_700_000_000, 123_456_789))
        );
        assert_eq!(timestamp(&[0; CONTROL_LEN]), None, "no message, no time");
    }

    #[test]
    fn given_buffers_come_back_in_order() {
        let mut ring = RxRing::new(4);
        let (addr, n) = ring.descriptors();
        assert_eq!((addr % 4096, n), (0, 4));
        // SAFETY: reads the descriptors this test owns (no kernel involved).
        let bids: Vec<u16> = (0..4)
            .map(|i| unsafe { (*ring.entries.add(i)).bid() })
            .collect();
        assert_eq!(bids, vec![0, 1, 2, 3]);
        ring.give(2);
        // SAFETY: as above.
        assert_eq!(
            unsafe { (*ring.entries).bid() },
            2,
            "wrapped to the first slot"
        );
        assert_eq!(ring.filled(2, 10).len(), 10);
    }
}
