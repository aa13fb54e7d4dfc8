//! Starting a trial's root process *held*: forked, in its group and cgroup, but
//! stopped before its `exec` until a hook has seen its pid — so that perf
//! (`[profile] target = "workload"`) is attached to it, and to every process it will
//! start (perf follows children), before its first instruction, and samples nothing
//! else on the machine.
//!
//! Why a hold and not `perf record -- CMD`: with perf as the root, the tree's
//! measurement (wall, user and system time, memory) would count perf's own start-up
//! and symbol work. Why not `perf record -p PID` after an ordinary spawn: the first
//! half second or so, while perf starts, would be missing from the profile.
//!
//! Two close-on-exec pipes: in the child (between fork and exec, async-signal-safe
//! calls only) [`hold_raw`] writes its pid on one and blocks reading the other; the
//! parent reads the pid, calls the hook, and writes one byte to let it go on. `spawn`
//! returns only after `exec`, so it runs on a thread of its own meanwhile.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::{Child, Command};
use std::time::Instant;

use crate::AttachHook;

/// The parent's side of a held start.
pub(crate) struct Hold {
    pid_r: OwnedFd,
    pid_w: OwnedFd,
    go_r: OwnedFd,
    go_w: OwnedFd,
}

/// The child's ends, as raw fds for `pre_exec`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeldFds {
    pid_w: RawFd,
    go_r: RawFd,
    go_w: RawFd,
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: a valid pointer to two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: two fresh descriptors this function owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Hold {
    pub(crate) fn new() -> std::io::Result<Hold> {
        let (pid_r, pid_w) = pipe()?;
        let (go_r, go_w) = pipe()?;
        Ok(Hold {
            pid_r,
            pid_w,
            go_r,
            go_w,
        })
    }

    pub(crate) fn child_fds(&self) -> HeldFds {
        HeldFds {
            pid_w: self.pid_w.as_raw_fd(),
            go_r: self.go_r.as_raw_fd(),
            go_w: self.go_w.as_raw_fd(),
        }
    }

    /// Spawns `cmd` (whose `pre_exec` calls [`hold_raw`] with [`Hold::child_fds`]),
    /// calls `hook` with its pid while it is held, then lets it run. Returns the child
    /// and the instant it was let go (its start, for the wall time).
    pub(crate) fn spawn(
        self,
        mut cmd: Command,
        hook: &AttachHook,
    ) -> std::io::Result<(Child, Instant)> {
        let Hold {
            pid_r,
            pid_w,
            go_r,
            go_w,
        } = self;
        // The spawner keeps our copy of the pid pipe's write end until `spawn` returns:
        // a child that fails before writing its pid ends, and the read sees end-of-file.
        let spawner = std::thread::spawn(move || {
            let r = cmd.spawn();
            drop(pid_w);
            r
        });
        let mut buf = [0u8; 4];
        let got = std::fs::File::from(pid_r).read_exact(&mut buf);
        // Only now: the child is forked (or failed) and has its own copy.
        drop(go_r);
        if got.is_ok() {
            (hook.0)(i32::from_ne_bytes(buf));
        }
        // Let it go (a child that never wrote its pid failed; the byte goes nowhere).
        let _ = std::fs::File::from(go_w).write_all(&[1]);
        let start = Instant::now();
        let child = spawner
            .join()
            .map_err(|_| std::io::Error::other("the spawning thread panicked"))??;
        Ok((child, start))
    }
}

/// In the child, before `exec`: report the pid, then wait for the parent's byte (or
/// its end: a parent that went away lets the command run unwatched). Only
/// async-signal-safe calls.
pub(crate) fn hold_raw(fds: &HeldFds) -> std::io::Result<()> {
    // SAFETY: getpid, write, close and read on descriptors this child inherited.
    unsafe {
        let pid = libc::getpid().to_ne_bytes();
        if libc::write(fds.pid_w, pid.as_ptr().cast(), pid.len()) != pid.len() as isize {
            return Err(std::io::Error::last_os_error());
        }
        libc::close(fds.go_w);
        let mut b = 0u8;
        loop {
            let n = libc::read(fds.go_r, (&mut b as *mut u8).cast(), 1);
            if n >= 0 || *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
    }
    Ok(())
}
