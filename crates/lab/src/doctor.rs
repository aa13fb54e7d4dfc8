//! The doctor around each trial of an experiment: [`TrialDoctor`] takes one observation
//! just before the workload starts and one just after it ends, polling the accept
//! queues in between with the same watch as `perflab doctor --watch` (telemetry's), so
//! the sampled rules — listen overflows, retransmits, softnet drops, CLOSE_WAIT held,
//! swapping — cover exactly the measured part of the trial, and the static ones say
//! what the host looked like while it ran. A trial keeps the diagnosis only when it
//! found something of severity `warn` or `critical`: a clean trial stores nothing, so
//! the artifact's presence alone says "look here".
//!
//! The watching and the stored form (`doctor.json`, the `perflab doctor --json` object)
//! are `perflab_workloads::doctor`'s, which `kind = "doctor"` (`perflab doctor`) uses
//! too: a diagnosis becomes data in one place. This file only adds what is the
//! runner's: fixture roots for tests, the service's pid, and telling the first
//! unreadable input of a run once through the runner's observer.
//!
//! One observation reads a few dozen /proc and /sys files, one netlink socket dump and
//! the fd directories of every process (to name the owners of listeners and CLOSE_WAIT
//! sockets): about 5 ms on a 2-core VM with 95 processes and 700 open files, most of it
//! that fd scan, so it grows with the host's open files (`observation_cost` below:
//! `cargo test --release -p perflab-lab observation_cost -- --ignored --nocapture`). Both
//! are taken outside the workload's own timing.
//! Reading never fails: what cannot be read is absent and noted; the first such note of
//! a run is told once through the runner's observer and the trial goes on.

use std::path::PathBuf;

use perflab_store::ArtifactData;
use perflab_telemetry::doctor::watch::POLL;
use perflab_telemetry::doctor::{Context, Source};
use perflab_workloads::doctor::{artifact, distinct_warnings, worth_keeping, Watching};

use crate::observe::Observer;

/// Takes the doctor's two observations around each trial's workload.
pub struct TrialDoctor {
    /// `None`: the live /proc and /sys. In tests, fixture roots for (before, after).
    roots: Option<(PathBuf, PathBuf)>,
    ctx: Context,
    /// Whether an unreadable input was already told (once per run is enough).
    told: bool,
}

/// The first observation of a trial, waiting for the second (telemetry's doctor watch,
/// which also polls the accept queues in between, as `perflab doctor --watch` does).
pub struct Watch {
    inner: Watching,
    pid: Option<i32>,
}

impl TrialDoctor {
    /// Observes the running system.
    pub fn live() -> TrialDoctor {
        TrialDoctor {
            roots: None,
            ctx: Context::live(),
            told: false,
        }
    }

    /// Observes two fixture directories laid out like a machine's root (`proc/`,
    /// `sys/`): `before` when the trial starts, `after` when it ends.
    pub fn fixture(before: PathBuf, after: PathBuf) -> TrialDoctor {
        TrialDoctor {
            roots: Some((before, after)),
            ..TrialDoctor::live()
        }
    }

    fn source(&self, pid: Option<i32>, after: bool) -> Source {
        match &self.roots {
            None => Source::live(pid),
            Some((b, a)) => Source::fixture(if after { a } else { b }, pid),
        }
    }

    /// The observation before the workload. `pid` is the service's, if the experiment
    /// has one: its file limit and open files are checked too.
    pub fn start(&mut self, pid: Option<i32>) -> Watch {
        let src = self.source(pid, false);
        // A fixture has no live sockets to poll.
        let poll = self.roots.is_none().then_some(POLL);
        Watch {
            inner: Watching::start(&src, poll),
            pid,
        }
    }

    /// The observation after the workload, and the trial's `doctor.json` when the
    /// diagnosis over the two found a warning or something critical.
    pub fn finish(&mut self, w: Watch, obs: &dyn Observer) -> Option<ArtifactData> {
        let secs = w.inner.elapsed().as_secs_f64();
        self.finish_after(w, secs, obs)
    }

    /// [`TrialDoctor::finish`] with the second observation `secs` after the first.
    fn finish_after(&mut self, w: Watch, secs: f64, obs: &dyn Observer) -> Option<ArtifactData> {
        let src = self.source(w.pid, true);
        let ctx = Context {
            pid: w.pid,
            ..self.ctx
        };
        let (d, notes) = w.inner.diagnose(&src, secs, &ctx);
        let what = distinct_warnings(&notes);
        if !self.told && !what.is_empty() {
            self.told = true;
            obs.warn(&format!(
                "doctor: {}; the per-trial doctor findings of this run miss what needs it",
                what.join("; ")
            ));
        }
        d.filter(worth_keeping).map(|d| artifact(&d))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::path::Path;

    use std::time::Instant;

    use perflab_telemetry::doctor::{Diagnosis, Finding, Severity};
    use perflab_telemetry::Notes;
    use perflab_workloads::doctor::{measurement, to_json};

    use super::*;

    /// Records what the runner would print.
    #[derive(Default)]
    struct Said(RefCell<Vec<String>>);
    impl Observer for Said {
        fn warn(&self, message: &str) {
            self.0.borrow_mut().push(message.to_string());
        }
    }

    /// A machine root holding only these sysctls (`fs/file-max` → proc/sys/fs/file-max).
    fn root(dir: &Path, name: &str, sysctls: &[(&str, &str)]) -> PathBuf {
        let r = dir.join(name);
        for (path, value) in sysctls {
            let p = r.join("proc/sys").join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, format!("{value}\n")).unwrap();
        }
        std::fs::create_dir_all(r.join("proc")).unwrap();
        std::fs::create_dir_all(r.join("sys")).unwrap();
        r
    }

    fn parsed(a: &ArtifactData) -> serde_json::Value {
        assert_eq!(a.name, "doctor.json");
        assert_eq!(a.media_type, "application/json");
        serde_json::from_slice(&a.content).unwrap()
    }

    #[test]
    fn a_trial_with_a_critical_finding_keeps_its_diagnosis() {
        let dir = tempfile::tempdir().unwrap();
        // 99 % of fs.file-max allocated at both readings: `file-max`, critical.
        let full = [("fs/file-max", "1000"), ("fs/file-nr", "990\t0\t1000")];
        let b = root(dir.path(), "before", &full);
        let a = root(dir.path(), "after", &full);
        let mut doc = TrialDoctor::fixture(b, a);
        let said = Said::default();
        let w = doc.start(None);
        let art = doc
            .finish_after(w, 2.5, &said)
            .expect("a critical finding is stored");
        let v = parsed(&art);
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["watch_s"], 2.5, "watch_s is the trial's length");
        let f = &v["findings"][0];
        assert_eq!(f["id"], "file-max", "{v:#}");
        assert_eq!(f["severity"], "critical");
        assert_eq!(f["doc"], "docs/doctor.md#file-max");
        assert!(f["evidence"].as_str().unwrap().contains("990"), "{f}");
        assert!(v["not_available"].is_array());
    }

    #[test]
    fn a_clean_trial_stores_nothing_and_unreadable_files_are_told_once() {
        let dir = tempfile::tempdir().unwrap();
        // fs.file-max barely used, and nothing else there: no finding, and notes for
        // every file the observation could not read.
        let fine = [("fs/file-max", "1000000"), ("fs/file-nr", "10\t0\t1000000")];
        let b = root(dir.path(), "before", &fine);
        let a = root(dir.path(), "after", &fine);
        let mut doc = TrialDoctor::fixture(b, a);
        let said = Said::default();
        for _ in 0..3 {
            let w = doc.start(Some(999_999_999));
            assert!(doc.finish_after(w, 1.0, &said).is_none());
        }
        let said = said.0.into_inner();
        assert_eq!(said.len(), 1, "told once per run: {said:?}");
        eprintln!("{said:?}");
    }

    #[test]
    fn only_warnings_and_worse_are_worth_keeping() {
        let mut d = Diagnosis {
            watch_s: 1.0,
            ..Diagnosis::default()
        };
        assert!(!worth_keeping(&d));
        d.findings
            .push(Finding::new("swap", Severity::Info, "e", "w", "f"));
        assert!(!worth_keeping(&d));
        d.findings
            .insert(0, Finding::new("swap", Severity::Warn, "e", "w", "f"));
        assert!(worth_keeping(&d));
        let m = measurement(&d, None);
        let v = |n: &str| m.metrics.iter().find(|x| x.name == n).unwrap().value;
        assert_eq!(
            (
                v("findings_critical"),
                v("findings_warn"),
                v("findings_info")
            ),
            (0.0, 1.0, 1.0)
        );
        assert_eq!(parsed(&m.artifacts[0]), to_json(&d));
    }

    /// The cost of one live observation (printed; run with `--ignored --nocapture`).
    #[test]
    #[ignore = "a measurement, not a check"]
    fn observation_cost() {
        let src = Source::live(None);
        let mut notes = Notes::default();
        let _ = perflab_telemetry::doctor::Observation::read(&src, 0.0, &mut notes);
        let n = 50;
        let t = Instant::now();
        for i in 0..n {
            let _ = perflab_telemetry::doctor::Observation::read(&src, i as f64, &mut notes);
        }
        let per = t.elapsed().as_secs_f64() / n as f64;
        eprintln!("one doctor observation: {:.2} ms (mean of {n})", per * 1e3);
    }
}
