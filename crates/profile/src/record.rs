//! Recording: `perf record` on the whole system, one process, or a command perflab
//! starts, with a start/stop handle so a caller (the CLI, or an experiment trial) can
//! bracket exactly the interval it wants profiled.
//!
//! The event is chosen here, not by perf: asked for `cycles` on a machine without a
//! hardware PMU, perf silently samples `cpu-clock` instead, which would make reports
//! lie about what they measured. `Event::Auto` probes, picks, and says which; the
//! call-graph mode likewise (`CallGraphMode::Auto` is resolved here, before perf
//! starts, by [`framepointers`], and the recording keeps what was chosen and why).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::control::Control;
use crate::error::{ProfileError, Result};
use crate::framepointers::{self, CallGraphChoice};
use crate::jit::{self, JitStep};
use crate::perf;
use crate::profile::Profile;
use crate::stacks::CallGraphMode;

/// What to profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Every CPU (`perf record -a`).
    System,
    /// One running process and its threads (`perf record -p PID`).
    Pid(i32),
    /// A command perflab starts under perf (`perf record -- CMD ARGS`).
    Command(Vec<String>),
}

/// The sampling event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Event {
    /// `cycles` where the hardware can count them, else `cpu-clock`.
    #[default]
    Auto,
    Cycles,
    CpuClock,
}

impl std::str::FromStr for Event {
    type Err = ProfileError;
    fn from_str(s: &str) -> Result<Event> {
        match s {
            "auto" => Ok(Event::Auto),
            "cycles" => Ok(Event::Cycles),
            "cpu-clock" => Ok(Event::CpuClock),
            _ => Err(ProfileError::BadInput(format!(
                "event {s:?}: expected auto, cycles or cpu-clock"
            ))),
        }
    }
}

/// Where the profiled command's stdout goes (its stderr stays with perflab's, or
/// goes to the file too).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CommandOutput {
    /// Shared with perflab's stdout.
    #[default]
    Inherit,
    /// To perflab's stderr (so stdout can hold only JSON).
    Stderr,
    /// stdout and stderr to this file.
    File(PathBuf),
}

/// A profiling request.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileSpec {
    pub target: Target,
    /// Samples per second per CPU (`-F`).
    pub frequency: u32,
    /// How call chains are recorded (`fp`, `dwarf`, `auto`, or `off`).
    pub call_graph: CallGraphMode,
    /// Bytes of user stack copied per sample where call chains are unwound with DWARF
    /// (None: [`framepointers::DEFAULT_DWARF_STACK_BYTES`]; checked by [`validate`]).
    pub dwarf_stack_bytes: Option<u32>,
    /// Also record the time spent off the CPU (blocked), per stack, from the
    /// scheduler's switch-out to switch-in (`sched:sched_switch`).
    pub off_cpu: bool,
    /// Name JIT-compiled frames: a JVM started under perf gets frame pointers and
    /// writes its perf map at exit, Node gets `--perf-basic-prof`; the reducer reads
    /// `/tmp/perf-PID.map`. On by default.
    pub jit: bool,
    /// Stop after this long (a command is stopped too).
    pub duration: Option<Duration>,
    pub event: Event,
    /// Directory for perf.data; None: a new directory under the temp dir, kept.
    pub output_dir: Option<PathBuf>,
    pub command_output: CommandOutput,
}

impl Default for ProfileSpec {
    fn default() -> ProfileSpec {
        ProfileSpec {
            target: Target::System,
            frequency: 999,
            call_graph: CallGraphMode::Fp,
            dwarf_stack_bytes: None,
            off_cpu: false,
            jit: true,
            duration: None,
            event: Event::Auto,
            output_dir: None,
            command_output: CommandOutput::Inherit,
        }
    }
}

/// Starts recordings.
pub struct Profiler;

/// A recording in progress.
#[derive(Debug)]
pub struct Running {
    child: Child,
    perf: PathBuf,
    data: PathBuf,
    event: String,
    event_note: Option<String>,
    call_graph: CallGraphChoice,
    deadline: Option<Instant>,
    is_command: bool,
    frequency: u32,
    started: Instant,
    /// perflab mounted tracefs for the off-CPU recording (a note says so).
    mounted_tracefs: bool,
    /// perf's control channel, open while it records (None: a command perf starts).
    _control: Option<Control>,
    /// Naming JIT frames (None: `jit` is off); boxed, a recording is held in enums.
    jit: Option<Box<JitStep>>,
}

impl Profiler {
    /// Checks the request, chooses the event, checks that perf may record here, and
    /// starts `perf record`.
    pub fn start(spec: &ProfileSpec) -> Result<Running> {
        validate(spec)?;
        let perf = perf::find_perf()?;
        let (event, event_note) = choose_event(spec.event, &perf)?;
        let call_graph =
            framepointers::choose(spec.call_graph, spec.dwarf_stack_bytes, &spec.target);
        let args = record_args(spec, event, &call_graph);
        let mounted_tracefs = spec.off_cpu && crate::offcpu::ensure_tracefs()?;
        perf::preflight(&perf, &args)?;
        let data = output_dir(spec)?.join("perf.data");
        let mut cmd = Command::new(&perf);
        cmd.arg("record").args(&args).arg("-o").arg(&data);
        // A command perf starts itself is enabled at its exec; a process or the system
        // is recorded from the moment perf acknowledges (see `control`).
        let control = match spec.target {
            Target::Command(_) => None,
            _ => Some(Control::new()?),
        };
        if let Some(c) = &control {
            cmd.args(c.args());
            c.pass_to(&mut cmd);
        }
        let mut deadline = None;
        match (&spec.target, spec.duration) {
            (Target::Command(argv), d) => {
                if spec.jit {
                    jit::inject_env(&mut cmd);
                }
                cmd.arg("--").args(argv);
                deadline = d.map(|d| Instant::now() + d);
            }
            (_, Some(d)) => {
                cmd.args(["--", "sleep", &format!("{:.3}", d.as_secs_f64())]);
            }
            (_, None) => {}
        }
        cmd.stdin(if matches!(spec.target, Target::Command(_)) {
            Stdio::inherit()
        } else {
            Stdio::null()
        });
        route_output(&mut cmd, &spec.command_output)?;
        // perflab ignores SIGPIPE (it writes to sockets); the profiled command must not
        // inherit that.
        // SAFETY: signal() is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| ProfileError::io(format!("cannot start {}", perf.display()), e))?;
        let mut running = Running {
            child,
            perf,
            data,
            event: event.to_string(),
            event_note,
            call_graph,
            deadline,
            is_command: matches!(spec.target, Target::Command(_)),
            frequency: spec.frequency,
            started: Instant::now(),
            mounted_tracefs,
            _control: None,
            jit: JitStep::new(spec.jit, &spec.target).map(Box::new),
        };
        if let Some(mut c) = control {
            // Not recording: dropping `running` kills perf.
            c.enable(&mut running.child)?;
            running._control = Some(c);
        }
        Ok(running)
    }
}

/// The event to sample, and a note when it is not the one asked for.
fn choose_event(asked: Event, perf: &Path) -> Result<(&'static str, Option<String>)> {
    Ok(match asked {
        Event::CpuClock => ("cpu-clock", None),
        Event::Cycles if perf::cycles_supported(perf) => ("cycles", None),
        Event::Cycles => return Err(ProfileError::EventUnsupported),
        Event::Auto if perf::cycles_supported(perf) => ("cycles", None),
        Event::Auto => (
            "cpu-clock",
            Some("no hardware PMU, cycles not supported: sampled cpu-clock instead".to_string()),
        ),
    })
}

/// `perf record`'s options: event, frequency, call graphs (as chosen for the target:
/// see [`framepointers`]), and what to record.
fn record_args(spec: &ProfileSpec, event: &str, call_graph: &CallGraphChoice) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "-q".into(),
        "-e".into(),
        event.into(),
        "-F".into(),
        spec.frequency.to_string(),
        "--sample-cpu".into(),
    ];
    args.extend(call_graph.perf_args());
    match &spec.target {
        Target::System => args.push("-a".into()),
        Target::Pid(p) => {
            args.push("-p".into());
            args.push(p.to_string());
        }
        Target::Command(_) => {}
    }
    crate::offcpu::add_record_args(spec, &mut args);
    args
}

/// The directory perf.data goes to: the one asked for, or a new one that is kept.
fn output_dir(spec: &ProfileSpec) -> Result<PathBuf> {
    Ok(match &spec.output_dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .map_err(|e| ProfileError::io(format!("cannot create {}", d.display()), e))?;
            d.clone()
        }
        None => tempfile::Builder::new()
            .prefix("perflab-profile-")
            .tempdir()
            .map_err(|e| ProfileError::io("cannot make a temp dir", e))?
            .keep(),
    })
}

/// Sends the profiled command's output where it was asked to go.
fn route_output(cmd: &mut Command, output: &CommandOutput) -> Result<()> {
    match output {
        CommandOutput::Inherit => {}
        CommandOutput::Stderr => {
            use std::os::fd::AsFd;
            let fd = std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .map_err(|e| ProfileError::io("cannot duplicate stderr", e))?;
            cmd.stdout(Stdio::from(fd));
        }
        CommandOutput::File(p) => {
            let f = std::fs::File::create(p)
                .map_err(|e| ProfileError::io(format!("cannot create {}", p.display()), e))?;
            let f2 = f
                .try_clone()
                .map_err(|e| ProfileError::io(format!("cannot open {}", p.display()), e))?;
            cmd.stdout(f).stderr(f2);
        }
    }
    Ok(())
}

/// Checks a request without starting anything: its options, and that the process or
/// command it names is there (what [`Profiler::start`] checks first).
pub fn validate(spec: &ProfileSpec) -> Result<()> {
    let max = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .unwrap_or(100_000);
    if spec.frequency == 0 || spec.frequency > max {
        return Err(ProfileError::BadInput(format!(
            "frequency {} Hz: expected 1 to {max} Hz (kernel.perf_event_max_sample_rate)",
            spec.frequency
        )));
    }
    if let Some(b) = spec.dwarf_stack_bytes {
        framepointers::check_stack_bytes(b)?;
    }
    if spec.duration.is_some_and(|d| d.is_zero()) {
        return Err(ProfileError::BadInput(
            "duration must be longer than zero".into(),
        ));
    }
    match &spec.target {
        Target::System => Ok(()),
        Target::Pid(p) if *p > 0 && std::path::Path::new(&format!("/proc/{p}")).exists() => Ok(()),
        Target::Pid(p) => Err(ProfileError::NoSuchProcess(*p)),
        Target::Command(argv) => match argv.first() {
            None => Err(ProfileError::BadInput("empty command".into())),
            Some(c) if perf::which(c).is_none() => Err(ProfileError::CommandNotFound(c.clone())),
            Some(_) => Ok(()),
        },
    }
}

/// A recording dropped before it was stopped (its owner gave up: a session ended, a
/// panic) kills its perf at once rather than leave it sampling with nobody to stop it.
impl Drop for Running {
    fn drop(&mut self) {
        // A perf already waited for is not signalled again (its pid may be reused).
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Running {
    /// perf's process id.
    pub fn perf_pid(&self) -> u32 {
        self.child.id()
    }

    /// Where perf writes the recording.
    pub fn perf_data(&self) -> &std::path::Path {
        &self.data
    }

    /// Stops recording now and reads the profile.
    pub fn stop(self) -> Result<Profile> {
        self.wait_or_stop(|| true)
    }

    /// Waits until the recording ends by itself (the command exits, the duration is
    /// over, or the process profiled with `Pid` exits), then reads the profile.
    pub fn wait(self) -> Result<Profile> {
        self.wait_or_stop(|| false)
    }

    /// Waits as [`Running::wait`] does, but stops as soon as `stop()` returns true
    /// (polled every 20 ms), e.g. on Ctrl-C.
    pub fn wait_or_stop(mut self, stop: impl Fn() -> bool) -> Result<Profile> {
        let mut signalled = false;
        let status: ExitStatus = loop {
            if let Some(st) = self
                .child
                .try_wait()
                .map_err(|e| ProfileError::io("cannot wait for perf", e))?
            {
                break st;
            }
            let due = self.deadline.is_some_and(|d| Instant::now() >= d);
            // perf makes its output file once it handles SIGINT (finishing the file):
            // a stop that comes sooner (a trial shorter than perf's start) waits for it,
            // a few seconds at most, else it would kill perf before it wrote anything.
            let ready = || self.data.exists() || self.started.elapsed() >= Duration::from_secs(5);
            if !signalled && (due || stop()) && ready() {
                // perf finishes writing on SIGINT and sends SIGTERM to a command it started.
                // SAFETY: plain kill(2) on our own child.
                unsafe {
                    libc::kill(self.child.id() as i32, libc::SIGINT);
                }
                signalled = true;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let written = std::fs::metadata(&self.data).is_ok_and(|m| m.len() > 0);
        if !written {
            return Err(ProfileError::PerfFailed {
                command: "perf record".into(),
                status: status.to_string(),
                stderr: "no perf.data was written".into(),
            });
        }
        let jit = self.jit.as_deref().map(JitStep::before_report);
        let mut p = Profile::load(&self.perf, &self.data)?;
        if let (Some((claim, note)), Some(dir)) = (jit, self.data.parent()) {
            p.jit = Some(jit::keep_maps(&p.samples, &claim, dir));
            p.jit_note = note;
        }
        if p.event.is_empty() {
            p.event = self.event.clone();
        }
        p.event_note = self.event_note.clone();
        p.call_graph_choice = Some(self.call_graph.clone());
        p.frequency = Some(self.frequency);
        if let Some(off) = p.off_cpu.as_mut().filter(|_| self.mounted_tracefs) {
            off.notes.push(crate::offcpu::MOUNTED_NOTE.into());
        }
        // perf record exits with the status of the command it ran.
        if self.is_command && !signalled {
            p.command_status = status.code();
        }
        Ok(p)
    }
}
