//! Opening counters on a process that is about to `exec`, and handing them to the
//! parent.
//!
//! The counters must exist before the program's first instruction, and follow every
//! process it forks: so the child opens them on itself, between `fork` and `exec`
//! (`pre_exec`), with `inherit = 1` (children counted, their counts folded into ours)
//! and `enable_on_exec = 1` (nothing before `exec` is counted: not the fork, not
//! joining the trial's cgroup). The child then passes the descriptors to the parent
//! over a Unix socket (`SCM_RIGHTS`) and its own copies close on `exec`. This is
//! `perf stat CMD`'s model without its handshake: perf stops the child on a pipe and
//! opens the events on its pid from the parent; opening them in the child needs no
//! second round trip, and everything it calls (`perf_event_open`, `sendmsg`) is
//! async-signal-safe, as `pre_exec` requires. All memory is prepared before `fork`.
//!
//! Hardware events are not even tried where the machine has no PMU (no
//! `/sys/bus/event_source/devices/cpu`): they are missing with that reason, never 0.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;

use super::event::Event;

/// `perf_event_attr` up to `PERF_ATTR_SIZE_VER5` (112 bytes), the fields perflab sets;
/// the kernel accepts the shorter sizes of older headers.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Attr {
    pub kind: u32,
    pub size: u32,
    pub config: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    pub wakeup_events: u32,
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved_2: u16,
}

const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;
/// `PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING`.
const READ_TIMES: u64 = 1 | 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// Most events one set holds (every event once).
const MAX_EVENTS: usize = Event::ALL.len();

/// What opening one event gave: [`OPENED`], [`OPENED_USER_ONLY`] or `-errno`.
pub(crate) const OPENED: i32 = 0;
pub(crate) const OPENED_USER_ONLY: i32 = 1;

impl Attr {
    fn counting(e: Event) -> Attr {
        let (kind, config) = e.type_config();
        Attr {
            kind,
            size: std::mem::size_of::<Attr>() as u32,
            config,
            read_format: READ_TIMES,
            flags: FLAG_DISABLED | FLAG_INHERIT | FLAG_ENABLE_ON_EXEC,
            ..Attr::default()
        }
    }
}

/// Whether this machine has a hardware PMU the kernel exposes (x86 `cpu`, hybrid
/// `cpu_core`/`cpu_atom`, Arm `armv8_*`). Most VMs have none.
pub fn has_hardware_pmu() -> bool {
    let devices = Path::new("/sys/bus/event_source/devices");
    ["cpu", "cpu_core", "cpu_atom"]
        .iter()
        .any(|d| devices.join(d).exists())
        || std::fs::read_dir(devices).is_ok_and(|dir| {
            dir.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("armv"))
        })
}

/// The reason a hardware event is not counted on a machine without a PMU.
pub const NO_PMU: &str = "not available: no hardware PMU";

/// Counters prepared before `fork`: call [`Armed::child_side`]'s `open` in the
/// child's `pre_exec`, then [`Armed::collect`] in the parent once the child has exec'd.
#[derive(Debug)]
pub struct Armed {
    /// Each event and its attr, or why it is not opened at all.
    plan: Vec<(Event, Result<Attr, String>)>,
    /// `[parent end, child end]` of a SOCK_SEQPACKET pair (both close-on-exec).
    sock: [i32; 2],
}

impl Armed {
    /// Prepares `events` (duplicates counted once).
    pub fn new(events: &[Event]) -> io::Result<Armed> {
        let pmu = has_hardware_pmu();
        let mut plan: Vec<(Event, Result<Attr, String>)> = Vec::new();
        for &e in events {
            if plan.iter().any(|(p, _)| *p == e) {
                continue;
            }
            let attr = if e.is_hardware() && !pmu {
                Err(NO_PMU.to_string())
            } else {
                Ok(Attr::counting(e))
            };
            plan.push((e, attr));
        }
        let mut sock = [-1; 2];
        // SAFETY: valid pointer to two ints.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                sock.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Armed { plan, sock })
    }

    /// What the child needs, to move into its `pre_exec` closure: plain data, no
    /// allocation behind it (see [`ChildSide::open`]).
    pub fn child_side(&self) -> ChildSide {
        let mut attrs = [None; MAX_EVENTS];
        for (slot, (_, attr)) in attrs.iter_mut().zip(&self.plan) {
            *slot = attr.as_ref().ok().copied();
        }
        ChildSide {
            attrs,
            n: self.plan.len(),
            sock: self.sock[1],
        }
    }

    /// In the parent, after the child's `exec` (`Command::spawn` returned): the
    /// counters it opened, or why each one is missing. Never blocks: a child that did
    /// not send leaves every event missing with that reason.
    pub fn collect(self) -> super::Counters {
        let n = self.plan.len();
        let (status, mut fds) = match recv(self.sock[0], n) {
            Ok(got) => got,
            Err(e) => {
                let why = format!("counters were not opened: {e}");
                return super::Counters::all_missing(
                    self.plan.iter().map(|(e, _)| *e).collect(),
                    &why,
                );
            }
        };
        let mut slots = Vec::with_capacity(n);
        let mut next = fds.drain(..);
        for (i, (e, attr)) in self.plan.iter().enumerate() {
            let slot = match (attr, status.get(i).copied().unwrap_or(-libc::EIO)) {
                (Err(why), _) => super::Slot::Missing(why.clone()),
                (Ok(_), s) if s >= 0 => match next.next() {
                    Some(fd) => super::Slot::Open {
                        fd,
                        user_only: s == OPENED_USER_ONLY,
                    },
                    None => super::Slot::Missing("descriptor lost in transfer".into()),
                },
                (Ok(_), s) => super::Slot::Missing(reason(*e, -s)),
            };
            slots.push((*e, slot));
        }
        super::Counters { slots }
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        for fd in self.sock {
            if fd >= 0 {
                // SAFETY: the socket pair this value opened.
                unsafe { libc::close(fd) };
            }
        }
    }
}

/// The child's half of [`Armed`]: the attrs and the socket, copied into `pre_exec`.
#[derive(Debug, Clone, Copy)]
pub struct ChildSide {
    attrs: [Option<Attr>; MAX_EVENTS],
    n: usize,
    sock: i32,
}

impl ChildSide {
    /// In the child, after `fork` and before `exec`: opens each event on the calling
    /// process and sends the descriptors to the parent. Async-signal-safe: no
    /// allocation, only system calls. A failed event is reported, not fatal.
    pub fn open(&self) -> io::Result<()> {
        let mut status = [0i32; MAX_EVENTS];
        let mut fds = [-1i32; MAX_EVENTS];
        let mut nfds = 0usize;
        for (i, attr) in self.attrs[..self.n].iter().enumerate() {
            let Some(attr) = attr else {
                status[i] = -libc::ENOENT;
                continue;
            };
            match open_self(attr) {
                Ok((fd, how)) => {
                    status[i] = how;
                    fds[nfds] = fd;
                    nfds += 1;
                }
                Err(errno) => status[i] = -errno,
            }
        }
        let sent = send(self.sock, &status[..self.n], &fds[..nfds]);
        for &fd in &fds[..nfds] {
            // SAFETY: fds this function opened (the parent holds its own copies).
            unsafe { libc::close(fd) };
        }
        sent
    }
}

/// `perf_event_open(attr, 0, -1, -1, CLOEXEC)`; where the kernel refuses kernel-mode
/// counting (`perf_event_paranoid` ≥ 2 without privilege) it retries user space only,
/// as `perf stat` does. Returns the fd and how it was opened, or the errno.
fn open_self(attr: &Attr) -> Result<(i32, i32), i32> {
    let try_open = |a: &Attr| {
        // SAFETY: a valid attr of the size it declares; pid 0 (self), any CPU.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                a as *const Attr,
                0 as libc::pid_t,
                -1 as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd >= 0 {
            Ok(fd as i32)
        } else {
            Err(io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO))
        }
    };
    match try_open(attr) {
        Ok(fd) => Ok((fd, OPENED)),
        Err(libc::EACCES) | Err(libc::EPERM) => {
            let mut user = *attr;
            user.flags |= FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV;
            try_open(&user).map(|fd| (fd, OPENED_USER_ONLY))
        }
        Err(e) => Err(e),
    }
}

/// Why an event could not be opened, in words that say what to do.
fn reason(e: Event, errno: i32) -> String {
    match errno {
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV if e.is_hardware() => {
            "not available: this CPU's PMU does not count it".into()
        }
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => {
            "not available: the kernel does not count it".into()
        }
        libc::EACCES | libc::EPERM => format!(
            "not permitted: kernel.perf_event_paranoid is {} (run as root, or lower it with sysctl)",
            std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into())
        ),
        libc::ENOSYS => "not available: the kernel has no perf_event_open".into(),
        other => format!(
            "cannot open: {}",
            io::Error::from_raw_os_error(other)
        ),
    }
}

/// Space for the control message of [`MAX_EVENTS`] descriptors (u64-aligned).
type CmsgBuf = [u64; 16];

/// Sends the statuses with the fds attached. Async-signal-safe.
fn send(sock: i32, status: &[i32], fds: &[i32]) -> io::Result<()> {
    let mut cbuf: CmsgBuf = [0; 16];
    let mut iov = libc::iovec {
        iov_base: status.as_ptr() as *mut libc::c_void,
        iov_len: std::mem::size_of_val(status).max(1),
    };
    // SAFETY: zeroed msghdr is valid; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        let bytes = std::mem::size_of_val(fds) as u32;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE is arithmetic.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(bytes) } as _;
        // SAFETY: msg_control points at a buffer of msg_controllen bytes (checked by
        // the size of CmsgBuf: 128 ≥ CMSG_SPACE(40)).
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(bytes) as _;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr(),
                libc::CMSG_DATA(c).cast::<i32>(),
                fds.len(),
            );
        }
    }
    // SAFETY: a valid msghdr.
    let rc = unsafe { libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Receives what [`send`] sent for `n` events, without blocking.
fn recv(sock: i32, n: usize) -> io::Result<(Vec<i32>, Vec<OwnedFd>)> {
    let mut status = [0i32; MAX_EVENTS];
    let mut cbuf: CmsgBuf = [0; 16];
    let mut iov = libc::iovec {
        iov_base: status.as_mut_ptr().cast(),
        iov_len: std::mem::size_of_val(&status),
    };
    // SAFETY: zeroed msghdr is valid; the pointers set below outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of::<CmsgBuf>() as _;
    // SAFETY: a valid msghdr over our buffers.
    let got = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: walking the control messages recvmsg filled in.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c).cast::<i32>();
                let count = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / 4;
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    let k = (got as usize / 4).min(n);
    Ok((status[..k].to_vec(), fds))
}
