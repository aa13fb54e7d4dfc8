//! The tiny URL grammar the engine accepts: `http[s]://HOST[:PORT][/PATH][?QUERY]`.
//!
//! Hand-written rather than pulling in a general URL crate because the engine needs
//! exactly three things from a URL — where to connect, what to put in `Host:`, and the
//! request target — and must reject, with a precise message, everything that would
//! produce a broken request line (spaces, control characters, user-info).

use crate::error::SpecError;

/// Transport scheme of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP/1.1 over TCP (default port 80).
    Http,
    /// HTTP/1.1 over TLS (rustls; default port 443).
    Https,
}

/// A parsed target URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The scheme.
    pub scheme: Scheme,
    /// Host name or IP address (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Value of the `Host:` header (host, with the port when it is not the default).
    pub authority: String,
    /// Request target: path and query, always starting with `/`.
    pub path: String,
}

impl Target {
    /// Parses `s`.
    pub fn parse(s: &str) -> Result<Target, SpecError> {
        let bad = |reason: &str| SpecError::InvalidUrl {
            url: s.to_string(),
            reason: reason.to_string(),
        };
        let (scheme, rest) = s.split_once("://").ok_or_else(|| bad("missing scheme"))?;
        let scheme_lc = scheme.to_ascii_lowercase();
        let (scheme, default_port) = match scheme_lc.as_str() {
            "http" => (Scheme::Http, 80),
            "https" => (Scheme::Https, 443),
            _ => {
                return Err(SpecError::UnsupportedScheme {
                    url: s.to_string(),
                    scheme: scheme.to_string(),
                })
            }
        };
        let rest = rest.split('#').next().unwrap_or("");
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(split);
        if authority.contains('@') {
            return Err(bad("user-info (user@host) is not supported"));
        }
        let (host, port) = split_host_port(authority).map_err(&bad)?;
        let port = match port {
            None => default_port,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| bad("port must be 1-65535"))?,
        };
        if host.is_empty() {
            return Err(bad("empty host"));
        }
        let host_ok = |c: char| c.is_ascii_alphanumeric() || "-._:%".contains(c);
        if !host.chars().all(host_ok) {
            return Err(bad("host contains characters that are not allowed"));
        }
        let path = if path.is_empty() {
            "/".to_string()
        } else if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(bad(
                "path contains spaces or control characters (percent-encode them)",
            ));
        }
        let authority = if port == default_port {
            authority_host(&host)
        } else {
            format!("{}:{port}", authority_host(&host))
        };
        Ok(Target {
            scheme,
            host,
            port,
            authority,
            path,
        })
    }
}

fn authority_host(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

fn split_host_port(authority: &str) -> Result<(String, Option<&str>), &'static str> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("unclosed `[` in IPv6 host")?;
        match after {
            "" => Ok((host.to_string(), None)),
            _ => match after.strip_prefix(':') {
                Some(p) => Ok((host.to_string(), Some(p))),
                None => Err("unexpected characters after `]`"),
            },
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => Ok((h.to_string(), Some(p))),
            None => Ok((authority.to_string(), None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_forms() {
        let t = Target::parse("http://127.0.0.1:8080/a/b?x=1#frag").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 8080, "/a/b?x=1")
        );
        assert_eq!(t.authority, "127.0.0.1:8080");
        let t = Target::parse("HTTP://example.com").unwrap();
        assert_eq!(
            (t.port, t.path.as_str(), t.authority.as_str()),
            (80, "/", "example.com")
        );
        let t = Target::parse("https://example.com/x").unwrap();
        assert_eq!(
            (t.scheme, t.port, t.authority.as_str()),
            (Scheme::Https, 443, "example.com")
        );
        let t = Target::parse("https://127.0.0.1:8443/").unwrap();
        assert_eq!((t.port, t.authority.as_str()), (8443, "127.0.0.1:8443"));
        let t = Target::parse("https://h:80/").unwrap();
        assert_eq!(t.authority, "h:80");
        let t = Target::parse("http://[::1]:9000?q").unwrap();
        assert_eq!(
            (t.host.as_str(), t.path.as_str(), t.authority.as_str()),
            ("::1", "/?q", "[::1]:9000")
        );
    }

    #[test]
    fn rejects_bad_urls() {
        for bad in [
            "127.0.0.1:80",
            "http://",
            "http://:80/",
            "http://h:0/",
            "http://h:99999/",
            "http://h/a b",
            "http://u@h/",
            "http://[::1/",
        ] {
            assert!(
                matches!(Target::parse(bad), Err(SpecError::InvalidUrl { .. })),
                "{bad}"
            );
        }
        assert!(matches!(
            Target::parse("ftp://h/"),
            Err(SpecError::UnsupportedScheme { .. })
        ));
        let err = Target::parse("ftp://h/").unwrap_err().to_string();
        assert!(err.contains("supported: http, https"), "{err}");
    }
}
