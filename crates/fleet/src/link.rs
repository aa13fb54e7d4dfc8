//! How the controller reaches `perflab worker` on a host: the trial path's transport
//! (remote trials, host sessions), behind one small trait so that the code above it —
//! the JSON lines of [`crate::wire`], bounds, hang-ups, error messages — is the same
//! whatever carries the bytes.
//!
//! A [`WorkerLink`] puts perflab on a host once ([`WorkerLink::prepare`]) and starts a
//! worker there ([`WorkerLink::worker`]), which is a [`Conn`]: the worker's stdin,
//! stdout and stderr, and its [`End`] (wait for it, kill it). [`Ssh`] is the link a
//! user's runs take (`ssh HOST perflab worker`, the far end a process); the pipe link
//! ([`crate::pipe`]) runs the worker's loop in a thread of this process over a socket
//! pair, so fleet's own tests drive the controller, its lanes, `--resume`, lost hosts
//! and Ctrl-C without sshd (as hyperfine tests its scheduler through a mock executor).
//! The distributed load's agents have their own seam of the same kind
//! ([`crate::agents::Link`]).

use std::io::{Read, Write};
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use crate::inventory::Host;
use crate::ssh::Ssh;

/// Why a worker could not be started on a host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// The transport itself could not be started (the ssh client is missing, say).
    #[error("cannot run {program}: {why}")]
    Spawn { program: String, why: String },
    /// perflab could not be put on, or found on, the host.
    #[error("{0}")]
    Prepare(String),
    /// The host cannot be reached.
    #[error("host {host}: {why}")]
    Unreachable { host: String, why: String },
}

/// The far end of a [`Conn`]: a process (the ssh client) or a thread.
pub trait End: Send {
    /// `Some(how it ended)` once it has ended, `None` while it runs.
    fn try_wait(&mut self) -> Option<String>;
    /// Ends it now (SIGKILL for a process; a thread is cut off from its pipes).
    fn kill(&mut self);
    /// Waits for it to end (after [`End::kill`]: briefly).
    fn wait(&mut self) -> Option<String>;
}

impl End for Child {
    fn try_wait(&mut self) -> Option<String> {
        Child::try_wait(self).ok().flatten().map(|s| s.to_string())
    }

    fn kill(&mut self) {
        let _ = Child::kill(self);
    }

    fn wait(&mut self) -> Option<String> {
        Child::wait(self).ok().map(|s| s.to_string())
    }
}

/// One running worker: its three streams (each taken by whoever reads or writes it)
/// and its end.
pub struct Conn {
    pub stdin: Option<Box<dyn Write + Send>>,
    pub stdout: Option<Box<dyn Read + Send>>,
    pub stderr: Option<Box<dyn Read + Send>>,
    end: Box<dyn End>,
}

impl Conn {
    /// A worker whose streams and end are given.
    pub fn new(
        stdin: Box<dyn Write + Send>,
        stdout: Box<dyn Read + Send>,
        stderr: Box<dyn Read + Send>,
        end: Box<dyn End>,
    ) -> Conn {
        Conn {
            stdin: Some(stdin),
            stdout: Some(stdout),
            stderr: Some(stderr),
            end,
        }
    }

    /// A child process with its stdin, stdout and stderr piped.
    pub fn of_child(mut child: Child) -> Conn {
        Conn {
            stdin: child
                .stdin
                .take()
                .map(|s| Box::new(s) as Box<dyn Write + Send>),
            stdout: child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            stderr: child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            end: Box::new(child),
        }
    }

    /// Waits (bounded by `within`) for the worker to end; how it ended, if it did.
    pub fn ended_within(&mut self, within: Duration) -> Option<String> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(s) = self.end.try_wait() {
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Ends the conversation: stdin closed (the worker stops what it started), then
    /// the far end killed if it has not gone within `grace`.
    pub fn hang_up(&mut self, grace: Duration) {
        drop(self.stdin.take());
        if self.ended_within(grace).is_none() {
            self.end.kill();
            let _ = self.end.wait();
        }
    }
}

/// How the controller reaches `perflab worker` on a host.
pub trait WorkerLink: Send + Sync {
    /// Puts perflab on `host` (or finds it there): the word to run it by there.
    /// Called once per host and run; `scratch` is this machine's scratch directory.
    fn prepare(&self, host: &Host, scratch: &Path) -> Result<String, LinkError>;
    /// Starts `perflab worker` on `host` (`perflab`: what [`WorkerLink::prepare`]
    /// said).
    fn worker(&self, host: &Host, perflab: &str) -> Result<Conn, LinkError>;
}

impl WorkerLink for Ssh {
    fn prepare(&self, host: &Host, scratch: &Path) -> Result<String, LinkError> {
        crate::deploy::ensure(self, host, scratch).map_err(LinkError::Prepare)
    }

    fn worker(&self, host: &Host, perflab: &str) -> Result<Conn, LinkError> {
        Ssh::worker(self, host, perflab)
            .map(Conn::of_child)
            .map_err(|e| LinkError::Spawn {
                program: self.program.clone(),
                why: e.to_string(),
            })
    }
}

/// Ends a child's conversation as [`Conn::hang_up`] does (ssh sessions kept as a
/// [`Child`]: the agents', the relay's).
pub(crate) fn hang_up(child: &mut Child, grace: Duration) {
    drop(child.stdin.take());
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}
