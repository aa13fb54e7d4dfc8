//! Setting an io_uring up for the driver: the ring's flags, the one-time probe of what
//! the kernel offers (so `--io auto` can fall back to epoll, and `--io uring` can say
//! why not), and socket addresses in the form the kernel takes.

use super::rx::RxRing;
use super::{BUFFER_GROUP, MIN_BUFFERS};
use io_uring::opcode;
use io_uring::types::{TimeoutFlags, Timespec};
use io_uring::IoUring;
use std::io;
use std::sync::OnceLock;

/// Builds a ring with the flags the driver relies on.
pub(super) fn build_ring(entries: u32) -> io::Result<IoUring> {
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_coop_taskrun()
        .setup_taskrun_flag()
        .setup_submit_all()
        .setup_cqsize(entries.saturating_mul(2))
        .build(entries)
}

/// Whether the driver can run here; probed once per process.
pub(crate) fn support() -> Result<(), String> {
    static SUPPORT: OnceLock<Result<(), String>> = OnceLock::new();
    SUPPORT.get_or_init(probe).clone()
}

fn probe() -> Result<(), String> {
    if let Ok(v) = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled") {
        if v.trim() != "0" {
            return Err(format!(
                "the kernel restricts it (kernel.io_uring_disabled = {})",
                v.trim()
            ));
        }
    }
    let mut ring = build_ring(8).map_err(|e| {
        format!(
            "io_uring_setup with DEFER_TASKRUN failed: {e} (it needs Linux 6.4 or later, and \
             no seccomp filter against io_uring, as container runtimes often have)"
        )
    })?;
    let p = ring.params();
    for (ok, what) in [
        (p.is_feature_ext_arg(), "IORING_FEAT_EXT_ARG"),
        (p.is_feature_nodrop(), "IORING_FEAT_NODROP"),
        (p.is_feature_skip_cqe_on_success(), "IORING_FEAT_CQE_SKIP"),
    ] {
        if !ok {
            return Err(format!("the kernel lacks {what}"));
        }
    }
    let mut probe = io_uring::Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|e| format!("cannot probe io_uring operations: {e}"))?;
    for (code, what) in [
        (opcode::Connect::CODE, "CONNECT"),
        (opcode::Send::CODE, "SEND"),
        (opcode::Recv::CODE, "RECV"),
        (opcode::AsyncCancel::CODE, "ASYNC_CANCEL"),
        (opcode::Close::CODE, "CLOSE"),
        (opcode::Timeout::CODE, "TIMEOUT"),
    ] {
        if !probe.is_supported(code) {
            return Err(format!("the kernel lacks IORING_OP_{what}"));
        }
    }
    let rx = RxRing::new(MIN_BUFFERS as u16);
    let (addr, count) = rx.descriptors();
    // SAFETY: the descriptors stay allocated while `ring` can use them: `ring` is
    // dropped before `rx` (below), and no receive is ever queued on this ring anyway.
    unsafe {
        ring.submitter()
            .register_buf_ring_with_flags(addr, count, BUFFER_GROUP, 0)
    }
    .map_err(|e| format!("cannot register provided buffers (Linux 5.19): {e}"))?;
    // Multishot timers (Linux 6.4): one that fires once must say -ETIME.
    let ts = Timespec::new().nsec(1000);
    let e = opcode::Timeout::new(&ts)
        .count(1)
        .flags(TimeoutFlags::MULTISHOT)
        .build()
        .user_data(1);
    // SAFETY: `ts` outlives the submission below, which copies it.
    unsafe { ring.submission().push(&e) }.map_err(|_| "the probe ring is full".to_string())?;
    ring.submit_and_wait(1)
        .map_err(|e| format!("cannot run an io_uring timer: {e}"))?;
    let res = ring.completion().next().map(|c| c.result());
    if res != Some(-libc::ETIME) {
        return Err("the kernel lacks multishot timeouts (Linux 6.4)".into());
    }
    drop(ring);
    drop(rx);
    Ok(())
}
