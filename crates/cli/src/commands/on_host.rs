//! `--on HOST` and its inventory flags, written once.
//!
//! [`OnHost`] is what the one-trial commands (`perflab http`, `disk`, ...) flatten in:
//! their one trial runs on that inventory host through the worker `perflab run --on`
//! uses, placed by crate fleet ([`placement`]: every problem exits 2 before any host is
//! contacted). [`OnArgs`] is the relay's form for `perflab top`, a live view (several
//! hosts, the subcommand re-run there: `perflab_fleet::relay`), and [`weightiest`] the
//! exit status of several hosts' runs (`top --on`, `doctor --on a,b`).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use perflab_fleet::relay::{Ended, Relay, RelayError};
use perflab_fleet::{Host, Ssh};

use crate::exit::{InvalidInput, ERROR, INTERRUPTED};

/// The flags that run a one-trial command on an inventory host instead of here.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OnHost {
    /// Run it on this inventory host over ssh (perflab copied there as for `run --on`,
    /// the trial run by `perflab worker`); the run is stored here, its trial with the
    /// parameter host = HOST (docs/fleet.md).
    #[arg(long, value_name = "HOST")]
    pub on: Option<String>,

    /// The inventory of --on (and --agents), `[[hosts]]` tables (.toml) or an Ansible
    /// INI file [default: hosts.toml].
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,

    /// With --on (or --agents): trust a host's key seen for the first time (never a
    /// changed one).
    #[arg(long)]
    pub accept_new_host_keys: bool,
}

impl OnHost {
    /// `--hosts` and `--accept-new-host-keys` mean something only with a host to reach
    /// (`--on`, or `other`: e.g. http's `--agents`): a usage error otherwise.
    pub fn check(&self, other: Option<&str>) -> anyhow::Result<()> {
        if self.on.is_some() || other.is_some() {
            return Ok(());
        }
        let flag = match (&self.hosts, self.accept_new_host_keys) {
            (Some(_), _) => "--hosts",
            (None, true) => "--accept-new-host-keys",
            (None, false) => return Ok(()),
        };
        Err(InvalidInput(format!(
            "{flag} is for --on HOST: give the host, or drop {flag}"
        ))
        .into())
    }

    /// The one trial's fleet: `None` without `--on`; the inventory read and the host
    /// checked otherwise.
    pub fn fleet(
        &self,
        exp: &perflab_lab::Experiment,
    ) -> anyhow::Result<Option<perflab_fleet::Fleet>> {
        if self.on.is_none() {
            return Ok(None);
        }
        let opts = perflab_fleet::FleetOptions {
            hosts: self.hosts.clone(),
            accept_new_host_keys: self.accept_new_host_keys,
        };
        placement(exp, &opts)
    }
}

/// The fleet an experiment needs ([`perflab_fleet::Fleet::for_experiment`]); a
/// placement problem is bad input (exit 2), a scratch directory that cannot be made an
/// error (1).
pub fn placement(
    exp: &perflab_lab::Experiment,
    opts: &perflab_fleet::FleetOptions,
) -> anyhow::Result<Option<perflab_fleet::Fleet>> {
    use perflab_fleet::PlacementError;
    perflab_fleet::Fleet::for_experiment(exp, opts).map_err(|e| match e {
        e @ PlacementError::Scratch { .. } => anyhow::anyhow!(e),
        e => InvalidInput(e.to_string()).into(),
    })
}

/// Runs a single-shot command's one trial through the runner: here with `local` (the
/// builtin workloads, or the command's own factory), or on the `--on` host through `fleet`;
/// then removes the fleet's scratch directory. The runner's warnings are not printed: the
/// command prints its own report.
pub fn run_one(
    one: &perflab_lab::single::OneTrial,
    exp: &perflab_lab::Experiment,
    store: &perflab_store::Store,
    interrupted: Arc<AtomicBool>,
    fleet: Option<&perflab_fleet::Fleet>,
    local: &dyn perflab_workloads::spec::WorkloadFactory,
) -> Result<perflab_lab::single::Shot, perflab_lab::runner::RunError> {
    let shot = perflab_lab::single::run(
        one,
        exp,
        store,
        &perflab_lab::runner::RunContext {
            interrupted,
            observer: &perflab_lab::observe::Silent,
            factory: fleet.map_or(local, |f| {
                f as &dyn perflab_workloads::spec::WorkloadFactory
            }),
            sites: fleet.map(|f| f as &dyn perflab_lab::site::Sites),
        },
    );
    clean(fleet);
    shot
}

/// Removes a fleet's scratch directory (the binary prepared for the hosts).
pub fn clean(fleet: Option<&perflab_fleet::Fleet>) {
    if let Some(f) = fleet {
        let _ = std::fs::remove_dir_all(&f.scratch);
    }
}

/// The flags that run a command on inventory hosts instead of here.
#[derive(Debug, Clone, clap::Args)]
pub struct OnArgs {
    /// Run it on these inventory hosts over ssh (perflab copied there as for `run
    /// --on`) and print their output here (docs/fleet.md).
    #[arg(long, value_name = "HOST,...", value_delimiter = ',')]
    pub on: Vec<String>,

    /// With --on: the inventory, `[[hosts]]` tables (.toml) or an Ansible INI file
    /// [default: hosts.toml].
    #[arg(long, value_name = "FILE", requires = "on")]
    pub hosts: Option<PathBuf>,

    /// With --on: trust a host's key seen for the first time (never a changed one).
    #[arg(long, requires = "on")]
    pub accept_new_host_keys: bool,

    /// The far end of --on: stop, as on Ctrl-C, when stdin ends.
    #[arg(long = "stop-at-stdin-eof", hide = true, conflicts_with = "on")]
    pub stop_at_stdin_eof: bool,
}

impl OnArgs {
    /// The hosts named and a relay to them: a bad inventory or an unknown host is a
    /// usage error, before anything is sent.
    pub fn relay(&self, stop: Arc<AtomicBool>) -> anyhow::Result<(Relay, Vec<Host>)> {
        // The fleet names the options `on` and `hosts` as fields; here they are flags.
        let hosts = perflab_fleet::relay::resolve(self.hosts.as_deref(), &self.on)
            .map_err(|e| InvalidInput(e.render(&|f| perflab_units::flag_for(&[], f))))?;
        let scratch = std::env::temp_dir().join(format!("perflab-relay-{}", std::process::id()));
        let relay = Relay {
            ssh: Ssh {
                accept_new_host_keys: self.accept_new_host_keys,
                ..Default::default()
            },
            scratch,
            stop,
        };
        Ok((relay, hosts))
    }

    /// On the far end of a relay: the command's Ctrl-C flag is also set when stdin ends.
    pub fn watch_stdin(&self, stop: &Arc<AtomicBool>) {
        if self.stop_at_stdin_eof {
            perflab_fleet::relay::stop_at_stdin_eof(stop.clone());
        }
    }
}

/// A relayed line of a host's stderr, here: prefixed with the host's name.
pub fn relay_stderr(host: &str, line: &str, quiet: bool) {
    if !quiet || line.starts_with("error") {
        eprintln!("{host}: {line}");
    }
}

/// The exit status of several hosts' runs: Ctrl-C first, then a host where the
/// command could not run (1, with the reason printed here), else the host's statuses
/// by weight — a usage error (2), critical (5), failures or warnings (4), ok (0). One
/// host: its own status.
pub fn exit_status(results: &[Result<Ended, RelayError>]) -> u8 {
    let mut codes = Vec::new();
    for r in results {
        match r {
            Ok(Ended::Interrupted) => codes.push(INTERRUPTED),
            Ok(Ended::ReaderGone) => codes.push(0),
            Ok(Ended::Exited(c)) => codes.push(*c),
            Err(e) => {
                eprintln!("error: {e}");
                codes.push(ERROR);
            }
        }
    }
    weightiest(&codes)
}

/// The weightiest of several hosts' exit statuses (see [`exit_status`]); one host:
/// its own.
pub fn weightiest(codes: &[u8]) -> u8 {
    if let [one] = codes[..] {
        return one;
    }
    for c in [INTERRUPTED, ERROR, 2, 5, 4] {
        if codes.contains(&c) {
            return c;
        }
    }
    codes.iter().find(|&&c| c != 0).map_or(0, |_| ERROR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_hosts_exit_with_the_weightiest_status() {
        let e = || {
            Err(RelayError {
                host: "c".into(),
                message: "host c (10.0.0.9): no route".into(),
            })
        };
        assert_eq!(exit_status(&[Ok(Ended::Exited(4))]), 4);
        assert_eq!(exit_status(&[e()]), 1);
        assert_eq!(
            exit_status(&[Ok(Ended::Exited(4)), Ok(Ended::Exited(5))]),
            5
        );
        assert_eq!(exit_status(&[Ok(Ended::Exited(5)), e()]), 1);
        assert_eq!(
            exit_status(&[Ok(Ended::Exited(0)), Ok(Ended::Interrupted)]),
            130
        );
        assert_eq!(
            exit_status(&[Ok(Ended::Exited(0)), Ok(Ended::Exited(0))]),
            0
        );
    }
}
