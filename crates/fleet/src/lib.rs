//! perflab-fleet: perflab beyond one machine, over the remote-execution engine users
//! already have — OpenSSH — and no agent or daemon of its own.
//!
//! - [`inventory`]: the hosts (`[[hosts]]` tables or an Ansible INI inventory; keys or
//!   an agent only, never a password);
//! - [`hosts`]: a run's hosts ([`Fleet`]) and how their workers are reached;
//! - [`link`]: that reaching, behind one trait — [`ssh`], the system ssh client as the
//!   transport, batch-mode, bounded, host keys checked; [`pipe`], the worker's loop in a
//!   thread of this process (fleet's tests, no sshd);
//! - [`wire`]: every message between perflab and a worker, one JSON line each;
//! - [`deploy`]: which perflab runs on a host (this binary copied when it fits);
//! - [`worker`]: `perflab worker`, one trial from a JSON spec on stdin to JSON events on
//!   stdout, stopped by the end of its stdin;
//! - [`placement`]: which hosts a run needs, found and checked in its inventory
//!   before any is contacted (`perflab run --on`, the one-trial commands' `--on`);
//! - [`remote`]: the runner's factory for runs over hosts (`on = [...]`, `--on`,
//!   `[workload] host`) and its opener of sessions with hosts;
//! - [`agent`] and [`agents`]: distributed load (`perflab http --agents`), the agent's
//!   side and the controller's: split, barrier, merge; [`agents_trial`]: the same as
//!   an experiment's trial (`[workload] agents = [...]`); [`agent_hosts`]: which
//!   hosts or nodes it runs from, checked; its two links: [`ssh_agents`] (one ssh
//!   session per host) and [`slurm`] (one `srun` over K nodes);
//! - [`session`]: a session with a host for the service under test and the monitor
//!   that run there (`[service] host`, `[monitor] host`);
//! - [`relay`]: a perflab subcommand re-run on hosts with its output relayed as it
//!   comes — only for a live view (`perflab top --on`); measurements take the worker.
//!
//! The trial seam is `perflab_workloads::spec::TrialSpec` (docs/architecture.md, "the
//! trial seam"): the same spec a local trial runs is what the worker reads; fleet's
//! tests (`crates/fleet/tests`) drive it over [`pipe`] links, without sshd.

pub mod agent;
pub mod agent_hosts;
pub mod agents;
pub mod agents_trial;
pub mod deploy;
pub mod hosts;
pub mod inventory;
pub mod link;
pub mod pipe;
pub mod placement;
pub mod relay;
pub mod remote;
pub mod session;
pub mod slurm;
pub mod ssh;
pub mod ssh_agents;
pub mod wire;
pub mod worker;

pub use hosts::Fleet;
pub use inventory::{Host, Inventory, InventoryError};
pub use placement::{FleetOptions, PlacementError};
pub use ssh::Ssh;
