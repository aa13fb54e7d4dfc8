//! `https://` against a local rustls server on 127.0.0.1 with a CA and a server
//! certificate made by rcgen for the test: verification (`insecure`, `cacert`, neither),
//! keep-alive, large bodies across TLS records, session resumption on reconnects,
//! TLS failures in the report, and `http://` beside `https://` in one run.
mod common;

use common::{ok, Reply, TestServer};
use perflab_load::{run, Io, IoChoice, LoadSpec};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{HandshakeKind, ServerConfig, ServerConnection, StreamOwned};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A test CA and a server certificate it signed, for `localhost` and 127.0.0.1.
struct Pki {
    ca_pem: String,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

fn pki() -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "perflab test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    Pki {
        ca_pem: ca_cert.pem(),
        chain: vec![leaf.der().clone(), ca_cert.der().clone()],
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
    }
}

/// A TLS HTTP/1.1 server answering every request with `reply`, one thread per
/// connection, blocking std sockets. Stops when dropped.
struct TlsServer {
    addr: SocketAddr,
    requests: Arc<AtomicU64>,
    handshakes: Arc<AtomicU64>,
    resumed: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl TlsServer {
    fn start(pki: &Pki, reply: Vec<u8>) -> TlsServer {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(pki.chain.clone(), pki.key.clone_key())
            .unwrap();
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicU64::new(0));
        let handshakes = Arc::new(AtomicU64::new(0));
        let resumed = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let reply = Arc::new(reply);
        let (r, h, res, s) = (
            requests.clone(),
            handshakes.clone(),
            resumed.clone(),
            stop.clone(),
        );
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (config, reply) = (config.clone(), reply.clone());
                let (r, h, res) = (r.clone(), h.clone(), res.clone());
                std::thread::spawn(move || {
                    serve(stream, config, &reply, &r, &h, &res);
                });
            }
        });
        TlsServer {
            addr,
            requests,
            handshakes,
            resumed,
            stop,
            accept: Some(accept),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wakes the accept loop
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn serve(
    sock: TcpStream,
    config: Arc<ServerConfig>,
    reply: &[u8],
    requests: &AtomicU64,
    handshakes: &AtomicU64,
    resumed: &AtomicU64,
) {
    // Bounded: a client that goes quiet is dropped; the engine closes its sockets at
    // the end of a run, which ends these threads.
    let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = sock.set_nodelay(true);
    let Ok(conn) = ServerConnection::new(config) else {
        return;
    };
    let mut tls = StreamOwned::new(conn, sock);
    while tls.conn.is_handshaking() {
        if tls.conn.complete_io(&mut tls.sock).is_err() {
            return; // the client rejected the certificate, or is not speaking TLS
        }
    }
    handshakes.fetch_add(1, Ordering::SeqCst);
    if tls.conn.handshake_kind() == Some(HandshakeKind::Resumed) {
        resumed.fetch_add(1, Ordering::SeqCst);
    }
    let mut buf = Vec::new();
    let mut tmp = [0u8; 16 * 1024];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            requests.fetch_add(1, Ordering::SeqCst);
            if tls.write_all(reply).and_then(|()| tls.flush()).is_err() {
                return;
            }
        }
        match tls.read(&mut tmp) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

fn spec(url: String, connections: usize, requests: u64) -> LoadSpec {
    LoadSpec {
        connections,
        requests: Some(requests),
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(5),
        ..LoadSpec::new(url)
    }
}

fn write_ca(dir: &tempfile::TempDir, pki: &Pki) -> PathBuf {
    let path = dir.path().join("ca.pem");
    std::fs::write(&path, &pki.ca_pem).unwrap();
    path
}

#[test]
fn insecure_keepalive_gets_succeed() {
    let pki = pki();
    let srv = TlsServer::start(&pki, ok("hello"));
    let started = Instant::now();
    let r = run(&LoadSpec {
        insecure: true,
        ..spec(srv.url("/"), 2, 300)
    })
    .unwrap();
    assert_eq!(r.requests, 300, "{:?} {:?}", r.error_kinds, r.tls_failure);
    assert_eq!(r.status.get("200"), Some(&300));
    assert_eq!(r.errors.total, 0);
    assert_eq!(
        r.connections_opened, 2,
        "keep-alive: one handshake per connection"
    );
    assert_eq!(r.bytes, 300 * ok("hello").len() as u64);
    assert_eq!(srv.requests.load(Ordering::SeqCst), 300);
    assert!(r.tls_failure.is_none());
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(r.io, Io::Epoll, "--io auto runs https on epoll");
}

#[test]
fn unknown_ca_is_a_tls_error_with_a_hint() {
    let pki = pki();
    let srv = TlsServer::start(&pki, ok("hello"));
    let started = Instant::now();
    let r = run(&spec(srv.url("/"), 1, 5)).unwrap();
    assert_eq!(r.requests, 0);
    // Each failed handshake uses up one request of `-n` (the engine may make one more
    // attempt before it sees the count is used up, as with refused connects).
    let tls = r.error_kinds.tls;
    assert!((5..=6).contains(&tls), "{:?}", r.error_kinds);
    assert_eq!(r.errors.connect, tls, "TLS failures count under connect");
    assert_eq!(r.errors.total, tls);
    assert_eq!(r.failed(), tls);
    let why = r
        .tls_failure
        .as_deref()
        .expect("the first TLS failure is told");
    assert!(
        why.starts_with("certificate verify failed: UnknownIssuer"),
        "{why}"
    );
    // The library names the options as an experiment file does (`perflab http` says
    // `--insecure`, `--cacert`).
    assert!(
        why.contains("`insecure`") && why.contains("`cacert`"),
        "{why}"
    );
    let mut named = r.clone();
    named.name_fields(&|f| format!("--{f}"));
    let why = named.tls_failure.as_deref().unwrap_or_default();
    assert!(
        why.contains("pass --insecure to skip verification, or --cacert FILE"),
        "{why}"
    );
    assert!(
        named.warnings.iter().any(|w| w.ends_with(why)),
        "{:?}",
        named.warnings
    );
    assert!(
        r.warnings.iter().any(|w| w.contains("UnknownIssuer")),
        "{:?}",
        r.warnings
    );
    assert_eq!(srv.requests.load(Ordering::SeqCst), 0);
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn cacert_trusts_the_test_ca() {
    let pki = pki();
    let dir = tempfile::tempdir().unwrap();
    let ca = write_ca(&dir, &pki);
    let srv = TlsServer::start(&pki, ok("hello"));
    let r = run(&LoadSpec {
        cacert: Some(ca.clone()),
        ..spec(srv.url("/"), 2, 200)
    })
    .unwrap();
    assert_eq!(r.requests, 200, "{:?} {:?}", r.error_kinds, r.tls_failure);
    assert_eq!(r.errors.total, 0);
    // The name is verified too: the certificate is for 127.0.0.1 and localhost.
    let r = run(&LoadSpec {
        cacert: Some(ca),
        ..spec(format!("https://localhost:{}/", srv.addr.port()), 1, 20)
    })
    .unwrap();
    assert_eq!(r.requests, 20, "{:?} {:?}", r.error_kinds, r.tls_failure);
}

#[test]
fn reconnects_redo_the_handshake_and_resume_the_session() {
    let pki = pki();
    let dir = tempfile::tempdir().unwrap();
    let srv = TlsServer::start(&pki, ok("hello"));
    let r = run(&LoadSpec {
        cacert: Some(write_ca(&dir, &pki)),
        keepalive: false,
        ..spec(srv.url("/"), 1, 40)
    })
    .unwrap();
    assert_eq!(r.requests, 40, "{:?} {:?}", r.error_kinds, r.tls_failure);
    assert_eq!(r.errors.total, 0);
    assert!(r.reconnects >= 39, "{}", r.reconnects);
    let (handshakes, resumed) = (
        srv.handshakes.load(Ordering::SeqCst),
        srv.resumed.load(Ordering::SeqCst),
    );
    assert!(handshakes >= 40, "{handshakes}");
    assert!(
        resumed * 2 >= handshakes,
        "{resumed} of {handshakes} handshakes resumed"
    );
}

#[test]
fn large_bodies_span_many_tls_records() {
    let pki = pki();
    let body = "x".repeat(300 * 1024);
    let srv = TlsServer::start(&pki, ok(&body));
    let r = run(&LoadSpec {
        insecure: true,
        ..spec(srv.url("/big"), 2, 30)
    })
    .unwrap();
    assert_eq!(r.requests, 30, "{:?} {:?}", r.error_kinds, r.tls_failure);
    assert_eq!(r.errors.total, 0);
    assert_eq!(r.bytes, 30 * ok(&body).len() as u64);
}

#[test]
fn open_loop_over_tls() {
    let pki = pki();
    let srv = TlsServer::start(&pki, ok("hello"));
    let r = run(&LoadSpec {
        insecure: true,
        rate: Some(200.0),
        duration: Some(Duration::from_secs(1)),
        connections: 2,
        ..LoadSpec::new(srv.url("/"))
    })
    .unwrap();
    assert!(r.requests >= 150, "{} {:?}", r.requests, r.error_kinds);
    assert_eq!(r.errors.total, 0);
}

#[test]
fn plaintext_server_on_an_https_url_is_a_tls_error() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let server = std::thread::spawn(move || {
        for stream in listener.incoming() {
            if s.load(Ordering::SeqCst) {
                break;
            }
            if let Ok(mut stream) = stream {
                let mut tmp = [0u8; 1024];
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = stream.read(&mut tmp);
                let _ = stream.write_all(
                    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        }
    });
    let r = run(&LoadSpec {
        insecure: true,
        ..spec(format!("https://{addr}/"), 1, 3)
    })
    .unwrap();
    stop.store(true, Ordering::SeqCst);
    let _ = TcpStream::connect(addr);
    server.join().unwrap();
    assert_eq!(r.requests, 0);
    assert!((3..=4).contains(&r.error_kinds.tls), "{:?}", r.error_kinds);
    assert_eq!(r.errors.total, r.error_kinds.tls);
    let why = r.tls_failure.unwrap();
    assert!(why.starts_with("TLS handshake failed"), "{why}");
}

#[test]
fn http_and_https_urls_in_one_run() {
    let pki = pki();
    let tls = TlsServer::start(&pki, ok("secure"));
    let plain = TestServer::start(|_| Reply::Send(ok("plain")));
    // A duration, not a request count: with -n, the plain connection could finish every
    // request before the TLS handshake does on a busy machine (seen in CI).
    let r = run(&LoadSpec {
        urls: vec![tls.url("/"), plain.url("/")],
        insecure: true,
        requests: None,
        duration: Some(std::time::Duration::from_millis(500)),
        ..spec(String::new(), 2, 100)
    })
    .unwrap();
    assert!(r.requests > 0, "{:?} {:?}", r.error_kinds, r.tls_failure);
    assert_eq!(r.errors.total, 0);
    let (a, b) = (
        tls.requests.load(Ordering::SeqCst),
        plain.requests.load(Ordering::SeqCst),
    );
    assert!(a > 0 && b > 0, "{a} + {b}");
    assert!(a + b >= r.requests, "{a} + {b} < {}", r.requests);
    assert_eq!(r.io, Io::Epoll, "one https URL puts the run on epoll");
}

/// io_uring speaks plain http only: asking for it with an https URL — given directly
/// or in a URL file — is an input error, raised before anything is sent.
#[test]
fn https_on_io_uring_is_an_input_error() {
    let direct = LoadSpec {
        io: IoChoice::Uring,
        ..LoadSpec::new("https://127.0.0.1:1/")
    };
    let err = direct.validate().unwrap_err().to_string();
    assert!(err.contains("https") && err.contains("`io`"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("urls.txt");
    std::fs::write(&file, "http://127.0.0.1:1/\nhttps://127.0.0.1:1/\n").unwrap();
    let from_file = LoadSpec {
        io: IoChoice::Uring,
        urls_file: Some(file),
        ..LoadSpec::default()
    };
    from_file.validate().unwrap();
    let err = perflab_load::check(&from_file).unwrap_err().to_string();
    assert!(err.contains("https"), "{err}");
}

#[test]
fn tls_options_deserialize_and_validate() {
    #[derive(serde::Deserialize)]
    struct File {
        workload: LoadSpec,
    }
    let f: File = toml::from_str(
        r#"
        [workload]
        kind = "http"
        url = "https://127.0.0.1:8443/"
        insecure = true
        "#,
    )
    .unwrap();
    assert!(f.workload.insecure);
    assert_eq!(f.workload.cacert, None);
    let f: File = toml::from_str(
        r#"
        [workload]
        url = "https://example.com/"
        cacert = "ca.pem"
        "#,
    )
    .unwrap();
    assert_eq!(f.workload.cacert, Some(PathBuf::from("ca.pem")));
    assert!(!f.workload.insecure);
    let both = toml::from_str::<File>(
        r#"
        [workload]
        url = "https://example.com/"
        cacert = "ca.pem"
        insecure = true
        "#,
    );
    assert!(both.is_err());
    // An unreadable CA file is an input error, raised before anything is sent.
    let bad = LoadSpec {
        cacert: Some("/nonexistent/perflab-ca.pem".into()),
        ..LoadSpec::new("https://127.0.0.1:1/")
    };
    let err = perflab_load::check(&bad).unwrap_err().to_string();
    assert!(err.contains("CA file"), "{err}");
}
