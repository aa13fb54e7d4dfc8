//! The start handshake with `perf record`: perf starts with its events disabled
//! (`--delay=-1`) and a control channel (`--control=fd:CTL,ACK`); [`Control::enable`]
//! asks it to enable them and waits for its `ack`. So [`Profiler::start`] returns only
//! once perf samples — a trial that starts right after it (a 0.3 s command) is in the
//! profile from its first instruction, where without it the first half second or so
//! that perf takes to start was lost, and a short trial had no samples at all.
//!
//! Two pipes, close-on-exec in this process; perf's ends are made inheritable in its
//! child only (between fork and exec), so no other program perflab starts holds them.
//!
//! [`Profiler::start`]: crate::Profiler::start

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::error::{ProfileError, Result};

/// How long perf may take to start recording (symbol tables, a busy machine).
const START_LIMIT: Duration = Duration::from_secs(30);

/// The control channel of one perf: our ends, and perf's until it is started.
#[derive(Debug)]
pub struct Control {
    /// We write commands here.
    ctl: std::fs::File,
    /// perf acknowledges here.
    ack: std::fs::File,
    /// perf's ends (read commands, write acks), closed here once perf has them.
    theirs: Option<(OwnedFd, OwnedFd)>,
}

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: a valid pointer to two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(ProfileError::io(
            "cannot make a pipe for perf's control",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: two fresh descriptors this function owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Control {
    /// Two new pipes.
    pub fn new() -> Result<Control> {
        let (ctl_r, ctl_w) = pipe()?;
        let (ack_r, ack_w) = pipe()?;
        Ok(Control {
            ctl: ctl_w.into(),
            ack: ack_r.into(),
            theirs: Some((ctl_r, ack_w)),
        })
    }

    /// perf's options for it: events off at the start, and the channel.
    pub fn args(&self) -> Vec<String> {
        let (r, w) = self.their_fds();
        vec!["--delay=-1".into(), format!("--control=fd:{r},{w}")]
    }

    fn their_fds(&self) -> (RawFd, RawFd) {
        self.theirs
            .as_ref()
            .map(|(r, w)| (r.as_raw_fd(), w.as_raw_fd()))
            .unwrap_or((-1, -1))
    }

    /// Lets perf's child inherit its two ends across `exec`.
    pub fn pass_to(&self, cmd: &mut Command) {
        let (r, w) = self.their_fds();
        // SAFETY: fcntl is async-signal-safe; the fds are open until perf is spawned.
        unsafe {
            cmd.pre_exec(move || {
                for fd in [r, w] {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }

    /// Enables perf's events and waits until perf says they are on. Called once perf
    /// is spawned: our copies of its ends are closed first, so a perf that dies
    /// before it answers gives end-of-file, not a wait to the limit.
    pub fn enable(&mut self, child: &mut std::process::Child) -> Result<()> {
        self.theirs = None;
        self.ctl
            .write_all(b"enable\n")
            .map_err(|e| ProfileError::io("cannot ask perf to start recording", e))?;
        let fd = self.ack.as_raw_fd();
        let end = Instant::now() + START_LIMIT;
        let mut got = Vec::new();
        // perf 6.1 writes "ack\n" and its string's NUL.
        while !got.windows(4).any(|w| w == b"ack\n") {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(not_started(format!(
                    "perf did not start recording within {} s",
                    START_LIMIT.as_secs()
                )));
            }
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(200) as i32) };
            if n <= 0 {
                if let Ok(Some(st)) = child.try_wait() {
                    return Err(not_started(format!("perf ended ({st}) before recording")));
                }
                continue;
            }
            let mut buf = [0u8; 64];
            match self.ack.read(&mut buf) {
                Ok(0) => return Err(not_started("perf ended before recording".into())),
                Ok(k) => got.extend_from_slice(&buf[..k]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ProfileError::io("cannot read perf's answer", e)),
            }
        }
        Ok(())
    }
}

fn not_started(why: String) -> ProfileError {
    ProfileError::PerfFailed {
        command: "perf record".into(),
        status: "not recording".into(),
        stderr: why,
    }
}
