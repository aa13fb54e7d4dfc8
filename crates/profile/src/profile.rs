//! A recorded profile: the samples read back from perf, and everything derived from
//! them (report, folded stacks, flame graph, call graph, per-routine view), and the
//! off-CPU time where it was recorded ([`crate::offcpu`]).

use std::path::{Path, PathBuf};

use crate::annotate::{self, RoutineView};
use crate::callgraph::{self, CallGraph};
use crate::error::{ProfileError, Result};
use crate::framepointers::CallGraphChoice;
use crate::offcpu::{self, OffCpu, OffCpuReport};
use crate::reduce::{self, Report, ReportOptions};
use crate::script::{self, Sample};
use crate::{flame, jit, perf};

/// Said of an off-CPU recording without a single switch-out.
const NO_SWITCH_NOTE: &str = "no switch-out of the profiled tasks was recorded: they ran \
     throughout, or were blocked since before the recording began (a task is seen \
     blocking only when it switches out while recorded)";

#[derive(Debug, Clone)]
pub struct Profile {
    /// The event sampled, as the recording names it (`cycles`, `cpu-clock`).
    pub event: String,
    /// Why the event is not the one asked for (no hardware PMU), when it is not.
    pub event_note: Option<String>,
    /// How call chains were recorded, and why where `auto` chose (a recording made
    /// here; None for one read back from a file).
    pub call_graph_choice: Option<CallGraphChoice>,
    /// The recording, where there is one on disk.
    pub perf_data: Option<PathBuf>,
    pub samples: Vec<Sample>,
    /// Lines of perf script output that were not understood.
    pub skipped_lines: usize,
    /// The exit status of the profiled command (`Target::Command`, ran to its end).
    pub command_status: Option<i32>,
    pub frequency: Option<u32>,
    /// Blocked time per stack, when the recording has it (`--off-cpu`); its switch
    /// samples are not among `samples`.
    pub off_cpu: Option<OffCpu>,
    /// What was done to name JIT frames (None: `jit` was off, or a recording read back).
    pub jit: Option<crate::jit::JitInfo>,
    /// Why JIT frames may be unnamed or stacks shallow (a JVM profiled by pid).
    pub jit_note: Option<String>,
    perf: Option<PathBuf>,
}

impl Profile {
    /// Reads a recording: a perf.data file, a directory holding one, or the text
    /// `perf script -F` wrote from one (see [`script::SCRIPT_FIELDS`]; what fixtures and
    /// recordings from other machines come as).
    pub fn from_perf_data(path: &Path) -> Result<Profile> {
        let data = if path.is_dir() {
            path.join("perf.data")
        } else {
            path.to_path_buf()
        };
        if !data.is_file() {
            return Err(ProfileError::NoPerfData(path.to_path_buf()));
        }
        let mut magic = [0u8; 7];
        let is_perf_data = std::fs::File::open(&data)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
            .is_ok_and(|()| &magic == b"PERFILE");
        if !is_perf_data {
            let text = std::fs::read(&data)
                .map_err(|e| ProfileError::io(format!("cannot read {}", data.display()), e))?;
            let text = String::from_utf8(text)
                .map_err(|_| ProfileError::NoPerfData(path.to_path_buf()))?;
            let p = Profile::from_script(&text);
            if p.samples.is_empty() {
                return Err(ProfileError::NoPerfData(path.to_path_buf()));
            }
            return Ok(p);
        }
        let perf = perf::find_perf()?;
        Profile::load(&perf, &data)
    }

    pub(crate) fn load(perf: &Path, data: &Path) -> Result<Profile> {
        let events = perf::evlist(perf, data)?;
        let off_cpu = events.iter().any(|e| e == offcpu::SWITCH_TRACEPOINT);
        let mut p = if off_cpu {
            let (samples, skipped, off) = OffCpu::read(perf, data)?;
            Profile::of_samples(samples, skipped, Some(off))
        } else {
            Profile::from_script(&perf::script(perf, data)?)
        };
        // Maps kept beside the recording name what perf, looking in /tmp, could not.
        if let Some(dir) = data.parent() {
            jit::resolve(&mut p.samples, dir);
        }
        if let Some(ev) = events.into_iter().next() {
            p.event = ev;
        }
        if off_cpu {
            p.frequency = perf::sample_frequency(perf, data);
        }
        p.perf_data = Some(data.to_path_buf());
        p.perf = Some(perf.to_path_buf());
        Ok(p)
    }

    /// A profile from `perf script` text (fields as in [`script::SCRIPT_FIELDS`]), e.g.
    /// a fixture. The event is the first sample's.
    pub fn from_script(text: &str) -> Profile {
        let mut parsed = script::parse(text);
        let off_cpu = OffCpu::from_samples(&parsed.samples);
        if off_cpu.is_some() {
            parsed.samples.retain(|s| !offcpu::is_switch(s));
        }
        Profile::of_samples(parsed.samples, parsed.skipped_lines, off_cpu)
    }

    /// A profile of on-CPU samples (their event is the first one's) and, where it was
    /// recorded, the off-CPU side; one without any switch-out says so in a note.
    fn of_samples(
        mut samples: Vec<Sample>,
        skipped_lines: usize,
        off_cpu: Option<OffCpu>,
    ) -> Profile {
        jit::prettify(&mut samples);
        let off_cpu = off_cpu.map(|mut o| {
            if o.switches == 0 {
                o.notes.push(NO_SWITCH_NOTE.into());
            }
            o
        });
        Profile {
            event: samples.first().map(|s| s.event.clone()).unwrap_or_default(),
            event_note: None,
            call_graph_choice: None,
            perf_data: None,
            samples,
            skipped_lines,
            command_status: None,
            frequency: None,
            off_cpu,
            jit: None,
            jit_note: None,
            perf: None,
        }
    }

    /// The ipreduce-style report.
    pub fn report(&self, o: &ReportOptions) -> Report {
        reduce::report(&self.event, &self.samples, o)
    }

    /// Folded stacks of all non-idle samples.
    pub fn folded(&self) -> String {
        self.folded_with(&ReportOptions::default())
    }

    /// Folded stacks of the samples that pass the filters of `o` (not the threshold).
    pub fn folded_with(&self, o: &ReportOptions) -> String {
        flame::folded(&self.samples, o)
    }

    /// A flame graph (SVG) of all non-idle samples.
    pub fn flamegraph_svg(&self) -> Result<Vec<u8>> {
        self.flamegraph_svg_with(&ReportOptions::default())
    }

    /// A flame graph (SVG) of the samples that pass the filters of `o`; with off-CPU
    /// time, the wall-clock one (on- and off-CPU, told apart by colour).
    pub fn flamegraph_svg_with(&self, o: &ReportOptions) -> Result<Vec<u8>> {
        let n = self.samples.iter().filter(|s| o.selects(s)).count();
        if let (Some(folded), Some(r)) = (self.wall_folded(o), self.off_cpu_report(o)) {
            let subtitle = format!(
                "wall clock · on-CPU {:.1} ms ({} samples of {}, warm) · off-CPU {:.1} ms \
                 ({:.1}%, blue) · mode {}",
                r.on_cpu_ms,
                n,
                self.event,
                r.off_cpu_ms,
                r.off_cpu_pct,
                o.mode.as_str()
            );
            return flame::wall_svg(&folded, "perflab profile (wall clock)", Some(&subtitle));
        }
        let subtitle = format!("{} · {n} samples · mode {}", self.event, o.mode.as_str());
        flame::svg(&self.folded_with(o), "perflab profile", Some(&subtitle))
    }

    /// One on-CPU sample's time in microseconds: the sampling period, 1/frequency
    /// (999 Hz, perflab's default, where the recording does not say).
    pub fn us_per_sample(&self) -> f64 {
        1e6 / f64::from(self.frequency.filter(|f| *f > 0).unwrap_or(999))
    }

    /// The off-CPU report of the tasks that pass the filters of `o` (None: recorded
    /// without off-CPU time).
    pub fn off_cpu_report(&self, o: &ReportOptions) -> Option<OffCpuReport> {
        let off = self.off_cpu.as_ref()?;
        let n = self.samples.iter().filter(|s| o.selects(s)).count();
        Some(off.report(n as f64 * self.us_per_sample(), o))
    }

    /// Wall-clock folded stacks in microseconds, on- and off-CPU (these ending in
    /// `[off-cpu]`), of what passes the filters of `o` (None: no off-CPU time recorded).
    pub fn wall_folded(&self, o: &ReportOptions) -> Option<String> {
        let off = self.off_cpu.as_ref()?;
        Some(flame::wall_folded(
            &self.samples,
            off,
            self.us_per_sample(),
            o,
        ))
    }

    /// The `n` functions with the largest share of all non-idle samples, in percent.
    pub fn top_functions(&self, n: usize) -> Vec<(String, f64)> {
        reduce::top_functions(&self.samples, n)
    }

    /// Callers and callees of a routine.
    pub fn call_graph(&self, routine: &str, o: &ReportOptions) -> CallGraph {
        callgraph::call_graph(&self.samples, routine, o)
    }

    /// Per-instruction shares inside a routine (perf annotate, or sampled offsets).
    pub fn routine(&self, routine: &str, o: &ReportOptions) -> Result<RoutineView> {
        match &self.perf {
            Some(perf) => {
                annotate::routine(perf, self.perf_data.as_deref(), &self.samples, routine, o)
            }
            None => annotate::from_samples(
                &self.samples,
                routine,
                o,
                Some("no perf.data to disassemble; shares by offset in the symbol".into()),
            ),
        }
    }
}
