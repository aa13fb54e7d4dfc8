//! A recorded profile: the samples read back from perf, and everything derived from
//! them (report, folded stacks, flame graph, call graph, per-routine view).

use std::path::{Path, PathBuf};

use crate::annotate::{self, RoutineView};
use crate::callgraph::{self, CallGraph};
use crate::error::{ProfileError, Result};
use crate::framepointers::CallGraphChoice;
use crate::reduce::{self, Report, ReportOptions};
use crate::script::{self, Sample};
use crate::{flame, perf};

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
        let text = perf::script(perf, data)?;
        let mut p = Profile::from_script(&text);
        if let Some(ev) = perf::evlist(perf, data)?.into_iter().next() {
            p.event = ev;
        }
        p.perf_data = Some(data.to_path_buf());
        p.perf = Some(perf.to_path_buf());
        Ok(p)
    }

    /// A profile from `perf script` text (fields as in [`script::SCRIPT_FIELDS`]), e.g.
    /// a fixture. The event is the first sample's.
    pub fn from_script(text: &str) -> Profile {
        let parsed = script::parse(text);
        Profile {
            event: parsed
                .samples
                .first()
                .map(|s| s.event.clone())
                .unwrap_or_default(),
            event_note: None,
            call_graph_choice: None,
            perf_data: None,
            samples: parsed.samples,
            skipped_lines: parsed.skipped_lines,
            command_status: None,
            frequency: None,
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

    /// A flame graph (SVG) of the samples that pass the filters of `o`.
    pub fn flamegraph_svg_with(&self, o: &ReportOptions) -> Result<Vec<u8>> {
        let n = self.samples.iter().filter(|s| o.selects(s)).count();
        let subtitle = format!("{} · {n} samples · mode {}", self.event, o.mode.as_str());
        flame::svg(&self.folded_with(o), "perflab profile", Some(&subtitle))
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
