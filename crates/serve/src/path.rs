//! From a request target to a file inside the root, or a refusal.
//!
//! The order is the whole point: split off the query, percent-decode **once**, refuse
//! what has no business in a path (NUL and other control bytes, backslashes, bytes that
//! are not UTF-8 — which refuses overlong encodings such as `%c0%ae`), normalize the
//! segments (`.` dropped, `..` pops, a `..` above the root is refused rather than
//! clamped), and only then touch the file system: the joined path is canonicalized
//! and must still start with the canonical root, which catches symlinks that lead
//! outside. A double encoding (`%252e`) decodes to a literal `%2e` name, never `.`.
//!
//! Known limit: between canonicalization and `open` a symlink could be swapped in by
//! someone who can write inside the root; the root's content is trusted that far.

use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};

/// Why a target was refused before any file was looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Not origin-form or absolute-form, or a bad escape / byte: 400.
    #[error("bad request target")]
    Malformed,
    /// A `..` that climbs above the root: 403.
    #[error("path leaves the root")]
    Escape,
}

impl PathError {
    pub fn status(self) -> u16 {
        match self {
            PathError::Malformed => 400,
            PathError::Escape => 403,
        }
    }
}

/// Splits a request target into its (still encoded) path and query.
/// Accepts origin-form (`/p?q`) and absolute-form (`http://host/p?q`).
pub fn split_target(target: &str) -> Result<(&str, Option<&str>), PathError> {
    let target = target.split('#').next().unwrap_or("");
    let target = match strip_scheme(target) {
        Some(rest) => match rest.find('/') {
            Some(i) => &rest[i..],
            None => "/",
        },
        None => target,
    };
    if !target.starts_with('/') {
        return Err(PathError::Malformed);
    }
    Ok(match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    })
}

fn strip_scheme(t: &str) -> Option<&str> {
    let starts =
        |p: &str| t.len() >= p.len() && t.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes());
    if starts("http://") {
        Some(&t[7..])
    } else if starts("https://") {
        Some(&t[8..])
    } else {
        None
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-decodes once. Borrows when there is nothing to decode.
pub fn percent_decode(s: &str) -> Result<Cow<'_, [u8]>, PathError> {
    if !s.contains('%') {
        return Ok(Cow::Borrowed(s.as_bytes()));
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hi = b.get(i + 1).copied().and_then(hex);
            let lo = b.get(i + 2).copied().and_then(hex);
            let (Some(hi), Some(lo)) = (hi, lo) else {
                return Err(PathError::Malformed);
            };
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(Cow::Owned(out))
}

/// Decodes and normalizes an encoded path into `/seg/seg[/]`.
pub fn normalize(encoded_path: &str) -> Result<String, PathError> {
    let bytes = percent_decode(encoded_path)?;
    if bytes.iter().any(|&b| b < 0x20 || b == 0x7f || b == b'\\') {
        return Err(PathError::Malformed);
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| PathError::Malformed)?;
    let mut segments: Vec<&str> = Vec::new();
    for seg in text.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                segments.pop().ok_or(PathError::Escape)?;
            }
            s => segments.push(s),
        }
    }
    let mut out = String::with_capacity(text.len() + 1);
    for s in &segments {
        out.push('/');
        out.push_str(s);
    }
    let dir_like = text.ends_with('/') || text.ends_with("/.") || text.ends_with("/..");
    if out.is_empty() || dir_like {
        out.push('/');
    }
    Ok(out)
}

/// Why a normalized path did not lead to a servable file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolveError {
    NotFound,
    Forbidden,
}

impl ResolveError {
    pub fn status(self) -> u16 {
        match self {
            ResolveError::NotFound => 404,
            ResolveError::Forbidden => 403,
        }
    }
}

impl From<io::Error> for ResolveError {
    fn from(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::PermissionDenied => ResolveError::Forbidden,
            _ => ResolveError::NotFound,
        }
    }
}

/// Resolves a normalized path (from [`normalize`]) against the canonical root.
/// Symlinks leading outside the root read as not found unless `follow_outside`.
pub fn resolve(
    root: &Path,
    normalized: &str,
    follow_outside: bool,
) -> Result<PathBuf, ResolveError> {
    let mut p = root.to_path_buf();
    for seg in normalized.split('/').filter(|s| !s.is_empty()) {
        p.push(seg);
    }
    let canon = p.canonicalize()?;
    if !follow_outside && !canon.starts_with(root) {
        return Err(ResolveError::NotFound);
    }
    Ok(canon)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_targets() {
        assert_eq!(split_target("/a?b=c").unwrap(), ("/a", Some("b=c")));
        assert_eq!(split_target("http://h:1/x/y").unwrap(), ("/x/y", None));
        assert_eq!(split_target("HTTP://h").unwrap(), ("/", None));
        assert!(split_target("*").is_err());
        assert!(split_target("a/b").is_err());
    }

    #[test]
    fn normalizes() {
        assert_eq!(normalize("/").unwrap(), "/");
        assert_eq!(normalize("//a/./b/").unwrap(), "/a/b/");
        assert_eq!(normalize("/a/../b").unwrap(), "/b");
        assert_eq!(normalize("/a/..").unwrap(), "/");
        assert_eq!(normalize("/a%20b").unwrap(), "/a b");
        assert_eq!(normalize("/%252e%252e/x").unwrap(), "/%2e%2e/x");
        assert_eq!(normalize("/caf%C3%A9").unwrap(), "/café");
    }

    #[test]
    fn refuses() {
        for bad in [
            "/%00",
            "/a%5cb",
            "/a\\b",
            "/%c0%ae%c0%ae/",
            "/%zz",
            "/%4",
            "/%e0%80%ae",
        ] {
            assert_eq!(normalize(bad).unwrap_err(), PathError::Malformed, "{bad}");
        }
        for esc in ["/..", "/../x", "/%2e%2e/x", "/a/%2E%2E/%2e%2e/x", "/..%2fx"] {
            assert_eq!(normalize(esc).unwrap_err(), PathError::Escape, "{esc}");
        }
    }
}
