//! `perflab disk PATH`: one dd/fio-class disk measurement with the device's iostat
//! figures over the run, recorded into the store as a one-config, one-trial run of
//! kind `disk`.
//!
//! Thin by design: flags become a [`DiskSpec`], `perflab_workloads::disk::run` does
//! the work (and always removes its file), this file prints (text or `--json`),
//! records, and maps the outcome to the exit codes: 0 ok, 1 could not run, 2 bad
//! input (nothing measured, nothing left behind), 4 finished with a flagged problem
//! (ENOSPC or an I/O error mid-run: the partial result is printed and stored), 130
//! interrupted.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use perflab_store::{RunId, Store};
use perflab_workloads::disk::{
    self, ByteSize, Control, DiskError, DiskReport, DiskSpec, Mode, Pattern,
};
use serde_json::json;

use crate::exit::{InvalidInput, FAILURES, INTERRUPTED};
use crate::Global;

const DISK_HELP: &str = "\
Examples:
  perflab disk /var/tmp --bs 1M --size 1G --direct
  perflab disk /var/tmp/f --bs 16k --size 256M --fdatasync-end
  perflab disk /var/tmp --mode randread --bs 4k --size 256M --direct --iodepth 16 --json
  perflab disk /dev/sdX --i-know-this-destroys-data /dev/sdX --direct

Sizes are powers of 1024 (16k = 16384, 1M, 1G); rates are MB/s = 10^6 bytes/s, like dd
and fio. The timed interval covers the I/O and, with --fdatasync-end, the final
fdatasync. Read modes lay the file out first (written, fdatasynced) and drop it from the
page cache before reading, unless --cached. Like fio, the file is advised sequential (or
random for rand modes: no readahead). --iodepth N runs N threads doing pread/pwrite
(a thread pool, not io_uring). The file is created by perflab and always removed.

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

/// Runs `perflab disk`.
pub fn run(g: &Global, a: &DiskArgs) -> anyhow::Result<ExitCode> {
    let spec = spec_from_args(a);
    spec.validate().map_err(invalid)?;
    let flag = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    let ctl = Control {
        interrupted: flag,
        deadline: None,
    };
    if !g.quiet && !a.json && std::io::stderr().is_terminal() {
        eprintln!(
            "disk: {} {} × {} at {} …",
            spec.mode,
            spec.ios(),
            spec.bs,
            a.path.display()
        );
    }
    let report = match disk::run(&spec, &ctl) {
        Ok(r) => r,
        Err(DiskError::Interrupted) => {
            eprintln!("interrupted: nothing was recorded; the file was removed");
            return Ok(ExitCode::from(INTERRUPTED));
        }
        Err(e @ DiskError::Invalid(_)) => return Err(invalid(e)),
        Err(e) => {
            let e = e.render(&flag_of);
            return Err(anyhow::anyhow!(e).context("cannot run the disk test"));
        }
    };
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
    let run_id = record(g, &spec, &report).context("cannot record the run into the store")?;
    eprintln!("run {run_id} recorded in {}", g.store.display());
    Ok(match &report.problem {
        Some(p) => {
            eprintln!("partial result: {p}");
            ExitCode::from(FAILURES)
        }
        None => ExitCode::SUCCESS,
    })
}

/// Records the run through lab: a run of kind `disk`, one config (the options), one
/// trial (metrics, latency histogram, the report as a JSON artifact).
fn record(g: &Global, spec: &DiskSpec, r: &DiskReport) -> anyhow::Result<RunId> {
    let store = Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let shot = perflab_lab::record::OneShot {
        kind: "disk",
        name: format!("disk {} {}", r.mode, spec.path.display()),
        params: spec.params(),
        environment: json!({
            "method": r.method,
            "device": r.device,
            "partition": r.partition,
            "file_system": r.file_system,
        }),
        measurement: r.measurement(),
        duration_s: r.seconds,
        // A problem is what makes a report partial: the trial is failed, its figures kept.
        error: r.problem.clone(),
    };
    Ok(perflab_lab::record::one_shot(&store, shot)?)
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
