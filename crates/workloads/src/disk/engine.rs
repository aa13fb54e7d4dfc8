//! The I/O loop: aligned buffers, the data pattern, the random block order, and the
//! workers that issue pread/pwrite and time each call.
//!
//! `iodepth` N > 1 runs N threads, each with one synchronous pread/pwrite in flight,
//! taking the next block from a shared counter (fio's `ioengine=psync` with
//! `numjobs`-like threads on one file). io_uring would keep N I/Os in flight from one
//! thread with less CPU, but needs a newer kernel and an extra dependency; with one
//! I/O per thread the device sees the same queue depth, which is what iostat's
//! `aqu-sz` then shows. Each thread records into its own histogram; they are merged
//! at the end, so the hot loop shares nothing but the block counter.

use std::io;
use std::os::unix::io::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use hdrhistogram::Histogram;

use super::spec::Pattern;
use super::Control;

/// Largest latency the histogram holds, ns (10 minutes); longer ones saturate.
const MAX_LATENCY_NS: u64 = 600_000_000_000;

/// What the workers do.
#[derive(Debug, Clone)]
pub struct IoPlan {
    pub write: bool,
    pub random: bool,
    pub bs: usize,
    pub count: u64,
    pub pattern: Pattern,
    pub threads: usize,
    /// Buffer alignment (O_DIRECT memory alignment; at least the page size).
    pub align: usize,
    pub seed: u64,
}

/// What the workers did.
#[derive(Debug)]
pub struct IoOutcome {
    /// Whole I/Os completed.
    pub ios: u64,
    /// Bytes transferred, a partial last I/O included.
    pub bytes: u64,
    /// Per-I/O latency, ns.
    pub histogram: Histogram<u64>,
    /// The first error, if any (the run stopped there).
    pub error: Option<io::Error>,
    pub interrupted: bool,
    pub timed_out: bool,
}

/// A new latency histogram (ns, 3 significant digits).
pub fn new_histogram() -> Histogram<u64> {
    // Bounds are constants known to be valid.
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid histogram bounds")
}

/// A heap buffer aligned for O_DIRECT.
pub struct AlignedBuf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

// SAFETY: the buffer is plain owned memory; only its owner touches it.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub fn zeroed(len: usize, align: usize) -> AlignedBuf {
        let layout = std::alloc::Layout::from_size_align(len.max(1), align.max(4096))
            .expect("block size and alignment were validated");
        // SAFETY: non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, layout }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is a live allocation of layout.size() initialised bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `zeroed`.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// SplitMix64: a fast, well-mixed 64-bit generator (Steele, Lea & Flood 2014).
pub fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fills `buf` with the pattern's initial content.
pub fn fill(buf: &mut [u8], pattern: Pattern, seed: u64) {
    match pattern {
        Pattern::Zero => buf.fill(0),
        Pattern::Random => {
            for (i, chunk) in buf.chunks_mut(8).enumerate() {
                let v = splitmix(seed ^ (i as u64).wrapping_mul(0xA24B_AED4_963E_E407));
                chunk.copy_from_slice(&v.to_le_bytes()[..chunk.len()]);
            }
        }
    }
}

/// Makes every 4 KiB block of a random buffer unique to I/O `n`, so nothing
/// deduplicates (8 bytes per 4 KiB: negligible next to the I/O).
pub fn scramble(buf: &mut [u8], n: u64, seed: u64) {
    for (i, chunk) in buf.chunks_mut(4096).enumerate() {
        let v = splitmix(seed ^ n.wrapping_mul(0x9E37_79B9) ^ ((i as u64) << 48));
        let k = chunk.len().min(8);
        chunk[..k].copy_from_slice(&v.to_le_bytes()[..k]);
    }
}

/// A random-access permutation of `0..count`: a 4-round Feistel network over the
/// smallest even number of bits that holds `count`, walked until the value falls
/// inside (expected < 4 steps). Every block is visited exactly once, like fio's
/// random map, in O(1) memory.
#[derive(Debug, Clone)]
pub struct Permutation {
    count: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    pub fn new(count: u64, seed: u64) -> Permutation {
        let bits = (64 - count.saturating_sub(1).leading_zeros()).max(2);
        let half_bits = bits.div_ceil(2);
        let mut keys = [0; 4];
        for (i, k) in keys.iter_mut().enumerate() {
            *k = splitmix(seed.wrapping_add(i as u64 * 0x1000_0001));
        }
        Permutation {
            count,
            half_bits,
            keys,
        }
    }

    fn round(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in &self.keys {
            let f = splitmix(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    /// The `i`-th element, `i < count`.
    pub fn at(&self, i: u64) -> u64 {
        let mut x = self.round(i);
        while x >= self.count {
            x = self.round(x);
        }
        x
    }
}

/// Runs the plan on `fd` with `plan.threads` workers (the calling thread when 1).
pub fn run(fd: RawFd, plan: &IoPlan, ctl: &Control) -> IoOutcome {
    let shared = Shared {
        fd,
        plan,
        ctl,
        next: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        error: Mutex::new(None),
        perm: plan.random.then(|| Permutation::new(plan.count, plan.seed)),
    };
    let parts: Vec<Part> = if plan.threads <= 1 {
        vec![shared.worker(0)]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..plan.threads)
                .map(|t| {
                    let sh = &shared;
                    s.spawn(move || sh.worker(t as u64))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Part::panicked()))
                .collect()
        })
    };
    let mut out = IoOutcome {
        ios: 0,
        bytes: 0,
        histogram: new_histogram(),
        error: shared.error.into_inner().unwrap_or_else(|e| e.into_inner()),
        interrupted: false,
        timed_out: false,
    };
    for p in parts {
        out.ios += p.ios;
        out.bytes += p.bytes;
        let _ = out.histogram.add(&p.histogram);
        out.interrupted |= p.interrupted;
        out.timed_out |= p.timed_out;
    }
    out
}

struct Shared<'a> {
    fd: RawFd,
    plan: &'a IoPlan,
    ctl: &'a Control,
    next: AtomicU64,
    stop: AtomicBool,
    error: Mutex<Option<io::Error>>,
    perm: Option<Permutation>,
}

struct Part {
    ios: u64,
    bytes: u64,
    histogram: Histogram<u64>,
    interrupted: bool,
    timed_out: bool,
}

impl Part {
    fn panicked() -> Part {
        Part {
            ios: 0,
            bytes: 0,
            histogram: new_histogram(),
            interrupted: false,
            timed_out: false,
        }
    }
}

impl Shared<'_> {
    fn fail(&self, e: io::Error) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(e);
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    fn worker(&self, id: u64) -> Part {
        let plan = self.plan;
        let mut buf = AlignedBuf::zeroed(plan.bs, plan.align);
        fill(buf.as_mut_slice(), plan.pattern, plan.seed ^ id);
        let mut part = Part::panicked();
        let bs = plan.bs as u64;
        loop {
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            if self.ctl.interrupted.load(Ordering::Relaxed) {
                part.interrupted = true;
                self.stop.store(true, Ordering::SeqCst);
                break;
            }
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            if n >= plan.count {
                break;
            }
            let block = self.perm.as_ref().map_or(n, |p| p.at(n));
            if plan.write && plan.pattern == Pattern::Random {
                scramble(buf.as_mut_slice(), n, plan.seed);
            }
            let t0 = Instant::now();
            let r = full_io(self.fd, plan.write, &mut buf, block * bs, plan.bs);
            let end = Instant::now();
            match r {
                Ok(()) => {
                    part.ios += 1;
                    part.bytes += bs;
                    let ns = (end - t0).as_nanos().min(u128::from(MAX_LATENCY_NS)) as u64;
                    part.histogram.saturating_record(ns.max(1));
                }
                Err((done, e)) => {
                    part.bytes += done as u64;
                    self.fail(e);
                    break;
                }
            }
            if self.ctl.deadline.is_some_and(|d| end >= d) {
                part.timed_out = true;
                self.stop.store(true, Ordering::SeqCst);
                break;
            }
        }
        part
    }
}

/// One whole pread/pwrite of `len` bytes at `off`, retried on short transfers and
/// EINTR; on error, how much was done.
fn full_io(
    fd: RawFd,
    write: bool,
    buf: &mut AlignedBuf,
    off: u64,
    len: usize,
) -> Result<(), (usize, io::Error)> {
    let mut done = 0usize;
    while done < len {
        let at = (off + done as u64) as libc::off_t;
        // SAFETY: the buffer holds at least `len` bytes; fd is open for the direction.
        let rc = unsafe {
            if write {
                let p = buf.as_slice()[done..].as_ptr();
                libc::pwrite(fd, p.cast(), len - done, at)
            } else {
                let p = buf.as_mut_slice()[done..].as_mut_ptr();
                libc::pread(fd, p.cast(), len - done, at)
            }
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err((done, e));
        }
        if rc == 0 {
            let e = if write {
                io::Error::new(io::ErrorKind::WriteZero, "the write transferred nothing")
            } else {
                io::Error::new(io::ErrorKind::UnexpectedEof, "end of file before the block")
            };
            return Err((done, e));
        }
        done += rc as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_permutation_visits_every_block_once() {
        for count in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let p = Permutation::new(count, 42);
            let mut seen = vec![false; count as usize];
            for i in 0..count {
                let x = p.at(i) as usize;
                assert!(!seen[x], "count {count}: {x} twice");
                seen[x] = true;
            }
        }
        let p = Permutation::new(1000, 1);
        let ordered = (0..1000).filter(|&i| p.at(i) == i).count();
        assert!(ordered < 20, "not shuffled: {ordered} fixed points");
    }

    #[test]
    fn buffers_are_aligned_and_patterns_differ_per_io() {
        let mut b = AlignedBuf::zeroed(8192, 4096);
        assert_eq!(b.as_slice().as_ptr() as usize % 4096, 0);
        fill(b.as_mut_slice(), Pattern::Random, 7);
        assert!(b.as_slice().iter().filter(|&&x| x == 0).count() < 200);
        let first = b.as_slice().to_vec();
        scramble(b.as_mut_slice(), 1, 7);
        let one = b.as_slice().to_vec();
        scramble(b.as_mut_slice(), 2, 7);
        assert_ne!(first[..8], one[..8]);
        assert_ne!(one[..8], b.as_slice()[..8]);
        assert_ne!(one[4096..4104], b.as_slice()[4096..4104]);
        fill(b.as_mut_slice(), Pattern::Zero, 7);
        assert!(b.as_slice().iter().all(|&x| x == 0));
    }
}
