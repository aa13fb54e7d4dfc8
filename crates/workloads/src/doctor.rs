//! `kind = "doctor"`: the doctor as a workload, and the one place a diagnosis becomes
//! stored data.
//!
//! The rules are `perflab_telemetry::doctor` (pure functions over two observations).
//! This module takes those observations — one, then a watch polling the accept queues
//! (telemetry's, the same as around every experiment trial), then the second — diagnoses
//! them and turns the [`Diagnosis`] into what the store keeps: the `doctor.json`
//! artifact (the `perflab doctor --json` object, docs/json.md) and the counts of findings
//! by severity. `perflab doctor` is a one-trial run of [`DoctorSpec`]; the per-trial
//! doctor of an experiment (`perflab_lab::doctor::TrialDoctor`) watches through
//! [`Watching`] and stores through [`artifact`], so both build their data here, once.
//!
//! Reading never fails: what cannot be read is absent and noted ([`Notes`]); a panic
//! while reading or in a rule is a note too, never the caller's failure.
//! A diagnosis sent back by another host comes back as its JSON ([`diagnosis_of`]).

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use perflab_store::ArtifactData;
use perflab_telemetry::doctor::watch::{Watch, POLL};
use perflab_telemetry::doctor::{
    diagnose, parse_watch, rule, Context, Diagnosis, Finding, NotAvailable, Severity, Source,
};
use perflab_telemetry::Notes;
use serde::{Deserialize, Serialize};

use crate::{Measurement, MetricValue, TrialContext, Workload, WorkloadError};

/// The artifact's name, in a trial of an experiment and in a `perflab doctor` run.
pub const ARTIFACT: &str = perflab_store::vocab::ARTIFACT_DOCTOR;

/// The metrics of a doctor run: findings by severity.
pub const METRICS: &[&str] = &["findings_critical", "findings_warn", "findings_info"];

/// The `perflab doctor --json` object (docs/json.md): schema version, watch in seconds
/// (to the millisecond), findings most severe first, and what could not be checked.
pub fn to_json(d: &Diagnosis) -> serde_json::Value {
    serde_json::json!({
        "schema_version": 1,
        "watch_s": (d.watch_s * 1000.0).round() / 1000.0,
        "findings": d.findings,
        "not_available": d.not_available,
    })
}

/// The diagnosis as the `doctor.json` artifact (pretty JSON, as `--json` prints it).
pub fn artifact(d: &Diagnosis) -> ArtifactData {
    artifact_of(&to_json(d))
}

fn artifact_of(v: &serde_json::Value) -> ArtifactData {
    ArtifactData {
        name: ARTIFACT.into(),
        media_type: "application/json".into(),
        content: serde_json::to_vec_pretty(v).unwrap_or_default(),
    }
}

/// Whether a trial keeps its diagnosis: something of severity `warn` or worse.
pub fn worth_keeping(d: &Diagnosis) -> bool {
    d.worst().is_some_and(|s| s >= Severity::Warn)
}

/// What a doctor run stores as its trial: the counts of findings by severity
/// (`findings_critical`, `findings_warn`, `findings_info`) and the whole diagnosis as
/// `doctor.json` — with `"host": NAME` added when `host` names the inventory host it
/// was taken on (`perflab doctor --on NAME`).
pub fn measurement(d: &Diagnosis, host: Option<&str>) -> Measurement {
    let mut doc = to_json(d);
    if let Some(h) = host {
        doc["host"] = h.into();
    }
    let count = |name: &str, s: Severity| MetricValue::new(name, "", d.count(s) as f64, "lower");
    Measurement {
        metrics: vec![
            count(METRICS[0], Severity::Critical),
            count(METRICS[1], Severity::Warn),
            count(METRICS[2], Severity::Info),
        ],
        artifacts: vec![artifact_of(&doc)],
        ..Measurement::default()
    }
}

/// The `doctor.json` of a doctor run's measurement, as stored — here or from
/// another host.
pub fn document_in(m: &Measurement) -> Option<serde_json::Value> {
    let a = m.artifacts.iter().find(|a| a.name == ARTIFACT)?;
    serde_json::from_slice(&a.content).ok()
}

/// The diagnosis in a doctor run's measurement (its `doctor.json`).
pub fn diagnosis_in(m: &Measurement) -> Option<Diagnosis> {
    diagnosis_of(&document_in(m)?).ok()
}

/// A finding as it is written in `doctor.json`.
#[derive(Deserialize)]
struct FindingJson {
    id: String,
    severity: String,
    evidence: String,
    why: String,
    fix: String,
    doc: String,
    pid: Option<i32>,
    program: Option<String>,
    port: Option<u16>,
}

#[derive(Deserialize)]
struct NotAvailableJson {
    rule: String,
    reason: String,
}

#[derive(Deserialize)]
struct DiagnosisJson {
    watch_s: f64,
    findings: Vec<FindingJson>,
    not_available: Vec<NotAvailableJson>,
}

/// Reads back what [`to_json`] wrote. A rule id this build does not know (a newer
/// host's) is an error: the report names rules by their ids.
pub fn diagnosis_of(v: &serde_json::Value) -> Result<Diagnosis, String> {
    let d: DiagnosisJson = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    let id = |s: &str| match s {
        "sampled" => Ok("sampled"),
        s => rule(s)
            .map(|r| r.id)
            .ok_or_else(|| format!("unknown doctor rule {s:?}")),
    };
    let mut findings = Vec::new();
    for f in d.findings {
        let severity = match f.severity.as_str() {
            "info" => Severity::Info,
            "warn" => Severity::Warn,
            "critical" => Severity::Critical,
            s => return Err(format!("unknown severity {s:?}")),
        };
        let mut g = Finding::new(id(&f.id)?, severity, f.evidence, f.why, f.fix);
        g.doc = f.doc;
        g.pid = f.pid;
        g.program = f.program;
        g.port = f.port;
        findings.push(g);
    }
    let mut not_available = Vec::new();
    for n in d.not_available {
        not_available.push(NotAvailable {
            rule: id(&n.rule)?,
            reason: n.reason,
        });
    }
    Ok(Diagnosis {
        watch_s: d.watch_s,
        findings,
        not_available,
    })
}

/// A doctor's first observation, waiting for the second.
pub struct Watching {
    inner: Option<Watch>,
    clock: Instant,
    notes: Notes,
}

impl Watching {
    /// Observes `src` now; with `poll` (a live system), polls the accept queues until
    /// [`Watching::diagnose`].
    pub fn start(src: &Source, poll: Option<Duration>) -> Watching {
        let mut notes = Notes::default();
        let inner = guarded(src, &mut notes, |n| Watch::start(src, poll, n));
        Watching {
            inner,
            clock: Instant::now(),
            notes,
        }
    }

    /// How long since the first observation.
    pub fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    /// The second observation, `secs` after the first (`0`: the first one twice, the
    /// static checks only), and the diagnosis over the two under `ctx` — None when
    /// reading or a rule failed — with the notes of what could not be read.
    pub fn diagnose(self, src: &Source, secs: f64, ctx: &Context) -> (Option<Diagnosis>, Notes) {
        let Watching {
            inner, mut notes, ..
        } = self;
        let pair = inner.and_then(|w| {
            guarded(src, &mut notes, |n| {
                let (before, after) = w.finish_at(src, secs, n);
                if secs > 0.0 {
                    (before, after)
                } else {
                    (before.clone(), before)
                }
            })
        });
        let d = pair.and_then(|(b, a)| {
            let d = catch_unwind(AssertUnwindSafe(|| diagnose(&b, &a, ctx)));
            if d.is_err() {
                notes.warnings.push("a rule failed (panicked)".into());
            }
            d.ok()
        });
        (d, notes)
    }
}

/// Reading `src`; a panic while reading is a note, never the caller's failure.
fn guarded<T>(src: &Source, notes: &mut Notes, read: impl FnOnce(&mut Notes) -> T) -> Option<T> {
    let r = catch_unwind(AssertUnwindSafe(|| read(notes)));
    if r.is_err() {
        notes.warnings.push(format!(
            "reading {} failed (panicked)",
            src.proc_root.display()
        ));
    }
    r.ok()
}

/// The distinct warnings of `notes`, in order.
pub fn distinct_warnings(notes: &Notes) -> Vec<&str> {
    let mut seen = BTreeSet::new();
    notes
        .warnings
        .iter()
        .filter(|w| seen.insert(w.as_str()))
        .map(String::as_str)
        .collect()
}

fn default_watch() -> String {
    "5s".into()
}

/// `kind = "doctor"`: the static checks, then the counters over `watch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DoctorSpec {
    /// How long to watch the counters (`5s`, `500ms`; `0`: static checks only).
    #[serde(default = "default_watch")]
    pub watch: String,
    /// Also check this process: its file limit and open files.
    #[serde(default)]
    pub pid: Option<i32>,
    /// The connections the host is meant to hold (the limits are checked against it).
    #[serde(default)]
    pub connections: Option<u64>,
    /// The outgoing connections it is meant to open (the port range is checked).
    #[serde(default)]
    pub outgoing: Option<u64>,
    /// The inventory name of the host it runs on, added to `doctor.json` as `host`
    /// (`perflab doctor --on NAME`).
    #[serde(default)]
    pub host: Option<String>,
}

impl Default for DoctorSpec {
    fn default() -> DoctorSpec {
        DoctorSpec {
            watch: default_watch(),
            pid: None,
            connections: None,
            outgoing: None,
            host: None,
        }
    }
}

impl DoctorSpec {
    /// The watch; the error names the field.
    pub fn watch(&self) -> Result<Duration, String> {
        parse_watch(&self.watch).map_err(|e| format!("watch: {e}"))
    }

    /// Checks the options without reading anything.
    pub fn validate(&self) -> Result<(), String> {
        self.watch()?;
        match self.pid {
            Some(p) if p <= 0 => Err(format!("pid: {p}: no such process")),
            _ => Ok(()),
        }
    }

    /// The rules' context: the live host's, with this spec's pid and loads.
    pub fn context(&self) -> Context {
        Context {
            pid: self.pid,
            connections: self.connections,
            outgoing: self.outgoing,
            ..Context::live()
        }
    }
}

impl Workload for DoctorSpec {
    /// Watches and diagnoses this host. Ctrl-C during the watch ends the trial as
    /// interrupted; what could not be read is printed as a warning on stderr (the
    /// diagnosis lists the rules that it cost under `not_available`).
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        let watch = self.watch().map_err(WorkloadError::Setup)?;
        if let Some(pid) = self.pid {
            if pid <= 0 || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                return Err(WorkloadError::Setup(format!("pid {pid}: no such process")));
            }
        }
        let src = Source::live(self.pid);
        let w = Watching::start(&src, (!watch.is_zero()).then_some(POLL));
        while w.elapsed() < watch {
            if ctx.interrupted.load(Ordering::SeqCst) {
                return Err(WorkloadError::Interrupted);
            }
            std::thread::sleep(Duration::from_millis(50).min(watch.saturating_sub(w.elapsed())));
        }
        let secs = if watch.is_zero() {
            0.0
        } else {
            w.elapsed().as_secs_f64()
        };
        let (d, notes) = w.diagnose(&src, secs, &self.context());
        for n in distinct_warnings(&notes) {
            eprintln!("warning: {n}");
        }
        d.map(|d| measurement(&d, self.host.as_deref()))
            .ok_or_else(|| WorkloadError::failed("the doctor could not observe this host"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diagnosis_reads_back_from_its_json() {
        let mut f = Finding::new("close-wait", Severity::Warn, "seen", "why", "fix");
        f.pid = Some(42);
        f.program = Some("leaky".into());
        f.port = Some(8080);
        let d = Diagnosis {
            watch_s: 2.5,
            findings: vec![
                Finding::new("file-max", Severity::Critical, "e", "w", "f"),
                f,
            ],
            not_available: vec![NotAvailable {
                rule: "sampled",
                reason: "--watch 0".into(),
            }],
        };
        let m = measurement(&d, None);
        assert_eq!(diagnosis_in(&m), Some(d.clone()));
        assert_eq!(document_in(&m), Some(to_json(&d)));
        let there = measurement(&d, Some("b"));
        assert_eq!(document_in(&there).unwrap()["host"], "b");
        assert_eq!(diagnosis_in(&there), Some(d.clone()));
        let v = |n: &str| m.metrics.iter().find(|x| x.name == n).unwrap().value;
        assert_eq!(
            (
                v("findings_critical"),
                v("findings_warn"),
                v("findings_info")
            ),
            (1.0, 1.0, 0.0)
        );
        let mut bad = to_json(&d);
        bad["findings"][0]["id"] = "no-such-rule".into();
        assert!(diagnosis_of(&bad).unwrap_err().contains("no-such-rule"));
    }

    #[test]
    fn the_spec_checks_its_watch_and_pid() {
        let s: DoctorSpec = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!(s.watch, "5s");
        assert!(s.validate().is_ok());
        let s = DoctorSpec {
            watch: "5 parsecs".into(),
            ..DoctorSpec::default()
        };
        assert!(s.validate().unwrap_err().starts_with("watch: "));
        let s = DoctorSpec {
            pid: Some(-1),
            ..DoctorSpec::default()
        };
        assert!(s.validate().unwrap_err().starts_with("pid: "));
        assert!(serde_json::from_value::<DoctorSpec>(serde_json::json!({"wach": "1s"})).is_err());
    }

    #[test]
    fn a_static_doctor_run_measures_this_host() {
        let s = DoctorSpec {
            watch: "0".into(),
            connections: Some(100_000_000),
            ..DoctorSpec::default()
        };
        let ctx = TrialContext {
            cpus: None,
            timeout: None,
            interrupted: Default::default(),
            run_dir: std::env::temp_dir(),
            attach: None,
            jit: false,
        };
        let m = s.run(&ctx).unwrap();
        let d = diagnosis_in(&m).expect("a doctor.json");
        assert_eq!(d.watch_s, 0.0);
        // 100 million connections fit in no file limit.
        assert!(d.findings.iter().any(|f| f.id == "nofile-limit"), "{d:?}");
    }
}
