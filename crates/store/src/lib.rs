//! perflab-store: the SQLite results store.
//!
//! Every measurement perflab makes ends here, one transaction per trial, the moment
//! the trial ends, so an interrupted or crashed run loses nothing that finished.
//! The schema follows the data model of docs/architecture.md (hosts, runs, configs,
//! trials, metrics, histograms, series, artifacts) and is versioned by [`schema`]'s
//! migrations. Single-shot commands (`http`, `disk`, `profile`, `doctor`) are
//! one-config, one-trial runs recorded by the same runner and through the same API as
//! experiments ([`Store::create_run`] + [`Store::record_trial`] + [`Store::finish_run`]).

mod leftovers;
mod model;
pub mod owner;
mod read;
mod schema;
mod time;
mod transfer;
pub mod vocab;
mod write;

pub use leftovers::RunProcess;
pub use model::*;
pub use time::{now_rfc3339, rfc3339};
pub use transfer::*;
pub use vocab::{params_label, value_text};

use std::path::{Path, PathBuf};

use rusqlite::Connection;

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the store's directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the store {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("the store {path} has schema version {found}, newer than this perflab understands ({known}); upgrade perflab")]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("no run with id {0} in the store")]
    NoSuchRun(i64),
    #[error("the store holds no runs yet")]
    Empty,
    #[error("run {id} was already imported into this store (same run uuid {uuid})")]
    AlreadyImported { id: i64, uuid: String },
    /// A run that is still running cannot be taken over (resumed) by another process.
    #[error("run {run} is running (pid {pid}{}) — wait for it to end, or stop it (kill {pid}) and resume it then", .host.as_deref().map(|h| format!(" on {h}")).unwrap_or_default())]
    Busy {
        run: i64,
        pid: u32,
        host: Option<String>,
    },
    #[error("store query failed: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("stored JSON is malformed: {0}")]
    Json(#[from] serde_json::Error),
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// Default store location, relative to the working directory.
pub const DEFAULT_PATH: &str = ".perflab/results.db";

/// An open results store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating when missing) the store at `path` and migrates its schema.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let conn = Connection::open(&path).map_err(|source| StoreError::Open {
            path: path.clone(),
            source,
        })?;
        Self::from_connection(conn, path)
    }

    /// An in-memory store (tests, dry runs).
    pub fn in_memory() -> Result<Store> {
        Self::from_connection(Connection::open_in_memory()?, PathBuf::from(":memory:"))
    }

    fn from_connection(conn: Connection, path: PathBuf) -> Result<Store> {
        conn.busy_timeout(BUSY_WAIT)?;
        // WAL keeps readers (`perflab show` in another terminal) off the writer's back;
        // synchronous=NORMAL is durable across process crashes in WAL mode.
        set_wal(&conn)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        schema::migrate(&conn, &path)?;
        Ok(Store { conn, path })
    }

    /// Where this store lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open store.
    pub fn schema_version(&self) -> Result<i64> {
        schema::version(&self.conn)
    }
}

/// How long a store waits for another process's lock before it gives up.
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Switches the store to WAL. The switch needs an exclusive lock, and SQLite answers
/// SQLITE_BUSY at once (no busy handler: it could deadlock) when another opener of a
/// new store holds a shared lock; so try again, with backoff, for as long as the busy
/// timeout would have waited. Once a store is in WAL the pragma only reads.
fn set_wal(conn: &Connection) -> Result<()> {
    let deadline = std::time::Instant::now() + BUSY_WAIT;
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            other => return other.map_err(StoreError::from),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostInfo {
        HostInfo {
            hostname: "h".into(),
            cores: Some(2),
            ..Default::default()
        }
    }

    #[test]
    fn a_new_store_is_at_the_current_schema_version() {
        let s = Store::in_memory().unwrap();
        assert_eq!(s.schema_version().unwrap(), schema::CURRENT);
    }

    #[test]
    fn many_processes_creating_one_store_at_once_all_succeed() {
        use std::collections::BTreeSet;
        // Regressions: two openers both ran migration 1 and one failed ("table hosts
        // already exists"), killing a run whose store a watcher had just created; and
        // the switch to WAL answered "database is locked" at once in about one race
        // in thirty (SQLite does not wait on that lock); and two runs' first write, a
        // host new to the store, both inserted it ("UNIQUE constraint failed"). Forty
        // races make each show up nearly every time without its fix.
        let dir = tempfile::tempdir().unwrap();
        for round in 0..40 {
            let p = dir.path().join(format!("r{round}.db"));
            let start = std::sync::Arc::new(std::sync::Barrier::new(8));
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    let (p, start) = (p.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        // A run's first write: its host, new to the store.
                        Store::open(&p).and_then(|s| s.upsert_host(&host()))
                    })
                })
                .collect();
            let results: Vec<Result<i64>> =
                handles.into_iter().map(|h| h.join().unwrap()).collect();
            for r in &results {
                assert!(r.is_ok(), "round {round}: a concurrent open failed: {r:?}");
            }
            let ids: BTreeSet<i64> = results.into_iter().map(Result::unwrap).collect();
            assert_eq!(ids.len(), 1, "round {round}: one host, one id: {ids:?}");
            assert_eq!(
                Store::open(&p).unwrap().schema_version().unwrap(),
                schema::CURRENT
            );
        }
    }

    #[test]
    fn a_store_from_a_newer_perflab_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.db");
        drop(Store::open(&p).unwrap());
        let c = rusqlite::Connection::open(&p).unwrap();
        c.pragma_update(None, "user_version", 999).unwrap();
        drop(c);
        assert!(matches!(
            Store::open(&p),
            Err(StoreError::TooNew { found: 999, .. })
        ));
    }

    #[test]
    fn trials_round_trip_with_metrics_histograms_and_artifacts() {
        let s = Store::in_memory().unwrap();
        let h = s.upsert_host(&host()).unwrap();
        assert_eq!(s.upsert_host(&host()).unwrap(), h, "same host, same id");
        let run = s
            .create_run(
                &NewRun {
                    name: "r".into(),
                    kind: "experiment".into(),
                    ..Default::default()
                },
                h,
            )
            .unwrap();
        let mut params = Params::new();
        params.insert("level".into(), serde_json::json!(6));
        let c = s.ensure_config(run, 0, &params).unwrap();
        assert_eq!(s.ensure_config(run, 0, &params).unwrap(), c);
        let rec = TrialRecord {
            config_id: c,
            repetition: 1,
            ordinal: 1,
            started_at: now_rfc3339(),
            duration_s: 1.5,
            status: TrialStatus::Ok,
            error: None,
            method: Some("cgroup-v1".into()),
            metrics: vec![
                MetricValue::new("wall_s", "s", 1.25, "lower"),
                MetricValue::new("nan", "s", f64::NAN, "lower"),
            ],
            histograms: vec![HistogramData {
                name: "latency".into(),
                unit: "us".into(),
                data: vec![1, 2, 3],
            }],
            series: vec![SeriesData {
                name: "cpu".into(),
                unit: "%".into(),
                points: vec![(0.0, 1.0)],
            }],
            artifacts: vec![ArtifactData {
                name: "log".into(),
                media_type: "text/plain".into(),
                content: b"hi".to_vec(),
            }],
        };
        let t = s.record_trial(run, &rec).unwrap();
        s.finish_run(run, RunStatus::Complete).unwrap();
        let row = s.run(run).unwrap();
        assert_eq!((row.status.as_str(), row.trials_ok), ("complete", 1));
        let m = s.metrics(run).unwrap();
        assert_eq!(m.len(), 1, "non-finite values are not stored");
        assert_eq!(m[0].value, 1.25);
        assert_eq!(s.histograms(t).unwrap()[0].data, vec![1, 2, 3]);
        assert_eq!(s.trial_artifacts(t).unwrap()[0].2, b"hi".to_vec());
        assert_eq!(s.configs(run).unwrap()[0].params["level"], 6);
        assert!(matches!(s.run(99), Err(StoreError::NoSuchRun(99))));
    }
}

#[cfg(test)]
mod liveness_tests {
    use super::owner::{start_ticks, Owner};
    use super::*;

    fn new_run(s: &Store) -> RunId {
        let h = s
            .upsert_host(&HostInfo {
                hostname: "h".into(),
                ..Default::default()
            })
            .unwrap();
        s.create_run(
            &NewRun {
                name: "r".into(),
                kind: "experiment".into(),
                ..Default::default()
            },
            h,
        )
        .unwrap()
    }

    /// A process of this scope as a run's owner.
    fn owner_of(child: &std::process::Child) -> Owner {
        Owner {
            pid: child.id(),
            start_ticks: start_ticks(child.id()).unwrap(),
            ..Owner::current()
        }
    }

    fn set_owner(s: &Store, run: RunId, o: &Owner) {
        s.conn
            .execute(
                "UPDATE runs SET owner_pid = ?2, owner_start = ?3, owner_scope = ?4 WHERE id = ?1",
                rusqlite::params![run, o.pid, o.start_ticks as i64, o.scope],
            )
            .unwrap();
    }

    fn sleeper() -> std::process::Child {
        std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap()
    }

    #[test]
    fn a_run_reads_running_while_its_owner_lives_and_abandoned_once_it_is_gone() {
        let s = Store::in_memory().unwrap();
        let run = new_run(&s);
        assert_eq!(s.run(run).unwrap().status, "running", "owned by this test");
        assert_eq!(s.run(run).unwrap().owner.unwrap().pid, std::process::id());
        let mut child = sleeper();
        set_owner(&s, run, &owner_of(&child));
        assert_eq!(s.run(run).unwrap().status, "running");
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(s.run(run).unwrap().status, "abandoned", "at once");
        assert_eq!(s.runs().unwrap()[0].status, "abandoned");
        // A finished run is what it is, whoever ran it.
        s.finish_run(run, RunStatus::Interrupted).unwrap();
        assert_eq!(s.run(run).unwrap().status, "interrupted");
    }

    #[test]
    fn a_live_owner_keeps_its_run_and_a_dead_ones_claim_is_taken_over() {
        let s = Store::in_memory().unwrap();
        let run = new_run(&s);
        let mut child = sleeper();
        let other = owner_of(&child);
        set_owner(&s, run, &other);
        match s.claim_run(run) {
            Err(StoreError::Busy { run: r, pid, .. }) => {
                assert_eq!((r, pid), (run, other.pid))
            }
            e => panic!("a live owner's run was taken: {e:?}"),
        }
        let msg = s.claim_run(run).unwrap_err().to_string();
        assert!(
            msg.contains(&format!("run {run} is running (pid {}", other.pid)),
            "{msg}"
        );
        child.kill().unwrap();
        child.wait().unwrap();
        s.claim_run(run).expect("a dead owner's claim is stale");
        let row = s.run(run).unwrap();
        assert_eq!(row.status, "running");
        assert_eq!(row.owner.unwrap().pid, std::process::id());
        assert!(s.heartbeat(run).unwrap(), "the new owner beats");
        set_owner(&s, run, &other);
        assert!(!s.heartbeat(run).unwrap(), "not once another owns it");
    }

    #[test]
    fn of_two_claims_at_once_exactly_one_wins() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.db");
        let s = Store::open(&p).unwrap();
        let run = new_run(&s);
        s.finish_run(run, RunStatus::Interrupted).unwrap();
        // Two live processes as the claimants (each claim as one of them).
        let mut kids = [sleeper(), sleeper()];
        let owners: Vec<Owner> = kids.iter().map(owner_of).collect();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let handles: Vec<_> = owners
            .into_iter()
            .map(|o| {
                let (p, b) = (p.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let s = Store::open(&p).unwrap();
                    b.wait();
                    s.claim_as(run, &o)
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        for k in &mut kids {
            k.kill().unwrap();
            k.wait().unwrap();
        }
        assert_eq!(
            results.iter().filter(|r| r.is_ok()).count(),
            1,
            "{results:?}"
        );
        assert!(results
            .iter()
            .any(|r| matches!(r, Err(StoreError::Busy { .. }))));
    }

    #[test]
    fn a_gate_failure_marks_only_a_finished_run() {
        let s = Store::in_memory().unwrap();
        let run = new_run(&s);
        s.mark_gate_failed(run).unwrap();
        assert_eq!(s.run(run).unwrap().status, "running");
        s.finish_run(run, RunStatus::Complete).unwrap();
        s.mark_gate_failed(run).unwrap();
        assert_eq!(s.run(run).unwrap().status, "gate_failed");
        assert_eq!(RunStatus::parse("gate_failed"), Some(RunStatus::GateFailed));
    }
}
