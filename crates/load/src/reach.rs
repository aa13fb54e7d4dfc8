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

/// What the first connection found: how the run's bytes will travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
/// on this port. Silence or a close proves nothing (the connection was made).
fn h2c(tcp: &mut TcpStream) -> Result<&'static str, Phrase> {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
    const SETTINGS: u8 = 4;
    if tcp.write_all(PREFACE).is_err() {
        return Ok("h2");
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
