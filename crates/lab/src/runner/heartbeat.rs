//! The run owner's heartbeat: a small thread that stamps the run as alive in the store
//! every [`HEARTBEAT_EVERY`] while the runner works, so a reader on another host (or a
//! stale claim) can tell a live run from one whose perflab died (perflab_store::owner).
//! On this host readers look at the owner's pid and start time at once; the heartbeat
//! serves everything else.
//!
//! The thread has its own connection (a `Store` is one SQLite connection, not shared
//! across threads) and stops when its [`Heartbeat`] is dropped — at the end of the run,
//! or when the runner returns early with an error. An in-memory store has no readers
//! elsewhere, so it gets no thread.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;

use perflab_store::owner::HEARTBEAT_EVERY;
use perflab_store::{RunId, Store};

/// The running heartbeat of one run; dropping it stops the thread and waits for it.
pub(crate) struct Heartbeat {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// Starts beating for `run` of the store at `store`'s path.
pub(crate) fn start(store: &Store, run: RunId) -> Heartbeat {
    let path = store.path().to_path_buf();
    if path.as_os_str() == ":memory:" {
        return Heartbeat {
            stop: None,
            thread: None,
        };
    }
    let (tx, rx) = mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("perflab-heartbeat".into())
        .spawn(move || {
            let Ok(store) = Store::open(&path) else {
                return;
            };
            loop {
                match rx.recv_timeout(HEARTBEAT_EVERY) {
                    Err(RecvTimeoutError::Timeout) => {
                        // Another process took the run over: nothing left to say.
                        if let Ok(false) = store.heartbeat(run) {
                            return;
                        }
                    }
                    _ => return,
                }
            }
        })
        .ok();
    Heartbeat {
        stop: Some(tx),
        thread,
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
