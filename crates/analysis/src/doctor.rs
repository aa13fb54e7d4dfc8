//! Doctor findings per trial: what `perflab doctor` found on the host, from the
//! `doctor.json` artifacts ([`ARTIFACT_DOCTOR`], the `perflab doctor --json` object) of a
//! run's trials — the one trial of a `perflab doctor` run, or each experiment trial
//! during which the doctor saw a warning or something critical.
//!
//! The same problem usually shows in many trials (a static limit in all of them, a
//! counter in the loaded ones), so the section has one row per finding id: its worst
//! severity, the evidence and fix of the first trial at that severity, and in how many
//! trials and which configs it was seen. The documents are read loosely (unknown fields
//! ignored, a missing one empty), so a newer doctor's output still reads.

use std::collections::BTreeSet;

use serde_json::Value;

use perflab_store::vocab::ARTIFACT_DOCTOR;
use perflab_store::RunExport;

/// One finding as a trial's `doctor.json` holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredFinding {
    pub id: String,
    /// `info`, `warn` or `critical`.
    pub severity: String,
    pub evidence: String,
    pub fix: String,
    /// `docs/doctor.md#ID`.
    pub doc: String,
}

/// The doctor findings of one trial (one `doctor.json`).
#[derive(Debug, Clone, PartialEq)]
pub struct TrialFindings {
    pub trial: u32,
    /// Ordinal of the trial's config.
    pub config: u32,
    /// Most severe first, as stored.
    pub findings: Vec<StoredFinding>,
}

/// The findings of a `doctor.json` document; none when it is not one.
pub fn parse(doctor_json: &[u8]) -> Vec<StoredFinding> {
    let Ok(doc) = serde_json::from_slice::<Value>(doctor_json) else {
        return Vec::new();
    };
    let text = |f: &Value, k: &str| f[k].as_str().unwrap_or_default().to_string();
    doc["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["id"].is_string())
        .map(|f| StoredFinding {
            id: text(f, "id"),
            severity: text(f, "severity"),
            evidence: text(f, "evidence"),
            fix: text(f, "fix"),
            doc: match f["doc"].as_str() {
                Some(d) => d.to_string(),
                None => format!("docs/doctor.md#{}", text(f, "id")),
            },
        })
        .collect()
}

/// Critical above warn above info (anything else with info).
pub fn rank(severity: &str) -> u8 {
    match severity {
        "critical" => 2,
        "warn" => 1,
        _ => 0,
    }
}

/// One row of the section: a finding id over the whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct DoctorRow {
    pub id: String,
    /// The worst severity seen.
    pub severity: String,
    /// The evidence and fix of the first trial at that severity.
    pub evidence: String,
    pub fix: String,
    pub doc: String,
    /// The trial the evidence comes from.
    pub trial: u32,
    /// The trials it was seen in (ordinals).
    pub trials: BTreeSet<u32>,
    /// The configs it was seen in (ordinals).
    pub configs: BTreeSet<u32>,
}

/// The section: its rows, most severe first, and what they were found among.
#[derive(Debug, Clone, PartialEq)]
pub struct DoctorSection {
    pub rows: Vec<DoctorRow>,
    /// Trials of the run with a `doctor.json`.
    pub diagnosed: usize,
    /// Trials of the run.
    pub trials: usize,
}

impl DoctorSection {
    /// `3 of 6`: the trials a row was seen in, of the run's trials.
    pub fn seen(&self, r: &DoctorRow) -> String {
        format!("{} of {}", r.trials.len(), self.trials)
    }
}

/// The findings of every trial of an exported run that stored a `doctor.json`, in
/// execution order.
pub fn per_trial(export: &RunExport) -> Vec<TrialFindings> {
    export
        .trials
        .iter()
        .filter_map(|t| {
            let a = t.artifacts.iter().find(|a| a.name == ARTIFACT_DOCTOR)?;
            Some(TrialFindings {
                trial: t.ordinal,
                config: t.config,
                findings: parse(&a.content),
            })
        })
        .collect()
}

/// The findings of a run by finding id, most severe first; `None` when no trial has
/// a `doctor.json`. `trials` is the number of trials of the run.
pub fn by_finding(per_trial: &[TrialFindings], trials: usize) -> Option<DoctorSection> {
    if per_trial.is_empty() {
        return None;
    }
    let mut rows: Vec<DoctorRow> = Vec::new();
    for t in per_trial {
        for f in &t.findings {
            let i = match rows.iter().position(|r| r.id == f.id) {
                Some(i) => i,
                None => {
                    rows.push(DoctorRow {
                        id: f.id.clone(),
                        severity: f.severity.clone(),
                        evidence: f.evidence.clone(),
                        fix: f.fix.clone(),
                        doc: f.doc.clone(),
                        trial: t.trial,
                        trials: BTreeSet::new(),
                        configs: BTreeSet::new(),
                    });
                    rows.len() - 1
                }
            };
            let r = &mut rows[i];
            if rank(&f.severity) > rank(&r.severity) {
                r.severity = f.severity.clone();
                r.evidence = f.evidence.clone();
                r.fix = f.fix.clone();
                r.trial = t.trial;
            }
            r.trials.insert(t.trial);
            r.configs.insert(t.config);
        }
    }
    // Stable: on a tie, seen in more trials first, then in the order first seen.
    rows.sort_by(|a, b| {
        rank(&b.severity)
            .cmp(&rank(&a.severity))
            .then(b.trials.len().cmp(&a.trials.len()))
    });
    Some(DoctorSection {
        rows,
        diagnosed: per_trial.len(),
        trials,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_read_loosely() {
        let doc = br#"{"schema_version": 1, "watch_s": 1.0, "findings": [
            {"id": "swap", "severity": "warn", "evidence": "e", "why": "w", "fix": "f",
             "doc": "docs/doctor.md#swap", "future_field": 1},
            {"id": "somaxconn", "severity": "info"},
            {"severity": "critical"}], "not_available": []}"#;
        let f = parse(doc);
        assert_eq!(f.len(), 2, "a finding without an id is skipped");
        assert_eq!(f[0].fix, "f");
        assert_eq!(f[1].doc, "docs/doctor.md#somaxconn");
        assert!(f[1].evidence.is_empty());
        assert!(parse(b"not json").is_empty());
        assert!(rank("critical") > rank("warn") && rank("warn") > rank("info"));
    }
}
