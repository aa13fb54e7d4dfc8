//! perflab-fleet: perflab beyond one machine, over the remote-execution engine users
//! already have — OpenSSH — and no agent or daemon of its own.
//!
//! - [`inventory`]: the hosts (`[[hosts]]` tables or an Ansible INI inventory; keys or
//!   an agent only, never a password);
//! - [`ssh`]: the system ssh client as the transport, batch-mode, bounded, host keys
//!   checked;
//! - [`deploy`]: which perflab runs on a host (this binary copied when it fits);
//! - [`worker`]: `perflab worker`, one trial from a JSON spec on stdin to JSON events on
//!   stdout, stopped by the end of its stdin;
//! - [`placement`]: which hosts a run needs, found and checked in its inventory
//!   before any is contacted (`perflab run --on`, the one-trial commands' `--on`);
//! - [`remote`]: the runner's factory for runs over hosts (`on = [...]`, `--on`,
//!   `[workload] host`) and its opener of sessions with hosts;
//! - [`agent`] and [`agents`]: distributed load (`perflab http --agents`), the agent's
//!   side and the controller's: split, barrier, merge; [`agents_trial`]: the same as
//!   an experiment's trial (`[workload] agents = [...]`);
//! - [`session`]: a session with a host for the service under test and the monitor
//!   that run there (`[service] host`, `[monitor] host`).
//!
//! The trial seam is `perflab_workloads::spec::TrialSpec` (docs/architecture.md): the
//! same spec a local trial runs is what the worker reads.

pub mod agent;
pub mod agents;
pub mod agents_trial;
pub mod deploy;
pub mod inventory;
pub mod placement;
pub mod relay;
pub mod remote;
pub mod session;
pub mod slurm;
pub mod ssh;
pub mod ssh_agents;
pub mod worker;

pub use inventory::{Host, Inventory, InventoryError};
pub use placement::{FleetOptions, PlacementError};
pub use remote::Fleet;
pub use ssh::Ssh;
