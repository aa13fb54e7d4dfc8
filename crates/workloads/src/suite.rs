//! `kind = "suite"`: one item of the machine suite (`perflab suite machine`). The suite
//! is one run whose configs are its items — `mem.write.4K`, `net.stream`,
//! `compress.zstd`, `crypto.rsa4096-sign`, `scimark.c`, `http.perflab-serve`, ... — so
//! the runner interleaves them, repeats them and stores them like any experiment. Each
//! item is a workload of its own kind with the suite's settings ([`catalogue`]); the
//! suite adds one metric, `score`: the item's headline figure, higher is better (GB/s,
//! MB/s, op/s, MFLOPS, req/s), which `perflab suite compare` sets side by side across
//! machines. The `http` items start their server inside the trial: `perflab serve`'s
//! library on a 4 KiB file, or nginx (when installed) serving the same file.
//!
//! `quick` picks shorter trials and fewer items (the curve's ends and middle, not
//! every block size); a quick run and a full run are not compared.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::compress::CompressSpec;
use crate::crypto::CryptoSpec;
use crate::disk::ByteSize;
use crate::http::HttpWorkload;
use crate::mem::MemSpec;
use crate::net::NetSpec;
use crate::scimark::ScimarkSpec;
use crate::spec::KindSpec;
use crate::{Measurement, MetricValue, TrialContext, Workload, WorkloadError};

/// The item groups, in the order the suite runs and prints them.
pub const GROUPS: &[&str] = &["mem", "net", "compress", "crypto", "scimark", "http"];

/// Block sizes of the memory curve (quick: its ends and middle).
const MEM_BLOCKS: &[&str] = &["4K", "32K", "256K", "1M", "8M", "64M", "256M"];
const MEM_BLOCKS_QUICK: &[&str] = &["4K", "1M", "256M"];

/// One suite trial's options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteSpec {
    /// The item, as [`catalogue`] names it.
    pub item: String,
    /// The quick suite's settings.
    #[serde(default)]
    pub quick: bool,
}

/// The server an `http` item loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// `perflab serve`'s library, in this process.
    Perflab,
    /// nginx from the PATH, tuned as its users tune it.
    Nginx,
}

/// What an item runs.
#[derive(Debug, Clone)]
pub enum What {
    Kind(KindSpec),
    Http(Server, serde_json::Value),
}

/// One item of the suite.
#[derive(Debug, Clone)]
pub struct Item {
    pub name: String,
    pub group: &'static str,
    /// The metric of the item's workload that becomes its `score`.
    pub score: &'static str,
    pub what: What,
}

impl Item {
    fn new(name: String, group: &'static str, score: &'static str, what: What) -> Item {
        Item {
            name,
            group,
            score,
            what,
        }
    }

    /// A program the item needs on the PATH (`cc`, `java`, `nginx`), if any.
    pub fn needs(&self) -> Option<&'static str> {
        match &self.what {
            What::Kind(KindSpec::Scimark(s)) if s.lang == "c" => Some("cc"),
            What::Kind(KindSpec::Scimark(s)) if s.lang == "java" => Some("java"),
            What::Http(Server::Nginx, _) => Some("nginx"),
            _ => None,
        }
    }
}

/// Every item of the suite, full or quick, in run order.
pub fn catalogue(quick: bool) -> Vec<Item> {
    let mut out = mem_items(quick);
    out.extend(net_items(quick));
    out.extend(compress_items(quick));
    out.extend(crypto_items(quick));
    out.extend(scimark_items(quick));
    out.extend(http_items(quick));
    out
}

/// Memory bandwidth: `mem.OP.BLOCK` per block size, with `.all` on every CPU.
fn mem_items(quick: bool) -> Vec<Item> {
    let mut out = Vec::new();
    let mem_time = if quick { 0.1 } else { 0.3 };
    // (op, block, threads): `mem.OP.BLOCK`, with `.all` on every CPU.
    let mut mem = |op: &str, block: &str, threads: usize| {
        let spec = MemSpec {
            op: op.into(),
            block: block.parse().expect("a block size of the table"),
            threads,
            min_time: mem_time,
        };
        let all = if threads == 0 { ".all" } else { "" };
        out.push(Item::new(
            format!("mem.{op}.{block}{all}"),
            "mem",
            "gb_s",
            What::Kind(KindSpec::Mem(spec)),
        ));
    };
    let blocks = if quick { MEM_BLOCKS_QUICK } else { MEM_BLOCKS };
    for op in ["write", "read", "copy"] {
        for b in blocks {
            mem(op, b, 1);
        }
    }
    // Streaming (non-temporal) stores where the CPU has them: DRAM bandwidth without
    // the read-for-ownership of ordinary stores.
    if cfg!(target_arch = "x86_64") {
        mem("write-nt", "256M", 1);
        mem("copy-nt", "256M", 1);
    }
    mem("write", "256M", 0);
    mem("copy", "256M", 0);
    out
}

/// Loopback network: a stream's bandwidth and request/response transactions.
fn net_items(quick: bool) -> Vec<Item> {
    let net_time = if quick { 0.5 } else { 2.0 };
    [("stream", "mb_s"), ("rr", "transactions_s")]
        .into_iter()
        .map(|(mode, score)| {
            let spec = NetSpec {
                mode: mode.into(),
                peer: None,
                streams: 1,
                duration: net_time,
                size: 1,
            };
            Item::new(
                format!("net.{mode}"),
                "net",
                score,
                What::Kind(KindSpec::Net(spec)),
            )
        })
        .collect()
}

/// Compression speed per algorithm, on every CPU, and the study's gzip -9 of zeros.
fn compress_items(quick: bool) -> Vec<Item> {
    let size = ByteSize(if quick { 8 << 20 } else { 64 << 20 });
    let compress = |algorithm: &str, level: Option<i32>, data: &str, threads: usize| {
        What::Kind(KindSpec::Compress(CompressSpec {
            algorithm: algorithm.into(),
            level,
            data: data.into(),
            size,
            threads,
        }))
    };
    let mut out: Vec<Item> = ["gzip", "zstd", "lz4"]
        .into_iter()
        .map(|alg| {
            Item::new(
                format!("compress.{alg}"),
                "compress",
                "compress_mb_s",
                compress(alg, None, "text", 1),
            )
        })
        .collect();
    out.push(Item::new(
        "compress.zstd.all".into(),
        "compress",
        "compress_mb_s",
        compress("zstd", None, "text", 0),
    ));
    // The study's own row: gzip -9 of zeros.
    out.push(Item::new(
        "compress.gzip-9.zeros".into(),
        "compress",
        "compress_mb_s",
        compress("gzip", Some(9), "zeros", 1),
    ));
    out
}

/// Signatures per second and cipher/hash bandwidth.
fn crypto_items(quick: bool) -> Vec<Item> {
    let crypto_time = if quick { 0.2 } else { 1.0 };
    let crypto = |algorithm: &str, threads: usize| {
        What::Kind(KindSpec::Crypto(CryptoSpec {
            algorithm: algorithm.into(),
            block: ByteSize(16 << 10),
            threads,
            min_time: crypto_time,
        }))
    };
    let mut out = Vec::new();
    for alg in [
        "rsa2048-sign",
        "rsa4096-sign",
        "rsa4096-verify",
        "ecdsap256-sign",
        "ed25519-sign",
    ] {
        out.push(Item::new(
            format!("crypto.{alg}"),
            "crypto",
            "ops_s",
            crypto(alg, 1),
        ));
    }
    for alg in ["sha256", "aes-256-gcm", "chacha20-poly1305"] {
        out.push(Item::new(
            format!("crypto.{alg}"),
            "crypto",
            "mb_s",
            crypto(alg, 1),
        ));
    }
    out.push(Item::new(
        "crypto.rsa2048-sign.all".into(),
        "crypto",
        "ops_s",
        crypto("rsa2048-sign", 0),
    ));
    out
}

/// SciMark's composite in C and Java.
fn scimark_items(quick: bool) -> Vec<Item> {
    ["c", "java"]
        .into_iter()
        .map(|lang| {
            let spec = ScimarkSpec {
                lang: lang.into(),
                size: "default".into(),
                min_time: Some(if quick { 0.1 } else { 0.5 }),
                cflags: None,
                jvm_flags: None,
                java: None,
                kernels: None,
                counters: Vec::new(),
            };
            Item::new(
                format!("scimark.{lang}"),
                "scimark",
                "composite_mflops",
                What::Kind(KindSpec::Scimark(spec)),
            )
        })
        .collect()
}

/// Requests per second of perflab's own server and nginx, under the same load.
fn http_items(quick: bool) -> Vec<Item> {
    let load = serde_json::json!({
        "connections": 10,
        "threads": 1,
        "duration": if quick { "2s" } else { "5s" },
        "warmup": if quick { "500ms" } else { "1s" },
    });
    [("perflab-serve", Server::Perflab), ("nginx", Server::Nginx)]
        .into_iter()
        .map(|(name, server)| {
            Item::new(
                format!("http.{name}"),
                "http",
                "rps",
                What::Http(server, load.clone()),
            )
        })
        .collect()
}

/// The item called `name`, or an error listing the names.
pub fn item(name: &str, quick: bool) -> Result<Item, String> {
    let all = catalogue(quick);
    match all.iter().position(|i| i.name == name) {
        Some(i) => Ok(all[i].clone()),
        None => Err(format!(
            "item {name:?}: not in the {} suite (items: {})",
            if quick { "quick" } else { "full" },
            all.iter()
                .map(|i| i.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

impl SuiteSpec {
    pub fn validate(&self) -> Result<(), String> {
        item(&self.item, self.quick).map(|_| ())
    }
}

impl Workload for SuiteSpec {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        let item = item(&self.item, self.quick).map_err(WorkloadError::Setup)?;
        let result = match &item.what {
            What::Kind(k) => k.build()?.run(ctx),
            What::Http(server, load) => http(*server, load, ctx),
        };
        let with_score = |mut m: Measurement| match m.metrics.iter().find(|v| v.name == item.score)
        {
            Some(v) => {
                let score = MetricValue::new("score", &v.unit, v.value, "higher");
                m.metrics.push(score);
                Ok(m)
            }
            None => Err(format!(
                "{}: the workload did not report {}",
                item.name, item.score
            )),
        };
        match result {
            Ok(m) => with_score(m).map_err(WorkloadError::Setup),
            Err(WorkloadError::Failed { message, partial }) => Err(WorkloadError::Failed {
                message,
                partial: Box::new(with_score(*partial.clone()).unwrap_or(*partial)),
            }),
            Err(e) => Err(e),
        }
    }
}

/// The file both servers serve: 4 KiB, the same bytes every time.
const PAGE: &str = "page-4k.bin";

fn http(
    server: Server,
    load: &serde_json::Value,
    ctx: &TrialContext,
) -> Result<Measurement, WorkloadError> {
    let setup = |e: String| WorkloadError::Setup(e);
    let dir = ctx.run_dir.join("suite-www");
    std::fs::create_dir_all(&dir).map_err(|e| setup(format!("{}: {e}", dir.display())))?;
    let page: Vec<u8> = (0..4096u32).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(dir.join(PAGE), &page).map_err(|e| setup(format!("{PAGE}: {e}")))?;
    // The servers start from this thread pinned: their threads and processes inherit
    // the trial's CPUs, as the load engine's do.
    let pin = ctx.pin_this_thread()?;
    let (port, _guard): (u16, Box<dyn std::any::Any>) = match server {
        Server::Perflab => {
            let h = perflab_serve::Server::builder()
                .root(&dir)
                .bind("127.0.0.1:0")
                .start()
                .map_err(|e| setup(format!("perflab serve: {e}")))?;
            (h.local_addr().port(), Box::new(h))
        }
        Server::Nginx => {
            let n = Nginx::start(&ctx.run_dir.join("suite-nginx"), &dir).map_err(setup)?;
            (n.port, Box::new(n))
        }
    };
    drop(pin);
    let mut options = load.clone();
    options["urls"] = serde_json::json!([format!("http://127.0.0.1:{port}/{PAGE}")]);
    HttpWorkload::from_options(&options)
        .map_err(setup)?
        .run(ctx)
}

/// nginx serving `root` on a free port of 127.0.0.1, stopped (with its workers) on drop.
struct Nginx {
    child: Child,
    port: u16,
}

impl Nginx {
    fn start(prefix: &Path, root: &Path) -> Result<Nginx, String> {
        let nginx = crate::command::which("nginx")
            .or_else(|| Some(PathBuf::from("/usr/sbin/nginx")).filter(|p| p.is_file()))
            .ok_or("nginx is not installed")?;
        for d in ["logs", "tmp"] {
            std::fs::create_dir_all(prefix.join(d)).map_err(|e| format!("nginx prefix: {e}"))?;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("a free port: {e}"))?
            .port();
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        // As root, nginx's workers would run as `nobody` and could not read the run
        // directory.
        let user = if unsafe { libc::geteuid() } == 0 {
            "user root;"
        } else {
            ""
        };
        let p = prefix.display();
        let conf = format!(
            "{user}\nworker_processes {workers};\ndaemon off;\npid {p}/nginx.pid;\n\
             error_log {p}/logs/error.log warn;\nevents {{ worker_connections 4096; }}\n\
             http {{\n  sendfile on; tcp_nopush on; tcp_nodelay on; access_log off;\n  \
             open_file_cache max=1000 inactive=60s; open_file_cache_valid 60s;\n  \
             keepalive_requests 1000000; keepalive_timeout 65s;\n  \
             default_type application/octet-stream;\n  \
             client_body_temp_path {p}/tmp/body; proxy_temp_path {p}/tmp/proxy;\n  \
             fastcgi_temp_path {p}/tmp/fastcgi; uwsgi_temp_path {p}/tmp/uwsgi;\n  \
             scgi_temp_path {p}/tmp/scgi;\n  \
             server {{ listen 127.0.0.1:{port} reuseport; root {}; location / {{ }} }}\n}}\n",
            root.display()
        );
        let conf_path = prefix.join("nginx.conf");
        std::fs::write(&conf_path, conf).map_err(|e| format!("nginx.conf: {e}"))?;
        let mut cmd = Command::new(nginx);
        cmd.arg("-p")
            .arg(prefix)
            .arg("-c")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd.spawn().map_err(|e| format!("nginx: {e}"))?;
        let mut n = Nginx { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(n);
            }
            if let Ok(Some(status)) = n.child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = n.child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                return Err(format!("nginx exited ({status}): {}", err.trim()));
            }
            if Instant::now() > deadline {
                return Err(format!("nginx did not listen on port {port} within 10 s"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let group = -(self.child.id() as i32);
        unsafe { libc::kill(group, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        unsafe { libc::kill(group, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_is_valid_and_named_once() {
        for quick in [false, true] {
            let all = catalogue(quick);
            let mut names: Vec<&str> = all.iter().map(|i| i.name.as_str()).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), all.len());
            for i in &all {
                assert!(GROUPS.contains(&i.group), "{}", i.name);
                assert!(i.name.starts_with(i.group), "{}", i.name);
                if let What::Kind(k) = &i.what {
                    // Each spec passes its own kind's checks.
                    let v = serde_json::to_value(k).unwrap();
                    k.kind().options(v["options"].clone()).unwrap();
                }
            }
        }
        assert!(catalogue(true).len() < catalogue(false).len());
    }

    #[test]
    fn an_unknown_item_is_named_with_the_list() {
        let e = SuiteSpec {
            item: "mem.fly".into(),
            quick: false,
        }
        .validate()
        .unwrap_err();
        assert!(e.contains("mem.fly") && e.contains("mem.write.4K"), "{e}");
        // A full-suite block size is not in the quick suite.
        assert!(item("mem.write.32K", true).is_err());
    }

    #[test]
    fn an_item_reports_its_score() {
        let dir = std::env::temp_dir();
        let ctx = TrialContext {
            cpus: None,
            timeout: None,
            interrupted: Default::default(),
            run_dir: dir,
            attach: None,
            jit: false,
        };
        let m = SuiteSpec {
            item: "crypto.sha256".into(),
            quick: true,
        }
        .run(&ctx)
        .unwrap();
        let score = m.metrics.iter().find(|v| v.name == "score").unwrap();
        let mb = m.metrics.iter().find(|v| v.name == "mb_s").unwrap();
        assert_eq!(score.value, mb.value);
        assert_eq!(score.unit, "MB/s");
        assert!(score.value > 0.0);
    }
}
