//! `perflab disk PATH`: one dd/fio-class disk measurement with the device's iostat
//! figures over the run — a one-trial run of kind `disk` (`perflab_lab::single`),
//! here or on an inventory host with `--on HOST`.
//!
//! Thin by design: flags become a [`DiskSpec`], the runner runs it as a trial (the
//! workload, `perflab_workloads::disk`, always removes its file) and records it; this
//! file checks PATH first (here), prints the trial's report (text or `--json`), and
//! maps the outcome to the exit codes: 0 ok, 1 could not run, 2 bad input (nothing
//! measured, nothing left behind), 4 finished with a flagged problem (ENOSPC or an I/O
//! error mid-run: the partial result is printed and stored), 130 interrupted (the run
//! is stored as interrupted).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use perflab_lab::single::{OneTrial, Shot};
use perflab_store::{Store, TrialStatus};
use perflab_workloads::disk::{self, ByteSize, DiskError, DiskReport, DiskSpec, Mode, Pattern};
use perflab_workloads::spec::{Builtin, KindSpec};
use serde_json::json;

use crate::exit::{InvalidInput, FAILURES, INTERRUPTED};
use crate::Global;

const DISK_HELP: &str = "\
Examples:
  perflab disk /var/tmp --bs 1M --size 1G --direct
  perflab disk /var/tmp/f --bs 16k --size 256M --fdatasync-end
  perflab disk /var/tmp --mode randread --bs 4k --size 256M --direct --iodepth 16 --json
  perflab disk /dev/sdX --i-know-this-destroys-data /dev/sdX --direct
  perflab disk /var/tmp --bs 1M --size 1G --direct --on b --hosts hosts.toml

Sizes are powers of 1024 (16k = 16384, 1M, 1G); rates are MB/s = 10^6 bytes/s, like dd
and fio. The timed interval covers the I/O and, with --fdatasync-end, the final
fdatasync. Read modes lay the file out first (written, fdatasynced) and drop it from the
page cache before reading, unless --cached. Like fio, the file is advised sequential (or
random for rand modes: no readahead). --iodepth N runs N threads doing pread/pwrite
(a thread pool, not io_uring). The file is created by perflab and always removed.

With --on HOST the test runs on that inventory host (PATH is a path there) and the
run is stored here, as `perflab run --on` stores it.

Exit codes: 0 ok, 1 could not run, 2 bad input (nothing was written),
            4 finished with a flagged problem (e.g. disk full: partial result), 130 interrupted.";

/// Measure a disk: write or read a file (dd/fio-like) and show the device's iostat figures.
#[derive(Debug, clap::Args)]
#[command(after_help = DISK_HELP)]
pub struct DiskArgs {
    /// A new file to create, or a directory to create it in (removed afterwards); a block
    /// device only for reads, or with --i-know-this-destroys-data.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,

    /// Access pattern.
    #[arg(long, default_value = "write", value_parser = ["write", "read", "randwrite", "randread"])]
    pub mode: String,

    /// Bytes per I/O (powers of 1024: 512, 4k, 16k, 1M).
    #[arg(long, value_name = "SIZE", default_value = "1M", value_parser = parse_size)]
    pub bs: ByteSize,

    /// Total bytes, a multiple of --bs [default: 1G unless --count].
    #[arg(long, value_name = "SIZE", value_parser = parse_size, conflicts_with = "count")]
    pub size: Option<ByteSize>,

    /// Number of I/Os (instead of --size).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,

    /// O_DIRECT: bypass the page cache (aligned buffers; --bs must be a multiple of the
    /// device's logical block size).
    #[arg(long)]
    pub direct: bool,

    /// O_DSYNC: each write returns once on stable storage.
    #[arg(long)]
    pub dsync: bool,

    /// fdatasync after the last write, inside the timed interval (dd conv=fdatasync).
    #[arg(long)]
    pub fdatasync_end: bool,

    /// Data written: random (incompressible) or zero.
    #[arg(long, default_value = "random", value_parser = ["random", "zero"])]
    pub pattern: String,

    /// I/Os in flight: N threads doing pread/pwrite.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub iodepth: u32,

    /// Read modes: keep the file in the page cache (measures memory, not the disk).
    #[arg(long)]
    pub cached: bool,

    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,

    /// Allow writing to the block device PATH; must name the same device.
    #[arg(long = "i-know-this-destroys-data", value_name = "DEVICE")]
    pub destroy: Option<PathBuf>,

    #[command(flatten)]
    pub remote: crate::commands::on_host::OnHost,
}

fn parse_size(s: &str) -> Result<ByteSize, String> {
    s.parse()
}

/// The spec the flags describe.
pub fn spec_from_args(a: &DiskArgs) -> DiskSpec {
    DiskSpec {
        mode: a.mode.parse().unwrap_or(Mode::Write),
        bs: a.bs,
        size: a.size,
        count: a.count,
        direct: a.direct,
        dsync: a.dsync,
        fdatasync_end: a.fdatasync_end,
        pattern: a.pattern.parse().unwrap_or(Pattern::Random),
        iodepth: a.iodepth,
        cached: a.cached,
        i_know_this_destroys_data: a.destroy.clone(),
        ..DiskSpec::new(a.path.clone())
    }
}

/// Runs `perflab disk`: one trial of kind `disk`, here or `--on HOST`.
pub fn run(g: &Global, a: &DiskArgs) -> anyhow::Result<ExitCode> {
    let spec = spec_from_args(a);
    spec.validate().map_err(invalid)?;
    a.remote.check(None)?;
    if a.remote.on.is_none() {
        // Everything that can be checked at PATH, before anything is stored: the file
        // is created and removed again (the trial makes its own).
        preflight(&spec)?;
    }
    let one = OneTrial {
        kind: "disk".into(),
        name: format!("disk {} {}", spec.mode, spec.path.display()),
        params: spec.params(),
        workload: KindSpec::Disk(spec.clone()),
        environment: json!({}),
        on: a.remote.on.clone(),
    };
    let exp = one.experiment()?;
    let fleet = a.remote.fleet(&exp)?;
    let flag = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    if !g.quiet && !a.json && std::io::stderr().is_terminal() {
        eprintln!(
            "disk: {} {} × {} at {}{} …",
            spec.mode,
            spec.ios(),
            spec.bs,
            a.path.display(),
            a.remote
                .on
                .as_ref()
                .map(|h| format!(" on {h}"))
                .unwrap_or_default()
        );
    }
    let store = Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let shot =
        crate::commands::on_host::run_one(&one, &exp, &store, flag, fleet.as_ref(), &Builtin);
    let shot = shot.context("cannot run the disk test")?;
    report(g, a, &store, &shot)
}

/// Prints the trial's report, adds what it says about the disk to the run's
/// environment, and maps the outcome to the exit status.
fn report(g: &Global, a: &DiskArgs, store: &Store, shot: &Shot) -> anyhow::Result<ExitCode> {
    let run_id = shot.outcome.run_id;
    let Some(mut report) = disk_report(shot) else {
        if shot.status == TrialStatus::Interrupted {
            eprintln!("interrupted: nothing was measured (run {run_id} is marked interrupted); the file was removed");
            return Ok(ExitCode::from(INTERRUPTED));
        }
        let e = shot.error.clone().unwrap_or_else(|| "no report".into());
        return Err(anyhow::anyhow!(e).context("cannot run the disk test"));
    };
    store
        .add_run_environment(
            run_id,
            &json!({
                "method": report.method,
                "device": report.device,
                "partition": report.partition,
                "file_system": report.file_system,
            }),
        )
        .context("cannot record the run into the store")?;
    // The trial's report names options by key; this command names them by flag.
    report.name_fields(&flag_of);
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
        for w in &report.warnings {
            eprintln!("warning: {w}");
        }
    } else {
        write!(out, "{}", disk::text::render(&report))?;
    }
    out.flush()?;
    eprintln!("run {run_id} recorded in {}", g.store.display());
    Ok(match &report.problem {
        Some(p) => {
            eprintln!("partial result: {p}");
            ExitCode::from(FAILURES)
        }
        None if shot.status == TrialStatus::Interrupted => ExitCode::from(INTERRUPTED),
        None => ExitCode::SUCCESS,
    })
}

/// The disk report the trial's workload returned (its `disk-report.json` artifact,
/// the same here or from another host).
fn disk_report(shot: &Shot) -> Option<DiskReport> {
    let m = shot.measurement.as_ref()?;
    let a = m
        .artifacts
        .iter()
        .find(|a| a.name == perflab_store::vocab::ARTIFACT_DISK_REPORT)?;
    serde_json::from_slice(&a.content).ok()
}

/// Checks PATH as the run will (it exists, the file can be made, O_DIRECT alignment):
/// bad input exits 2 with nothing stored.
fn preflight(spec: &DiskSpec) -> anyhow::Result<()> {
    match disk::target::prepare(spec) {
        Ok(target) => {
            drop(target);
            Ok(())
        }
        Err(e @ DiskError::Invalid(_)) => Err(invalid(e)),
        Err(e) => {
            let e = e.render(&flag_of);
            Err(anyhow::anyhow!(e).context("cannot run the disk test"))
        }
    }
}

/// This command's flag for a disk spec field: each is `--field` (`i_know_this_destroys_data`
/// is `--i-know-this-destroys-data`), so no table.
fn flag_of(field: &str) -> String {
    perflab_units::flag_for(&[], field)
}

/// The disk library names the fields it checked (`bs`); here they are flags (`--bs`).
fn invalid(e: DiskError) -> anyhow::Error {
    anyhow::Error::new(InvalidInput(format!(
        "{} (see `perflab disk --help`)",
        e.render(&flag_of)
    )))
}
