//! `kind = "net"`: TCP between this host and a sink — `stream` (bulk throughput, as
//! iperf3 or `nc` with a stream of zeros, plus the CPU seconds each side spent per GB)
//! and `rr` (request/response ping-pong, as netperf's TCP_RR: transactions per second
//! and latency percentiles). With no `peer` the sink runs here on 127.0.0.1, in this
//! process; `perflab net --serve` runs one on another host.
//!
//! The wire: the client opens each connection with an 8-byte hello (`PLNET` + `S` or
//! `R` + two bytes of message size / 256 for rr), then streams zeros (the sink reads
//! and counts them, and answers the count on close, so the sender knows every byte
//! arrived) or sends `size`-byte requests that the sink echoes. GB is 10^9 bytes.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use perflab_units::Phrase;
use serde::{Deserialize, Serialize};

use crate::{Measurement, MetricValue, TrialContext, Workload, WorkloadError};

/// The modes, as written.
pub const MODES: &[&str] = &["stream", "rr"];
/// Metrics a net trial records (stream: the first three; rr: the rest).
pub const METRICS: &[&str] = &[
    "mb_s",
    "sender_cpu_s_per_gb",
    "receiver_cpu_s_per_gb",
    "transactions_s",
    "latency_p50_us",
    "latency_p99_us",
];

const BUF: usize = 128 << 10;

/// One net trial's options (`[workload] kind = "net"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetSpec {
    /// `stream` or `rr`.
    #[serde(default = "stream")]
    pub mode: String,
    /// `HOST:PORT` of a `perflab net --serve`; none: a sink on 127.0.0.1 here.
    #[serde(default)]
    pub peer: Option<String>,
    /// Parallel connections (iperf3's `-P`).
    #[serde(default = "one")]
    pub streams: usize,
    /// Seconds of traffic.
    #[serde(default = "three")]
    pub duration: f64,
    /// rr: bytes per request and per response.
    #[serde(default = "one")]
    pub size: usize,
}

fn stream() -> String {
    "stream".into()
}
fn one() -> usize {
    1
}
fn three() -> f64 {
    3.0
}

impl NetSpec {
    /// Checks the options; the error names the option as a field (`streams`).
    pub fn validate(&self) -> Result<(), Phrase> {
        if !MODES.contains(&self.mode.as_str()) {
            return Err(
                Phrase::field("mode").then(format!(" {:?}: expected stream or rr", self.mode))
            );
        }
        if !(1..=128).contains(&self.streams) {
            return Err(
                Phrase::field("streams").then(format!(" {}: expected 1 to 128", self.streams))
            );
        }
        if !(self.duration > 0.0 && self.duration <= 3600.0) {
            return Err(Phrase::field("duration").then(format!(
                " {}: expected more than 0 and at most 3600 seconds",
                self.duration
            )));
        }
        if !(1..=65_280).contains(&self.size) {
            return Err(
                Phrase::field("size").then(format!(" {}: expected 1 to 65280 bytes", self.size))
            );
        }
        if let Some(p) = &self.peer {
            if !p.contains(':') {
                return Err(Phrase::field("peer").then(format!(" {p:?}: expected HOST:PORT")));
            }
        }
        Ok(())
    }
}

/// CPU seconds of the calling thread so far.
fn thread_cpu_s() -> f64 {
    // SAFETY: zeroed rusage is valid; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a live rusage.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// A sink: answers every connection on its own thread until `stop`.
pub struct Sink {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// CPU seconds its connection threads spent, added as they end.
    cpu: Arc<std::sync::Mutex<f64>>,
}

impl Sink {
    /// Listens on `addr` (port 0: any).
    pub fn start(addr: &str) -> std::io::Result<Sink> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let cpu = Arc::new(std::sync::Mutex::new(0.0));
        let (s2, c2) = (stop.clone(), cpu.clone());
        let thread = std::thread::spawn(move || {
            while !s2.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let cpu = c2.clone();
                        std::thread::spawn(move || {
                            let t0 = thread_cpu_s();
                            let _ = serve_conn(conn);
                            *cpu.lock().unwrap_or_else(|e| e.into_inner()) += thread_cpu_s() - t0;
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Ok(Sink {
            addr,
            stop,
            thread: Some(thread),
            cpu,
        })
    }

    /// CPU seconds spent by finished connections.
    pub fn cpu_s(&self) -> f64 {
        *self.cpu.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs until the process ends (`perflab net --serve`).
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve_conn(mut c: TcpStream) -> std::io::Result<()> {
    c.set_nodelay(true)?;
    let mut hello = [0u8; 8];
    c.read_exact(&mut hello)?;
    if &hello[..5] != b"PLNET" {
        return Err(std::io::Error::other("not a perflab net client"));
    }
    match hello[5] {
        b'S' => {
            let mut buf = vec![0u8; BUF];
            let mut total = 0u64;
            loop {
                match c.read(&mut buf)? {
                    0 => break,
                    n => total += n as u64,
                }
            }
            c.write_all(&total.to_be_bytes())
        }
        b'R' => {
            let size = usize::from(u16::from_be_bytes([hello[6], hello[7]])).max(1);
            let mut buf = vec![0u8; size];
            loop {
                match c.read_exact(&mut buf) {
                    Ok(()) => c.write_all(&buf)?,
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
                    Err(e) => return Err(e),
                }
            }
        }
        _ => Err(std::io::Error::other("unknown mode")),
    }
}

/// What one run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetResult {
    pub mode: String,
    pub peer: String,
    pub streams: usize,
    pub seconds: f64,
    /// stream: bytes the sink counted (equal to the bytes sent, or the run fails).
    pub bytes: u64,
    pub mb_s: Option<f64>,
    pub sender_cpu_s_per_gb: Option<f64>,
    /// Only with the sink in this process.
    pub receiver_cpu_s_per_gb: Option<f64>,
    pub transactions: u64,
    pub transactions_s: Option<f64>,
    pub latency_p50_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
}

fn connect(addr: &SocketAddr, hello: [u8; 8]) -> std::io::Result<TcpStream> {
    let mut c = TcpStream::connect_timeout(addr, Duration::from_secs(5))?;
    c.set_nodelay(true)?;
    c.set_read_timeout(Some(Duration::from_secs(10)))?;
    c.write_all(&hello)?;
    Ok(c)
}

/// One stream connection: (bytes sent and confirmed, sender CPU seconds).
fn stream_one(addr: SocketAddr, until: Instant) -> Result<(u64, f64), String> {
    let mut c =
        connect(&addr, *b"PLNETS\0\0").map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    let t0 = thread_cpu_s();
    let buf = vec![0u8; BUF];
    let mut sent = 0u64;
    while Instant::now() < until {
        c.write_all(&buf)
            .map_err(|e| format!("sending to {addr}: {e}"))?;
        sent += BUF as u64;
    }
    let cpu = thread_cpu_s() - t0;
    c.shutdown(Shutdown::Write).map_err(|e| e.to_string())?;
    let mut count = [0u8; 8];
    c.read_exact(&mut count)
        .map_err(|e| format!("the sink did not confirm: {e}"))?;
    let got = u64::from_be_bytes(count);
    if got != sent {
        return Err(format!("sent {sent} bytes, the sink counted {got}"));
    }
    Ok((sent, cpu))
}

/// One rr connection: transactions and their latencies in µs.
fn rr_one(addr: SocketAddr, size: usize, until: Instant) -> Result<Histogram<u64>, String> {
    let s = (size as u16).to_be_bytes();
    let mut c = connect(&addr, [b'P', b'L', b'N', b'E', b'T', b'R', s[0], s[1]])
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).map_err(|e| e.to_string())?;
    let req = vec![0x42u8; size];
    let mut resp = vec![0u8; size];
    while Instant::now() < until {
        let t = Instant::now();
        c.write_all(&req).map_err(|e| e.to_string())?;
        c.read_exact(&mut resp)
            .map_err(|e| format!("no answer from {addr}: {e}"))?;
        if resp != req {
            return Err("the echo differs from the request".into());
        }
        h.saturating_record(t.elapsed().as_micros() as u64);
    }
    Ok(h)
}

/// Runs the traffic; with no peer, against a sink started here.
pub fn run(spec: &NetSpec) -> Result<NetResult, String> {
    spec.validate()?;
    let local = match &spec.peer {
        None => Some(
            Sink::start("127.0.0.1:0").map_err(|e| format!("cannot start the local sink: {e}"))?,
        ),
        Some(_) => None,
    };
    let addr = match (&spec.peer, &local) {
        (_, Some(s)) => s.addr,
        (Some(p), None) => p
            .to_socket_addrs()
            .map_err(|e| format!("`peer` {p:?}: {e}"))?
            .next()
            .ok_or_else(|| format!("`peer` {p:?}: no address"))?,
        (None, None) => unreachable!("a local sink exists without a peer"),
    };
    let start = Instant::now();
    let until = start + Duration::from_secs_f64(spec.duration);
    let mut r = NetResult {
        mode: spec.mode.clone(),
        peer: addr.to_string(),
        streams: spec.streams,
        seconds: 0.0,
        bytes: 0,
        mb_s: None,
        sender_cpu_s_per_gb: None,
        receiver_cpu_s_per_gb: None,
        transactions: 0,
        transactions_s: None,
        latency_p50_us: None,
        latency_p99_us: None,
    };
    if spec.mode == "stream" {
        let results = crate::parallel::each(spec.streams, |_| stream_one(addr, until));
        r.seconds = start.elapsed().as_secs_f64();
        let mut cpu = 0.0;
        for x in results {
            let (b, c) = x?;
            r.bytes += b;
            cpu += c;
        }
        let gb = r.bytes as f64 / 1e9;
        r.mb_s = Some(r.bytes as f64 / 1e6 / r.seconds);
        r.sender_cpu_s_per_gb = Some(cpu / gb.max(1e-12));
        if let Some(sink) = &local {
            // The sink's threads add their CPU when their connection ends.
            let deadline = Instant::now() + Duration::from_secs(2);
            while sink.cpu_s() == 0.0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(20));
            r.receiver_cpu_s_per_gb = Some(sink.cpu_s() / gb.max(1e-12));
        }
    } else {
        let results = crate::parallel::each(spec.streams, |_| rr_one(addr, spec.size, until));
        r.seconds = start.elapsed().as_secs_f64();
        let mut all =
            Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).map_err(|e| e.to_string())?;
        for h in results {
            all.add(h?).map_err(|e| e.to_string())?;
        }
        r.transactions = all.len();
        r.transactions_s = Some(all.len() as f64 / r.seconds);
        r.latency_p50_us = Some(all.value_at_quantile(0.5) as f64);
        r.latency_p99_us = Some(all.value_at_quantile(0.99) as f64);
    }
    Ok(r)
}

/// The store's view of a result.
pub fn measurement(r: &NetResult) -> Measurement {
    let mut metrics = Vec::new();
    let mut put = |name: &str, unit: &str, v: Option<f64>, better: &str| {
        if let Some(v) = v {
            metrics.push(MetricValue::new(name, unit, v, better));
        }
    };
    put("mb_s", "MB/s", r.mb_s, "higher");
    put(
        "sender_cpu_s_per_gb",
        "s/GB",
        r.sender_cpu_s_per_gb,
        "lower",
    );
    put(
        "receiver_cpu_s_per_gb",
        "s/GB",
        r.receiver_cpu_s_per_gb,
        "lower",
    );
    put("transactions_s", "1/s", r.transactions_s, "higher");
    put("latency_p50_us", "µs", r.latency_p50_us, "lower");
    put("latency_p99_us", "µs", r.latency_p99_us, "lower");
    Measurement {
        metrics,
        ..Measurement::default()
    }
}

impl Workload for NetSpec {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        crate::parallel::in_trial(ctx, || run(self).map(|r| measurement(&r)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_counts_every_byte_and_rr_echoes() {
        let s = NetSpec {
            mode: "stream".into(),
            peer: None,
            streams: 2,
            duration: 0.2,
            size: 1,
        };
        let r = run(&s).unwrap();
        assert!(r.bytes > 0 && r.mb_s.unwrap() > 0.0);
        assert!(r.sender_cpu_s_per_gb.unwrap() > 0.0);
        assert!(r.receiver_cpu_s_per_gb.unwrap() > 0.0);
        let s = NetSpec {
            mode: "rr".into(),
            peer: None,
            streams: 1,
            duration: 0.2,
            size: 64,
        };
        let r = run(&s).unwrap();
        assert!(r.transactions > 10, "{r:?}");
        assert!(r.latency_p99_us.unwrap() >= r.latency_p50_us.unwrap());
    }

    #[test]
    fn an_unreachable_peer_is_an_error_naming_it() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let s = NetSpec {
            mode: "stream".into(),
            peer: Some(addr.to_string()),
            streams: 1,
            duration: 0.1,
            size: 1,
        };
        let e = run(&s).unwrap_err();
        assert!(
            e.contains("cannot connect") && e.contains(&addr.to_string()),
            "{e}"
        );
    }

    #[test]
    fn bad_options_name_the_field() {
        let s = NetSpec {
            mode: "udp".into(),
            peer: None,
            streams: 1,
            duration: 1.0,
            size: 1,
        };
        assert!(s.validate().unwrap_err().to_string().contains("`mode`"));
        let s = NetSpec {
            mode: "rr".into(),
            peer: Some("nohostport".into()),
            streams: 1,
            duration: 1.0,
            size: 1,
        };
        assert!(s.validate().unwrap_err().to_string().contains("`peer`"));
    }
}
