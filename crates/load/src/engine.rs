//! Runs one *phase* — a fixed load (connections, or a rate) for a duration or a request
//! count — on worker threads, and coordinates them from the calling thread: the
//! coordinator merges the per-second ticks into the series and the totals, feeds the
//! observer (live line) and the interval log, and joins the workers. A plain run is one
//! phase; a ramp or a knee search is a sequence of phases.

use crate::closed::ClosedLoop;
use crate::epoll::EpollDriver;
use crate::error::LoadError;
use crate::hdrlog::HdrLog;
use crate::io::Io;
use crate::observe::Observer;
use crate::open::OpenLoop;
use crate::record::{new_histogram, Msg, Totals};
use crate::request::Prepared;
use crate::series::PhaseResult;
use crate::series::SecondMerger;
use crate::uring::UringDriver;
use crate::worker::{Driver, Model, Worker, WorkerConfig};
use std::sync::atomic::{AtomicBool, AtomicI64};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// The load of one phase.
#[derive(Debug, Clone)]
pub(crate) struct Phase {
    pub connections: usize,
    pub threads: usize,
    pub max_connections: usize,
    pub rate: Option<f64>,
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    pub warmup: Duration,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// The I/O driver of the workers.
    pub io: Io,
}

/// Shared context of the phases of one run.
pub(crate) struct RunContext<'a> {
    pub observer: &'a mut dyn Observer,
    pub hdr_log: Option<HdrLog>,
    /// Base time of the interval log.
    pub origin: Instant,
    /// Seconds already used by earlier phases (series numbering).
    pub second_offset: u64,
    /// Set from outside (Ctrl-C): the workers end the phase at their next turn, and
    /// later phases end as they start.
    pub stop: Arc<AtomicBool>,
}

/// Splits `total` into `parts` near-equal shares.
fn share(total: usize, parts: usize, i: usize) -> usize {
    total / parts + usize::from(i < total % parts)
}

/// Runs one phase to completion.
pub(crate) fn run_phase(
    prepared: &Arc<Prepared>,
    phase: &Phase,
    ctx: &mut RunContext<'_>,
) -> Result<PhaseResult, LoadError> {
    let threads = phase.threads.clamp(1, phase.connections.max(1));
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    let record_start = start + phase.warmup;
    let end = phase.duration.map(|d| record_start + d);
    let tickets = phase
        .requests
        .map(|n| Arc::new(AtomicI64::new(n.min(i64::MAX as u64) as i64)));
    let mut handles = Vec::with_capacity(threads);
    let phase_io = phase.io;
    for i in 0..threads {
        let model = match phase.rate {
            Some(rate) => {
                let offset = Duration::from_secs_f64(i as f64 / rate);
                let max = share(phase.max_connections, threads, i).max(share(
                    phase.connections,
                    threads,
                    i,
                ));
                Model::Open(OpenLoop::new(rate / threads as f64, start + offset, max))
            }
            None => Model::Closed(ClosedLoop::new(tickets.clone())),
        };
        let cfg = WorkerConfig {
            thread: i,
            prepared: Arc::clone(prepared),
            connections: share(phase.connections, threads, i),
            record_start,
            end,
            timeout: phase.timeout,
            connect_timeout: phase.connect_timeout,
            tx: tx.clone(),
            stop: Arc::clone(&ctx.stop),
        };
        let handle = std::thread::Builder::new()
            .name(format!("perflab-load-{i}"))
            .spawn(move || match phase_io {
                Io::Epoll => work::<EpollDriver>(cfg, model),
                Io::Uring => work::<UringDriver>(cfg, model),
            })
            .map_err(|source| LoadError::Io {
                what: "cannot start a worker thread",
                source,
            })?;
        handles.push(handle);
    }
    drop(tx);
    let result = coordinate(rx, threads, phase.rate.is_some(), record_start, ctx);
    for h in handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(source)) => {
                return Err(LoadError::Io {
                    what: "a load worker failed",
                    source,
                })
            }
            Err(_) => return Err(LoadError::WorkerPanicked),
        }
    }
    result
}

/// One worker thread's life: its driver is set up on the thread that uses it (an
/// io_uring is created for a single issuer).
fn work<D: Driver>(cfg: WorkerConfig, model: Model) -> std::io::Result<()> {
    Worker::<D>::new(cfg, model)?.run()
}

/// Receives ticks until every worker is done.
fn coordinate(
    rx: mpsc::Receiver<Msg>,
    threads: usize,
    open: bool,
    record_start: Instant,
    ctx: &mut RunContext<'_>,
) -> Result<PhaseResult, LoadError> {
    let mut merger = SecondMerger::new(threads);
    let mut res = PhaseResult {
        hist: new_histogram(),
        hist_uncorrected: open.then(new_histogram),
        series: Vec::new(),
        totals: Totals::default(),
        elapsed: Duration::ZERO,
    };
    let log_base = record_start.saturating_duration_since(ctx.origin);
    for msg in rx {
        match msg {
            Msg::Tick(t) => merger.add(*t),
            Msg::Done(i, totals) => {
                res.totals.merge(&totals);
                res.elapsed = res.elapsed.max(totals.wall);
                merger.done(i);
            }
        }
        while let Some(sec) = merger.pop_ready() {
            let _ = res.hist.add(&sec.hist);
            if let (Some(a), Some(b)) = (&mut res.hist_uncorrected, &sec.hist_uncorrected) {
                let _ = a.add(b);
            }
            if let Some(log) = &mut ctx.hdr_log {
                let at = log_base + Duration::from_secs(sec.second);
                log.interval(at, sec.len, &sec.hist, None)?;
                if let Some(u) = &sec.hist_uncorrected {
                    log.interval(at, sec.len, u, Some("uncorrected"))?;
                }
            }
            let point = sec.point(ctx.second_offset);
            ctx.observer.interval(&point, &sec.hist);
            ctx.observer.second(&point);
            res.series.push(point);
        }
    }
    ctx.second_offset += res.series.len() as u64;
    Ok(res)
}
