//! A session with perflab on a host, for the parts of a trial that run there while
//! the workload runs elsewhere: the service under test (`[service] host = "b"`), the
//! telemetry sampled beside it (`[monitor] host = "b"`) and its profile
//! (`[profile] host = "b"`).
//!
//! It is the same `perflab worker` as a remote trial, reached the same way (`ssh HOST
//! perflab worker`, or the fleet's other [`WorkerLink`](crate::link::WorkerLink)), kept
//! open for the whole run: the controller writes one [`Request`](crate::wire::Request)
//! per line on the worker's stdin, the worker answers each with one
//! [`Reply`](crate::wire::Reply) per line on stdout ([`serve`] is its side,
//! [`HostSession`] the controller's). The worker does the work with the code a local
//! trial uses (`perflab_lab::site`): the service is rendered there and started by
//! `RunningService` — own process group, log file, readiness check — and the monitor
//! and the profiler (perf, started and stopped around each trial's workload) follow the
//! service's pid as that host sees it. The profile is reduced there, and what comes
//! back is what the trial stores (`perflab_lab::site::ProfileResult`); a host that
//! cannot profile answers `failed`, and the session goes on.
//!
//! Stopping is the end of stdin, as for a remote trial: when the controller ends the
//! run, is interrupted or dies, or the connection drops (no pty: no SIGHUP), the worker
//! reads the end of its stdin, kills perf, stops the monitor and the service (its stop
//! signal, then SIGKILL of its process group after the grace), removes its scratch
//! directory and exits. No service, and no perf, outlives its session.

mod client;
mod serve;

pub use client::HostSession;
pub use serve::serve;
