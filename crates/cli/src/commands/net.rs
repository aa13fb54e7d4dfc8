//! `perflab net`: TCP stream throughput with the CPU it costs, or request/response
//! rate and latency — an experiment run by the runner (`kind = "net"`,
//! crates/workloads/src/net.rs); `perflab net --serve` is the sink for another host.

use std::process::ExitCode;

use anyhow::Context;
use perflab_lab::experiment::Draft;
use perflab_workloads::net::{NetSpec, Sink};
use perflab_workloads::spec::Kind;

use crate::commands::oneliner;
use crate::exit::InvalidInput;
use crate::Global;

/// TCP throughput and the CPU it costs (a stream of zeros, as `nc` or iperf3), or
/// request/response rate and latency (as netperf TCP_RR). Without PEER a sink runs
/// here on 127.0.0.1; `perflab net --serve` is the sink for another host.
///
/// Examples:
///   perflab net                                       # loopback stream, 1 connection
///   perflab net -P 4 --mode stream 10.0.0.2:5301      # to `perflab net --serve` there
///   perflab net --mode rr --size 64 --json
///   perflab net --serve --port 5301                   # the sink; Ctrl-C stops it
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct NetArgs {
    /// HOST:PORT of a `perflab net --serve`.
    #[arg(value_name = "PEER")]
    pub peer: Option<String>,

    /// Run the sink: accept connections until stopped.
    #[arg(long, conflicts_with = "peer")]
    pub serve: bool,

    /// With --serve: the port (the address is --bind).
    #[arg(long, default_value_t = 5301)]
    pub port: u16,

    /// With --serve: the address to listen on.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind: String,

    /// stream (throughput and CPU per GB) or rr (transactions and latency).
    #[arg(long, default_value = "stream")]
    pub mode: String,

    /// Parallel connections.
    #[arg(long = "parallel", short = 'P', default_value_t = 1)]
    pub streams: usize,

    /// Traffic per trial (`3s`, `500ms`, `1m`; a plain number is seconds).
    #[arg(long, short = 'd', default_value = "3s", value_parser = oneliner::seconds)]
    pub duration: f64,

    /// rr: bytes per request and response.
    #[arg(long, default_value_t = 1)]
    pub size: usize,

    /// Repetitions (trials).
    #[arg(long, short = 'r', default_value_t = 3)]
    pub runs: u32,

    /// Print the summary as JSON (the `show --json` contract).
    #[arg(long)]
    pub json: bool,
}

/// The experiment `perflab net` runs: one config, the flags as its options.
pub fn experiment(a: &NetArgs) -> Result<Draft, InvalidInput> {
    let spec = NetSpec {
        mode: a.mode.clone(),
        peer: a.peer.clone(),
        streams: a.streams,
        duration: a.duration,
        size: a.size,
    };
    spec.validate().map_err(|e| {
        InvalidInput(crate::exit::as_flags(
            &e,
            &[("streams", "-P"), ("peer", "PEER")],
        ))
    })?;
    oneliner::runs(a.runs)?;
    let draft = Draft::new("net", Kind::Net, &spec).map_err(oneliner::usage)?;
    // Interleaving has one config to interleave: the order is left as the file's.
    Ok(Draft {
        order: None,
        ..oneliner::fixed(draft, a.runs, 0)
    })
}

pub fn run(g: &Global, a: &NetArgs) -> anyhow::Result<ExitCode> {
    if a.serve {
        let sink = Sink::start(&format!("{}:{}", a.bind, a.port))
            .with_context(|| format!("cannot listen on {}:{}", a.bind, a.port))?;
        println!("listening on {}", sink.addr);
        sink.wait();
        return Ok(ExitCode::SUCCESS);
    }
    let draft = experiment(a)?;
    // An unreachable peer is a run that cannot start (exit 1), said once, up front.
    if let Some(p) = &a.peer {
        use std::net::ToSocketAddrs;
        let addr = p
            .to_socket_addrs()
            .map_err(|e| InvalidInput(format!("PEER {p:?}: {e}")))?
            .next()
            .ok_or_else(|| InvalidInput(format!("PEER {p:?}: no address")))?;
        std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(5))
            .with_context(|| {
                format!("cannot reach {p}: is `perflab net --serve` running there?")
            })?;
    }
    let title = format!(
        "net {} · {}",
        a.mode,
        a.peer.as_deref().unwrap_or("127.0.0.1 (sink here)")
    );
    oneliner::run(g, &draft, a.json, &title)
}

#[cfg(test)]
mod tests {
    use crate::commands::oneliner::round_trip;

    #[test]
    fn the_experiment_reads_back_as_built() {
        let a = round_trip::args(&["--mode", "rr", "--size", "64", "-d", "1s", "-r", "2"]);
        let e = round_trip::check(&super::experiment(&a).unwrap());
        assert_eq!(e.config_count(), 1);
        let a = round_trip::args(&["-P", "4", "10.0.0.2:5301", "-d", "2.5"]);
        round_trip::check(&super::experiment(&a).unwrap());
    }
}
