//! Moving a run between stores: a lossless JSON document ([`RunExport`]) and its import.
//!
//! A run measured on one machine is compared with runs measured on another, so it
//! must travel with everything that makes it a measurement: the host, the experiment
//! file, the environment, every trial (failed ones too) with its metrics, histograms,
//! series and artifacts. Import keeps the run's uuid, which is how a second import of
//! the same run is recognised and refused, and gives it a new local id.
//!
//! *Lossless* includes every bit of every float: comparing the imported runs must give
//! exactly the numbers the original store gave. serde_json writes floats in their
//! shortest round-trip form, and the workspace enables its `float_roundtrip` feature so
//! that it also reads them back exactly (without it, some 17-digit values come back one
//! ulp off; the transfer tests catch that).
//!
//! Binary blobs (HdrHistogram V2 serializations, artifacts) are base64 strings
//! (standard alphabet, padded); serde's default, an array of numbers, is about three
//! times larger. The encoder is a dozen lines, not worth a dependency.

use std::collections::HashMap;

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::{now_rfc3339, HostInfo, MetricValue, Params, Result, RunId, Store, StoreError};

/// Version of the [`RunExport`] document.
pub const EXPORT_SCHEMA_VERSION: u32 = 1;

/// A whole run, as `perflab export --format json` writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunExport {
    pub schema_version: u32,
    pub run: ExportedRun,
    pub host: HostInfo,
    pub configs: Vec<ExportedConfig>,
    /// Every trial, in execution order (failed and interrupted ones included).
    pub trials: Vec<ExportedTrial>,
    /// Artifacts of the run not tied to a trial.
    #[serde(default)]
    pub artifacts: Vec<ExportedArtifact>,
}

/// The run's own record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedRun {
    /// Id in the store it was exported from (informational: import assigns a new one).
    pub id: RunId,
    /// Identity across stores.
    pub uuid: String,
    pub name: String,
    pub kind: String,
    pub status: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub file_path: Option<String>,
    pub file_text: Option<String>,
    pub seed: Option<u64>,
    pub environment: serde_json::Value,
    /// When the exporting store had itself imported the run (None: measured there).
    #[serde(default)]
    pub imported_at: Option<String>,
}

/// One configuration; trials refer to it by `ordinal`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedConfig {
    pub ordinal: u32,
    pub params: Params,
}

/// One trial with everything it measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedTrial {
    /// Ordinal of its config.
    pub config: u32,
    pub repetition: u32,
    pub ordinal: u32,
    pub started_at: String,
    pub duration_s: f64,
    pub status: String,
    pub error: Option<String>,
    pub method: Option<String>,
    pub metrics: Vec<MetricValue>,
    #[serde(default)]
    pub histograms: Vec<ExportedHistogram>,
    #[serde(default)]
    pub series: Vec<crate::SeriesData>,
    #[serde(default)]
    pub artifacts: Vec<ExportedArtifact>,
}

/// A histogram blob (HdrHistogram V2), base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedHistogram {
    pub name: String,
    pub unit: String,
    #[serde(with = "base64")]
    pub data: Vec<u8>,
}

/// An artifact, base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedArtifact {
    pub name: String,
    pub media_type: String,
    #[serde(with = "base64")]
    pub content: Vec<u8>,
}

impl RunExport {
    /// Pretty JSON; floats in shortest round-trip form.
    pub fn to_json(&self) -> Result<String> {
        Ok(serde_json::to_string_pretty(self)?)
    }

    /// Reads a document written by [`RunExport::to_json`], every float bit for bit.
    pub fn from_json(text: &str) -> Result<RunExport> {
        let doc: RunExport = serde_json::from_str(text)?;
        if doc.schema_version != EXPORT_SCHEMA_VERSION {
            return Err(json_error(format!(
                "export schema_version {} is not one this perflab reads ({EXPORT_SCHEMA_VERSION})",
                doc.schema_version
            )));
        }
        Ok(doc)
    }
}

fn json_error(msg: String) -> StoreError {
    StoreError::Json(<serde_json::Error as serde::de::Error>::custom(msg))
}

/// A JSON column of the store, read exactly.
fn column<T: serde::de::DeserializeOwned>(text: &str) -> Result<T> {
    Ok(serde_json::from_str(text)?)
}

type Blob = (String, String, Vec<u8>);

impl Store {
    /// Everything about run `id`, for [`Store::import_run`] elsewhere.
    pub fn export_run(&self, id: RunId) -> Result<RunExport> {
        let row = self.run(id)?;
        let (env, imported_at): (String, Option<String>) = self.conn.query_row(
            "SELECT environment_json, imported_at FROM runs WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let info: String = self.conn.query_row(
            "SELECT info_json FROM hosts WHERE id = ?1",
            [row.host_id],
            |r| r.get(0),
        )?;
        let configs = self.configs(id)?;
        let ordinal_of: HashMap<i64, u32> = configs.iter().map(|c| (c.id, c.ordinal)).collect();
        let mut trials = Vec::new();
        for t in self.trials(id)? {
            let config = *ordinal_of.get(&t.config_id).ok_or_else(|| {
                json_error(format!(
                    "trial {} of run {id} refers to config id {}, not one of the run's",
                    t.ordinal, t.config_id
                ))
            })?;
            trials.push(self.export_trial(t, config)?);
        }
        let artifacts = self
            .blobs(
                "SELECT name, media_type, content FROM artifacts
                 WHERE run_id = ?1 AND trial_id IS NULL ORDER BY id",
                id,
            )?
            .into_iter()
            .map(artifact)
            .collect();
        Ok(RunExport {
            schema_version: EXPORT_SCHEMA_VERSION,
            run: ExportedRun {
                id,
                uuid: row.uuid,
                name: row.name,
                kind: row.kind,
                status: row.status,
                started_at: row.started_at,
                ended_at: row.ended_at,
                file_path: row.file_path,
                file_text: row.file_text,
                seed: row.seed,
                environment: column(&env)?,
                imported_at,
            },
            host: column(&info)?,
            configs: configs
                .into_iter()
                .map(|c| ExportedConfig {
                    ordinal: c.ordinal,
                    params: c.params,
                })
                .collect(),
            trials,
            artifacts,
        })
    }

    /// One trial with everything it recorded.
    fn export_trial(&self, t: crate::TrialRow, config: u32) -> Result<ExportedTrial> {
        const HISTOGRAMS: &str =
            "SELECT name, unit, data FROM histograms WHERE trial_id = ?1 ORDER BY rowid";
        const ARTIFACTS: &str =
            "SELECT name, media_type, content FROM artifacts WHERE trial_id = ?1 ORDER BY id";
        Ok(ExportedTrial {
            config,
            repetition: t.repetition,
            ordinal: t.ordinal,
            started_at: t.started_at,
            duration_s: t.duration_s,
            status: t.status,
            error: t.error,
            method: t.method,
            metrics: self.trial_metrics(t.id)?,
            histograms: self
                .blobs(HISTOGRAMS, t.id)?
                .into_iter()
                .map(|(name, unit, data)| ExportedHistogram { name, unit, data })
                .collect(),
            series: self.trial_series(t.id)?,
            artifacts: self
                .blobs(ARTIFACTS, t.id)?
                .into_iter()
                .map(artifact)
                .collect(),
        })
    }

    /// The local id of the run with this uuid, if the store has it.
    pub fn run_by_uuid(&self, uuid: &str) -> Result<Option<RunId>> {
        Ok(self
            .conn
            .query_row("SELECT id FROM runs WHERE uuid = ?1", [uuid], |r| r.get(0))
            .optional()?)
    }

    /// Adds an exported run to this store in one transaction and returns its new id.
    ///
    /// The host is found by fingerprint (a known host keeps its local description) or
    /// added; the run keeps its uuid, status and times and gets `imported_at` = now.
    /// A run whose uuid is already here is refused with [`StoreError::AlreadyImported`].
    pub fn import_run(&self, doc: &RunExport) -> Result<RunId> {
        if doc.schema_version != EXPORT_SCHEMA_VERSION {
            return Err(json_error(format!(
                "export schema_version {} is not one this perflab reads ({EXPORT_SCHEMA_VERSION})",
                doc.schema_version
            )));
        }
        // The write lock first (IMMEDIATE: the busy timeout waits for it), then the
        // uuid check inside it. A deferred transaction that read first would get
        // SQLITE_BUSY at once, with no wait, once another importer had committed; and
        // two imports of one run would both pass a check made outside the transaction.
        let tx = rusqlite::Transaction::new_unchecked(
            &self.conn,
            rusqlite::TransactionBehavior::Immediate,
        )?;
        if let Some(id) = self.run_by_uuid(&doc.run.uuid)? {
            return Err(StoreError::AlreadyImported {
                id,
                uuid: doc.run.uuid.clone(),
            });
        }
        let known: Option<i64> = tx
            .query_row(
                "SELECT id FROM hosts WHERE fingerprint = ?1",
                [doc.host.fingerprint()],
                |r| r.get(0),
            )
            .optional()?;
        let host_id = match known {
            Some(id) => id,
            None => self.upsert_host(&doc.host)?,
        };
        let r = &doc.run;
        tx.execute(
            "INSERT INTO runs (uuid, name, kind, status, started_at, ended_at, host_id, file_path,
                file_text, seed, environment_json, imported_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                r.uuid,
                r.name,
                r.kind,
                r.status,
                r.started_at,
                r.ended_at,
                host_id,
                r.file_path,
                r.file_text,
                r.seed.map(|s| s as i64),
                serde_json::to_string(&r.environment)?,
                now_rfc3339()
            ],
        )?;
        let run = tx.last_insert_rowid();
        let mut config_ids = HashMap::new();
        for c in &doc.configs {
            tx.execute(
                "INSERT INTO configs (run_id, ordinal, params_json) VALUES (?1, ?2, ?3)",
                params![run, c.ordinal, serde_json::to_string(&c.params)?],
            )?;
            config_ids.insert(c.ordinal, tx.last_insert_rowid());
        }
        for t in &doc.trials {
            let config = *config_ids.get(&t.config).ok_or_else(|| {
                json_error(format!(
                    "trial {} refers to config {}, which the document does not have",
                    t.ordinal, t.config
                ))
            })?;
            self.import_trial(run, config, t)?;
        }
        for a in &doc.artifacts {
            tx.execute(
                "INSERT INTO artifacts (run_id, trial_id, name, media_type, content)
                 VALUES (?1, NULL, ?2, ?3, ?4)",
                params![run, a.name, a.media_type, a.content],
            )?;
        }
        tx.commit()?;
        Ok(run)
    }

    /// Inserts one exported trial (inside the caller's transaction).
    fn import_trial(&self, run: RunId, config: i64, t: &ExportedTrial) -> Result<()> {
        self.conn.execute(
            "INSERT INTO trials (run_id, config_id, repetition, ordinal, started_at, duration_s,
                status, error, method)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                run,
                config,
                t.repetition,
                t.ordinal,
                t.started_at,
                t.duration_s,
                t.status,
                t.error,
                t.method
            ],
        )?;
        let trial = self.conn.last_insert_rowid();
        let mut m = self.conn.prepare_cached(
            "INSERT INTO metrics (trial_id, name, unit, value, better) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for x in &t.metrics {
            m.execute(params![trial, x.name, x.unit, x.value, x.better])?;
        }
        let mut h = self.conn.prepare_cached(
            "INSERT INTO histograms (trial_id, name, unit, data) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for x in &t.histograms {
            h.execute(params![trial, x.name, x.unit, x.data])?;
        }
        let mut s = self.conn.prepare_cached(
            "INSERT INTO series (trial_id, name, unit, points_json) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for x in &t.series {
            s.execute(params![
                trial,
                x.name,
                x.unit,
                serde_json::to_string(&x.points)?
            ])?;
        }
        let mut a = self.conn.prepare_cached(
            "INSERT INTO artifacts (run_id, trial_id, name, media_type, content)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for x in &t.artifacts {
            a.execute(params![run, trial, x.name, x.media_type, x.content])?;
        }
        Ok(())
    }

    /// Every metric of one trial, in the order it was recorded.
    fn trial_metrics(&self, trial: i64) -> Result<Vec<MetricValue>> {
        let mut st = self.conn.prepare_cached(
            "SELECT name, unit, value, better FROM metrics WHERE trial_id = ?1 ORDER BY rowid",
        )?;
        let rows = st
            .query_map([trial], |r| {
                Ok(MetricValue {
                    name: r.get(0)?,
                    unit: r.get(1)?,
                    value: r.get(2)?,
                    better: r.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    fn trial_series(&self, trial: i64) -> Result<Vec<crate::SeriesData>> {
        let mut st = self.conn.prepare_cached(
            "SELECT name, unit, points_json FROM series WHERE trial_id = ?1 ORDER BY rowid",
        )?;
        let raw: Vec<(String, String, String)> = st
            .query_map([trial], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        raw.into_iter()
            .map(|(name, unit, json)| {
                Ok(crate::SeriesData {
                    name,
                    unit,
                    points: column(&json)?,
                })
            })
            .collect()
    }

    /// (text, text, blob) rows of a query with one id parameter.
    fn blobs(&self, sql: &str, id: i64) -> Result<Vec<Blob>> {
        let mut st = self.conn.prepare_cached(sql)?;
        let rows = st
            .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }
}

fn artifact((name, media_type, content): Blob) -> ExportedArtifact {
    ExportedArtifact {
        name,
        media_type,
        content,
    }
}

/// Base64 (RFC 4648, standard alphabet, padded) as a serde field codec.
pub mod base64 {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    /// Encodes bytes.
    pub fn encode(bytes: &[u8]) -> String {
        let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    /// Decodes padded base64; ASCII whitespace is ignored.
    pub fn decode(text: &str) -> Result<Vec<u8>, String> {
        let chars: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        let (quads, rest) = (chars.len() / 4, chars.len() % 4);
        if rest != 0 {
            return Err(format!(
                "base64 length {} is not a multiple of 4",
                chars.len()
            ));
        }
        let mut out = Vec::with_capacity(quads * 3);
        for (q, quad) in chars.chunks(4).enumerate() {
            let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
            if pad > 2 || (pad > 0 && q + 1 != quads) {
                return Err("misplaced '=' padding in base64".into());
            }
            let mut n = 0u32;
            for &c in &quad[..4 - pad] {
                let v = ALPHABET
                    .iter()
                    .position(|&a| a == c)
                    .ok_or_else(|| format!("{:?} is not a base64 character", c as char))?;
                n = n << 6 | v as u32;
            }
            n <<= 6 * pad as u32;
            let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            out.extend_from_slice(&bytes[..3 - pad]);
        }
        Ok(out)
    }

    pub fn serialize<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(bytes))
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        decode(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests;
