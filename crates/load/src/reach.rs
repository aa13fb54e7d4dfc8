//! The run's first connection, made alone before the load starts: can the target be
//! reached at all, and what does it speak?
//!
//! wrk connects once before it starts its threads and stops at once with
//! `connect: Connection refused`; a load generator that instead counts 250 failed
//! connects, prints latencies of 0.000 and exits "finished with failures" answers a
//! question nobody asked. So [`reach`] makes one blocking connection per connection
//! group (TCP, then TLS where the URL asks for it, then — for `http` 2 over plain TCP —
//! the HTTP/2 preface) within the connect timeout. When *no* group can be reached the
//! run fails with [`LoadError::Unreachable`], naming the cause as a [`ConnectCause`]
//! (refused, unreachable, timed out, TLS handshake, protocol not offered). A connection
//! counts as made once TCP, and TLS where used, is established: a server that accepts
//! and then stalls is a load test's failure to report, not a reason to refuse the run.
//!
//! Blocking std sockets, not the engine's drivers: this is one connection, its cost is
//! one round trip, and keeping it apart leaves the hot path untouched. What it learns
//! (the protocol that will be spoken, whether TLS is used) is the [`Reached`] value a
//! command stores with the run.

use crate::error::LoadError;
use crate::request::{Group, Prepared};
use crate::spec::{HttpVersion, LoadSpec};
use crate::tls;
use perflab_units::Phrase;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::net::TcpStream;

/// Why a connection could not be made, named the same way in text and JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectCause {
    /// Nothing listens there (`ECONNREFUSED`, a unix socket path that is missing).
    Refused,
    /// No route to the host or network.
    Unreachable,
    /// The connect (or the TLS handshake) did not finish within the connect timeout.
    TimedOut,
    /// TCP was made but the TLS handshake failed (a plain port, a bad certificate).
    TlsHandshake,
    /// The server does not speak the protocol asked for (`http` 2 against HTTP/1.1).
    ProtocolNotOffered,
    /// Another connect failure (its message says which).
    Other,
}

impl ConnectCause {
    /// The cause in words, as text and JSON (`snake_case` there) name it.
    pub fn words(self) -> &'static str {
        match self {
            ConnectCause::Refused => "connection refused",
            ConnectCause::Unreachable => "host unreachable",
            ConnectCause::TimedOut => "connect timed out",
            ConnectCause::TlsHandshake => "TLS handshake failed",
            ConnectCause::ProtocolNotOffered => "protocol not offered",
            ConnectCause::Other => "connect failed",
        }
    }

    fn of_io(e: &io::Error) -> ConnectCause {
        match e.kind() {
            io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound => ConnectCause::Refused,
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ConnectCause::TimedOut,
            io::ErrorKind::HostUnreachable | io::ErrorKind::NetworkUnreachable => {
                ConnectCause::Unreachable
            }
            _ => ConnectCause::Other,
        }
    }
}

/// How long the h2c check waits for the server's first bytes (at most the connect
/// timeout): an HTTP/1 server answers the preface at once.
const H2C_ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// What the first connection found: how the run's bytes will travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Reached {
    /// `h1` or `h2`: what the server agreed to (by ALPN over TLS; as asked for over
    /// plain TCP).
    pub protocol: &'static str,
    /// Whether the connection is TLS (`https://`).
    pub tls: bool,
}

/// Makes one connection to each connection group; fails only when none can be made.
pub(crate) fn reach(spec: &LoadSpec, prepared: &Prepared) -> Result<Reached, LoadError> {
    let mut first_failure = None;
    for g in &prepared.groups {
        match reach_group(spec, g) {
            Ok(r) => return Ok(r),
            Err(e) => {
                first_failure.get_or_insert(e);
            }
        }
    }
    Err(first_failure.unwrap_or(LoadError::Unreachable {
        addr: String::new(),
        cause: ConnectCause::Other,
        detail: Phrase::text("no target to connect to"),
    }))
}

/// One group: TCP (or the unix socket), TLS, and the protocol.
fn reach_group(spec: &LoadSpec, g: &Group) -> Result<Reached, LoadError> {
    let timeout = spec.connect_timeout;
    let addr = match &g.unix {
        Some(p) => p.display().to_string(),
        None => g.addr.to_string(),
    };
    let fail = |cause: ConnectCause, detail: Phrase| LoadError::Unreachable {
        addr: addr.clone(),
        cause,
        detail,
    };
    let io_fail = |e: io::Error| fail(ConnectCause::of_io(&e), Phrase::text(e.to_string()));
    if let Some(path) = &g.unix {
        std::os::unix::net::UnixStream::connect(path).map_err(io_fail)?;
        return Ok(Reached {
            protocol: "h1",
            tls: false,
        });
    }
    let mut tcp = TcpStream::connect_timeout(&g.addr, timeout).map_err(io_fail)?;
    tcp.set_read_timeout(Some(timeout)).map_err(io_fail)?;
    tcp.set_write_timeout(Some(timeout)).map_err(io_fail)?;
    let Some(t) = &g.tls else {
        let protocol = match g.http {
            HttpVersion::Http2 => {
                h2c(&mut tcp).map_err(|d| fail(ConnectCause::ProtocolNotOffered, d))?
            }
            _ => "h1",
        };
        return Ok(Reached {
            protocol,
            tls: false,
        });
    };
    let alpn = handshake(&mut tcp, t).map_err(|(cause, d)| fail(cause, d))?;
    let protocol = match (alpn.as_deref(), g.http) {
        (Some(b"h2"), _) => "h2",
        (_, HttpVersion::Http2) => {
            return Err(fail(
                ConnectCause::ProtocolNotOffered,
                Phrase::text("the server did not choose HTTP/2 by ALPN (")
                    .and_setting("http", "2")
                    .then(" offers only `h2`; drop it to fall back to HTTP/1.1)"),
            ))
        }
        _ => "h1",
    };
    Ok(Reached {
        protocol,
        tls: true,
    })
}

/// The TLS handshake over `tcp`; the protocol ALPN chose.
fn handshake(
    tcp: &mut TcpStream,
    t: &tls::TlsTarget,
) -> Result<Option<Vec<u8>>, (ConnectCause, Phrase)> {
    let mut conn = rustls::ClientConnection::new(t.config.clone(), t.name.clone())
        .map_err(|e| (ConnectCause::TlsHandshake, tls::describe(&e, &t.hint)))?;
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(tcp) {
            let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
            return Err(match inner {
                Some(
                    r @ rustls::Error::AlertReceived(
                        rustls::AlertDescription::NoApplicationProtocol,
                    ),
                ) => (ConnectCause::ProtocolNotOffered, tls::describe(r, &t.hint)),
                Some(r @ rustls::Error::InvalidCertificate(_)) => {
                    (ConnectCause::TlsHandshake, tls::describe(r, &t.hint))
                }
                Some(r) => (
                    ConnectCause::TlsHandshake,
                    Phrase::text(format!("{r} (is this port plain HTTP? try http://)")),
                ),
                None if ConnectCause::of_io(&e) == ConnectCause::TimedOut => (
                    ConnectCause::TimedOut,
                    Phrase::text("no TLS handshake within the connect timeout"),
                ),
                None => (
                    ConnectCause::TlsHandshake,
                    Phrase::text(format!("{e} (is this port plain HTTP? try http://)")),
                ),
            });
        }
    }
    Ok(conn.alpn_protocol().map(<[u8]>::to_vec))
}

/// h2c with prior knowledge: sends the preface and an empty SETTINGS. An HTTP/2 server's
/// first frame is its SETTINGS (type 4); any other answer means HTTP/2 is not offered
/// on this port. Silence or a close proves nothing (the connection was made), so the
/// answer is waited for at most [`H2C_ANSWER_WAIT`]: a server that accepts and stays
/// silent is the run's to report (its connections stall), not a reason to delay it by
/// the whole connect timeout.
fn h2c(tcp: &mut TcpStream) -> Result<&'static str, Phrase> {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
    const SETTINGS: u8 = 4;
    if tcp.write_all(PREFACE).is_err() {
        return Ok("h2");
    }
    if let Ok(Some(t)) = tcp.read_timeout() {
        let _ = tcp.set_read_timeout(Some(t.min(H2C_ANSWER_WAIT)));
    }
    let mut head = [0u8; 64];
    let n = tcp.read(&mut head).unwrap_or(0);
    if n == 0 || (n >= 4 && head[3] == SETTINGS) {
        return Ok("h2");
    }
    let answer = if head[..n].starts_with(b"HTTP/1") {
        let text = String::from_utf8_lossy(&head[..n]);
        format!("`{}`", text.lines().next().unwrap_or_default())
    } else {
        "something that is not an HTTP/2 frame".to_string()
    };
    Err(Phrase::text(format!(
        "the server answered the HTTP/2 preface with {answer}: it speaks HTTP/1 only on \
         this port (drop "
    ))
    .and_setting("http", "2")
    .then(")"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn reach_url(url: &str, http: HttpVersion) -> Result<Reached, LoadError> {
        let spec = LoadSpec {
            http,
            ..LoadSpec::new(url)
        };
        let prepared = crate::request::prepare(&spec).unwrap();
        reach(&spec, &prepared)
    }

    fn cause(r: Result<Reached, LoadError>) -> ConnectCause {
        match r {
            Err(LoadError::Unreachable { cause, .. }) => cause,
            other => panic!("{other:?}"),
        }
    }

    /// A server that answers the first bytes it reads with `answer`, once.
    fn answering(answer: &'static [u8]) -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", l.local_addr().unwrap());
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let mut buf = [0u8; 64];
                let _ = s.read(&mut buf);
                let _ = s.write_all(answer);
            }
        });
        url
    }

    #[test]
    fn a_port_nobody_listens_on_is_refused() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}/");
        assert_eq!(
            cause(reach_url(&url, HttpVersion::Auto)),
            ConnectCause::Refused
        );
    }

    #[test]
    fn h2c_is_offered_only_when_the_server_answers_with_settings() {
        let http1 = answering(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        let e = reach_url(&http1, HttpVersion::Http2);
        assert!(e
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("`HTTP/1.1 400 Bad Request`"));
        assert_eq!(cause(e), ConnectCause::ProtocolNotOffered);
        let h2 = answering(b"\0\0\0\x04\0\0\0\0\0");
        assert_eq!(
            reach_url(&h2, HttpVersion::Http2).unwrap(),
            Reached {
                protocol: "h2",
                tls: false
            }
        );
        let plain = answering(b"");
        assert_eq!(reach_url(&plain, HttpVersion::Auto).unwrap().protocol, "h1");
    }

    #[test]
    fn https_against_a_plain_port_is_a_tls_handshake_failure() {
        let url = answering(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
            .replace("http://", "https://");
        let e = reach_url(&url, HttpVersion::Auto);
        assert_eq!(cause(e), ConnectCause::TlsHandshake);
    }
}
