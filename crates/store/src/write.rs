//! Writing: hosts, runs, configs and trials.

use std::time::SystemTime;

use rusqlite::{params, OptionalExtension};

use crate::owner::{self, Owner, OwnerRecord, Scope};
use crate::{
    now_rfc3339, vocab, HostInfo, NewRun, Params, Result, RunId, RunStatus, Store, StoreError,
    TrialRecord,
};

impl Store {
    /// Finds or inserts the host and returns its id; a known host keeps the newest
    /// description (kernel, governor, sysctls may have changed). One statement, so two
    /// runs that start at once on a new host cannot both insert it.
    pub fn upsert_host(&self, host: &HostInfo) -> Result<i64> {
        let id = self.conn.query_row(
            "INSERT INTO hosts (fingerprint, hostname, cpu_model, cores, memory_bytes, kernel,
                distribution, arch, governor, info_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
             ON CONFLICT (fingerprint) DO UPDATE SET info_json = excluded.info_json,
                kernel = excluded.kernel, governor = excluded.governor
             RETURNING id",
            params![
                host.fingerprint(),
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
            |r| r.get(0),
        )?;
        Ok(id)
    }

    /// Starts a run (status `running`, owned by this process, its first heartbeat
    /// now) and returns its id.
    pub fn create_run(&self, run: &NewRun, host_id: i64) -> Result<RunId> {
        let me = Owner::current();
        self.conn.execute(
            "INSERT INTO runs (uuid, name, kind, status, started_at, host_id, file_path, file_text,
                seed, environment_json, owner_pid, owner_start, owner_host, owner_scope,
                heartbeat_at)
             VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                new_uuid(),
                run.name,
                run.kind,
                run.started_at.clone().unwrap_or_else(now_rfc3339),
                host_id,
                run.file_path,
                run.file_text,
                run.seed.map(|s| s as i64),
                serde_json::to_string(&run.environment)?,
                me.pid,
                me.start_ticks as i64,
                me.host,
                me.scope,
                now_rfc3339()
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Takes run `run` over for this process (a resume): in one write transaction, so of
    /// two processes claiming at once exactly one gets it. Refused ([`StoreError::Busy`])
    /// while the run is `running` and its owner alive (crate::owner); a gone owner's
    /// claim is stale and taken over. The run is `running` again, owned by this process.
    pub fn claim_run(&self, run: RunId) -> Result<()> {
        self.claim_as(run, &Owner::current())
    }

    /// [`Store::claim_run`] for owner `me`.
    pub(crate) fn claim_as(&self, run: RunId, me: &Owner) -> Result<()> {
        // The write lock first (BEGIN IMMEDIATE), then the look: no other claim can
        // come between what is read here and what is written.
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        match self.claim_locked(run, me) {
            Ok(()) => Ok(self.conn.execute_batch("COMMIT")?),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// [`Store::claim_run`] inside its transaction.
    fn claim_locked(&self, run: RunId, me: &Owner) -> Result<()> {
        let tx = &self.conn;
        let (status, rec, host): (String, OwnerRecord, Option<String>) = tx
            .query_row(
                "SELECT status, owner_pid, owner_start, owner_scope, heartbeat_at, owner_host
                 FROM runs WHERE id = ?1",
                [run],
                |r| {
                    Ok((
                        r.get(0)?,
                        OwnerRecord {
                            pid: r.get::<_, Option<i64>>(1)?.map(|p| p as u32),
                            start_ticks: r.get::<_, Option<i64>>(2)?.map(|s| s as u64),
                            scope: r.get(3)?,
                            heartbeat_at: r.get(4)?,
                        },
                        r.get(5)?,
                    ))
                },
            )
            .optional()?
            .ok_or(StoreError::NoSuchRun(run))?;
        let mine = rec.pid == Some(me.pid)
            && rec.start_ticks == Some(me.start_ticks)
            && rec.scope.as_deref() == Some(me.scope.as_str());
        let alive = owner::judge(&rec, Scope::here(), SystemTime::now(), owner::process_alive);
        if status == vocab::RUNNING && alive && !mine {
            return Err(StoreError::Busy {
                run,
                pid: rec.pid.unwrap_or(0),
                host,
            });
        }
        tx.execute(
            "UPDATE runs SET status = 'running', ended_at = NULL, owner_pid = ?2,
                owner_start = ?3, owner_host = ?4, owner_scope = ?5, heartbeat_at = ?6
             WHERE id = ?1",
            params![
                run,
                me.pid,
                me.start_ticks as i64,
                me.host,
                me.scope,
                now_rfc3339()
            ],
        )?;
        Ok(())
    }

    /// The owner's heartbeat: stamps run `run` as alive now, if this process still owns
    /// it; false when it does not (another process took it over).
    pub fn heartbeat(&self, run: RunId) -> Result<bool> {
        let me = Owner::current();
        let n = self.conn.execute(
            "UPDATE runs SET heartbeat_at = ?2
             WHERE id = ?1 AND owner_pid = ?3 AND owner_start = ?4 AND owner_scope = ?5",
            params![run, now_rfc3339(), me.pid, me.start_ticks as i64, me.scope],
        )?;
        Ok(n > 0)
    }

    /// Marks a finished run whose gate (a threshold) failed `gate_failed`; a run that
    /// did not finish (interrupted, failed, still running) keeps its state.
    pub fn mark_gate_failed(&self, run: RunId) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET status = ?2 WHERE id = ?1 AND status IN (?3, ?4)",
            params![
                run,
                vocab::GATE_FAILED,
                vocab::COMPLETE,
                vocab::COMPLETE_WITH_FAILURES
            ],
        )?;
        Ok(())
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
