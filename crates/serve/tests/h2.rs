//! HTTP/2 and TLS with real clients: `curl --http2-prior-knowledge` (h2c) and
//! `curl --http2 -k https://` (h2 by ALPN) get a file's exact bytes and the same
//! statuses as HTTP/1.1 (200, 404, 304); `h2load -n 2000 -c 4 -m 10` finishes every
//! request over h2c and over TLS; HTTP/1.1 keeps working on the same port; h2c works on
//! a unix socket. Certificates come from `rcgen`. Every client runs under a time limit
//! and is killed past it; servers stop when their handle drops, also on a failure.
//! curl and h2load (Debian `curl`, `nghttp2-client`; `scripts/test.sh` installs them)
//! are required: a test without them fails under `PERFLAB_REQUIRE`, and otherwise says
//! so and passes (tests/require.rs).

#[path = "../../../tests/require.rs"]
mod require;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use perflab_serve::{Server, ServerHandle};

const LIMIT: Duration = Duration::from_secs(60);

fn have(tool: &str) -> bool {
    require::program(tool).is_some()
}

/// Runs a client to completion, killing it if it outlives [`LIMIT`].
fn run(program: &str, args: &[&str]) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    let end = Instant::now() + LIMIT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{program} {args:?} ran longer than {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// A document root with a small file, a large one and a directory.
struct Site {
    dir: tempfile::TempDir,
    big: Vec<u8>,
}

impl Site {
    fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello over h2\n").unwrap();
        // Larger than every window a client starts with, and than the cache's 128 KiB.
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(dir.path().join("big.bin"), &big).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        Site { dir, big }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn serve(&self, tls: Option<&Tls>) -> ServerHandle {
        let mut b = Server::builder()
            .root(self.root())
            .workers(2)
            .bind("127.0.0.1:0");
        if let Some(t) = tls {
            b = b.tls(&t.cert, &t.key);
        }
        b.start().unwrap()
    }
}

struct Tls {
    _dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
}

fn tls_files() -> Tls {
    let dir = tempfile::tempdir().unwrap();
    let c = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, c.cert.pem()).unwrap();
    std::fs::write(&key, c.signing_key.serialize_pem()).unwrap();
    Tls {
        _dir: dir,
        cert,
        key,
    }
}

/// One curl request: (status, HTTP version, response headers, body).
fn curl(flags: &[&str], url: &str, extra: &[&str]) -> (u16, String, String, Vec<u8>) {
    let out_dir = tempfile::tempdir().unwrap();
    let body = out_dir.path().join("body");
    let head = out_dir.path().join("head");
    let mut args = vec!["-s", "--max-time", "30", "-o"];
    args.push(body.to_str().unwrap());
    args.extend([
        "-D",
        head.to_str().unwrap(),
        "-w",
        "%{http_code} %{http_version}",
    ]);
    args.extend(flags);
    args.extend(extra);
    args.push(url);
    let out = run("curl", &args);
    assert!(out.status.success(), "curl {args:?}: {out:?}");
    let summary = String::from_utf8(out.stdout).unwrap();
    let (code, version) = summary.split_once(' ').unwrap();
    (
        code.parse().unwrap(),
        version.to_string(),
        std::fs::read_to_string(head).unwrap(),
        std::fs::read(body).unwrap_or_default(),
    )
}

fn header(head: &str, name: &str) -> String {
    head.lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no {name} in {head}"))
}

/// 200 with the exact bytes (small and large), 404, 304 on the ETag, over `flags`.
fn check_statuses(site: &Site, base: &str, flags: &[&str], version: &str) {
    let (code, v, head, body) = curl(flags, &format!("{base}/a.txt"), &[]);
    assert_eq!((code, v.as_str()), (200, version), "{head}");
    assert_eq!(body, b"hello over h2\n");
    assert_eq!(header(&head, "content-type"), "text/plain; charset=utf-8");
    let etag = header(&head, "etag");
    let (code, _, _, body) = curl(flags, &format!("{base}/big.bin"), &[]);
    assert_eq!(code, 200);
    assert!(
        body == site.big,
        "big.bin: {} bytes, not its own",
        body.len()
    );
    let (code, ..) = curl(flags, &format!("{base}/missing"), &[]);
    assert_eq!(code, 404);
    let inm = format!("If-None-Match: {etag}");
    let (code, _, _, body) = curl(flags, &format!("{base}/a.txt"), &["-H", &inm]);
    assert_eq!((code, body.len()), (304, 0));
    let (code, _, head, _) = curl(flags, &format!("{base}/sub"), &[]);
    assert_eq!((code, header(&head, "location")), (301, "/sub/".into()));
}

#[test]
fn h2c_with_prior_knowledge_and_http1_share_a_port() {
    if !have("curl") {
        return;
    }
    let site = Site::new();
    let server = site.serve(None);
    let base = format!("http://{}", server.local_addr());
    check_statuses(&site, &base, &["--http2-prior-knowledge"], "2");
    check_statuses(&site, &base, &["--http1.1"], "1.1");
}

#[test]
fn tls_gives_h2_by_alpn_and_http1_to_who_asks() {
    if !have("curl") {
        return;
    }
    let site = Site::new();
    let tls = tls_files();
    let server = site.serve(Some(&tls));
    let base = format!("https://localhost:{}", server.local_addr().port());
    let resolve = format!("localhost:{}:127.0.0.1", server.local_addr().port());
    check_statuses(&site, &base, &["-k", "--resolve", &resolve, "--http2"], "2");
    check_statuses(
        &site,
        &base,
        &["-k", "--resolve", &resolve, "--http1.1"],
        "1.1",
    );
}

#[test]
fn h2c_on_a_unix_socket() {
    if !have("curl") {
        return;
    }
    let site = Site::new();
    let sock = site.root().join("s.sock");
    let _server = Server::builder()
        .root(site.root())
        .workers(1)
        .unix_socket(&sock)
        .start()
        .unwrap();
    let s = sock.to_str().unwrap();
    let (code, v, _, body) = curl(
        &["--unix-socket", s, "--http2-prior-knowledge"],
        "http://x/a.txt",
        &[],
    );
    assert_eq!(
        (code, v.as_str(), body.as_slice()),
        (200, "2", &b"hello over h2\n"[..])
    );
}

/// Runs h2load and checks that every request succeeded; returns its output.
fn h2load(url: &str) -> String {
    let out = run("h2load", &["-n", "2000", "-c", "4", "-m", "10", url]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "h2load: {text}");
    assert!(
        text.contains("2000 succeeded, 0 failed, 0 errored, 0 timeout"),
        "{text}"
    );
    assert!(text.contains("status codes: 2000 2xx"), "{text}");
    text
}

#[test]
fn h2load_finishes_every_request_over_h2c_and_tls() {
    if !have("h2load") {
        return;
    }
    let site = Site::new();
    let plain = site.serve(None);
    h2load(&format!("http://{}/a.txt", plain.local_addr()));
    let tls = tls_files();
    let secure = site.serve(Some(&tls));
    let text = h2load(&format!("https://{}/a.txt", secure.local_addr()));
    assert!(text.contains("Application protocol: h2"), "{text}");
    let st = secure.stats();
    assert!(st.requests >= 2000, "{st:?}");
}

#[test]
fn the_c_abi_sets_tls_and_names_a_bad_key() {
    use perflab_serve::ffi::*;
    use std::ffi::{CStr, CString};
    let tls = tls_files();
    let junk = tls.cert.with_file_name("junk.pem");
    std::fs::write(&junk, "not a key\n").unwrap();
    let c = |p: &Path| CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a server from perflab_server_new, NUL-terminated strings that outlive
    // the calls, freed once at the end.
    unsafe {
        let s = perflab_server_new();
        assert_eq!(perflab_server_set_hello(s, 1), 0);
        assert_eq!(perflab_server_set_port(s, 0), 0);
        assert_eq!(perflab_server_set_h2_max_streams(s, 16), 0);
        assert_eq!(
            perflab_server_set_tls(s, c(&tls.cert).as_ptr(), c(&junk).as_ptr()),
            0
        );
        assert_eq!(perflab_server_start(s), -1);
        let why = CStr::from_ptr(perflab_last_error())
            .to_string_lossy()
            .into_owned();
        assert!(why.contains("junk.pem"), "{why}");
        assert_eq!(
            perflab_server_set_tls(s, c(&tls.cert).as_ptr(), c(&tls.key).as_ptr()),
            0
        );
        assert_eq!(perflab_server_start(s), 0);
        assert_ne!(perflab_server_local_port(s), 0);
        assert_eq!(perflab_server_stop(s), 0);
        perflab_server_free(s);
    }
}
