//! Requests are serialized once, before the run, and the same bytes are written for
//! every request: the hot path never formats, allocates or copies a request.
//!
//! [`Prepared`] is what the workers share (behind an `Arc`): per URL its resolved
//! address, the request bytes, and a pre-concatenated pipeline batch; per group of URLs
//! that share a connection, the address and, for `https://`, the TLS config (built once
//! per run, see `tls`).

use crate::error::SpecError;
use crate::spec::LoadSpec;
use crate::spec::{uring_misfit, HttpVersion, IoChoice};
use crate::targets::{self, TargetDef};
use crate::tls::{client_config, server_name, TlsTarget};
use crate::url::{Scheme, Target};
use perflab_h2::{frame, hpack};
use rustls::pki_types::ServerName;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

/// One URL ready to be hit.
#[derive(Debug)]
pub(crate) struct PreparedTarget {
    /// Where to connect.
    pub addr: SocketAddr,
    /// One serialized request.
    pub request: Box<[u8]>,
    /// `pipeline` copies of `request`, written with one syscall.
    pub batch: Box<[u8]>,
    /// HEAD requests get responses without a body whatever the headers say.
    pub head: bool,
    /// For the per-target report: its name, method and URL.
    pub name: String,
    pub method: String,
    pub url: String,
    /// Its share under `weighted` order.
    pub weight: u32,
    /// HTTP/2: the request's HPACK header block (encoded once, see `perflab_h2::hpack`).
    pub h2_block: Box<[u8]>,
    /// HTTP/2: the whole HEADERS frame with stream id 0, to copy and patch, when the
    /// block fits one frame of the default size (else framed per request).
    pub h2_frame: Box<[u8]>,
    /// The request body (sent as DATA frames over HTTP/2).
    pub body: Box<[u8]>,
}

/// URLs that share one address and scheme (and, for TLS, server name): a connection
/// serves only URLs of its group.
#[derive(Debug)]
pub(crate) struct Group {
    pub addr: SocketAddr,
    /// `unix_socket`: connect here instead of `addr` (then unspecified).
    pub unix: Option<std::path::PathBuf>,
    /// Running sums of the targets' weights (`weighted` order).
    pub cum: Vec<u64>,
    /// `https://`: how to set up TLS on a connection of this group.
    pub tls: Option<Arc<TlsTarget>>,
    /// The HTTP version asked for (with TLS, ALPN decides within it).
    pub http: HttpVersion,
    /// HTTP/2: streams per connection and the receive window advertised.
    pub streams: usize,
    pub h2_window: u32,
    pub targets: Vec<usize>,
}

/// Everything the workers need to send requests.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub targets: Vec<PreparedTarget>,
    pub groups: Vec<Group>,
    pub random: bool,
    pub weighted: bool,
    pub pipeline: usize,
    pub keepalive: bool,
}

/// Reads files, parses and resolves URLs, serializes the requests.
pub(crate) fn prepare(spec: &LoadSpec) -> Result<Prepared, SpecError> {
    spec.validate()?;
    let urls = all_urls(spec)?;
    let body = read_body(spec)?;
    let defs = target_defs(spec, &urls, body.as_deref())?;
    let mut targets = Vec::with_capacity(defs.len());
    let mut tls_names: Vec<Option<ServerName<'static>>> = Vec::with_capacity(defs.len());
    for d in &defs {
        let (target, tls_name) = prepare_target(spec, d)?;
        targets.push(target);
        tls_names.push(tls_name);
    }
    let mut groups = group(spec, &targets, tls_names)?;
    if spec.io == IoChoice::Uring {
        if let Some(why) = uring_misfit(spec, groups.iter().any(|g| g.tls.is_some())) {
            return Err(SpecError::Conflict(why));
        }
    }
    for g in &mut groups {
        g.cum = cumulative_weights(&targets, &g.targets);
    }
    Ok(Prepared {
        targets,
        groups,
        random: spec.random,
        weighted: spec.weighted,
        pipeline: spec.pipeline,
        keepalive: spec.keepalive,
    })
}

/// The spec's URLs followed by those of its URL file, if any.
fn all_urls(spec: &LoadSpec) -> Result<Vec<String>, SpecError> {
    let mut urls = spec.urls.clone();
    if let Some(path) = &spec.urls_file {
        read_urls_file(path, &mut urls)?;
    }
    Ok(urls)
}

/// Appends the URLs of a URL file, one per line.
fn read_urls_file(path: &std::path::Path, urls: &mut Vec<String>) -> Result<(), SpecError> {
    let text = std::fs::read_to_string(path).map_err(|source| SpecError::File {
        what: "URL file",
        path: path.to_path_buf(),
        source,
    })?;
    // One URL per line. siege's other forms (`URL POST body`, `NAME=value`
    // variables) are refused with their line rather than sent as plain GETs.
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let url = words.next().unwrap_or_default();
        if words.next().is_some() || (url.contains('=') && !url.contains("://")) {
            return Err(SpecError::Conflict(
                format!(
                    "{}:{}: `{line}`: only one URL per line is read here; a method, a body \
                     or a siege variable would be dropped, so nothing is sent",
                    path.display(),
                    n + 1
                )
                .into(),
            ));
        }
        urls.push(url.to_string());
    }
    if urls.is_empty() {
        return Err(SpecError::Conflict(
            format!("the URL file `{}` has no URL", path.display()).into(),
        ));
    }
    Ok(())
}

/// The run's request body: given inline, read from its file, or none.
fn read_body(spec: &LoadSpec) -> Result<Option<Vec<u8>>, SpecError> {
    Ok(match (&spec.body, &spec.body_file) {
        (Some(b), _) => Some(b.clone()),
        (None, Some(path)) => Some(std::fs::read(path).map_err(|source| SpecError::File {
            what: "body file",
            path: path.clone(),
            source,
        })?),
        (None, None) => None,
    })
}

/// The requests: the URLs with the run's method, headers and body, or a mix.
fn target_defs(
    spec: &LoadSpec,
    urls: &[String],
    body: Option<&[u8]>,
) -> Result<Vec<TargetDef>, SpecError> {
    Ok(match &spec.targets {
        Some(path) => targets::read(path, spec.targets_format)?,
        None => urls
            .iter()
            .enumerate()
            .map(|(i, u)| TargetDef {
                name: u.clone(),
                weight: 1,
                method: spec.method.clone(),
                url: u.clone(),
                headers: Vec::new(),
                body: body.map(<[u8]>::to_vec),
                line: i + 1,
            })
            .collect(),
    })
}

/// One request resolved and serialized (HTTP/1.1 bytes and HTTP/2 header block), with
/// its TLS server name for `https://`.
fn prepare_target(
    spec: &LoadSpec,
    d: &TargetDef,
) -> Result<(PreparedTarget, Option<ServerName<'static>>), SpecError> {
    let t = Target::parse(&d.url)?;
    let tls_name = match t.scheme {
        Scheme::Http => None,
        Scheme::Https => Some(server_name(&d.url, &t.host)?),
    };
    let addr = resolve(spec, &t)?;
    let request = serialize(spec, &t, d);
    let batch = request.repeat(spec.pipeline).into_boxed_slice();
    let body = d.body.clone().unwrap_or_default();
    let h2_block = h2_block(spec, &t, d);
    let mut h2_frame = Vec::new();
    if h2_block.len() <= perflab_h2::MIN_FRAME_SIZE as usize {
        frame::headers(
            &mut h2_frame,
            0,
            &h2_block,
            body.is_empty(),
            perflab_h2::MIN_FRAME_SIZE,
        );
    }
    let target = PreparedTarget {
        addr,
        request: request.into_boxed_slice(),
        batch,
        head: d.method.eq_ignore_ascii_case("HEAD"),
        name: d.name.clone(),
        method: d.method.clone(),
        url: d.url.clone(),
        weight: d.weight,
        h2_block: h2_block.into_boxed_slice(),
        h2_frame: h2_frame.into_boxed_slice(),
        body: body.into_boxed_slice(),
    };
    Ok((target, tls_name))
}

/// The address to connect to: the first the host resolves to.
fn resolve(spec: &LoadSpec, t: &Target) -> Result<SocketAddr, SpecError> {
    // Through a unix socket the host only names the `Host` header: nothing to resolve.
    let resolved = match spec.unix_socket {
        Some(_) => Ok(vec![SocketAddr::from(([0, 0, 0, 0], t.port))].into_iter()),
        None => (t.host.as_str(), t.port).to_socket_addrs(),
    };
    resolved
        .map_err(|source| SpecError::Resolve {
            host: t.host.clone(),
            source,
        })?
        .next()
        .ok_or_else(|| SpecError::Resolve {
            host: t.host.clone(),
            source: std::io::Error::other("no address"),
        })
}

/// Groups the targets by address and TLS server name, one TLS config for the run.
fn group(
    spec: &LoadSpec,
    targets: &[PreparedTarget],
    tls_names: Vec<Option<ServerName<'static>>>,
) -> Result<Vec<Group>, SpecError> {
    // One TLS config for the run (it holds the session cache), built only when needed:
    // loading the system trust store takes milliseconds.
    let any_tls = tls_names.iter().any(Option::is_some);
    if spec.streams > 1 && spec.http == HttpVersion::Auto && !any_tls {
        return Err(crate::spec::conflict::streams_need_h2());
    }
    let alpn: &[&[u8]] = match spec.http {
        HttpVersion::Auto => &[b"h2", b"http/1.1"],
        HttpVersion::Http1 => &[b"http/1.1"],
        HttpVersion::Http2 => &[b"h2"],
    };
    let tls = match any_tls {
        true => Some(client_config(spec.insecure, spec.cacert.as_deref(), alpn)?),
        false => None,
    };
    let mut groups: Vec<Group> = Vec::new();
    for (i, (t, name)) in targets.iter().zip(tls_names).enumerate() {
        let same = |g: &Group| g.addr == t.addr && g.tls.as_ref().map(|x| &x.name) == name.as_ref();
        match groups.iter_mut().find(|g| same(g)) {
            Some(g) => g.targets.push(i),
            None => groups.push(Group {
                addr: t.addr,
                unix: spec.unix_socket.clone(),
                cum: Vec::new(),
                tls: name.zip(tls.as_ref()).map(|(name, (config, hint))| {
                    Arc::new(TlsTarget {
                        config: Arc::clone(config),
                        name,
                        hint: Arc::clone(hint),
                    })
                }),
                http: spec.http,
                streams: spec.streams,
                h2_window: spec.h2_window,
                targets: vec![i],
            }),
        }
    }
    Ok(groups)
}

/// Running sums of a group's targets' weights (`weighted` order).
fn cumulative_weights(targets: &[PreparedTarget], members: &[usize]) -> Vec<u64> {
    let mut sum = 0;
    members
        .iter()
        .map(|&i| {
            sum += u64::from(targets[i].weight);
            sum
        })
        .collect()
}

/// Headers HTTP/2 forbids (RFC 9113 §8.2.2) or replaces (`host` by `:authority`).
const NOT_IN_H2: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// The HPACK block of one request: the pseudo-headers, then the run's headers and the
/// target's own (one of the target's replaces the run's of the same name) in lower
/// case, without the connection-specific ones; a `Host` header becomes `:authority`.
pub(crate) fn h2_block(spec: &LoadSpec, t: &Target, d: &TargetDef) -> Vec<u8> {
    let headers: Vec<&(String, String)> = spec
        .headers
        .iter()
        .filter(|(n, _)| !d.headers.iter().any(|(m, _)| m.eq_ignore_ascii_case(n)))
        .chain(d.headers.iter())
        .collect();
    let find = |name: &str| headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name));
    let authority = find("host").map_or(t.authority.as_str(), |(_, v)| v.as_str());
    let scheme = match t.scheme {
        Scheme::Http => "http",
        Scheme::Https => "https",
    };
    let mut out = Vec::with_capacity(64);
    hpack::encode_field(&mut out, b":method", d.method.as_bytes());
    hpack::encode_field(&mut out, b":scheme", scheme.as_bytes());
    hpack::encode_field(&mut out, b":authority", authority.as_bytes());
    hpack::encode_field(&mut out, b":path", t.path.as_bytes());
    for (n, v) in &headers {
        let name = n.to_ascii_lowercase();
        let te_ok = name == "te" && v.eq_ignore_ascii_case("trailers");
        if NOT_IN_H2.contains(&name.as_str()) || (name == "te" && !te_ok) {
            continue;
        }
        hpack::encode_field(&mut out, name.as_bytes(), v.as_bytes());
    }
    if let Some(b) = &d.body {
        if find("content-length").is_none() {
            hpack::encode_field(&mut out, b"content-length", b.len().to_string().as_bytes());
        }
    }
    out
}

/// The bytes of one request: the target's method, the run's headers then the
/// target's own (one of the target's replaces the run's of the same name), its body.
pub(crate) fn serialize(spec: &LoadSpec, t: &Target, d: &TargetDef) -> Vec<u8> {
    let headers: Vec<&(String, String)> = spec
        .headers
        .iter()
        .filter(|(n, _)| !d.headers.iter().any(|(m, _)| m.eq_ignore_ascii_case(n)))
        .chain(d.headers.iter())
        .collect();
    let has = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let body = d.body.as_deref();
    let mut out = Vec::with_capacity(128 + body.map_or(0, <[u8]>::len));
    out.extend_from_slice(d.method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(t.path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !has("host") {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(t.authority.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    for (n, v) in &headers {
        out.extend_from_slice(n.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if let Some(b) = body {
        if !has("content-length") {
            out.extend_from_slice(format!("Content-Length: {}\r\n", b.len()).as_bytes());
        }
    }
    if !spec.keepalive && !has("connection") {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if let Some(b) = body {
        out.extend_from_slice(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_once_with_host_body_and_close() {
        let mut spec = LoadSpec::new("http://127.0.0.1:8080/x?y=1");
        spec.method = "POST".into();
        spec.headers = vec![("X-A".into(), "b".into())];
        spec.keepalive = false;
        let t = Target::parse(&spec.urls[0]).unwrap();
        let d = TargetDef {
            name: String::new(),
            weight: 1,
            method: spec.method.clone(),
            url: spec.urls[0].clone(),
            headers: Vec::new(),
            body: Some(b"hello".to_vec()),
            line: 1,
        };
        let bytes = serialize(&spec, &t, &d);
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "POST /x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: b\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
        );
    }

    #[test]
    fn unreadable_body_file_is_a_spec_error() {
        let mut spec = LoadSpec::new("http://127.0.0.1:1/");
        spec.body_file = Some("/nonexistent/perflab-body".into());
        assert!(matches!(prepare(&spec), Err(SpecError::File { .. })));
    }
}
