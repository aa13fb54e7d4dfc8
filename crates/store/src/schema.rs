//! Versioned schema migrations.
//!
//! Each entry of [`MIGRATIONS`] moves the schema one version up and is applied in its
//! own transaction; `PRAGMA user_version` holds the current version. Never edit a
//! migration that has shipped: add a new one.

use std::path::Path;

use rusqlite::Connection;

use crate::{Result, StoreError};

const MIGRATIONS: &[&str] = &[
    // 1: the data model of docs/architecture.md.
    r#"
    CREATE TABLE hosts (
        id INTEGER PRIMARY KEY,
        fingerprint TEXT NOT NULL UNIQUE,
        hostname TEXT NOT NULL,
        cpu_model TEXT,
        cores INTEGER,
        memory_bytes INTEGER,
        kernel TEXT,
        distribution TEXT,
        arch TEXT,
        governor TEXT,
        info_json TEXT NOT NULL
    );
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        uuid TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        ended_at TEXT,
        host_id INTEGER NOT NULL REFERENCES hosts(id),
        file_path TEXT,
        file_text TEXT,
        seed INTEGER,
        environment_json TEXT NOT NULL DEFAULT '{}',
        imported_at TEXT
    );
    CREATE TABLE configs (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        ordinal INTEGER NOT NULL,
        params_json TEXT NOT NULL,
        UNIQUE (run_id, ordinal)
    );
    CREATE TABLE trials (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        config_id INTEGER NOT NULL REFERENCES configs(id) ON DELETE CASCADE,
        repetition INTEGER NOT NULL,
        ordinal INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        duration_s REAL NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        method TEXT
    );
    CREATE INDEX trials_by_run ON trials(run_id, config_id);
    CREATE TABLE metrics (
        trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        unit TEXT NOT NULL,
        value REAL NOT NULL,
        better TEXT NOT NULL,
        PRIMARY KEY (trial_id, name)
    );
    CREATE TABLE histograms (
        trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        unit TEXT NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (trial_id, name)
    );
    CREATE TABLE series (
        trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        unit TEXT NOT NULL,
        points_json TEXT NOT NULL,
        PRIMARY KEY (trial_id, name)
    );
    CREATE TABLE artifacts (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        trial_id INTEGER REFERENCES trials(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        media_type TEXT NOT NULL,
        content BLOB NOT NULL
    );
    "#,
    // 2: who runs a run (crate::owner): its process (pid + start time, so a reused pid
    // is told apart), where that pid means it (machine/boot/pid namespace), the host
    // name for people, and the heartbeat it writes while it works. Runs stored before
    // have none: `running` ones among them read as abandoned. run_processes: what a run
    // started that must not outlive it (its services), for crate::leftovers.
    r#"
    ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
    ALTER TABLE runs ADD COLUMN owner_start INTEGER;
    ALTER TABLE runs ADD COLUMN owner_host TEXT;
    ALTER TABLE runs ADD COLUMN owner_scope TEXT;
    ALTER TABLE runs ADD COLUMN heartbeat_at TEXT;
    CREATE TABLE run_processes (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        pid INTEGER NOT NULL,
        start_ticks INTEGER NOT NULL,
        scope TEXT NOT NULL,
        what TEXT NOT NULL,
        PRIMARY KEY (run_id, pid)
    );
    "#,
];

/// The schema version this build writes.
pub const CURRENT: i64 = MIGRATIONS.len() as i64;

pub(crate) fn version(conn: &Connection) -> Result<i64> {
    Ok(conn.pragma_query_value(None, "user_version", |r| r.get(0))?)
}

pub(crate) fn migrate(conn: &Connection, path: &Path) -> Result<()> {
    let found = version(conn)?;
    if found > CURRENT {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found,
            known: CURRENT,
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        // Two processes may open a new store at once (a run and a `show` in another
        // terminal): take the write lock first, then look again at the version.
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let step = (|| -> Result<()> {
            if version(conn)? > i as i64 {
                return Ok(());
            }
            conn.execute_batch(sql)?;
            conn.pragma_update(None, "user_version", (i + 1) as i64)?;
            Ok(())
        })();
        match step {
            Ok(()) => conn.execute_batch("COMMIT")?,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(e);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_of_the_first_schema_opens_and_its_ownerless_running_run_reads_abandoned() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("old.db");
        let c = Connection::open(&p).unwrap();
        c.execute_batch(MIGRATIONS[0]).unwrap();
        c.pragma_update(None, "user_version", 1).unwrap();
        c.execute_batch(
            "INSERT INTO hosts (id, fingerprint, hostname, info_json)
                 VALUES (1, 'h', 'h', '{\"hostname\":\"h\"}');
             INSERT INTO runs (id, uuid, name, kind, status, started_at, host_id)
                 VALUES (7, 'u', 'old', 'experiment', 'running', '2020-01-01T00:00:00Z', 1);",
        )
        .unwrap();
        drop(c);
        let s = crate::Store::open(&p).unwrap();
        assert_eq!(s.schema_version().unwrap(), CURRENT);
        let row = s.run(7).unwrap();
        assert_eq!(row.status, "abandoned");
        assert!(row.owner.is_none());
    }
}
