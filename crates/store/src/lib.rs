//! perflab-store: the SQLite results store.
//!
//! Every measurement perflab makes ends here, one transaction per trial, the moment
//! the trial ends, so an interrupted or crashed run loses nothing that finished.
//! The schema follows the data model of DESIGN.md (hosts, runs, configs, trials,
//! metrics, histograms, series, artifacts) and is versioned by [`schema`]'s
//! migrations. Single-shot commands (`http`, `scimark`, `disk`, `profile`) record a
//! one-config, one-trial run through the same API as experiments do
//! ([`Store::create_run`] + [`Store::record_trial`] + [`Store::finish_run`]).

mod model;
mod read;
mod schema;
mod time;
mod write;

pub use model::*;
pub use time::{now_rfc3339, rfc3339};

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
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        // WAL keeps readers (`perflab show` in another terminal) off the writer's back;
        // synchronous=NORMAL is durable across process crashes in WAL mode.
        conn.pragma_update(None, "journal_mode", "WAL")?;
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
