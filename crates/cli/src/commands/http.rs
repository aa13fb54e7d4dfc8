//! `perflab http URL`: one HTTP load test — closed loop, open loop at a rate, a ramp,
//! or a knee search — on the `perflab-load` engine, as a one-trial run of kind `http`
//! (`perflab_lab::single`), here or on an inventory host with `--on HOST`.
//!
//! This file only turns flags into a [`perflab_load::LoadSpec`] (and the same options
//! in the file form the trial carries), checks it (every input error exits 2 before a
//! byte is sent), runs the trial through the runner — locally with its own workload
//! factory, which draws the live line on stderr when that is a terminal and keeps the
//! engine's report — prints the table (or `--json`), and maps the outcome to the exit
//! codes: 0 ok, 1 could not run (no connection could be made: the cause is named before
//! a run is recorded), 2 bad input, 3 a threshold failed, 4 completed but some
//! requests failed, 130 interrupted. A distributed load (`--agents`, `--engine slurm`)
//! is its own controller over hosts (`http_agents`).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use perflab_lab::single::{OneTrial, Shot};
use perflab_load::{
    parse_duration, parse_fraction, parse_header, parse_rate, HttpVersion, Io, IoChoice, LoadError,
    LoadSpec, Mode, Ramp, RampOver, Reached, Report, Slo, SpecError, Threshold, Verdict,
};
use perflab_store::TrialStatus;
use perflab_workloads::spec::Kind;
use serde_json::json;

use crate::exit::{InvalidInput, FAILURES, GATE_FAILED, INTERRUPTED};

mod live;
use live::LiveFactory;

const HTTP_HELP: &str = "\
Examples:
  perflab http -c 10 -d 10s http://127.0.0.1:8080/
  perflab http -c 10 -d 10s --cacert ca.pem https://localhost:8443/
  perflab http --rate 2000 -c 10 -d 30s --hdr-log run.hlog http://127.0.0.1:8080/
  perflab http --ramp 1000:10000:10 --step-duration 5s http://127.0.0.1:8080/
  perflab http --find-max --slo 'p99<20ms' --max-error-rate 0.1% http://127.0.0.1:8080/
  perflab http -d 30s --threshold 'p99<20ms' --threshold 'error_rate<0.1%' http://127.0.0.1:8080/
  perflab http -c 10 -d 10s --on b http://127.0.0.1:8080/   # run on inventory host b

Durations: 10s, 500ms, 1m30s. Rates: 400, 2.5k. Open-loop latency is measured from the
intended send time (coordinated omission corrected); the uncorrected latency is shown beside.

Every test is stored as a one-trial run (`perflab show`); with --on HOST it runs on that
inventory host (the URL as seen from there) and is stored here with the parameter host.

Failed requests are HTTP errors (status >= 400) plus transport errors (no response);
the text, --json (`failed`), the siege block and the stored run count them alike.
A request still unanswered at the end of the run after more than max(1s, 10 × the
run's p99) is a transport error (`stalled`), so a run whose every request stalled
exits 4, never 0. Against a hostile HTTP/2 server the client keeps bounds and counts
what breaks them: a header block over 64 KiB or 64 frames
(`header_block_too_large`), over 128 KiB of control replies the socket does not take
(`output_queue_full`), a window past 2^31-1 (`flow_control`).

Exit codes: 0 ok, 1 could not run (no connection could be made: connection refused,
              host unreachable, connect timed out, TLS handshake failed or protocol
              not offered; nothing is recorded), 2 bad input (nothing was sent),
            3 a --threshold failed (over 4),
            4 the run completed but some requests failed (HTTP or transport errors),
            130 interrupted (the report of what ran is printed and stored).";

/// One HTTP load test: a closed loop of connections, an open loop at a rate, or a ramp;
/// latency percentiles with coordinated-omission correction.
#[derive(Debug, clap::Args)]
#[command(after_help = HTTP_HELP)]
pub struct HttpArgs {
    /// Target URL: http[s]://HOST[:PORT][/PATH].
    #[arg(value_name = "URL", required_unless_present_any = ["urls_file", "targets"])]
    pub url: Option<String>,

    /// Connections (open loop: the initial connections).
    #[arg(short = 'c', long, value_name = "N", default_value_t = 10)]
    pub connections: usize,

    /// Worker threads [default: half the usable cores, at least 1, at most one per connection].
    #[arg(short = 't', long, value_name = "N")]
    pub threads: Option<usize>,

    /// Recorded duration [default: 10s unless -n is given].
    #[arg(short = 'd', long, value_name = "DURATION")]
    pub duration: Option<String>,

    /// Stop after this many requests (closed loop).
    #[arg(short = 'n', long, value_name = "TOTAL")]
    pub requests: Option<u64>,

    /// Unrecorded load before the recorded part.
    #[arg(long, value_name = "DURATION")]
    pub warmup: Option<String>,

    /// Open loop: constant arrival rate, requests/s.
    #[arg(long, value_name = "R", allow_hyphen_values = true)]
    pub rate: Option<String>,

    /// Open loop: most connections when all are busy [default: 10 × -c].
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,

    /// Stepwise ramp START:END:STEPS of the rate (or of -c with --ramp-over connections).
    #[arg(long, value_name = "START:END:STEPS")]
    pub ramp: Option<String>,

    /// What --ramp varies.
    #[arg(long, value_name = "WHAT", default_value = "rate", value_parser = ["rate", "connections"])]
    pub ramp_over: String,

    /// Duration of each ramp / find-max step [default: a ramp's -d / STEPS, else 5s;
    /// find-max: 2s]. A find-max step is lengthened (up to 60s) to hold the samples its
    /// SLO percentile needs: 10 / (1 - q), e.g. 1,000 for p99.
    #[arg(long, value_name = "DURATION")]
    pub step_duration: Option<String>,

    /// Knee search: the highest rate that meets --slo, and what ran out at the knee
    /// (`limit`: generator, service_cpu, cpu_pressure, listen_queue, softirq,
    /// retransmits, disk, memory or unknown, with its numbers). Steps that break the
    /// SLO or come within 10 % of it are run again (two of three decide); a step is
    /// lengthened to hold the samples its percentile needs (p99: 1,000; p99.9: 10,000).
    #[arg(long)]
    pub find_max: bool,

    /// Run the --find-max search N times (1 to 100): max_rate is then their mean with
    /// a 95 % confidence interval [default: 1].
    #[arg(long, value_name = "N")]
    pub find_max_repetitions: Option<u32>,

    /// Add --find-max searches until max_rate's interval is within this share of it,
    /// e.g. 10%: from --find-max-repetitions searches (at least 5) to 4 times as many.
    /// The interval is then computed at 97 %, so that stopping on it still covers 95 %.
    #[arg(long, value_name = "PCT")]
    pub find_max_precision: Option<String>,

    /// Objective for --find-max, e.g. 'p99<20ms' or 'p50<5ms,p99.9<50ms'.
    #[arg(long, value_name = "SLO")]
    pub slo: Option<String>,

    /// Pass/fail on the finished run (repeatable): 'p99<20ms', 'mean<=5ms',
    /// 'error_rate<0.1%', 'errors<1', 'rps>5000', 'mbps>=100'; exits 3 when one fails.
    /// A latency needs its unit (ms, s, us): a bare 'p99<200' is refused (exit 2).
    /// In the open loop latency thresholds judge the corrected latency. With --targets,
    /// 'target=NAME:p99<20ms' judges one target.
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,

    /// Connect to this unix-domain socket; the URL still gives the Host header and the
    /// path (plain HTTP/1.1, e.g. `--unix-socket /run/app.sock http://localhost/api`).
    #[arg(long, value_name = "PATH")]
    pub unix_socket: Option<PathBuf>,

    /// Highest error rate a find-max step may have, e.g. 0.1% [default: 0.1%].
    #[arg(long, value_name = "FRACTION")]
    pub max_error_rate: Option<String>,

    /// Request method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,

    /// Extra request header, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,

    /// Request body.
    #[arg(long, value_name = "STR", conflicts_with = "body_file")]
    pub body: Option<String>,

    /// Request body from a file.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,

    /// More URLs, one per line (siege's URL file); used round-robin.
    #[arg(long, value_name = "FILE")]
    pub urls_file: Option<PathBuf>,

    /// A request mix: each target its own method, URL, headers and body — vegeta's
    /// HTTP format (`METHOD URL`, header lines, `@body-file`, blank line between),
    /// vegeta's JSON lines, or siege's (`URL [POST|PUT] [body | <file]`, `NAME=value`).
    /// `# name: NAME weight: N` before a target names and weighs it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["url", "urls_file"])]
    pub targets: Option<PathBuf>,

    /// The targets file's format: http, json or siege [default: detected].
    #[arg(long, value_name = "FORMAT", requires = "targets")]
    pub targets_format: Option<String>,

    /// The order of targets or URLs: sequential (round-robin in file order), random,
    /// or weighted (random in proportion to each target's `# weight:`).
    #[arg(long, value_name = "ORDER", value_parser = ["sequential", "random", "weighted"])]
    pub order: Option<String>,

    /// Pick URLs at random instead of round-robin.
    #[arg(long)]
    pub random: bool,

    /// A new connection for every request.
    #[arg(long)]
    pub no_keepalive: bool,

    /// Requests in flight per connection (closed loop).
    #[arg(long, value_name = "DEPTH", default_value_t = 1)]
    pub pipeline: usize,

    /// Per-request timeout. A request still unanswered when the run ends, after more
    /// than max(1s, 10 × the run's p99), counts as a `stalled` transport error (exit 4);
    /// one cut off sooner is only `cancelled at end`.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub timeout: String,

    /// Connect timeout.
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    pub connect_timeout: String,

    /// Print the report as JSON (see docs/json.md).
    #[arg(long)]
    pub json: bool,

    /// Write an HdrHistogram interval log (one histogram per second, µs).
    #[arg(long, value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,

    /// https: accept any server certificate (no check of its issuer or name).
    #[arg(short = 'k', long, conflicts_with = "cacert")]
    pub insecure: bool,

    /// https: also trust the CA certificates in this PEM file.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,

    /// I/O engine: io_uring (plain http, closed loop), epoll, or auto = io_uring where
    /// the run and the kernel allow it, else epoll. The report says which ran.
    #[arg(long, value_name = "ENGINE", default_value = "auto", value_parser = ["auto", "epoll", "uring"])]
    pub io: String,

    /// Speak HTTP/2 only: over TLS offer only `h2` by ALPN; on http:// speak h2c with
    /// prior knowledge. (Default: https offers h2 then http/1.1, http speaks HTTP/1.1.)
    #[arg(long, conflicts_with = "http1_1")]
    pub http2: bool,

    /// Speak HTTP/1.1 only (over TLS, ALPN offers only `http/1.1`).
    #[arg(long = "http1.1")]
    pub http1_1: bool,

    /// HTTP/2: concurrent streams per connection (h2load's -m).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub streams: usize,

    /// HTTP/2: the flow-control window to advertise, per stream and per connection, in
    /// bytes (default 2^30-1; a small one makes the server wait for WINDOW_UPDATEs).
    #[arg(long, value_name = "BYTES", default_value_t = perflab_load::DEFAULT_H2_WINDOW)]
    pub h2_window: u32,

    /// Distributed load: run the load from these inventory hosts over ssh, split
    /// between them (-c, --rate and -n shared by their cores or --agent-weights), started
    /// together, their histograms added (see docs/fleet.md).
    #[arg(long, value_name = "HOST,...", value_delimiter = ',')]
    pub agents: Vec<String>,

    /// With --agents: each agent's share of the load, in the order of --agents
    /// (e.g. 1,2) [default: by each agent's cores].
    #[arg(long, value_name = "W,...", value_delimiter = ',', requires = "agents")]
    pub agent_weights: Vec<String>,

    /// Run the test on an inventory host (the URL as seen from there): --on HOST,
    /// --hosts FILE (also the inventory of --agents), --accept-new-host-keys.
    #[command(flatten)]
    pub remote: crate::commands::on_host::OnHost,

    /// Distributed load's launch engine: ssh (--agents over an inventory) or slurm (one
    /// srun, one agent per node; see docs/fleet.md).
    #[arg(long, value_name = "ENGINE", default_value = "ssh", value_parser = ["ssh", "slurm"])]
    pub engine: String,

    /// With --engine slurm: how many nodes (one agent each) [default: the allocation's
    /// inside salloc/sbatch, else 2].
    #[arg(long, value_name = "K")]
    pub nodes: Option<u32>,

    /// With --engine slurm: the Slurm partition to run the agents in.
    #[arg(long, value_name = "P")]
    pub partition: Option<String>,

    /// With --engine slurm: the perflab binary the nodes run [default: this one].
    #[arg(long, value_name = "PATH")]
    pub perflab: Option<PathBuf>,
}

/// Builds the engine's spec from the flags.
pub fn spec_from_args(a: &HttpArgs) -> Result<LoadSpec, SpecError> {
    let dur =
        |field, v: &Option<String>| v.as_deref().map(|s| parse_duration(field, s)).transpose();
    let over = if a.ramp_over == "connections" {
        RampOver::Connections
    } else {
        RampOver::Rate
    };
    let spec = LoadSpec {
        urls: a.url.iter().cloned().collect(),
        urls_file: a.urls_file.clone(),
        random: a.random || a.order.as_deref() == Some("random"),
        weighted: a.order.as_deref() == Some("weighted"),
        targets: a.targets.clone(),
        targets_format: a
            .targets_format
            .as_deref()
            .map(perflab_load::targets::TargetsFormat::parse)
            .transpose()?,
        method: a.method.clone(),
        headers: a
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<_, _>>()?,
        body: a.body.as_ref().map(|b| b.clone().into_bytes()),
        body_file: a.body_file.clone(),
        connections: a.connections,
        threads: a.threads,
        duration: dur("duration", &a.duration)?,
        requests: a.requests,
        warmup: dur("warmup", &a.warmup)?.unwrap_or_default(),
        rate: a
            .rate
            .as_deref()
            .map(|r| parse_rate("rate", r))
            .transpose()?,
        max_connections: a.max_connections,
        ramp: a
            .ramp
            .as_deref()
            .map(|r| Ramp::parse(r, over))
            .transpose()?,
        step_duration: dur("step_duration", &a.step_duration)?,
        find_max: a.find_max,
        find_max_repetitions: a.find_max_repetitions.unwrap_or(1),
        find_max_precision: a
            .find_max_precision
            .as_deref()
            .map(|p| parse_fraction("find_max_precision", p))
            .transpose()?,
        slo: a.slo.as_deref().map(Slo::parse).transpose()?,
        thresholds: a
            .thresholds
            .iter()
            .map(|t| Threshold::parse(t))
            .collect::<Result<_, _>>()?,
        unix_socket: a.unix_socket.clone(),
        max_error_rate: match &a.max_error_rate {
            Some(f) => parse_fraction("max_error_rate", f)?,
            None => LoadSpec::default().max_error_rate,
        },
        keepalive: !a.no_keepalive,
        pipeline: a.pipeline,
        timeout: parse_duration("timeout", &a.timeout)?,
        connect_timeout: parse_duration("connect_timeout", &a.connect_timeout)?,
        hdr_log: a.hdr_log.clone(),
        insecure: a.insecure,
        cacert: a.cacert.clone(),
        io: IoChoice::parse(&a.io)?,
        http: if a.http2 {
            HttpVersion::Http2
        } else if a.http1_1 {
            HttpVersion::Http1
        } else {
            HttpVersion::Auto
        },
        streams: a.streams,
        h2_window: a.h2_window,
    };
    spec.validate()?;
    Ok(spec)
}

/// Runs `perflab http`: one trial of kind `http`, here (with the live line) or `--on
/// HOST`; a distributed load (`--agents`, `--engine slurm`) is its own controller.
pub fn run(g: &crate::Global, args: &HttpArgs) -> anyhow::Result<ExitCode> {
    let spec = spec_from_args(args).map_err(invalid)?;
    let distributed = super::http_agents::distributed(args);
    if distributed && args.remote.on.is_some() {
        return Err(InvalidInput(
            "--on and --agents (or --engine slurm) both say where the load runs: keep one (--on runs the test on one host; --agents splits it across hosts)".into(),
        )
        .into());
    }
    args.remote.check(distributed.then_some("--agents"))?;
    if distributed {
        return super::http_agents::run(g, args, spec);
    }
    // Resolves hosts and reads files: still nothing sent. (With --on they are the
    // host's: it checks them.)
    let checked = match &args.remote.on {
        None => Some(perflab_load::check(&spec).map_err(invalid)?),
        Some(_) => None,
    };
    // The first connection, alone: no connection at all fails here, before a run is
    // recorded (exit 1, the cause named); else what it found is stored with the run.
    let engine = match &checked {
        Some(c) => Some(engine(&spec, c)?),
        None => None,
    };
    let one = one_trial(args, &spec, engine)?;
    let exp = one.experiment()?;
    let fleet = args.remote.fleet(&exp)?;
    // Ctrl-C ends the load, then the report of what ran is printed and kept (exit 130);
    // a second Ctrl-C exits at once.
    let stop = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    let store = perflab_store::Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let live = LiveFactory {
        spec: spec.clone(),
        checked: checked.map(Arc::new),
        on: !g.quiet && !args.json && std::io::stderr().is_terminal(),
        kept: Arc::default(),
    };
    let shot = crate::commands::on_host::run_one(&one, &exp, &store, stop, fleet.as_ref(), &live);
    let shot = shot.context("cannot run the load test")?;
    let kept = live.kept.lock().ok().and_then(|mut k| k.take());
    let mut report = match kept {
        Some(Ok(r)) => r,
        Some(Err(LoadError::Spec(e))) => return Err(invalid(e)),
        Some(Err(e)) => {
            let e = e.render(&flag);
            return Err(anyhow::anyhow!(e).context("cannot run the load test"));
        }
        None => match remote_report(&shot)? {
            Some(r) => r,
            None => return Ok(ExitCode::from(INTERRUPTED)),
        },
    };
    // The load library names options as an experiment file does; here they are flags.
    report.name_fields(&flag);
    if !g.quiet {
        eprintln!(
            "recorded as run {} in {}",
            shot.outcome.run_id,
            g.store.display()
        );
    }
    print(args, &spec, &report)
}

/// What the run will use here: the I/O engine `--io` resolves to and what the first
/// connection found (protocol, TLS); an error when no connection can be made.
fn engine(spec: &LoadSpec, checked: &perflab_load::Checked) -> anyhow::Result<(Io, Reached)> {
    let failed = |e: LoadError| match e {
        LoadError::Spec(e) => invalid(e),
        e => anyhow::anyhow!(e.render(&flag)),
    };
    // The engine first: a spec that cannot run on the one asked for is bad input, and
    // nothing may be sent for it.
    let io = checked.io(spec).map_err(failed)?;
    Ok((io, checked.reach(spec).map_err(failed)?))
}

/// The one trial the flags describe: kind `http`, the options in the file form an
/// experiment's workload table has, the parameters `perflab http` has always stored
/// (URLs, connections, mode, rate, unix socket), the engine it runs on here (`io`,
/// `protocol`, `tls`: runs that differ there measure differently, so `compare` must
/// see it), the arguments in the environment.
fn one_trial(
    args: &HttpArgs,
    spec: &LoadSpec,
    engine: Option<(Io, Reached)>,
) -> anyhow::Result<OneTrial> {
    let workload = Kind::Http
        .options(options_from_args(args))
        .map_err(|e| anyhow::anyhow!("the flags as a trial: {e}"))?;
    let mut params = perflab_store::Params::new();
    params.insert("urls".into(), json!(spec.urls));
    params.insert("connections".into(), json!(spec.connections));
    let mode = if spec.find_max {
        Mode::FindMax
    } else if spec.ramp.is_some() {
        Mode::Ramp
    } else if spec.rate.is_some() {
        Mode::Open
    } else {
        Mode::Closed
    };
    params.insert("mode".into(), json!(mode));
    if let Some(r) = spec.rate {
        params.insert("rate".into(), json!(r));
    }
    if let Some(p) = &spec.unix_socket {
        params.insert("unix_socket".into(), json!(p));
    }
    if let Some((io, reached)) = engine {
        params.insert("io".into(), json!(io.name()));
        params.insert("protocol".into(), json!(reached.protocol));
        params.insert("tls".into(), json!(reached.tls));
    }
    Ok(OneTrial {
        kind: "http".into(),
        name: format!("http {}", spec.urls.first().cloned().unwrap_or_default()),
        workload,
        params,
        environment: json!({ "args": std::env::args().skip(1).collect::<Vec<_>>() }),
        on: args.remote.on.clone(),
    })
}

/// The flags in the file form of a load (`perflab_load`'s http workload
/// table): what the trial's workload reads back into the same [`LoadSpec`].
fn options_from_args(a: &HttpArgs) -> serde_json::Value {
    let mut o = serde_json::Map::new();
    let mut put = |k: &str, v: serde_json::Value| {
        if !v.is_null() {
            o.insert(k.to_string(), v);
        }
    };
    put("urls", json!(a.url.iter().collect::<Vec<_>>()));
    put("urls_file", json!(a.urls_file));
    put("random", json!(a.random));
    put("order", json!(a.order));
    put("targets", json!(a.targets));
    put("targets_format", json!(a.targets_format));
    put("method", json!(a.method));
    put("headers", json!(a.headers));
    put("body", json!(a.body));
    put("body_file", json!(a.body_file));
    put("connections", json!(a.connections));
    put("threads", json!(a.threads));
    put("duration", json!(a.duration));
    put("requests", json!(a.requests));
    put("warmup", json!(a.warmup));
    put("rate", json!(a.rate));
    put("max_connections", json!(a.max_connections));
    put("ramp", json!(a.ramp));
    put("ramp_over", json!(a.ramp_over));
    put("step_duration", json!(a.step_duration));
    put("find_max", json!(a.find_max));
    put("find_max_repetitions", json!(a.find_max_repetitions));
    put("find_max_precision", json!(a.find_max_precision));
    put("slo", json!(a.slo));
    put("thresholds", json!(a.thresholds));
    put("unix_socket", json!(a.unix_socket));
    put("max_error_rate", json!(a.max_error_rate));
    put("keepalive", json!(!a.no_keepalive));
    put("pipeline", json!(a.pipeline));
    put("timeout", json!(a.timeout));
    put("connect_timeout", json!(a.connect_timeout));
    put("hdr_log", json!(a.hdr_log));
    put("insecure", json!(a.insecure));
    put("cacert", json!(a.cacert));
    put("io", json!(a.io));
    let http = if a.http2 {
        "2"
    } else if a.http1_1 {
        "1.1"
    } else {
        "auto"
    };
    put("http", json!(http));
    put("streams", json!(a.streams));
    put("h2_window", json!(a.h2_window));
    serde_json::Value::Object(o)
}

/// The report of a trial that ran on another host: its `http-report.json` artifact
/// (without the histograms, which travel as the trial's histogram); `None` when it was
/// interrupted before it measured anything.
fn remote_report(shot: &Shot) -> anyhow::Result<Option<Report>> {
    let artifact = shot.measurement.as_ref().and_then(|m| {
        m.artifacts
            .iter()
            .find(|a| a.name == perflab_store::vocab::ARTIFACT_HTTP_REPORT)
    });
    match artifact {
        Some(a) => serde_json::from_slice(&a.content)
            .map(Some)
            .context("the host's report does not read"),
        None if shot.status == TrialStatus::Interrupted => {
            eprintln!(
                "interrupted: nothing was measured (run {} is marked interrupted)",
                shot.outcome.run_id
            );
            Ok(None)
        }
        None => Err(anyhow::anyhow!(shot
            .error
            .clone()
            .unwrap_or_else(|| "no report came back".into()))
        .context("cannot run the load test")),
    }
}

/// Prints the report (text or `--json`) with the thresholds' verdicts and maps it to
/// the exit status: 130 interrupted, 3 a threshold failed, 4 some requests failed.
fn print(args: &HttpArgs, spec: &LoadSpec, report: &Report) -> anyhow::Result<ExitCode> {
    let verdicts: Vec<Verdict> = spec.thresholds.iter().map(|t| t.judge(report)).collect();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        let mut v = serde_json::to_value(report)?;
        if !verdicts.is_empty() {
            v["thresholds"] = serde_json::to_value(&verdicts)?;
        }
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        for w in &report.warnings {
            eprintln!("warning: {w}");
        }
    } else {
        write!(out, "{}", perflab_load::text::render(report))?;
        if !verdicts.is_empty() {
            writeln!(out, "\nThresholds:")?;
            for v in &verdicts {
                writeln!(out, "  {}", v.line())?;
            }
        }
    }
    out.flush()?;
    if report.interrupted {
        eprintln!(
            "interrupted: the report covers the {:.1} s that ran",
            report.duration_s
        );
        return Ok(ExitCode::from(130));
    }
    // A failed threshold (3) wins over failed requests (4): it is the gate asked for.
    Ok(if verdicts.iter().any(|v| !v.passed) {
        ExitCode::from(GATE_FAILED)
    } else if report.failed() > 0 {
        ExitCode::from(FAILURES)
    } else {
        ExitCode::SUCCESS
    })
}

/// The flags the load library's fields (as an experiment file names them) stand for,
/// where they are not `--field`.
const FLAGS: &[(&str, &str)] = &[
    ("requests", "-n"),
    ("duration", "-d"),
    ("thresholds", "--threshold"),
    ("headers", "--header"),
    ("keepalive", "--no-keepalive"),
    ("http=2", "--http2"),
    ("http=1.1", "--http1.1"),
];

/// This command's flag for a load spec field.
pub(crate) fn flag(field: &str) -> String {
    perflab_units::flag_for(FLAGS, field)
}

fn invalid(e: SpecError) -> anyhow::Error {
    anyhow::Error::new(InvalidInput(format!(
        "{} (see `perflab http --help`)",
        e.render(&flag)
    )))
}

#[cfg(test)]
mod tests;
