//! TLS for `--tls-cert FILE --tls-key FILE`: the rustls server configuration, loaded
//! once at start, and the per-connection session driven over the worker's
//! non-blocking socket.
//!
//! - **Crypto**: rustls with the `ring` provider, as the load engine (no cmake/nasm
//!   toolchain, unlike aws-lc-rs); TLS 1.2 and 1.3; rustls' default in-memory session
//!   cache, so reconnecting clients resume.
//! - **ALPN**: `h2` then `http/1.1`, in the server's order of preference: a client that
//!   offers `h2` gets HTTP/2, one that offers only `http/1.1` (or no ALPN at all) gets
//!   HTTP/1.1 — or HTTP/2 with prior knowledge, detected by its preface as on a plain
//!   listener (see `conn`).
//! - **Errors**: every problem with the files is a [`ServeError::Tls`] naming the file
//!   and saying what was expected, raised by `Server::start` before any thread runs.
//!
//! The session itself is a rustls [`ServerConnection`] held by the connection's
//! [`Sock`](crate::transport::Sock), which gives the HTTP code socket-like
//! `read`/`send` of plaintext (see `transport`). TLS costs what rustls costs: a copy of
//! the plaintext into and out of its buffers, and no `sendfile` (file bodies are read
//! with `pread` and encrypted).

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::ring;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;

use crate::error::ServeError;

/// The ALPN protocols the server offers, preferred first.
pub(crate) const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// Builds the server's TLS configuration from a PEM certificate chain and a PEM key.
pub(crate) fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, ServeError> {
    let bad = |path: &Path, reason: String| ServeError::Tls {
        path: path.to_path_buf(),
        reason,
    };
    let cert_pem = std::fs::read(cert).map_err(|e| bad(cert, e.to_string()))?;
    let key_pem = std::fs::read(key).map_err(|e| bad(key, e.to_string()))?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(cert, format!("unreadable PEM ({e})")))?;
    if chain.is_empty() {
        return Err(bad(
            cert,
            "no certificate in it (expected PEM: -----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    let private = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        bad(
            key,
            format!(
                "no usable private key in it ({e}; expected PEM: -----BEGIN PRIVATE KEY-----, \
                 RSA PRIVATE KEY or EC PRIVATE KEY)"
            ),
        )
    })?;
    let provider = Arc::new(ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(cert, format!("cannot set up TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => bad(
                key,
                format!(
                    "the key does not belong to the certificate in {}",
                    cert.display()
                ),
            ),
            e => bad(key, format!("unusable key or certificate: {e}")),
        })?;
    config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (String, String) {
        let c = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        (c.cert.pem(), c.signing_key.serialize_pem())
    }

    #[test]
    fn loads_a_pair_and_offers_h2_first() {
        let d = tempfile::tempdir().unwrap();
        let (cert, key) = pair();
        std::fs::write(d.path().join("c.pem"), cert).unwrap();
        std::fs::write(d.path().join("k.pem"), key).unwrap();
        let cfg = server_config(&d.path().join("c.pem"), &d.path().join("k.pem")).unwrap();
        assert_eq!(cfg.alpn_protocols[0], b"h2");
    }

    #[test]
    fn errors_name_the_file() {
        let d = tempfile::tempdir().unwrap();
        let (cert, key) = pair();
        let (_, other_key) = pair();
        let c = d.path().join("c.pem");
        let k = d.path().join("k.pem");
        let wrong = d.path().join("wrong.pem");
        let junk = d.path().join("junk.pem");
        std::fs::write(&c, cert).unwrap();
        std::fs::write(&k, key).unwrap();
        std::fs::write(&wrong, other_key).unwrap();
        std::fs::write(&junk, "not a key\n").unwrap();
        let msg = |cert: &Path, key: &Path| server_config(cert, key).unwrap_err().to_string();
        assert!(msg(&c, &junk).contains("junk.pem"), "{}", msg(&c, &junk));
        assert!(msg(&junk, &k).contains("junk.pem: no certificate"));
        assert!(
            msg(&c, &wrong).contains("does not belong"),
            "{}",
            msg(&c, &wrong)
        );
        let missing = d.path().join("missing.pem");
        assert!(msg(&c, &missing).contains("missing.pem"));
    }
}
