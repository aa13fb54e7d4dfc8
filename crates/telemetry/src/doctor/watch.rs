//! The doctor's watch: one observation when it starts, one when it ends, and between
//! them the listeners' accept queues polled in a background thread, so a queue that
//! filled and drained during the window still shows as full. `perflab doctor --watch`
//! and the per-trial doctor of `perflab run` (around each trial's workload) both watch
//! through here, so they see the same peaks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::diag::{self, DiagSocket, TCP_LISTEN};
use super::observe::{Observation, Source};
use crate::snapshot::Notes;

/// How often the accept queues are read during a watch.
pub const POLL: Duration = Duration::from_millis(200);

/// A watch in progress.
pub struct Watch {
    before: Observation,
    clock: Instant,
    /// Peak accept-queue length per listener (by inode), from the first reading on.
    peaks: Arc<Mutex<HashMap<u64, DiagSocket>>>,
    stop: Arc<AtomicBool>,
    poller: Option<JoinHandle<()>>,
}

impl Watch {
    /// Observes `src` now and, when `poll` is given (a live system: fixtures have no
    /// sockets to poll), polls the accept queues every `poll` until [`Watch::finish`].
    pub fn start(src: &Source, poll: Option<Duration>, notes: &mut Notes) -> Watch {
        let before = Observation::read(src, 0.0, notes);
        let mut first = HashMap::new();
        for l in before.sockets.iter().flat_map(|t| &t.listeners) {
            first.insert(
                l.inode,
                DiagSocket {
                    state: TCP_LISTEN,
                    local_port: l.port,
                    inode: l.inode,
                    rqueue: l.queue,
                    wqueue: l.backlog,
                },
            );
        }
        let peaks = Arc::new(Mutex::new(first));
        let stop = Arc::new(AtomicBool::new(false));
        let poller = poll.map(|every| {
            let (peaks, stop) = (peaks.clone(), stop.clone());
            std::thread::spawn(move || poll_queues(&peaks, &stop, every))
        });
        Watch {
            before,
            clock: Instant::now(),
            peaks,
            stop,
            poller,
        }
    }

    /// How long the watch has run.
    pub fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    /// Stops polling and observes `src` again: (before, after), the queues' peaks
    /// folded into the second observation's listeners.
    pub fn finish(self, src: &Source, notes: &mut Notes) -> (Observation, Observation) {
        let secs = self.clock.elapsed().as_secs_f64();
        self.finish_at(src, secs, notes)
    }

    /// [`Watch::finish`] with the second observation dated `secs` after the first.
    pub fn finish_at(
        mut self,
        src: &Source,
        secs: f64,
        notes: &mut Notes,
    ) -> (Observation, Observation) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.poller.take() {
            let _ = t.join();
        }
        let mut after = Observation::read(src, secs, notes);
        if let Some(t) = after.sockets.as_mut() {
            let polled: Vec<DiagSocket> = self
                .peaks
                .lock()
                .map(|p| p.values().copied().collect())
                .unwrap_or_default();
            t.absorb(&polled);
        }
        (std::mem::take(&mut self.before), after)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn poll_queues(peaks: &Mutex<HashMap<u64, DiagSocket>>, stop: &AtomicBool, every: Duration) {
    while !stop.load(Ordering::SeqCst) {
        if let Ok(rows) = diag::dump() {
            if let Ok(mut p) = peaks.lock() {
                for r in rows.into_iter().filter(|r| r.state == TCP_LISTEN) {
                    let e = p.entry(r.inode).or_insert(r);
                    e.rqueue = e.rqueue.max(r.rqueue);
                }
            }
        }
        // Sleep in short steps so that finish() does not wait a whole period.
        let until = Instant::now() + every;
        while !stop.load(Ordering::SeqCst) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10).min(every));
        }
    }
}

// The rule for a test whose tool or kernel feature is missing (a failure under
// PERFLAB_REQUIRE), shared by every crate's tests: at the workspace root.
#[cfg(test)]
#[path = "../../../../tests/require.rs"]
mod require;

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};

    use super::*;

    /// A listener whose queue fills and drains while the watch runs: the polled peak
    /// is in the second observation even though both observations see it empty.
    #[test]
    fn a_queue_that_filled_and_drained_during_the_watch_is_seen() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let src = Source::live(None);
        let mut notes = Notes::default();
        let w = Watch::start(&src, Some(Duration::from_millis(20)), &mut notes);
        if let Err(why) = diag::dump() {
            require::missing(format!("sock_diag is not available here: {why}"));
            return;
        }
        // Three connections wait in the accept queue for a while...
        let clients: Vec<TcpStream> = (0..3)
            .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect();
        let seen = Instant::now();
        while seen.elapsed() < Duration::from_millis(400) {
            std::thread::sleep(Duration::from_millis(20));
        }
        // ...then are accepted and closed: the queue is empty again.
        let accepted: Vec<TcpStream> = (0..3).map(|_| l.accept().unwrap().0).collect();
        drop((clients, accepted));
        let (_, after) = w.finish(&src, &mut notes);
        let Some(t) = after.sockets else {
            require::missing("no socket table here (/proc/net/tcp, sock_diag)");
            return;
        };
        let me = t
            .listeners
            .iter()
            .find(|x| x.port == port)
            .expect("our listener");
        assert_eq!(me.queue, 0, "empty at the end");
        assert!(me.peak_queue >= 3, "peak {}", me.peak_queue);
    }
}
