//! Reading: runs, configs, trials and metrics back out.

use std::time::SystemTime;

use rusqlite::{params, OptionalExtension, Row};

use crate::owner::{self, OwnerRecord};
use crate::{
    vocab, ConfigRow, HistogramData, HostInfo, MetricRow, Result, RunId, RunOwner, RunRow, Store,
    StoreError, TrialRow,
};

const RUN_SELECT: &str = "SELECT r.id, r.uuid, r.name, r.kind, r.status, r.started_at, r.ended_at,
        r.host_id, h.hostname, r.file_path, r.file_text, r.seed,
        (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.id AND t.status = 'ok'),
        (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.id AND t.status = 'failed'),
        (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.id AND t.status = 'interrupted'),
        r.owner_pid, r.owner_start, r.owner_host, r.owner_scope, r.heartbeat_at
     FROM runs r JOIN hosts h ON h.id = r.host_id";

/// A run as read, its state judged: `running` whose owner is gone reads `abandoned`
/// (crate::owner).
fn run_row(r: &Row<'_>) -> rusqlite::Result<RunRow> {
    let mut row = stored_row(r)?;
    if row.status == vocab::RUNNING {
        let rec = OwnerRecord {
            pid: r.get::<_, Option<i64>>(15)?.map(|p| p as u32),
            start_ticks: r.get::<_, Option<i64>>(16)?.map(|s| s as u64),
            scope: r.get(18)?,
            heartbeat_at: row.heartbeat_at.clone(),
        };
        if !owner::judge(
            &rec,
            owner::Scope::here(),
            SystemTime::now(),
            owner::process_alive,
        ) {
            row.status = vocab::ABANDONED.into();
        }
    }
    Ok(row)
}

/// A run exactly as stored.
fn stored_row(r: &Row<'_>) -> rusqlite::Result<RunRow> {
    let owner = r
        .get::<_, Option<i64>>(15)?
        .map(|pid| -> rusqlite::Result<RunOwner> {
            Ok(RunOwner {
                pid: pid as u32,
                host: r.get(17)?,
            })
        })
        .transpose()?;
    Ok(RunRow {
        id: r.get(0)?,
        uuid: r.get(1)?,
        name: r.get(2)?,
        kind: r.get(3)?,
        status: r.get(4)?,
        started_at: r.get(5)?,
        ended_at: r.get(6)?,
        host_id: r.get(7)?,
        host: r.get(8)?,
        file_path: r.get(9)?,
        file_text: r.get(10)?,
        seed: r.get::<_, Option<i64>>(11)?.map(|s| s as u64),
        trials_ok: r.get::<_, i64>(12)? as u64,
        trials_failed: r.get::<_, i64>(13)? as u64,
        trials_interrupted: r.get::<_, i64>(14)? as u64,
        owner,
        heartbeat_at: r.get(19)?,
    })
}

impl Store {
    /// All runs, ordered by id.
    pub fn runs(&self) -> Result<Vec<RunRow>> {
        let mut st = self.conn.prepare(&format!("{RUN_SELECT} ORDER BY r.id"))?;
        let rows = st
            .query_map([], run_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// One run.
    pub fn run(&self, id: RunId) -> Result<RunRow> {
        self.conn
            .query_row(&format!("{RUN_SELECT} WHERE r.id = ?1"), [id], run_row)
            .optional()?
            .ok_or(StoreError::NoSuchRun(id))
    }

    /// The run with the highest id.
    pub fn latest_run(&self) -> Result<RunRow> {
        self.conn
            .query_row(
                &format!("{RUN_SELECT} ORDER BY r.id DESC LIMIT 1"),
                [],
                run_row,
            )
            .optional()?
            .ok_or(StoreError::Empty)
    }

    /// The host a run was measured on.
    pub fn host(&self, host_id: i64) -> Result<HostInfo> {
        let json: String = self.conn.query_row(
            "SELECT info_json FROM hosts WHERE id = ?1",
            [host_id],
            |r| r.get(0),
        )?;
        Ok(serde_json::from_str(&json)?)
    }

    /// The environment captured for a run.
    pub fn run_environment(&self, run: RunId) -> Result<serde_json::Value> {
        let json: String = self.conn.query_row(
            "SELECT environment_json FROM runs WHERE id = ?1",
            [run],
            |r| r.get(0),
        )?;
        Ok(serde_json::from_str(&json)?)
    }

    /// The configs of a run, in ordinal order.
    pub fn configs(&self, run: RunId) -> Result<Vec<ConfigRow>> {
        let mut st = self.conn.prepare(
            "SELECT id, ordinal, params_json FROM configs WHERE run_id = ?1 ORDER BY ordinal",
        )?;
        let raw: Vec<(i64, u32, String)> = st
            .query_map([run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        raw.into_iter()
            .map(|(id, ordinal, json)| {
                Ok(ConfigRow {
                    id,
                    ordinal,
                    params: serde_json::from_str(&json)?,
                })
            })
            .collect()
    }

    /// The trials of a run, in execution order.
    pub fn trials(&self, run: RunId) -> Result<Vec<TrialRow>> {
        let mut st = self.conn.prepare(
            "SELECT id, config_id, repetition, ordinal, started_at, duration_s, status, error, method
             FROM trials WHERE run_id = ?1 ORDER BY ordinal, id",
        )?;
        let rows = st
            .query_map([run], |r| {
                Ok(TrialRow {
                    id: r.get(0)?,
                    config_id: r.get(1)?,
                    repetition: r.get(2)?,
                    ordinal: r.get(3)?,
                    started_at: r.get(4)?,
                    duration_s: r.get(5)?,
                    status: r.get(6)?,
                    error: r.get(7)?,
                    method: r.get(8)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Metric values of the successful trials of a run, in trial order.
    pub fn metrics(&self, run: RunId) -> Result<Vec<MetricRow>> {
        let mut st = self.conn.prepare(
            "SELECT m.trial_id, t.config_id, m.name, m.unit, m.value, m.better
             FROM metrics m JOIN trials t ON t.id = m.trial_id
             WHERE t.run_id = ?1 AND t.status = 'ok'
             ORDER BY t.ordinal, t.id, m.rowid",
        )?;
        let rows = st
            .query_map([run], |r| {
                Ok(MetricRow {
                    trial_id: r.get(0)?,
                    config_id: r.get(1)?,
                    name: r.get(2)?,
                    unit: r.get(3)?,
                    value: r.get(4)?,
                    better: r.get(5)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Histograms of one trial.
    pub fn histograms(&self, trial: i64) -> Result<Vec<HistogramData>> {
        let mut st = self
            .conn
            .prepare("SELECT name, unit, data FROM histograms WHERE trial_id = ?1 ORDER BY name")?;
        let rows = st
            .query_map([trial], |r| {
                Ok(HistogramData {
                    name: r.get(0)?,
                    unit: r.get(1)?,
                    data: r.get(2)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// The artifacts of one trial: (name, media type, content).
    pub fn trial_artifacts(&self, trial: i64) -> Result<Vec<(String, String, Vec<u8>)>> {
        let mut st = self.conn.prepare(
            "SELECT name, media_type, content FROM artifacts WHERE trial_id = ?1 ORDER BY id",
        )?;
        let rows = st
            .query_map(params![trial], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }
}
