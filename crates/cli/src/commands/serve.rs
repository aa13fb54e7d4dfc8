//! `perflab serve [DIR]`: the built-in HTTP server (crates/serve) on the command line.
//!
//! The first line on stdout is always `listening on http://ADDR:PORT/` (IPv6 in
//! brackets, the real port when `--port 0`; `https://` with `--tls-cert`), or
//! `listening on unix:PATH` with `--unix-socket`, flushed at once, so scripts and the lab can read the port; everything else goes to stderr. SIGINT and SIGTERM are blocked
//! before the workers start (they inherit the mask) and taken with `sigwait` on this
//! thread, which then stops the server gracefully and exits 0: no signal handler
//! runs arbitrary code, and no worker is ever interrupted.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use perflab_serve::{FileCacheConfig, Rate, ServeError, Server, Strategy};

use crate::exit::InvalidInput;

/// perflab's built-in HTTP server: a fixed reply or a directory of files, a target for
/// load tests and demos.
#[derive(Debug, clap::Args)]
#[command(after_help = "Stops gracefully on SIGINT (Ctrl-C) or SIGTERM and exits 0.")]
pub struct ServeArgs {
    /// Directory to serve (static files, index.html, directory listings).
    #[arg(value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,

    /// Port to listen on; 0 lets the OS choose (the first stdout line tells which).
    #[arg(long, short = 'p', default_value_t = 8080)]
    pub port: u16,

    /// Address to bind (IPv4 or IPv6).
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    pub bind: IpAddr,

    /// Worker threads, each with its own epoll loop [default: logical cores].
    #[arg(long, short = 'w', value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub workers: Option<u32>,

    /// Accept strategy: reuseport (one SO_REUSEPORT listener per worker), shared (one
    /// listener in every worker: the thundering herd), exclusive (EPOLLEXCLUSIVE),
    /// mutex (accepts serialized by a lock, like nginx's accept_mutex).
    #[arg(long, default_value = "reuseport", value_name = "STRATEGY", value_parser = parse_strategy)]
    pub accept: Strategy,

    /// Share the port with servers already listening on it (SO_REUSEPORT, same user
    /// only): connections are split between them. Without it a port in use is an
    /// error (exit 1); the workers of this server share its port either way.
    #[arg(long)]
    pub reuse_port: bool,

    /// Answer every request with a fixed small page (for load tests).
    #[arg(long)]
    pub hello: bool,

    /// Log one line per request to stderr.
    #[arg(long)]
    pub access_log: bool,

    /// Connections open at once; more are answered 503 and closed.
    #[arg(long, value_name = "N", default_value_t = 65_536)]
    pub max_connections: usize,

    /// Request and idle keep-alive timeout (e.g. 10s, 500ms, 2m).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,

    /// Open-file cache: `off`, or how long a cached file is trusted before it is
    /// checked again (a changed, replaced, removed or re-permissioned file is served
    /// fresh within this). Files up to 128 KiB are kept in memory.
    #[arg(long, value_name = "off|DURATION", default_value = "500ms", value_parser = parse_file_cache)]
    pub file_cache: FileCacheArg,

    /// Listen on this unix-domain socket instead of --bind/--port (a stale socket file
    /// is replaced; the file is removed on exit).
    #[arg(long, value_name = "PATH")]
    pub unix_socket: Option<PathBuf>,

    /// Serve TLS with this PEM certificate chain (needs --tls-key); ALPN offers h2
    /// then http/1.1. Without it, the port speaks HTTP/1.1 and h2c (HTTP/2 with prior
    /// knowledge), told apart per connection.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// HTTP/2: streams one connection may have open at once
    /// (SETTINGS_MAX_CONCURRENT_STREAMS); more are refused with REFUSED_STREAM.
    #[arg(long, value_name = "N", default_value_t = perflab_serve::DEFAULT_H2_MAX_STREAMS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub h2_max_streams: u32,

    /// HTTP/2: stream resets (the client's RST_STREAM, or ours for a stream error it
    /// caused) one connection may make at once; past the budget it gets
    /// GOAWAY(ENHANCE_YOUR_CALM). Refilled at --h2-resets-per-sec.
    #[arg(long, value_name = "N", default_value_t = perflab_serve::DEFAULT_H2_RESET_RATE.burst,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub h2_reset_burst: u32,

    /// HTTP/2: stream resets per second one connection may make after the burst.
    #[arg(long, value_name = "N", default_value_t = perflab_serve::DEFAULT_H2_RESET_RATE.per_sec)]
    pub h2_resets_per_sec: u32,

    /// HTTP/2: frames that are no request (PING, SETTINGS, PRIORITY, empty frames,
    /// unknown types) one connection may send at once; past the budget it gets
    /// GOAWAY(ENHANCE_YOUR_CALM). Refilled at --h2-control-per-sec.
    #[arg(long, value_name = "N", default_value_t = perflab_serve::DEFAULT_H2_CONTROL_RATE.burst,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub h2_control_burst: u32,

    /// HTTP/2: such frames per second one connection may send after the burst.
    #[arg(long, value_name = "N", default_value_t = perflab_serve::DEFAULT_H2_CONTROL_RATE.per_sec)]
    pub h2_control_per_sec: u32,

    /// HTTP/2: CONTINUATION frames one header block may use (empty ones count).
    #[arg(long, value_name = "N", default_value_t = perflab_serve::DEFAULT_H2_MAX_CONTINUATIONS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub h2_max_continuations: u32,
}

/// `--file-cache`: off, or the validity of an entry.
#[derive(Debug, Clone, Copy)]
pub struct FileCacheArg(pub Option<Duration>);

fn parse_file_cache(s: &str) -> Result<FileCacheArg, String> {
    if s.eq_ignore_ascii_case("off") {
        return Ok(FileCacheArg(None));
    }
    perflab_units::parse_duration(s)
        .map(|d| FileCacheArg(Some(d)))
        .map_err(|e| format!("{e} (or `off`)"))
}

fn parse_strategy(s: &str) -> Result<Strategy, String> {
    s.parse().map_err(|e: ServeError| e.to_string())
}

/// `--timeout`: perflab's one duration grammar (`10s`, `500ms`, `1m30s`, a bare number
/// of seconds), longer than zero.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = perflab_units::parse_duration(s).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err(format!("{s:?}: the timeout must be longer than zero"));
    }
    Ok(d)
}

/// The signals that stop the server, blocked on this thread and inherited by workers.
fn block_stop_signals() -> anyhow::Result<libc::sigset_t> {
    // SAFETY: sigset_t is plain data; it is initialized by sigemptyset before use,
    // and pthread_sigmask only reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            anyhow::bail!("cannot block SIGINT/SIGTERM: error {rc}");
        }
        Ok(set)
    }
}

/// Raises the soft limit on open files to the hard limit (best effort), so
/// `--max-connections` isn't capped by a default soft limit of 1024 descriptors.
fn raise_nofile_limit() {
    // SAFETY: getrlimit/setrlimit read and write a live, plain-data struct.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// Waits for one of the blocked signals; returns its name.
fn wait_for_signal(set: &libc::sigset_t) -> &'static str {
    loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: `set` is an initialized sigset_t and `sig` a live int.
        if unsafe { libc::sigwait(set, &mut sig) } == 0 {
            return if sig == libc::SIGINT {
                "SIGINT"
            } else {
                "SIGTERM"
            };
        }
    }
}

pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let mut builder = Server::builder()
        .bind(SocketAddr::new(args.bind, args.port))
        .accept(args.accept)
        .reuse_port(args.reuse_port)
        .hello(args.hello)
        .access_log(args.access_log)
        .max_connections(args.max_connections)
        .timeout(args.timeout)
        .h2_max_streams(args.h2_max_streams)
        .h2_reset_rate(Rate {
            burst: args.h2_reset_burst,
            per_sec: args.h2_resets_per_sec,
        })
        .h2_control_rate(Rate {
            burst: args.h2_control_burst,
            per_sec: args.h2_control_per_sec,
        })
        .h2_max_continuations(args.h2_max_continuations);
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        builder = builder.tls(cert, key);
    }
    if let Some(n) = args.workers {
        builder = builder.workers(n as usize);
    }
    let cache = args.file_cache.0.map(|valid| FileCacheConfig {
        valid,
        ..FileCacheConfig::default()
    });
    builder = builder.file_cache(cache);
    if let Some(path) = &args.unix_socket {
        builder = builder.unix_socket(path);
    }
    if !args.hello {
        builder = builder.root(&args.dir);
    }
    let config = builder.build().map_err(invalid)?;
    raise_nofile_limit();
    let signals = block_stop_signals()?;
    let mut server = Server::start(config.clone()).map_err(|e| match e {
        ServeError::Root { .. } | ServeError::RootNotDir(_) | ServeError::Tls { .. } => invalid(e),
        e => anyhow::Error::new(e).context("perflab serve could not start"),
    })?;
    let mut out = std::io::stdout().lock();
    match server.unix_socket() {
        Some(path) => writeln!(out, "listening on unix:{}", path.display())?,
        None => {
            let scheme = if config.tls.is_some() {
                "https"
            } else {
                "http"
            };
            writeln!(out, "listening on {scheme}://{}/", server.local_addr())?
        }
    }
    out.flush()?;
    drop(out);
    let what = match (args.hello, args.file_cache.0) {
        (true, _) => "hello page".to_string(),
        (false, Some(v)) => format!("files from {} (file cache {v:?})", args.dir.display()),
        (false, None) => format!("files from {} (file cache off)", args.dir.display()),
    };
    eprintln!(
        "perflab serve: {what}, {} workers, accept {}, timeout {:?}, {}; Ctrl-C to stop",
        config.workers,
        match (&config.unix_socket, config.accept) {
            // One unix socket for all workers: reuseport acts as exclusive.
            (Some(_), Strategy::Reuseport) => Strategy::Exclusive,
            (_, a) => a,
        },
        config.request_timeout,
        match config.tls {
            Some(_) => "TLS with h2 or HTTP/1.1 by ALPN",
            None => "HTTP/1.1 and h2c",
        }
    );
    let signal = wait_for_signal(&signals);
    eprintln!("perflab serve: {signal}, stopping");
    server.stop().context("stopping the server")?;
    let st = server.stats();
    eprintln!(
        "perflab serve: answered {} requests on {} connections",
        st.requests, st.accepted
    );
    if args.file_cache.0.is_some() && !args.hello {
        eprintln!(
            "perflab serve: file cache answered {} requests, missed {}",
            st.file_cache_hits, st.file_cache_misses
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn invalid(e: ServeError) -> anyhow::Error {
    anyhow::Error::new(InvalidInput(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2.5s"), Ok(Duration::from_millis(2500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5 fortnights").is_err());
    }

    #[test]
    fn strategies() {
        assert_eq!(parse_strategy("mutex"), Ok(Strategy::Mutex));
        assert!(parse_strategy("herd").is_err());
    }
}
