//! What a run started that must not outlive it — its services — written down while
//! they run, so that what an abandoned run left behind can be found again and stopped.
//!
//! A service normally dies with its trial (the lab stops it, or its watchdog kills it
//! when perflab dies). This list is the second line: if the watchdog itself was killed
//! (an OOM kill, `kill -9 -1`), the next `perflab run` or `--resume` on the same host
//! finds the leftovers of abandoned runs here and stops them. Each is recorded with its
//! start time and scope (crate::owner), so a pid reused by an unrelated process is never
//! touched.

use rusqlite::params;

use crate::owner::{self, Scope};
use crate::{vocab, Result, RunId, Store};

/// A process a run started, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunProcess {
    pub run: RunId,
    pub pid: u32,
    pub start_ticks: u64,
    /// What it is (`service`).
    pub what: String,
}

impl Store {
    /// Records process `pid` (of this host, running now) as `what` started by `run`.
    pub fn add_run_process(&self, run: RunId, pid: u32, what: &str) -> Result<()> {
        let Some(start) = owner::start_ticks(pid) else {
            return Ok(()); // already gone: nothing to leave behind
        };
        self.conn.execute(
            "INSERT OR REPLACE INTO run_processes (run_id, pid, start_ticks, scope, what)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![run, pid, start as i64, Scope::here(), what],
        )?;
        Ok(())
    }

    /// Forgets process `pid` of `run` (stopped as planned, or reaped).
    pub fn remove_run_process(&self, run: RunId, pid: u32) -> Result<()> {
        self.conn.execute(
            "DELETE FROM run_processes WHERE run_id = ?1 AND pid = ?2",
            params![run, pid],
        )?;
        Ok(())
    }

    /// The recorded processes, in this scope, of runs that read `abandoned` or are no
    /// longer running — whether or not the process still runs ([`owner::process_alive`]
    /// with its start time says).
    pub fn leftovers(&self) -> Result<Vec<RunProcess>> {
        let mut st = self.conn.prepare(
            "SELECT run_id, pid, start_ticks, what FROM run_processes WHERE scope = ?1
             ORDER BY run_id, pid",
        )?;
        let all: Vec<RunProcess> = st
            .query_map([Scope::here()], |r| {
                Ok(RunProcess {
                    run: r.get(0)?,
                    pid: r.get::<_, i64>(1)? as u32,
                    start_ticks: r.get::<_, i64>(2)? as u64,
                    what: r.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        let mut out = Vec::new();
        for p in all {
            let status = self.run(p.run).map(|r| r.status);
            if status.as_deref().map_or(true, |s| s != vocab::RUNNING) {
                out.push(p);
            }
        }
        Ok(out)
    }
}
