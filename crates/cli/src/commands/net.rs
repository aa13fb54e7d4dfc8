//! `perflab net`: TCP stream throughput with the CPU it costs, or request/response
//! rate and latency — an experiment run by the runner (`kind = "net"`,
//! crates/workloads/src/net.rs); `perflab net --serve` is the sink for another host.

use std::process::ExitCode;

use anyhow::Context;
use perflab_workloads::net::{NetSpec, Sink};

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

    /// Seconds of traffic per trial.
    #[arg(long, short = 'd', default_value_t = 3.0)]
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

pub fn run(g: &Global, a: &NetArgs) -> anyhow::Result<ExitCode> {
    if a.serve {
        let sink = Sink::start(&format!("{}:{}", a.bind, a.port))
            .with_context(|| format!("cannot listen on {}:{}", a.bind, a.port))?;
        println!("listening on {}", sink.addr);
        sink.wait();
        return Ok(ExitCode::SUCCESS);
    }
    let spec = NetSpec {
        mode: a.mode.clone(),
        peer: a.peer.clone(),
        streams: a.streams,
        duration: a.duration,
        size: a.size,
    };
    spec.validate().map_err(|e| {
        InvalidInput(
            e.render(&|f| perflab_units::flag_for(&[("streams", "-P"), ("peer", "PEER")], f)),
        )
    })?;
    oneliner::runs(a.runs)?;
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
    let q = oneliner::q;
    let peer = a
        .peer
        .as_deref()
        .map(|p| format!("peer = {}\n", q(p)))
        .unwrap_or_default();
    let text = format!(
        "[experiment]\nname = \"net\"\nrepetitions = {}\nwarmup = 0\nnoise_check = false\n\n\
         [workload]\nkind = \"net\"\nmode = {}\n{peer}streams = {}\nduration = {:?}\nsize = {}\n",
        a.runs,
        q(&a.mode),
        a.streams,
        a.duration,
        a.size
    );
    let title = format!(
        "net {} · {}",
        a.mode,
        a.peer.as_deref().unwrap_or("127.0.0.1 (sink here)")
    );
    oneliner::run(g, "net", &text, a.json, &title)
}
