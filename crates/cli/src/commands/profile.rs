//! `perflab profile`: record with the real `perf` (system-wide, one process, or a
//! command), reduce the samples with `perflab-profile` into the ipreduce-style report,
//! optionally one routine's per-instruction view with its callers and callees, folded
//! stacks and a flame graph; store the profile as a one-trial run of kind `profile`.
//! `perflab profile report PERF_DATA|RUN` reduces an existing recording again.
//!
//! This file only turns flags into a `ProfileSpec` and `ReportOptions` and prints;
//! the recording is a one-trial run of kind `profile` (`perflab_lab::single`, with
//! `--on HOST` through `perflab worker` there), whose workload
//! (`perflab_workloads::profile`) records and measures; reduction lives in
//! `perflab-profile`, which experiments use too.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use perflab_lab::single::OneTrial;
use perflab_profile::{
    framepointers, CallGraphMode, JitInfo, Mode, OffCpuReport, Profile, ProfileError, Report,
    ReportOptions,
};
use perflab_store::TrialStatus;
use perflab_store::{
    vocab::{ARTIFACT_FLAMEGRAPH, ARTIFACT_PROFILE, ARTIFACT_STACKS, ARTIFACT_WALL_STACKS},
    Store,
};
use perflab_workloads::profile::{
    ProfileDocument, ProfileKind, ProfileOutput, ProfileTarget, ProfileView,
};
use perflab_workloads::spec::{Builtin, KindSpec};
use perflab_workloads::Measurement;
use serde_json::{json, Value};

use super::on_host::OnHost;
use crate::exit::{self, InvalidInput};
use crate::Global;

const PROFILE_HELP: &str = "\
Examples:
  perflab profile -- ./server --port 8080          # a command, to its end
  perflab profile -a -d 10s --threshold 0.5        # the whole system for 10 s
  perflab profile -p 1234 -d 5s --mode k --flamegraph fg.svg --folded stacks.txt
  perflab profile -F 999 --json -- ./hot > report.json
  perflab profile -p 1234 -d 5s --call-graph auto   # dwarf where there are no frame pointers
  perflab profile report /tmp/perflab-profile-XXXX --routine hot_function
  perflab profile report 12 --comm nginx           # a stored run (its perf.data)
  perflab profile --off-cpu --folded wall.folded -- ./server   # + blocked time per stack

The event is `cycles` where the CPU has a PMU, else `cpu-clock` (virtual machines);
the report says which. perf.data is kept (--output DIR, else a temp dir, printed).
Needs `perf` (apt-get install linux-perf) and permission to use it (root, or
sysctl kernel.perf_event_paranoid=1; -a needs 0 or lower, or CAP_PERFMON).

--off-cpu adds blocked time (switch-out to switch-in, sched:sched_switch with
stacks): the report's off-CPU share of the wall-clock profile and its blocked
functions and stacks, a wall-clock flame graph (off-CPU frames in blue) and, with
--folded, on- and off-CPU stacks in microseconds (off-CPU ones end in [off-cpu]).
It needs tracefs (perflab mounts it when root).

Exit codes: 0 ok, 1 could not run (perf missing or not permitted), 2 bad input,
            130 interrupted (what was recorded is still reported and stored).";

/// Where the time goes: sample with `perf`, then report per image and function.
#[derive(Debug, clap::Args)]
#[command(after_help = PROFILE_HELP, args_conflicts_with_subcommands = true)]
pub struct ProfileArgs {
    #[command(subcommand)]
    action: Option<Action>,

    #[command(flatten)]
    record: RecordArgs,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Reduce an existing recording: a perf.data (or its directory) or a stored run id.
    Report(ReportArgs),
}

#[derive(Debug, clap::Args)]
struct RecordArgs {
    /// Profile the whole system (every CPU).
    #[arg(short = 'a', long = "all-cpus", conflicts_with = "attach")]
    all_cpus: bool,

    /// Profile a running process and its threads (`--pid` filters the report instead).
    #[arg(short = 'p', long = "attach", value_name = "PID")]
    attach: Option<i32>,

    /// Stop after this long (10s, 500ms, 1m); a command is stopped too.
    #[arg(short = 'd', long, value_name = "DURATION")]
    duration: Option<String>,

    /// Samples per second per CPU.
    #[arg(short = 'F', long, value_name = "HZ", default_value_t = 999,
          value_parser = clap::value_parser!(u32).range(1..))]
    frequency: u32,

    /// How call graphs are recorded: fp (frame pointers; the default, and what a bare
    /// `-g`/`--call-graph` means), dwarf (unwinds a copy of the user stack taken with
    /// each sample: for binaries built without frame pointers; `dwarf,SIZE` sets the
    /// copy, 1024 to 65528 bytes, default 8192), auto (dwarf where the profiled binary
    /// or a library lacks frame pointers, else fp; `auto,SIZE` too; the report says
    /// which and why), off.
    #[arg(short = 'g', long, value_name = "MODE[,SIZE]", conflicts_with = "no_call_graph",
          num_args = 0..=1, default_missing_value = "fp", require_equals = false)]
    call_graph: Option<String>,

    /// Also record time spent off the CPU (blocked: locks, disk, network, sleep), per
    /// stack, and draw it beside the on-CPU time in one wall-clock flame graph;
    /// --folded then writes both in microseconds, off-CPU stacks ending in [off-cpu].
    #[arg(long)]
    off_cpu: bool,

    /// Do not name JIT-compiled Java and Node frames (no -XX:+PreserveFramePointer,
    /// perf map or --perf-basic-prof given to the JVM or Node perflab starts, no
    /// `jcmd PID Compiler.perfmap` for a JVM profiled with -p).
    #[arg(long)]
    no_jit: bool,

    /// Do not record call graphs (no callers, callees or flame graph depth).
    #[arg(long)]
    no_call_graph: bool,

    /// Sampling event: auto (cycles, else cpu-clock), cycles, cpu-clock.
    #[arg(long, value_name = "EVENT", default_value = "auto")]
    event: String,

    /// Keep perf.data in this directory [default: a new temp directory].
    #[arg(long, value_name = "DIR")]
    output: Option<PathBuf>,

    /// The profiled command's stdout and stderr go to FILE [default: with --json,
    /// its stdout goes to stderr].
    #[arg(long, value_name = "FILE")]
    command_output: Option<PathBuf>,

    #[command(flatten)]
    view: ViewArgs,

    /// The command to profile, after `--`.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,

    #[command(flatten)]
    remote: OnHost,
}

#[derive(Debug, clap::Args)]
struct ReportArgs {
    /// A perf.data file, a directory holding one, or a stored run id.
    #[arg(value_name = "PERF_DATA|RUN")]
    source: String,

    #[command(flatten)]
    view: ViewArgs,
}

#[derive(Debug, clap::Args)]
struct ViewArgs {
    /// Leave out images and functions under this percentage of the total.
    #[arg(long, value_name = "PCT", default_value_t = 1.0)]
    threshold: f64,

    /// k (kernel), u (user) or ku (both).
    #[arg(long, default_value = "ku")]
    mode: String,

    /// Count the idle task (pid 0) too.
    #[arg(long)]
    include_idle: bool,

    /// Only samples of this command name.
    #[arg(long, value_name = "COMM")]
    comm: Option<String>,

    /// Only samples of this process id.
    #[arg(long, value_name = "PID")]
    pid: Option<i32>,

    /// Also show this routine: per-instruction shares (hottest marked), callers, callees.
    #[arg(long, value_name = "NAME")]
    routine: Option<String>,

    /// Write folded stacks (FlameGraph, inferno, speedscope) to FILE.
    #[arg(long, value_name = "FILE")]
    folded: Option<PathBuf>,

    /// Write a flame graph SVG to FILE.
    #[arg(long, value_name = "FILE")]
    flamegraph: Option<PathBuf>,

    /// JSON on stdout (and nothing else there).
    #[arg(long)]
    json: bool,
}

/// A library error as the CLI's error: bad requests exit 2, the rest 1.
fn lift(e: ProfileError) -> anyhow::Error {
    if e.is_bad_input() {
        InvalidInput(e.to_string()).into()
    } else {
        e.into()
    }
}

impl ViewArgs {
    /// The view flags as the profile kind's options.
    fn view(&self) -> ProfileView {
        ProfileView {
            threshold: self.threshold,
            mode: self.mode.clone(),
            include_idle: self.include_idle,
            comm: self.comm.clone(),
            pid: self.pid,
        }
    }

    fn options(&self) -> anyhow::Result<ReportOptions> {
        let o = ReportOptions {
            threshold: self.threshold,
            mode: self.mode.parse::<Mode>().map_err(lift)?,
            include_idle: self.include_idle,
            comm: self.comm.clone(),
            pid: self.pid,
        };
        o.validate().map_err(lift)?;
        Ok(o)
    }
}

pub fn run(g: &Global, a: &ProfileArgs) -> anyhow::Result<ExitCode> {
    match &a.action {
        Some(Action::Report(r)) => report(g, r),
        None => record(g, &a.record),
    }
}

fn say(g: &Global, s: &str) {
    if !g.quiet {
        eprintln!("{s}");
    }
}

fn target_of(a: &RecordArgs) -> anyhow::Result<ProfileTarget> {
    let chosen = [a.all_cpus, a.attach.is_some(), !a.command.is_empty()]
        .iter()
        .filter(|x| **x)
        .count();
    if chosen != 1 {
        return Err(InvalidInput(
            "say what to profile: -a (whole system), -p PID, or -- CMD ARGS (exactly one)".into(),
        )
        .into());
    }
    Ok(if a.all_cpus {
        ProfileTarget::System
    } else if let Some(p) = a.attach {
        ProfileTarget::Pid(p)
    } else {
        ProfileTarget::Command(a.command.clone())
    })
}

impl RecordArgs {
    /// `--call-graph MODE[,SIZE]` / `-g` / `--no-call-graph`, checked (bad input
    /// exits 2): the mode and the DWARF stack copy size asked for.
    fn call_graph_mode(&self) -> anyhow::Result<(CallGraphMode, Option<u32>)> {
        if self.no_call_graph {
            return Ok((CallGraphMode::Off, None));
        }
        match &self.call_graph {
            None => Ok((CallGraphMode::default(), None)),
            Some(m) => framepointers::parse_call_graph(m).map_err(lift),
        }
    }

    /// The flags as `kind = "profile"` options, checked (bad input exits 2, a host
    /// without a usable perf 1).
    fn spec(&self) -> anyhow::Result<ProfileKind> {
        let (call_graph, dwarf_stack_bytes) = self.call_graph_mode()?;
        let spec = ProfileKind {
            duration: self.duration.clone(),
            frequency: self.frequency,
            call_graph,
            dwarf_stack_bytes,
            off_cpu: self.off_cpu,
            jit: !self.no_jit,
            event: self.event.clone(),
            output_dir: self.output.clone(),
            command_output: match (&self.command_output, self.view.json) {
                (Some(f), _) => ProfileOutput::File(f.clone()),
                (None, true) => ProfileOutput::Stderr,
                (None, false) => ProfileOutput::Inherit,
            },
            view: self.view.view(),
            ..ProfileKind::new(target_of(self)?)
        };
        spec.validate().map_err(lift)?;
        Ok(spec)
    }
}

/// The spec of a recording, checked where it is to run: here, what can be checked
/// before anything is stored (perf is there, the process or command too: a bad request
/// exits 2, a host that cannot profile 1); on a host, what the worker's link needs.
fn placed_spec(a: &RecordArgs) -> anyhow::Result<ProfileKind> {
    let mut spec = a.spec()?;
    a.remote.check(None)?;
    match &a.remote.on {
        None => spec.preflight().map_err(lift)?,
        Some(h) => {
            if a.view.routine.is_some() {
                return Err(InvalidInput(format!(
                    "--routine reads the recording, which stays on {h}: run `perflab profile \
                     report PERF_DATA --routine NAME` there"
                ))
                .into());
            }
            // A worker's stdout carries its answers: the command's output goes to stderr.
            if spec.command_output == ProfileOutput::Inherit {
                spec.command_output = ProfileOutput::Stderr;
            }
        }
    }
    Ok(spec)
}

fn record(g: &Global, a: &RecordArgs) -> anyhow::Result<ExitCode> {
    let spec = placed_spec(a)?;
    let opts = a.view.options()?;
    let duration = spec.duration().map_err(lift)?;
    let one = OneTrial {
        kind: "profile".into(),
        name: format!("profile {}", spec.target.describe()),
        params: params(&spec),
        workload: KindSpec::Profile(spec.clone()),
        environment: json!({}),
        on: a.remote.on.clone(),
    };
    let exp = one.experiment()?;
    let fleet = a.remote.fleet(&exp)?;
    let flag = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    say(g, &recording(&spec, duration, a.remote.on.as_deref()));
    let store = open_store(g)?;
    let shot = crate::commands::on_host::run_one(
        &one,
        &exp,
        &store,
        flag.clone(),
        fleet.as_ref(),
        &Builtin,
    );
    let shot = shot.context("cannot run the profile")?;
    let interrupted = flag.load(Ordering::SeqCst);
    let run_id = shot.outcome.run_id;
    let (m, doc) = match shot.measurement.as_ref().and_then(|m| {
        let doc = ProfileDocument::in_measurement(m)?;
        Some((m, doc))
    }) {
        Some(found) if shot.status != TrialStatus::Failed => found,
        _ if shot.status == TrialStatus::Interrupted => {
            eprintln!("interrupted: nothing was recorded (run {run_id} is marked interrupted)");
            return Ok(ExitCode::from(exit::INTERRUPTED));
        }
        _ => {
            let e = shot.error.clone().unwrap_or_else(|| "no profile".into());
            return Err(anyhow::anyhow!(e).context("cannot profile"));
        }
    };
    say_recorded(g, &doc);
    store
        .add_run_environment(run_id, &environment(&doc))
        .context("cannot record the run into the store")?;
    say(g, &format!("profile: stored as run {run_id}"));
    // Only the per-routine view reads the recording again (here: see above).
    let profile = match (&a.view.routine, &doc.perf_data) {
        (Some(_), Some(data)) => Some(Profile::from_perf_data(data).map_err(lift)?),
        _ => None,
    };
    show(
        g,
        &Shown::of(&doc, m),
        profile.as_ref(),
        &opts,
        &a.view,
        Some(run_id),
    )?;
    // Ctrl-C is the normal end of an open-ended -a or -p recording.
    let open_ended = duration.is_none() && !matches!(spec.target, ProfileTarget::Command(_));
    Ok(if interrupted && !open_ended {
        ExitCode::from(exit::INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    })
}

/// The store, its directory made if need be.
fn open_store(g: &Global) -> anyhow::Result<Store> {
    if let Some(dir) = g.store.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    Store::open(&g.store).with_context(|| format!("cannot open the store {}", g.store.display()))
}

/// `profile: recording -a at 999 Hz for 2.000 s [on b]`.
fn recording(spec: &ProfileKind, duration: Option<Duration>, on: Option<&str>) -> String {
    let until = match (&spec.target, duration) {
        (ProfileTarget::Command(_), None) => "until the command exits".to_string(),
        (_, Some(d)) => format!("for {:.3} s", d.as_secs_f64()),
        (_, None) => "until Ctrl-C".to_string(),
    };
    let on = on.map(|h| format!(" on {h}")).unwrap_or_default();
    format!(
        "profile: recording {}{on} at {} Hz {until}",
        spec.target.describe(),
        spec.frequency,
    )
}

/// What the recording says beside its report: where perf.data is, the event's note,
/// the command's failure.
fn say_recorded(g: &Global, doc: &ProfileDocument) {
    if let Some(data) = &doc.perf_data {
        say(g, &format!("profile: perf.data in {}", data.display()));
    }
    if let Some(note) = &doc.event_note {
        say(g, &format!("profile: {note}"));
    }
    if let Some(note) = &doc.jit_note {
        say(g, &format!("profile: {note}"));
    }
    if let Some(code) = doc.command_status.filter(|c| *c != 0) {
        eprintln!("warning: the profiled command exited with status {code}");
    }
}

/// The run's parameters: what is profiled and the event asked for.
fn params(spec: &ProfileKind) -> perflab_store::Params {
    let mut params = perflab_store::Params::new();
    params.insert("target".into(), json!(spec.target.name()));
    params.insert("event".into(), json!(spec.event));
    params
}

/// The run's environment fields of a profile (`perflab profile report RUN` reads
/// `perf_data`).
fn environment(doc: &ProfileDocument) -> Value {
    json!({
        "perf_data": doc.perf_data,
        "event": doc.report.event,
        "event_note": doc.event_note,
        "frequency": doc.frequency,
        "call_graph": doc.call_graph,
        "call_graph_mode": doc.call_graph_mode,
        "call_graph_note": doc.call_graph_note,
        "target": doc.target,
        "command_status": doc.command_status,
        "perf_version": doc.perf_version,
        "jit": doc.jit,
    })
}

/// What is shown of a profile: the report and its note, where the recording is, the
/// folded stacks and the flame graph.
struct Shown<'a> {
    report: &'a Report,
    event_note: Option<&'a str>,
    /// How the stacks were recorded (a recording made by `perflab profile`).
    recorded: Option<&'a ProfileDocument>,
    perf_data: Option<&'a Path>,
    folded: &'a str,
    svg: &'a [u8],
    /// With off-CPU time: its report, and the wall-clock folded stacks `--folded` writes.
    off_cpu: Option<(&'a OffCpuReport, &'a str)>,
    /// The flags given for JIT frames and the maps kept (None: off, or read back).
    jit: Option<&'a JitInfo>,
    jit_note: Option<&'a str>,
}

impl<'a> Shown<'a> {
    /// What a profile run's measurement holds.
    fn of(doc: &'a ProfileDocument, m: &'a Measurement) -> Shown<'a> {
        let artifact = |name: &str| {
            m.artifacts
                .iter()
                .find(|a| a.name == name)
                .map_or(&[][..], |a| &a.content[..])
        };
        Shown {
            report: &doc.report,
            event_note: doc.event_note.as_deref(),
            recorded: Some(doc),
            perf_data: doc.perf_data.as_deref(),
            folded: std::str::from_utf8(artifact(ARTIFACT_STACKS)).unwrap_or_default(),
            svg: artifact(ARTIFACT_FLAMEGRAPH),
            off_cpu: doc.off_cpu.as_ref().map(|r| {
                let wall = std::str::from_utf8(artifact(ARTIFACT_WALL_STACKS));
                (r, wall.unwrap_or_default())
            }),
            jit: doc.jit.as_ref(),
            jit_note: doc.jit_note.as_deref(),
        }
    }
}

/// Writes the requested files and prints the report (and routine view, which needs
/// the `profile` itself).
fn show(
    g: &Global,
    r: &Shown,
    profile: Option<&Profile>,
    opts: &ReportOptions,
    v: &ViewArgs,
    run_id: Option<i64>,
) -> anyhow::Result<()> {
    if let Some(f) = &v.folded {
        let folded = r.off_cpu.map_or(r.folded, |(_, wall)| wall);
        std::fs::write(f, folded).with_context(|| format!("cannot write {}", f.display()))?;
        say(g, &format!("profile: folded stacks in {}", f.display()));
    }
    if let Some(f) = &v.flamegraph {
        std::fs::write(f, r.svg).with_context(|| format!("cannot write {}", f.display()))?;
        say(g, &format!("profile: flame graph in {}", f.display()));
    }
    let routine = match (&v.routine, profile) {
        (Some(_), None) => {
            return Err(InvalidInput(
                "--routine needs the recording (perf.data), which is not here".into(),
            )
            .into())
        }
        (Some(name), Some(profile)) => {
            let cg = profile.call_graph(name, opts);
            if cg.total_samples == 0 {
                return Err(lift(ProfileError::NoSuchRoutine(name.clone())));
            }
            // A routine seen only as a caller has no instructions of its own to show.
            let rv = if cg.self_samples > 0 {
                Some(profile.routine(name, opts).map_err(lift)?)
            } else {
                None
            };
            Some((rv, cg))
        }
        (None, _) => None,
    };
    if v.json {
        let mut doc = serde_json::to_value(r.report)?;
        let m = doc.as_object_mut().expect("a report is an object");
        m.insert("event_note".into(), json!(r.event_note));
        m.insert("run_id".into(), json!(run_id));
        m.insert("perf_data".into(), json!(r.perf_data));
        if let Some((off, _)) = r.off_cpu {
            m.insert("off_cpu".into(), serde_json::to_value(off)?);
        }
        if let Some(jit) = r.jit {
            m.insert("jit".into(), json!(jit));
        }
        if let Some(note) = r.jit_note {
            m.insert("jit_note".into(), json!(note));
        }
        if let Some(d) = r.recorded {
            m.insert("call_graph_mode".into(), json!(d.call_graph_mode));
            m.insert("dwarf_stack_bytes".into(), json!(d.dwarf_stack_bytes));
            m.insert("call_graph_note".into(), json!(d.call_graph_note));
            m.insert("perf_data_bytes".into(), json!(d.perf_data_bytes));
        }
        if let Some((rv, cg)) = &routine {
            m.insert("routine".into(), serde_json::to_value(rv)?);
            m.insert("call_graph".into(), serde_json::to_value(cg)?);
        }
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
        return Ok(());
    }
    if let Some(line) = r.jit.and_then(JitInfo::header) {
        println!("{line}");
    }
    if let Some(line) = r.recorded.and_then(ProfileDocument::call_graph_line) {
        println!("call graph {line}");
    }
    super::profile_text::print_report(r.event_note, r.report, opts);
    if let Some((off, _)) = r.off_cpu {
        super::offcpu::print(off);
    }
    if let Some((rv, cg)) = &routine {
        println!();
        match rv {
            Some(rv) => super::profile_text::print_routine(rv),
            None => println!("{}: no samples inside it, only in its callees", cg.routine),
        }
        super::profile_text::print_call_graph(cg);
    }
    Ok(())
}

/// `perflab profile report PERF_DATA|RUN`.
fn report(g: &Global, a: &ReportArgs) -> anyhow::Result<ExitCode> {
    let opts = a.view.options()?;
    let path = Path::new(&a.source);
    let data = if path.exists() {
        path.to_path_buf()
    } else if let Ok(id) = a.source.parse::<i64>() {
        perf_data_of_run(g, id)?
    } else {
        return Err(InvalidInput(format!(
            "{}: neither a perf.data path nor a run id",
            a.source
        ))
        .into());
    };
    let profile = Profile::from_perf_data(&data).map_err(lift)?;
    let report = profile.report(&opts);
    let folded = profile.folded_with(&opts);
    let off_cpu = profile.off_cpu_report(&opts);
    let wall = profile.wall_folded(&opts).unwrap_or_default();
    let svg = if a.view.flamegraph.is_some() {
        profile.flamegraph_svg_with(&opts).map_err(lift)?
    } else {
        Vec::new()
    };
    let shown = Shown {
        report: &report,
        event_note: profile.event_note.as_deref(),
        recorded: None,
        perf_data: profile.perf_data.as_deref(),
        folded: &folded,
        svg: &svg,
        off_cpu: off_cpu.as_ref().map(|r| (r, wall.as_str())),
        jit: profile.jit.as_ref(),
        jit_note: profile.jit_note.as_deref(),
    };
    show(g, &shown, Some(&profile), &opts, &a.view, None)?;
    Ok(ExitCode::SUCCESS)
}

/// The perf.data a stored profile run was recorded into.
fn perf_data_of_run(g: &Global, id: i64) -> anyhow::Result<PathBuf> {
    if !g.store.exists() {
        return Err(perflab_store::StoreError::Empty)
            .with_context(|| format!("no store at {}", g.store.display()));
    }
    let store = Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let run = store.run(id)?;
    if run.kind != "profile" {
        return Err(InvalidInput(format!("run {id} is a {} run, not a profile", run.kind)).into());
    }
    let env: Value = store.run_environment(id)?;
    // Where the trial's profile.json says (a one-trial run), else the run's
    // environment (runs stored before profile was a kind).
    let mut stored = env["perf_data"].clone();
    for t in store.trials(id)? {
        for (name, _, content) in store.trial_artifacts(t.id)? {
            if name == ARTIFACT_PROFILE {
                let doc: Value = serde_json::from_slice(&content).unwrap_or_default();
                if doc["perf_data"].is_string() {
                    stored = doc["perf_data"].clone();
                }
            }
        }
    }
    let env = json!({ "perf_data": stored });
    let data = env["perf_data"]
        .as_str()
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .ok_or_else(|| {
            InvalidInput(format!(
                "run {id}: its perf.data ({}) is gone; the stored report, folded stacks \
                 and flame graph remain (perflab export {id})",
                env["perf_data"].as_str().unwrap_or("not recorded")
            ))
        })?;
    Ok(data)
}
