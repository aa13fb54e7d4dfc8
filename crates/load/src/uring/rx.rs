//! Receive buffers lent to the kernel.
//!
//! Receives are *multishot* `IORING_OP_RECV`s: one per connection, armed once, that
//! post a completion for every batch of bytes that arrives, each in a buffer the kernel
//! picks from a ring of provided buffers ([`RxRing`], `IORING_REGISTER_PBUF_RING`).
//! That spares each request the arming of a receive (its preparation, a poll of the
//! socket, a wait-queue entry added and removed). The bytes are copied out of the
//! provided buffer into the connection's own buffer (responses are small; the parser
//! wants them contiguous) and the buffer goes straight back to the ring, so the kernel
//! never writes into memory a connection owns: only into the ring's buffers, which live
//! as long as the driver — longer than the io_uring instance, which is closed first.
//!
//! Plain receives, not `RECVMSG`: no control messages are wanted (latency is taken on
//! the user-space clock, as on epoll — see the driver's module doc — not from kernel
//! receive timestamps), and a buffer then holds payload only.

use io_uring::types::BufRingEntry;
use std::alloc::Layout;
use std::sync::atomic::{AtomicU16, Ordering};

/// Size of one provided buffer (payload only).
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
        let mut ring = RxRing {
            entries,
            layout,
            bufs,
            bufs_layout,
            count,
            tail: 0,
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

#[cfg(test)]
mod tests {
    use super::*;

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
