//! TLS client configuration for `https://` targets: one rustls [`ClientConfig`] per run,
//! built before anything is sent, shared by every connection of every worker.
//!
//! - **Crypto**: rustls with the `ring` provider (no cmake/nasm toolchain, unlike
//!   aws-lc-rs), TLS 1.2 and 1.3, ALPN `h2` then `http/1.1` (or the one version a
//!   run forces: `--http2`, `--http1.1`); the server's choice decides the protocol.
//! - **Trust**: the operating system's store, read by `rustls-native-certs`
//!   (`/etc/ssl/certs` and wherever OpenSSL looks) rather than `webpki-roots`' bundled
//!   Mozilla list: a load test usually targets the user's own servers, whose private CA
//!   is installed in the system store (`update-ca-certificates`), exactly where curl, wrk
//!   and ab look too; the list is the machine's, not one frozen into the binary; and its
//!   licence is the project's (webpki-roots is CDLA-Permissive-2.0). `--cacert FILE`
//!   adds PEM CAs to it; `--insecure` replaces verification with [`AcceptAnyCert`],
//!   which still checks the handshake signatures (the server holds the key of the
//!   certificate it shows) but not who issued the certificate nor for which name.
//! - **Resumption**: rustls' default in-memory session cache (256 server names) lives in
//!   the shared config, so a reconnect — `Connection: close`, `--no-keepalive`, a server
//!   close — resumes the session (TLS 1.3 tickets, TLS 1.2 tickets or session ids)
//!   instead of paying a full handshake, as browsers and wrk do.
//!
//! The non-blocking I/O over these configs lives in `transport`.

use crate::error::SpecError;
use perflab_units::Phrase;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::Path;
use std::sync::Arc;

/// What a TLS connection to one target needs: the run's config and the name to verify.
#[derive(Debug)]
pub(crate) struct TlsTarget {
    /// The run's shared client config (and its session cache).
    pub config: Arc<ClientConfig>,
    /// SNI and verification name: a DNS name, or an IP address (no SNI is sent).
    pub name: ServerName<'static>,
    /// Told with a certificate failure: how to fix it (its options as fields).
    pub hint: Arc<Phrase>,
}

/// Builds the run's client config. `cacert` adds CAs; `insecure` skips verification.
pub(crate) fn client_config(
    insecure: bool,
    cacert: Option<&Path>,
    alpn: &[&[u8]],
) -> Result<(Arc<ClientConfig>, Arc<Phrase>), SpecError> {
    let provider = Arc::new(ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| SpecError::Tls(format!("cannot set up TLS: {e}")))?;
    let (mut config, hint) = if insecure {
        let verifier = Arc::new(AcceptAnyCert(provider));
        let config = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        (config, Phrase::default())
    } else {
        let (roots, hint) = root_store(cacert)?;
        (
            builder.with_root_certificates(roots).with_no_client_auth(),
            hint,
        )
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok((Arc::new(config), Arc::new(hint)))
}

/// The system roots plus `cacert`; and the hint given with a certificate failure.
fn root_store(cacert: Option<&Path>) -> Result<(RootCertStore, Phrase), SpecError> {
    let mut roots = RootCertStore::empty();
    // Unreadable entries of the system store are skipped: they cannot be fixed here,
    // and the hint below says when nothing at all was found.
    let (system, _unparsable) =
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    let mut hint = Phrase::text("pass ")
        .and_field("insecure")
        .then(" to skip verification, or ")
        .and_field("cacert")
        .then(" FILE to trust the server's CA");
    if system == 0 {
        hint = hint.then(" (no CA certificates were found in the system trust store)");
    }
    if let Some(path) = cacert {
        let added = add_pem(&mut roots, path)?;
        hint = Phrase::text(format!(
            "the server's certificate is not signed by a CA of `{}` ({added} certificate(s)) \
             or of the system store; pass ",
            path.display()
        ))
        .and_field("insecure")
        .then(" to skip verification");
    }
    Ok((roots, hint))
}

/// Adds every certificate of the PEM file at `path`; returns how many.
fn add_pem(roots: &mut RootCertStore, path: &Path) -> Result<usize, SpecError> {
    let bytes = std::fs::read(path).map_err(|source| SpecError::File {
        what: "CA file",
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |why: String| SpecError::Tls(format!("CA file `{}`: {why}", path.display()));
    let mut added = 0;
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        let cert = cert.map_err(|e| bad(format!("unreadable PEM ({e})")))?;
        roots
            .add(cert)
            .map_err(|e| bad(format!("not a usable CA certificate ({e})")))?;
        added += 1;
    }
    if added == 0 {
        return Err(bad(
            "no certificate in it (expected PEM: -----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    Ok(added)
}

/// The TLS name of `host` (a host name or an IP address, IPv6 without brackets).
pub(crate) fn server_name(url: &str, host: &str) -> Result<ServerName<'static>, SpecError> {
    ServerName::try_from(host.to_string()).map_err(|e| SpecError::InvalidUrl {
        url: url.to_string(),
        reason: format!("host is not a valid TLS server name ({e})"),
    })
}

/// The message for a failed TLS connection, its options as fields.
pub(crate) fn describe(e: &rustls::Error, hint: &Phrase) -> Phrase {
    match e {
        rustls::Error::InvalidCertificate(c) if c.to_string().contains("CaUsedAsEndEntity") => {
            Phrase::text(format!(
                "certificate verify failed: {c} — the server presents a CA certificate as its \
                 own (a self-signed `openssl req -x509` one?); serve a certificate signed by \
                 that CA, or pass "
            ))
            .and_field("insecure")
        }
        rustls::Error::InvalidCertificate(c) => {
            Phrase::text(format!("certificate verify failed: {c} — ")).and(hint.clone())
        }
        rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol) => {
            Phrase::text(
                "TLS handshake failed: the server speaks none of the protocols offered by ALPN \
                 (with ",
            )
            .and_setting("http", "2")
            .then(" only `h2` is offered: the server did not choose HTTP/2 by ALPN; drop ")
            .and_setting("http", "2")
            .then(" to fall back to HTTP/1.1)")
        }
        other => Phrase::text(format!("TLS handshake failed: {other}")),
    }
}

/// `--insecure`: accepts any certificate for any name, but still checks that the server
/// signed the handshake with the key of the certificate it presented.
#[derive(Debug)]
pub(crate) struct AcceptAnyCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cacert_errors_are_spec_errors() {
        let missing = Path::new("/nonexistent/perflab-ca.pem");
        assert!(matches!(
            client_config(false, Some(missing), &[b"http/1.1"]),
            Err(SpecError::File { .. })
        ));
        let dir = std::env::temp_dir().join(format!("perflab-load-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let err = client_config(false, Some(&empty), &[b"http/1.1"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no certificate"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_and_messages() {
        assert!(matches!(
            server_name("https://127.0.0.1/", "127.0.0.1").unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(matches!(
            server_name("https://[::1]/", "::1").unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(matches!(
            server_name("https://example.com/", "example.com").unwrap(),
            ServerName::DnsName(_)
        ));
        let e = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let m = describe(&e, &Phrase::text("pass ").and_field("insecure"));
        // The library names the option as an experiment file does; a command its flag.
        assert_eq!(m.subject(), Some("insecure"));
        let m = m.to_string();
        assert!(
            m.starts_with("certificate verify failed: UnknownIssuer"),
            "{m}"
        );
        assert!(m.ends_with("pass `insecure`"), "{m}");
    }
}
