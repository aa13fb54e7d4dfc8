//! Writing: hosts, runs, configs and trials.

use rusqlite::{params, OptionalExtension};

use crate::{
    now_rfc3339, HostInfo, NewRun, Params, Result, RunId, RunStatus, Store, StoreError, TrialRecord,
};

impl Store {
    /// Finds or inserts the host and returns its id.
    pub fn upsert_host(&self, host: &HostInfo) -> Result<i64> {
        let fp = host.fingerprint();
        if let Some(id) = self
            .conn
            .query_row("SELECT id FROM hosts WHERE fingerprint = ?1", [&fp], |r| {
                r.get(0)
            })
            .optional()?
        {
            // Keep the newest description (kernel, sysctls may have changed).
            self.conn.execute(
                "UPDATE hosts SET info_json = ?2, kernel = ?3, governor = ?4 WHERE id = ?1",
                params![id, serde_json::to_string(host)?, host.kernel, host.governor],
            )?;
            return Ok(id);
        }
        self.conn.execute(
            "INSERT INTO hosts (fingerprint, hostname, cpu_model, cores, memory_bytes, kernel,
                distribution, arch, governor, info_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                fp,
                host.hostname,
                host.cpu_model,
                host.cores,
                host.memory_bytes.map(|m| m as i64),
                host.kernel,
                host.distribution,
                host.arch,
                host.governor,
                serde_json::to_string(host)?
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Starts a run (status `running`) and returns its id.
    pub fn create_run(&self, run: &NewRun, host_id: i64) -> Result<RunId> {
        self.conn.execute(
            "INSERT INTO runs (uuid, name, kind, status, started_at, host_id, file_path, file_text,
                seed, environment_json)
             VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                new_uuid(),
                run.name,
                run.kind,
                now_rfc3339(),
                host_id,
                run.file_path,
                run.file_text,
                run.seed.map(|s| s as i64),
                serde_json::to_string(&run.environment)?
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Adds fields to a run's stored environment: what a one-trial command learns only
    /// from its trial (the disk and file system a `perflab disk` run went to).
    pub fn add_run_environment(&self, run: RunId, extra: &serde_json::Value) -> Result<()> {
        let mut env = self.run_environment(run)?;
        if let (Some(all), Some(more)) = (env.as_object_mut(), extra.as_object()) {
            all.extend(more.clone());
        }
        self.conn.execute(
            "UPDATE runs SET environment_json = ?2 WHERE id = ?1",
            params![run, serde_json::to_string(&env)?],
        )?;
        Ok(())
    }

    /// Finds or inserts the config `ordinal` of `run`.
    pub fn ensure_config(&self, run: RunId, ordinal: u32, params: &Params) -> Result<i64> {
        let json = serde_json::to_string(params)?;
        if let Some(id) = self
            .conn
            .query_row(
                "SELECT id FROM configs WHERE run_id = ?1 AND ordinal = ?2",
                params![run, ordinal],
                |r| r.get(0),
            )
            .optional()?
        {
            return Ok(id);
        }
        self.conn.execute(
            "INSERT INTO configs (run_id, ordinal, params_json) VALUES (?1, ?2, ?3)",
            params![run, ordinal, json],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Records one finished trial with all it measured, in one transaction.
    pub fn record_trial(&self, run: RunId, t: &TrialRecord) -> Result<i64> {
        let tx = self.conn.unchecked_transaction()?;
        tx.execute(
            "INSERT INTO trials (run_id, config_id, repetition, ordinal, started_at, duration_s,
                status, error, method)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                run,
                t.config_id,
                t.repetition,
                t.ordinal,
                t.started_at,
                t.duration_s,
                t.status.as_str(),
                t.error,
                t.method
            ],
        )?;
        let trial = tx.last_insert_rowid();
        {
            let mut m = tx.prepare_cached(
                "INSERT OR REPLACE INTO metrics (trial_id, name, unit, value, better)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for metric in t.metrics.iter().filter(|m| m.value.is_finite()) {
                m.execute(params![
                    trial,
                    metric.name,
                    metric.unit,
                    metric.value,
                    metric.better
                ])?;
            }
            let mut h = tx.prepare_cached(
                "INSERT OR REPLACE INTO histograms (trial_id, name, unit, data) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for hist in &t.histograms {
                h.execute(params![trial, hist.name, hist.unit, hist.data])?;
            }
            let mut s = tx.prepare_cached(
                "INSERT OR REPLACE INTO series (trial_id, name, unit, points_json) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for series in &t.series {
                s.execute(params![
                    trial,
                    series.name,
                    series.unit,
                    serde_json::to_string(&series.points)?
                ])?;
            }
            let mut a = tx.prepare_cached(
                "INSERT INTO artifacts (run_id, trial_id, name, media_type, content)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for art in &t.artifacts {
                a.execute(params![run, trial, art.name, art.media_type, art.content])?;
            }
        }
        tx.commit()?;
        Ok(trial)
    }

    /// Sets the final (or current) status of a run.
    pub fn finish_run(&self, run: RunId, status: RunStatus) -> Result<()> {
        let ended = if status == RunStatus::Running {
            None
        } else {
            Some(now_rfc3339())
        };
        let n = self.conn.execute(
            "UPDATE runs SET status = ?2, ended_at = ?3 WHERE id = ?1",
            params![run, status.as_str(), ended],
        )?;
        if n == 0 {
            return Err(StoreError::NoSuchRun(run));
        }
        Ok(())
    }

    /// Removes the trials of `run` that did not succeed for the given (config, repetition)
    /// pairs, so a resumed run keeps one row per repetition.
    pub fn delete_unsuccessful_trials(
        &self,
        run: RunId,
        config_id: i64,
        repetition: u32,
    ) -> Result<()> {
        self.conn.execute(
            "DELETE FROM trials WHERE run_id = ?1 AND config_id = ?2 AND repetition = ?3 AND status != 'ok'",
            params![run, config_id, repetition],
        )?;
        Ok(())
    }

    /// Stores a run-level artifact (not tied to a trial).
    pub fn add_run_artifact(
        &self,
        run: RunId,
        name: &str,
        media_type: &str,
        content: &[u8],
    ) -> Result<()> {
        self.conn.execute(
            "INSERT INTO artifacts (run_id, trial_id, name, media_type, content) VALUES (?1, NULL, ?2, ?3, ?4)",
            params![run, name, media_type, content],
        )?;
        Ok(())
    }
}

/// A random 128-bit id, hex; identifies a run across stores (import dedup).
fn new_uuid() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut out = String::with_capacity(32);
    for i in 0..2u64 {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(i);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        h.write_u32(std::process::id());
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out
}
