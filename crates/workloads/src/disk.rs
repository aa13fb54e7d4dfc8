//! The `disk` workload: a dd/fio-class disk benchmark that reports what the device
//! did, not only what the program saw.
//!
//! One run writes or reads `count × bs` bytes of a file it creates itself (and always
//! removes, on success, error, interrupt or panic) or, when explicitly allowed, of a
//! block device. It times every pread/pwrite into an HdrHistogram, and reads the
//! `iostat -x` figures of the device behind PATH over the same interval, so a result
//! comes with the reason for it (merges in `wrqm/s`, queue depth in `aqu-sz`).
//!
//! Shaped after dd and fio so the numbers compare (see `bench/disk-vs-fio.sh`): MB/s
//! are 10^6 bytes/s; the timed interval runs from the first I/O to the last one's
//! completion, plus the final fdatasync with `fdatasync_end` (dd `conv=fdatasync`,
//! fio `end_fsync=1`); read modes lay the file out first (written and fdatasynced,
//! outside the timed interval) and drop it from the page cache with
//! `POSIX_FADV_DONTNEED` unless `cached`, then check with mincore that it is gone.
//! `iodepth > 1` is a thread pool of synchronous pread/pwrite (see [`engine`]); the
//! report's `method` says so.
//!
//! Submodules: [`spec`] (what to do, validation), [`target`] (the file, the device,
//! O_DIRECT alignment), [`engine`] (the I/O loop), [`iostat`] (diskstats deltas),
//! [`report`] (results, metrics, warnings), [`text`] (human output).

pub mod engine;
pub mod iostat;
pub mod report;
pub mod spec;
pub mod target;
pub mod text;

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use perflab_units::Phrase;

pub use report::{DiskReport, LatencyUs};
pub use spec::{ByteSize, DiskSpec, Mode, Pattern};

use crate::{ArtifactData, Measurement, TrialContext, Workload, WorkloadError};

/// Why a disk run did not produce a report.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    /// The input is wrong (a flag, a path, an alignment); nothing was measured and
    /// nothing is left behind.
    #[error("{0}")]
    Invalid(Phrase),
    /// The run could not be done.
    #[error("{context}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
        /// What to try, naming options as fields (shown after the cause).
        hint: Option<Phrase>,
    },
    /// The user interrupted the run (the file is removed).
    #[error("interrupted")]
    Interrupted,
}

/// Invalid input, said with the options it is about as fields (`bs`), so that an
/// experiment file names the key and the CLI its flag.
pub(crate) fn bad<T>(m: impl Into<Phrase>) -> Result<T, DiskError> {
    Err(DiskError::Invalid(m.into()))
}

impl DiskError {
    /// The option the input error is about, as an experiment file names it.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            DiskError::Invalid(p) => p.subject(),
            _ => None,
        }
    }

    /// The message with each option named by `name` (a command's flag for the field);
    /// `describe` names them as an experiment file does.
    pub fn render(&self, name: &dyn Fn(&str) -> String) -> String {
        match self {
            DiskError::Invalid(p) => p.render(name),
            DiskError::Io {
                context,
                source,
                hint,
            } => match hint {
                Some(h) => format!("{context}: {source} ({})", h.render(name)),
                None => format!("{context}: {source}"),
            },
            other => other.to_string(),
        }
    }

    pub fn io(context: impl Into<String>, source: io::Error) -> DiskError {
        DiskError::Io {
            context: context.into(),
            source,
            hint: None,
        }
    }

    /// The message with its cause: `cannot create X: Permission denied`.
    pub fn describe(&self) -> String {
        match self {
            DiskError::Io { .. } => self.render(&|f| format!("`{f}`")),
            other => other.to_string(),
        }
    }
}

/// How a run is stopped from outside.
#[derive(Debug, Clone, Default)]
pub struct Control {
    /// Set on Ctrl-C: the run stops after the I/Os in flight.
    pub interrupted: Arc<AtomicBool>,
    /// The run stops (flagged partial) when this passes.
    pub deadline: Option<Instant>,
}

/// Runs one disk measurement. Partial results (ENOSPC, an I/O error, a timeout) come
/// back as `Ok` with [`DiskReport::partial`] set and [`DiskReport::problem`] saying
/// why; the file is removed in every case.
pub fn run(spec: &DiskSpec, ctl: &Control) -> Result<DiskReport, DiskError> {
    spec.validate()?;
    let mut target = target::prepare(spec)?;
    let result = measure(spec, ctl, &target);
    let removed = match target.guard.as_mut() {
        Some(g) => g.remove(),
        None => Ok(()),
    };
    let mut report = result?;
    if let Err(e) = removed {
        report.warnings.push(format!(
            "could not remove {}: {e}; remove it by hand",
            report.path
        ));
    }
    Ok(report)
}

fn measure(spec: &DiskSpec, ctl: &Control, t: &target::Target) -> Result<DiskReport, DiskError> {
    let write = spec.mode.is_write();
    let total = spec.total_bytes();
    let seed = engine::splitmix(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ u64::from(std::process::id()),
    );
    if !write && !t.block_device {
        lay_out(&t.path, total, spec.pattern, seed, ctl)?;
    }
    let file = open_for_io(spec, t)?;
    let mut resident_before = None;
    if !write {
        if !spec.cached {
            target::drop_cache(&file).map_err(|e| {
                DiskError::io(
                    "cannot drop the file from the page cache (posix_fadvise)",
                    e,
                )
            })?;
        }
        resident_before = target::resident_fraction(&file, total);
    }
    // The access pattern, as fio declares it by default (`fadvise_hint=1`): sequential
    // doubles the kernel's readahead window for buffered reads, random turns it off.
    // Only advice: a kernel that ignores it changes nothing but the readahead.
    let advice = if spec.mode.is_random() {
        libc::POSIX_FADV_RANDOM
    } else {
        libc::POSIX_FADV_SEQUENTIAL
    };
    // SAFETY: posix_fadvise on a descriptor we own; the result is advisory.
    let _ = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, advice) };
    let plan = engine::IoPlan {
        write,
        random: spec.mode.is_random(),
        bs: spec.bs.0 as usize,
        count: spec.ios(),
        pattern: spec.pattern,
        threads: spec.iodepth as usize,
        align: t.dio_align.unwrap_or(512).max(4096) as usize,
        seed,
    };
    let dev = t.device.as_ref().map(|d| d.name.as_str());
    let before = dev.and_then(iostat::read);
    let start = Instant::now();
    let mut out = engine::run(file.as_raw_fd(), &plan, ctl);
    if write && spec.fdatasync_end && out.error.is_none() && !out.interrupted {
        out.error = file.sync_data().err();
    }
    let seconds = start.elapsed().as_secs_f64();
    let after = dev.and_then(iostat::read);
    drop(file);
    if out.interrupted || ctl.interrupted.load(Ordering::SeqCst) {
        return Err(DiskError::Interrupted);
    }
    let problem = problem_of(spec, t, &mut out)?;
    let iostat = match (before, after) {
        (Some(b), Some(a)) => Some(iostat::delta(&b, &a, seconds)),
        _ => None,
    };
    let mut r = assemble(spec, t, out, seconds, iostat, problem);
    r.resident_before = resident_before;
    r.warnings = report::warnings(&r)
        .iter()
        .map(ToString::to_string)
        .collect();
    Ok(r)
}

/// Opens the target for the measured I/O with O_DIRECT / O_DSYNC as asked; a random
/// write's file is sized first (sparse) so every block offset is inside it.
fn open_for_io(spec: &DiskSpec, t: &target::Target) -> Result<std::fs::File, DiskError> {
    let write = spec.mode.is_write();
    let mut flags = 0;
    if spec.direct {
        flags |= libc::O_DIRECT;
    }
    if spec.dsync {
        flags |= libc::O_DSYNC;
    }
    let file = OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(flags)
        .open(&t.path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::EINVAL) if spec.direct => DiskError::Invalid(
                Phrase::text(format!(
                    "the file system{} at {} does not support O_DIRECT: drop ",
                    t.fs_type
                        .as_deref()
                        .map(|f| format!(" ({f})"))
                        .unwrap_or_default(),
                    t.path.display()
                ))
                .and_field("direct")
                .then(" or use another directory"),
            ),
            _ => DiskError::io(format!("cannot open {}", t.path.display()), e),
        })?;
    if spec.mode == Mode::Randwrite && !t.block_device {
        file.set_len(spec.total_bytes())
            .map_err(|e| DiskError::io(format!("cannot size {}", t.path.display()), e))?;
    }
    Ok(file)
}

/// What stopped the run early, if anything. ENOSPC, or an error after some I/O, is a
/// flagged partial result; an error on the very first I/O means it could not run.
fn problem_of(
    spec: &DiskSpec,
    t: &target::Target,
    out: &mut engine::IoOutcome,
) -> Result<Option<String>, DiskError> {
    let write = spec.mode.is_write();
    let count = spec.ios();
    let enospc = out.error.as_ref().and_then(|e| e.raw_os_error()) == Some(libc::ENOSPC);
    let first = out.ios == 0 && !enospc;
    if let Some(e) = out.error.take_if(|_| first) {
        let what = if write { "write" } else { "read" };
        let mut err = DiskError::io(
            format!("the first {what} to {} failed", t.path.display()),
            e,
        );
        if let DiskError::Io { source, hint, .. } = &mut err {
            if spec.direct && source.raw_os_error() == Some(libc::EINVAL) {
                *hint = Some(
                    Phrase::text(
                        "O_DIRECT refused the I/O: the file system may need a larger \
                         alignment; try ",
                    )
                    .and_field("bs")
                    .then(" 4k"),
                );
            }
        }
        return Err(err);
    }
    Ok(match &out.error {
        Some(_) if enospc => Some(format!(
            "no space left on device after {} bytes ({} of {count} I/Os)",
            out.bytes, out.ios
        )),
        Some(e) => Some(format!(
            "{} failed after {} bytes ({} of {count} I/Os): {e}",
            if write { "writing" } else { "reading" },
            out.bytes,
            out.ios
        )),
        None if out.timed_out => Some(format!(
            "the time limit ran out after {} of {count} I/Os",
            out.ios
        )),
        None => None,
    })
}

/// The report of a finished (possibly partial) run, warnings not yet added.
fn assemble(
    spec: &DiskSpec,
    t: &target::Target,
    out: engine::IoOutcome,
    seconds: f64,
    iostat: Option<iostat::Iostat>,
    problem: Option<String>,
) -> DiskReport {
    let bs = spec.bs.0;
    let threads = spec.iodepth;
    let call = if spec.mode.is_write() {
        "pwrite"
    } else {
        "pread"
    };
    let method = if threads == 1 {
        format!("{call}, 1 thread")
    } else {
        format!("{call} from a pool of {threads} threads, one I/O in flight each (no io_uring)")
    };
    DiskReport {
        mode: spec.mode,
        bs,
        bytes: out.ios * bs,
        seconds,
        mb_s: (out.ios * bs) as f64 / seconds / 1e6,
        iops: out.ios as f64 / seconds,
        latency_us: LatencyUs::from_ns(&out.histogram),
        device: t.device.as_ref().map(|d| d.name.clone()),
        iostat,
        warnings: Vec::new(),
        ios: out.ios,
        ios_planned: spec.ios(),
        path: t.path.display().to_string(),
        partition: t.device.as_ref().and_then(|d| d.partition.clone()),
        file_system: t.fs_type.clone(),
        direct: spec.direct,
        dsync: spec.dsync,
        fdatasync_end: spec.fdatasync_end,
        pattern: spec.pattern,
        cached: spec.cached,
        iodepth: spec.iodepth,
        method,
        resident_before: None,
        partial: problem.is_some(),
        problem,
        histogram: out.histogram,
    }
}

/// Writes the file a read mode reads (buffered, 1 MiB at a time, then fdatasync),
/// outside the timed interval.
fn lay_out(
    path: &Path,
    total: u64,
    pattern: Pattern,
    seed: u64,
    ctl: &Control,
) -> Result<(), DiskError> {
    let fail = |e: io::Error| {
        DiskError::io(
            format!(
                "cannot lay out the {total}-byte file {} to read",
                path.display()
            ),
            e,
        )
    };
    let mut f = OpenOptions::new().write(true).open(path).map_err(fail)?;
    let chunk = total.min(1 << 20) as usize;
    let mut buf = vec![0u8; chunk];
    engine::fill(&mut buf, pattern, seed);
    let mut done = 0u64;
    let mut n = 0u64;
    while done < total {
        if ctl.interrupted.load(Ordering::SeqCst) {
            return Err(DiskError::Interrupted);
        }
        if pattern == Pattern::Random {
            engine::scramble(&mut buf, n, seed);
        }
        let len = (total - done).min(chunk as u64) as usize;
        f.write_all(&buf[..len]).map_err(fail)?;
        done += len as u64;
        n += 1;
    }
    f.sync_data().map_err(fail)
}

impl DiskReport {
    /// As a trial's measurement: [`DiskReport::metrics`], the latency histogram, and
    /// the whole report as a JSON artifact (`disk-report.json`, warnings included).
    pub fn measurement(&self) -> Measurement {
        Measurement {
            metrics: self.metrics(),
            histograms: vec![self.histogram_data()],
            series: Vec::new(),
            artifacts: vec![ArtifactData {
                name: "disk-report.json".into(),
                media_type: "application/json".into(),
                content: serde_json::to_vec_pretty(self).unwrap_or_default(),
            }],
            method: Some(self.method.clone()),
        }
    }
}

/// The metrics a disk run is compared on by default.
pub const PRIMARY: &[&str] = &["mb_s", "iops", "latency_p99_us"];

/// `[workload] kind = "disk"`: one run per trial. A partial run (ENOSPC, an I/O
/// error, the trial timeout) is a failed trial that keeps its measurement.
impl Workload for DiskSpec {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        // The I/O runs in this process: pin this thread (and the --iodepth threads it
        // spawns) to the experiment's `cpus` for the trial.
        let _pin = ctx.pin_this_thread()?;
        let ctl = Control {
            interrupted: ctx.interrupted.clone(),
            deadline: ctx.timeout.map(|t| Instant::now() + t),
        };
        match run(self, &ctl) {
            Ok(r) => match &r.problem {
                Some(p) => Err(WorkloadError::Failed {
                    message: p.clone(),
                    partial: Box::new(r.measurement()),
                }),
                None => Ok(r.measurement()),
            },
            Err(DiskError::Interrupted) => Err(WorkloadError::Interrupted),
            Err(e) => Err(WorkloadError::Setup(e.describe())),
        }
    }
}
