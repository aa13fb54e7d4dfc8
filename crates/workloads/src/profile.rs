//! `kind = "profile"`: a sampling profile with the real `perf` as a trial's workload —
//! the whole system, one process, or a command, for a duration or to the command's end —
//! and the one place such a recording becomes stored data.
//!
//! `perflab profile` is a one-trial run of [`ProfileKind`], so it records the same way
//! here and, through `perflab worker`, on another host. Recording and reduction are
//! `perflab_profile`'s; this module turns the flags' values into its `ProfileSpec` and
//! `ReportOptions`, stops on Ctrl-C (the usual end of an open-ended `-a` or `-p`
//! recording), and builds the [`Measurement`]: the report as `profile.json` (the name an
//! experiment's `[profile]` uses, so `perflab report` finds it) with what the command
//! prints beside it ([`ProfileDocument`]: event note, perf.data and its size, how call
//! chains were recorded and why, the command's status),
//! folded stacks and flame graph as artifacts, and the top functions' shares as
//! `fn:NAME` metrics, as a `[profile]` trial stores them. Recorded with `off_cpu`, the
//! document has the off-CPU report, the flame graph is the wall-clock one, the
//! wall-clock folded stacks are one more artifact and `offcpu_*` metrics join the
//! `fn:` ones ([`off_cpu_metrics`]).
//!
//! The report options (threshold, mode, filters) are part of the spec: the stored
//! report is the one the user asked for. Only the per-routine view needs the perf.data
//! itself, which stays where it was recorded ([`ProfileDocument::perf_data`]).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use perflab_profile::{
    CallGraphMode, CommandOutput, Event, JitInfo, Mode, OffCpuReport, Profile, ProfileError,
    ProfileSpec, Profiler, Report, ReportOptions, Target,
};
use perflab_store::vocab::{
    ARTIFACT_FLAMEGRAPH, ARTIFACT_PROFILE, ARTIFACT_STACKS, ARTIFACT_WALL_STACKS,
};
use serde::{Deserialize, Serialize};

use crate::{ArtifactData, Measurement, MetricValue, TrialContext, Workload, WorkloadError};

/// What to profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileTarget {
    /// Every CPU.
    System,
    /// One running process and its threads.
    Pid(i32),
    /// A command started under perf.
    Command(Vec<String>),
}

impl ProfileTarget {
    /// How the command line names it: `-a`, `-p PID`, `-- CMD ARGS`.
    pub fn describe(&self) -> String {
        match self {
            ProfileTarget::System => "-a".into(),
            ProfileTarget::Pid(p) => format!("-p {p}"),
            ProfileTarget::Command(argv) => format!("-- {}", argv.join(" ")),
        }
    }

    /// `system`, `pid` or `command`: the run's `target` parameter.
    pub fn name(&self) -> &'static str {
        match self {
            ProfileTarget::System => "system",
            ProfileTarget::Pid(_) => "pid",
            ProfileTarget::Command(_) => "command",
        }
    }

    fn of(&self) -> Target {
        match self {
            ProfileTarget::System => Target::System,
            ProfileTarget::Pid(p) => Target::Pid(*p),
            ProfileTarget::Command(argv) => Target::Command(argv.clone()),
        }
    }
}

/// Where a profiled command's output goes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileOutput {
    /// Shared with perflab's stdout.
    #[default]
    Inherit,
    /// To perflab's stderr (stdout holds only JSON, or a worker's replies).
    Stderr,
    /// stdout and stderr to this file.
    File(PathBuf),
}

/// How the stored report is reduced: `perflab profile`'s view flags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProfileView {
    /// Rows under this percentage of the total are left out.
    pub threshold: f64,
    /// `k`, `u` or `ku`.
    pub mode: String,
    /// Count the idle task too.
    pub include_idle: bool,
    /// Only samples of this command name.
    pub comm: Option<String>,
    /// Only samples of this process id.
    pub pid: Option<i32>,
}

impl Default for ProfileView {
    fn default() -> ProfileView {
        ProfileView {
            threshold: 1.0,
            mode: "ku".into(),
            include_idle: false,
            comm: None,
            pid: None,
        }
    }
}

impl ProfileView {
    /// The library's report options, checked.
    pub fn options(&self) -> Result<ReportOptions, ProfileError> {
        let o = ReportOptions {
            threshold: self.threshold,
            mode: self.mode.parse::<Mode>()?,
            include_idle: self.include_idle,
            comm: self.comm.clone(),
            pid: self.pid,
        };
        o.validate()?;
        Ok(o)
    }
}

fn default_frequency() -> u32 {
    999
}
pub(crate) fn yes() -> bool {
    true
}
fn auto() -> String {
    "auto".into()
}
fn ten() -> usize {
    10
}

/// `kind = "profile"`: record `target` with perf.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileKind {
    pub target: ProfileTarget,
    /// Stop after this long (`10s`, `500ms`); a command is stopped too. None: a command
    /// to its end, else until interrupted.
    #[serde(default)]
    pub duration: Option<String>,
    /// Samples per second per CPU.
    #[serde(default = "default_frequency")]
    pub frequency: u32,
    /// How call chains are recorded: `fp` (the old `true`), `dwarf`, `auto`, `off`
    /// (the old `false`).
    #[serde(default)]
    pub call_graph: CallGraphMode,
    /// Bytes of user stack copied per sample where call chains are unwound with DWARF
    /// (`--call-graph dwarf,SIZE`; None: perflab's default, 8192).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dwarf_stack_bytes: Option<u32>,
    /// Also record blocked time per stack (`--off-cpu`).
    #[serde(default)]
    pub off_cpu: bool,
    /// Name JIT-compiled Java and Node frames (on by default; `--no-jit` turns it off).
    #[serde(default = "yes")]
    pub jit: bool,
    /// `auto` (cycles where there is a PMU, else cpu-clock), `cycles`, `cpu-clock`.
    #[serde(default = "auto")]
    pub event: String,
    /// Keep perf.data in this directory (None: a new temp directory, kept).
    #[serde(default)]
    pub output_dir: Option<PathBuf>,
    #[serde(default)]
    pub command_output: ProfileOutput,
    /// The top this-many functions become `fn:NAME` metrics.
    #[serde(default = "ten")]
    pub top: usize,
    #[serde(default)]
    pub view: ProfileView,
}

impl ProfileKind {
    /// A profile of `target` with every other option at its default.
    pub fn new(target: ProfileTarget) -> ProfileKind {
        ProfileKind {
            target,
            duration: None,
            frequency: default_frequency(),
            call_graph: CallGraphMode::Fp,
            dwarf_stack_bytes: None,
            off_cpu: false,
            jit: true,
            event: auto(),
            output_dir: None,
            command_output: ProfileOutput::Inherit,
            top: ten(),
            view: ProfileView::default(),
        }
    }

    /// The duration, parsed.
    pub fn duration(&self) -> Result<Option<Duration>, ProfileError> {
        self.duration
            .as_deref()
            .map(|d| {
                perflab_units::parse_duration(d)
                    .map_err(|e| ProfileError::BadInput(format!("duration: {e}")))
            })
            .transpose()
    }

    /// The recording request for `perflab_profile`.
    pub fn recording(&self) -> Result<ProfileSpec, ProfileError> {
        if let Some(b) = self.dwarf_stack_bytes {
            perflab_profile::framepointers::check_stack_bytes(b)?;
        }
        Ok(ProfileSpec {
            target: self.target.of(),
            frequency: self.frequency,
            call_graph: self.call_graph,
            dwarf_stack_bytes: self.dwarf_stack_bytes,
            off_cpu: self.off_cpu,
            jit: self.jit,
            duration: self.duration()?,
            event: self.event.parse::<Event>()?,
            output_dir: self.output_dir.clone(),
            command_output: match &self.command_output {
                ProfileOutput::Inherit => CommandOutput::Inherit,
                ProfileOutput::Stderr => CommandOutput::Stderr,
                ProfileOutput::File(f) => CommandOutput::File(f.clone()),
            },
        })
    }

    /// Checks the options without recording: the error says which.
    pub fn validate(&self) -> Result<(), ProfileError> {
        self.recording()?;
        self.view.options()?;
        Ok(())
    }

    /// What can be checked on this host before a trial is started: the options, the
    /// process or command named, and that perf is there. Typed, so that a command can
    /// tell a bad request from a host that cannot profile.
    pub fn preflight(&self) -> Result<(), ProfileError> {
        self.view.options()?;
        perflab_profile::record::validate(&self.recording()?)?;
        perflab_profile::perf::find_perf()?;
        Ok(())
    }

    /// Records until the duration is over, the command ends or `stop()` says so (an
    /// open-ended recording's usual end), and reduces the profile.
    pub fn record(&self, stop: impl Fn() -> bool) -> Result<Measurement, ProfileError> {
        let opts = self.view.options()?;
        let running = Profiler::start(&self.recording()?)?;
        let profile = running.wait_or_stop(stop)?;
        measurement(self, &profile, &opts)
    }
}

impl Workload for ProfileKind {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        self.record(|| ctx.interrupted.load(Ordering::SeqCst))
            .map_err(|e| WorkloadError::Setup(e.to_string()))
    }
}

/// `profile.json` of a profile run: the report, and beside its fields what the command
/// prints with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileDocument {
    #[serde(flatten)]
    pub report: Report,
    /// Why the event is not the one asked for, when it is not.
    pub event_note: Option<String>,
    /// The recording, on the host that made it.
    pub perf_data: Option<PathBuf>,
    /// The profiled command's exit status (a command run to its end).
    pub command_status: Option<i32>,
    /// `-a`, `-p PID`, `-- CMD`.
    pub target: String,
    pub frequency: u32,
    pub call_graph: bool,
    /// How call chains were recorded: `fp`, `dwarf` or `off` (what `auto` chose).
    #[serde(default)]
    pub call_graph_mode: Option<CallGraphMode>,
    /// Bytes of user stack copied per sample (dwarf).
    #[serde(default)]
    pub dwarf_stack_bytes: Option<u32>,
    /// Why `auto` chose its mode (`auto: /usr/sbin/nginx has no frame pointers (...)`).
    #[serde(default)]
    pub call_graph_note: Option<String>,
    /// The size of perf.data (DWARF stack copies make it ~8 KB a sample).
    #[serde(default)]
    pub perf_data_bytes: Option<u64>,
    /// `perf --version` there.
    pub perf_version: Option<String>,
    /// Blocked time and its shares, when recorded with `--off-cpu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_cpu: Option<OffCpuReport>,
    /// What was done to name JIT frames: the flags given to the JVM and Node perflab
    /// started, the perf maps kept beside perf.data (absent: `--no-jit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jit: Option<JitInfo>,
    /// Why JIT frames may be unnamed or stacks shallow (a JVM profiled by pid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jit_note: Option<String>,
}

impl ProfileDocument {
    /// The document in a profile run's measurement.
    pub fn in_measurement(m: &Measurement) -> Option<ProfileDocument> {
        let a = m.artifacts.iter().find(|a| a.name == ARTIFACT_PROFILE)?;
        serde_json::from_slice(&a.content).ok()
    }

    /// `dwarf (8192-byte stack copies; auto: ...) · perf.data 12.6 MB`: how the stacks
    /// were recorded, for the text report (None: not known, e.g. an older document).
    pub fn call_graph_line(&self) -> Option<String> {
        let choice = perflab_profile::CallGraphChoice {
            mode: self.call_graph_mode?,
            dwarf_stack_bytes: self.dwarf_stack_bytes,
            note: self.call_graph_note.clone(),
        };
        let size = self
            .perf_data_bytes
            .map(|b| format!(" · perf.data {:.1} MB", b as f64 / 1e6))
            .unwrap_or_default();
        Some(format!("{}{size}", choice.describe()))
    }
}

/// The trial's measurement from a recorded profile: `profile.json`, `stacks.folded`,
/// `flamegraph.svg` (reduced with `opts`), the top functions as `fn:NAME` metrics.
pub fn measurement(
    k: &ProfileKind,
    p: &Profile,
    opts: &ReportOptions,
) -> Result<Measurement, ProfileError> {
    let doc = ProfileDocument {
        report: p.report(opts),
        event_note: p.event_note.clone(),
        perf_data: p.perf_data.clone(),
        command_status: p.command_status,
        target: k.target.describe(),
        frequency: k.frequency,
        call_graph: k.call_graph.records(),
        call_graph_mode: p.call_graph_choice.as_ref().map(|c| c.mode),
        dwarf_stack_bytes: p
            .call_graph_choice
            .as_ref()
            .and_then(|c| c.dwarf_stack_bytes),
        call_graph_note: p.call_graph_choice.as_ref().and_then(|c| c.note.clone()),
        perf_data_bytes: p
            .perf_data
            .as_ref()
            .and_then(|d| std::fs::metadata(d).ok())
            .map(|m| m.len()),
        perf_version: perflab_profile::perf::find_perf()
            .ok()
            .and_then(|perf| perflab_profile::perf::version(&perf)),
        off_cpu: p.off_cpu_report(opts),
        jit: p.jit.clone(),
        jit_note: p.jit_note.clone(),
    };
    let artifact = |name: &str, media_type: &str, content: Vec<u8>| ArtifactData {
        name: name.into(),
        media_type: media_type.into(),
        content,
    };
    let json = serde_json::to_vec_pretty(&doc)
        .map_err(|e| ProfileError::BadInput(format!("the report: {e}")))?;
    let mut metrics: Vec<MetricValue> = p
        .top_functions(k.top)
        .into_iter()
        .map(|(name, pct)| MetricValue::new(&format!("fn:{name}"), "%", pct, "lower"))
        .collect();
    let mut wall = Vec::new();
    if let (Some(r), Some(folded)) = (&doc.off_cpu, p.wall_folded(opts)) {
        metrics.extend(off_cpu_metrics(r, k.top));
        wall.push(artifact(
            ARTIFACT_WALL_STACKS,
            "text/plain",
            folded.into_bytes(),
        ));
    }
    Ok(Measurement {
        metrics,
        artifacts: vec![
            artifact(ARTIFACT_PROFILE, "application/json", json),
            artifact(
                ARTIFACT_STACKS,
                "text/plain",
                p.folded_with(opts).into_bytes(),
            ),
            artifact(
                ARTIFACT_FLAMEGRAPH,
                "image/svg+xml",
                p.flamegraph_svg_with(opts)?,
            ),
        ]
        .into_iter()
        .chain(wall)
        .collect(),
        method: Some("perf".into()),
        ..Measurement::default()
    })
}

/// A profile's off-CPU metrics: `offcpu_share` (percent of the wall-clock profile),
/// `offcpu_ms`, and the top `top` blocked functions' inclusive shares as
/// `offcpu:NAME`, beside the `fn:NAME` on-CPU shares (like them, shares, not evidence
/// for the why block: `perflab_analysis::why::kind_of` leaves them out).
pub fn off_cpu_metrics(r: &OffCpuReport, top: usize) -> Vec<MetricValue> {
    let mut m = vec![
        MetricValue::new("offcpu_share", "%", r.off_cpu_pct, "lower"),
        MetricValue::new("offcpu_ms", "ms", r.off_cpu_ms, "lower"),
    ];
    m.extend(
        r.functions
            .iter()
            .take(top)
            .map(|f| MetricValue::new(&format!("offcpu:{}", f.name), "%", f.pct, "lower")),
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_reads_from_json_with_its_defaults_and_checks_them() {
        let k: ProfileKind = serde_json::from_value(serde_json::json!({
            "target": "system", "duration": "2s"
        }))
        .unwrap();
        assert_eq!(k.target, ProfileTarget::System);
        assert_eq!(
            (k.frequency, k.call_graph.records(), k.top),
            (999, true, 10)
        );
        assert_eq!(k.duration().unwrap(), Some(Duration::from_secs(2)));
        assert!(k.validate().is_ok());
        let k: ProfileKind =
            serde_json::from_value(serde_json::json!({"target": {"pid": 12}})).unwrap();
        assert_eq!(k.target.describe(), "-p 12");
        let mut bad = ProfileKind::new(ProfileTarget::System);
        bad.duration = Some("soon".into());
        assert!(bad.validate().unwrap_err().is_bad_input());
        let mut bad = ProfileKind::new(ProfileTarget::System);
        bad.view.mode = "x".into();
        assert!(bad.validate().unwrap_err().is_bad_input());
        let back: ProfileKind =
            serde_json::from_str(&serde_json::to_string(&bad).unwrap()).unwrap();
        assert_eq!(back, bad);
    }

    #[test]
    fn a_dwarf_stack_size_is_read_checked_and_kept_out_of_old_specs() {
        let k: ProfileKind = serde_json::from_value(serde_json::json!({
            "target": "system", "call_graph": "dwarf", "dwarf_stack_bytes": 16384
        }))
        .unwrap();
        assert_eq!(k.recording().unwrap().dwarf_stack_bytes, Some(16384));
        let mut bad = k.clone();
        bad.dwarf_stack_bytes = Some(70_000);
        assert!(bad.validate().unwrap_err().to_string().contains("65528"));
        // A spec without one serialises as before (a worker of the previous version
        // reads it).
        let plain = serde_json::to_value(ProfileKind::new(ProfileTarget::System)).unwrap();
        assert!(plain.get("dwarf_stack_bytes").is_none(), "{plain}");
    }

    #[test]
    fn a_fixture_profile_is_measured_with_its_document() {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../profile/tests/fixtures/perf-script.txt"
        );
        let p = Profile::from_script(&std::fs::read_to_string(fixture).unwrap());
        assert!(!p.samples.is_empty());
        let k = ProfileKind::new(ProfileTarget::Command(vec!["hot".into()]));
        let m = measurement(&k, &p, &ReportOptions::default()).unwrap();
        let names: Vec<&str> = m.artifacts.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["profile.json", "stacks.folded", "flamegraph.svg"]);
        let doc = ProfileDocument::in_measurement(&m).expect("profile.json");
        assert_eq!(doc.target, "-- hot");
        assert_eq!(doc.report, p.report(&ReportOptions::default()));
        assert_eq!(m.method.as_deref(), Some("perf"));
    }

    #[test]
    fn an_off_cpu_profile_is_measured_with_its_shares_and_wall_clock_stacks() {
        let text = "\
prog 100/100 [000] 10.000000: cpu-clock: \n\t    1186 compute+0x3d (/tmp/prog)\n\n\
prog 100/100 [000] 10.001000: sched:sched_switch: prev_comm=prog prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n\
\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])\n\t    1200 wait_for_io+0x10 (/tmp/prog)\n\n\
prog 100/100 [000] 10.010000: PERF_RECORD_SWITCH IN\n";
        let mut p = Profile::from_script(text);
        p.frequency = Some(1000);
        let mut k = ProfileKind::new(ProfileTarget::Command(vec!["prog".into()]));
        k.off_cpu = true;
        let m = measurement(&k, &p, &ReportOptions::default()).unwrap();
        let metric = |n: &str| m.metrics.iter().find(|x| x.name == n).map(|x| x.value);
        // 1 ms on-CPU, 9 ms blocked.
        assert_eq!(metric("offcpu_ms"), Some(9.0));
        assert_eq!(metric("offcpu_share"), Some(90.0));
        assert_eq!(metric("offcpu:wait_for_io"), Some(90.0));
        let wall = m
            .artifacts
            .iter()
            .find(|a| a.name == ARTIFACT_WALL_STACKS)
            .expect("wall-clock stacks");
        assert_eq!(
            String::from_utf8_lossy(&wall.content),
            "prog;compute 1000\nprog;wait_for_io;__schedule;[off-cpu] 9000\n"
        );
        let doc = ProfileDocument::in_measurement(&m).unwrap();
        assert_eq!(doc.off_cpu.unwrap().switches, 1);
        // Without off-CPU time none of it is there.
        let plain =
            Profile::from_script("prog 1/1 [000] 1.0: cpu-clock: \n\t    1186 f+0x3d (/a)\n");
        let m = measurement(&k, &plain, &ReportOptions::default()).unwrap();
        assert!(m.metrics.iter().all(|x| !x.name.starts_with("offcpu")));
        assert!(m.artifacts.iter().all(|a| a.name != ARTIFACT_WALL_STACKS));
    }
}
