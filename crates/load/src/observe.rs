//! Progress callbacks: the engine calls an [`Observer`] once per recorded second and
//! once per finished ramp / find-max step, from the calling thread. The CLI uses it for
//! the live line on a TTY; libraries can ignore it ([`NoObserver`]).

use crate::report::Step;
use crate::series::SecondPoint;
use hdrhistogram::Histogram;

/// Receives progress while a run goes on.
pub trait Observer {
    /// One recorded second finished.
    fn second(&mut self, _point: &SecondPoint) {}
    /// The same second's latency histogram (µs; corrected in open loop), just before
    /// [`Observer::second`]: for a caller that adds the seconds of several generators
    /// (a distributed load's agents stream it).
    fn interval(&mut self, _point: &SecondPoint, _hist: &Histogram<u64>) {}
    /// A find-max step at `rate` req/s is about to start (before its connections
    /// open): a caller that watches the host takes its "before" readings here.
    fn step_started(&mut self, _rate: f64) {}
    /// A ramp or find-max step finished.
    fn step(&mut self, _step: &Step) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoObserver;

impl Observer for NoObserver {}
