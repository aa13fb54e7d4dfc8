//! Request mixes: a targets file gives each request its own method, URL, headers and
//! body. Three formats, read as their tools write them:
//!
//! - **vegeta HTTP** (`http`): `METHOD URL`, then `Name: value` header lines, then an
//!   optional `@FILE` body line (relative to the targets file); a blank line ends a
//!   target. `#` starts a comment line.
//! - **vegeta JSON lines** (`json`): one object per line, `{"method", "url", "header":
//!   {"Name": ["value", ...]}, "body": BASE64}`.
//! - **siege** (`siege`): `NAME=value` lines define variables, `$(NAME)` or `${NAME}`
//!   expand them; a target is `URL`, `URL POST|PUT BODY`, or `URL POST|PUT <FILE`.
//!
//! Before any target, a perflab comment `# name: NAME weight: N` (either part alone)
//! names it and weighs it for `order = "weighted"`; plain files read unchanged.
//! Without a format the first meaningful line decides: `{` is json, `METHOD URL` is
//! http, anything else siege. Every line that is not understood is an error with its
//! line number — nothing is dropped silently.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde::Deserialize;

use crate::error::SpecError;

/// One request of a mix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetDef {
    /// From `# name:`, else `METHOD URL`.
    pub name: String,
    pub weight: u32,
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// 1-based line of the target in its file.
    pub line: usize,
}

/// The formats a targets file can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetsFormat {
    Http,
    Json,
    Siege,
}

impl TargetsFormat {
    /// Parses `http`, `json` or `siege` (`vegeta` means `http`).
    pub fn parse(s: &str) -> Result<TargetsFormat, SpecError> {
        match s.to_ascii_lowercase().as_str() {
            "http" | "vegeta" => Ok(TargetsFormat::Http),
            "json" => Ok(TargetsFormat::Json),
            "siege" => Ok(TargetsFormat::Siege),
            _ => Err(SpecError::value(
                "targets_format",
                s,
                "http (vegeta's), json (vegeta's JSON lines) or siege",
            )),
        }
    }
}

struct Ctx<'a> {
    path: &'a Path,
    dir: PathBuf,
}

impl Ctx<'_> {
    fn err(&self, line: usize, msg: impl std::fmt::Display) -> SpecError {
        SpecError::Conflict(format!("{}:{line}: {msg}", self.path.display()).into())
    }

    fn read(&self, line: usize, file: &str) -> Result<Vec<u8>, SpecError> {
        let p = self.dir.join(file);
        std::fs::read(&p).map_err(|e| {
            self.err(
                line,
                format!("cannot read the body file `{}`: {e}", p.display()),
            )
        })
    }
}

/// A pending `# name: weight:` comment.
#[derive(Default)]
struct Meta {
    name: Option<String>,
    weight: Option<u32>,
}

impl Meta {
    /// Reads `# name: NAME weight: N`; `None` for any other comment.
    fn parse(ctx: &Ctx<'_>, n: usize, line: &str) -> Result<Option<Meta>, SpecError> {
        let body = line.trim_start_matches('#').trim();
        if !(body.starts_with("name:") || body.starts_with("weight:")) {
            return Ok(None);
        }
        let mut m = Meta::default();
        let mut rest = body;
        while !rest.is_empty() {
            let (key, after) = rest
                .split_once(':')
                .ok_or_else(|| ctx.err(n, "expected `# name: NAME weight: N`"))?;
            let after = after.trim_start();
            let (value, next) = match after.find(" weight:").or_else(|| after.find(" name:")) {
                Some(i) => (after[..i].trim(), after[i..].trim_start()),
                None => (after.trim(), ""),
            };
            match key.trim() {
                "name" if !value.is_empty() => m.name = Some(value.to_string()),
                "weight" => {
                    let w = value
                        .parse::<u32>()
                        .ok()
                        .filter(|w| *w > 0)
                        .ok_or_else(|| {
                            ctx.err(
                                n,
                                format!("weight `{value}`: expected a whole number above 0"),
                            )
                        })?;
                    m.weight = Some(w);
                }
                k => {
                    return Err(ctx.err(
                        n,
                        format!("`{k}:` in a perflab comment: expected `name:` or `weight:`"),
                    ))
                }
            }
            rest = next;
        }
        Ok(Some(m))
    }
}

fn finish(
    meta: Meta,
    method: String,
    url: String,
    line: usize,
) -> (String, u32, String, String, usize) {
    let name = meta.name.unwrap_or_else(|| format!("{method} {url}"));
    (name, meta.weight.unwrap_or(1), method, url, line)
}

fn is_method(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_uppercase())
}

/// Reads a targets file.
pub fn read(path: &Path, format: Option<TargetsFormat>) -> Result<Vec<TargetDef>, SpecError> {
    let text = std::fs::read_to_string(path).map_err(|source| SpecError::File {
        what: "targets file",
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &text, format)
}

/// Parses a targets file's text (`path` locates body files and names the file in errors).
pub fn parse(
    path: &Path,
    text: &str,
    format: Option<TargetsFormat>,
) -> Result<Vec<TargetDef>, SpecError> {
    let ctx = Ctx {
        path,
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    let format = format.unwrap_or_else(|| detect(text));
    let targets = match format {
        TargetsFormat::Http => http(&ctx, text)?,
        TargetsFormat::Json => json(&ctx, text)?,
        TargetsFormat::Siege => siege(&ctx, text)?,
    };
    if targets.is_empty() {
        return Err(ctx.err(1, "no target in the file"));
    }
    Ok(targets)
}

fn detect(text: &str) -> TargetsFormat {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or_default();
    if first.starts_with('{') {
        TargetsFormat::Json
    } else if first.split_whitespace().next().is_some_and(is_method)
        && first
            .split_whitespace()
            .nth(1)
            .is_some_and(|u| u.contains("://"))
    {
        TargetsFormat::Http
    } else {
        TargetsFormat::Siege
    }
}

fn http(ctx: &Ctx<'_>, text: &str) -> Result<Vec<TargetDef>, SpecError> {
    let mut out = Vec::new();
    let mut meta = Meta::default();
    let mut cur: Option<TargetDef> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim_end();
        if line.trim().is_empty() {
            out.extend(cur.take());
            continue;
        }
        if line.starts_with('#') {
            if let Some(m) = Meta::parse(ctx, n, line)? {
                out.extend(cur.take());
                meta = m;
            }
            continue;
        }
        match &mut cur {
            None => {
                let mut words = line.split_whitespace();
                let (Some(method), Some(url), None) = (words.next(), words.next(), words.next())
                else {
                    return Err(ctx.err(
                        n,
                        format!("`{line}`: expected `METHOD URL` to start a target"),
                    ));
                };
                if !is_method(method) {
                    return Err(ctx.err(n, format!("`{method}` is not a method (GET, POST, ...)")));
                }
                let (name, weight, method, url, line) = finish(
                    std::mem::take(&mut meta),
                    method.to_string(),
                    url.to_string(),
                    n,
                );
                cur = Some(TargetDef {
                    name,
                    weight,
                    method,
                    url,
                    headers: Vec::new(),
                    body: None,
                    line,
                });
            }
            Some(t) => {
                if let Some(file) = line.trim().strip_prefix('@') {
                    if t.body.is_some() {
                        return Err(ctx.err(n, "a second body for one target"));
                    }
                    t.body = Some(ctx.read(n, file.trim())?);
                } else if let Some((name, value)) = line.split_once(':') {
                    let name = name.trim();
                    if name.is_empty()
                        || !name.bytes().all(|b| b.is_ascii_graphic())
                        || t.body.is_some()
                    {
                        return Err(ctx.err(
                            n,
                            format!("`{line}`: expected a header `Name: value` or `@BODY-FILE`"),
                        ));
                    }
                    t.headers.push((name.to_string(), value.trim().to_string()));
                } else {
                    return Err(ctx.err(n, format!("`{line}`: expected a header `Name: value`, `@BODY-FILE` or a blank line")));
                }
            }
        }
    }
    out.extend(cur);
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonTarget {
    method: String,
    url: String,
    #[serde(default)]
    header: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    body: Option<String>,
}

/// Calls `f` with each meaningful line of a line-per-target format (numbered from 1,
/// trimmed) and the `# name: weight:` comment before it; other comments and blank
/// lines are skipped.
fn each_line(
    ctx: &Ctx<'_>,
    text: &str,
    mut f: impl FnMut(usize, &str, &mut Meta) -> Result<(), SpecError>,
) -> Result<(), SpecError> {
    let mut meta = Meta::default();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            if let Some(m) = Meta::parse(ctx, n, line)? {
                meta = m;
            }
            continue;
        }
        f(n, line, &mut meta)?;
    }
    Ok(())
}

fn json(ctx: &Ctx<'_>, text: &str) -> Result<Vec<TargetDef>, SpecError> {
    let mut out = Vec::new();
    each_line(ctx, text, |n, line, meta| {
        let t: JsonTarget = serde_json::from_str(line)
            .map_err(|e| ctx.err(n, format!("not a vegeta JSON target: {e}")))?;
        if !is_method(&t.method) {
            return Err(ctx.err(
                n,
                format!("`{}` is not a method (GET, POST, ...)", t.method),
            ));
        }
        let body = t
            .body
            .map(|b| base64::engine::general_purpose::STANDARD.decode(b.as_bytes()))
            .transpose()
            .map_err(|e| ctx.err(n, format!("the body is not base64: {e}")))?;
        let (name, weight, method, url, line) = finish(std::mem::take(meta), t.method, t.url, n);
        let headers = t
            .header
            .into_iter()
            .flat_map(|(k, vs)| vs.into_iter().map(move |v| (k.clone(), v)))
            .collect();
        out.push(TargetDef {
            name,
            weight,
            method,
            url,
            headers,
            body,
            line,
        });
        Ok(())
    })?;
    Ok(out)
}

/// Expands `$(NAME)` and `${NAME}`; an unknown name is an error.
fn expand(
    ctx: &Ctx<'_>,
    n: usize,
    s: &str,
    vars: &BTreeMap<String, String>,
) -> Result<String, SpecError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let close = match after.chars().next() {
            Some('(') => ')',
            Some('{') => '}',
            _ => {
                out.push('$');
                rest = after;
                continue;
            }
        };
        let end = after
            .find(close)
            .ok_or_else(|| ctx.err(n, format!("`{s}`: an unclosed variable")))?;
        let name = &after[1..end];
        let value = vars.get(name).ok_or_else(|| {
            ctx.err(
                n,
                format!("variable `{name}` is not defined above (NAME=value)"),
            )
        })?;
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn siege(ctx: &Ctx<'_>, text: &str) -> Result<Vec<TargetDef>, SpecError> {
    let mut out = Vec::new();
    let mut vars = BTreeMap::new();
    each_line(ctx, text, |n, line, meta| {
        if let Some((name, value)) = line.split_once('=') {
            let name = name.trim();
            if !name.is_empty()
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !line.contains("://")
            {
                let value = expand(ctx, n, value.trim(), &vars)?;
                vars.insert(name.to_string(), value);
                return Ok(());
            }
        }
        let line = expand(ctx, n, line, &vars)?;
        let mut parts = line.splitn(3, char::is_whitespace);
        let url = parts.next().unwrap_or_default().to_string();
        if !url.contains("://") {
            return Err(ctx.err(
                n,
                format!("`{line}`: expected `URL [POST|PUT [BODY|<FILE]]` or `NAME=value`"),
            ));
        }
        let (method, body) = match (parts.next(), parts.next().map(str::trim)) {
            (None, _) => ("GET".to_string(), None),
            (Some(m), rest) if m == "POST" || m == "PUT" => {
                let body = match rest {
                    None | Some("") => Vec::new(),
                    Some(r) => match r.strip_prefix('<') {
                        Some(file) => ctx.read(n, file.trim())?,
                        None => r.as_bytes().to_vec(),
                    },
                };
                (m.to_string(), Some(body))
            }
            (Some(m), _) => {
                return Err(ctx.err(
                    n,
                    format!("`{m}`: siege's URL lines take POST or PUT after the URL"),
                ))
            }
        };
        let (name, weight, method, url, line) = finish(std::mem::take(meta), method, url, n);
        out.push(TargetDef {
            name,
            weight,
            method,
            url,
            headers: Vec::new(),
            body,
            line,
        });
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Vec<TargetDef>, SpecError> {
        parse(Path::new("/nonexistent/t.txt"), text, None)
    }

    #[test]
    fn vegeta_http_with_headers_names_and_weights() {
        let t = p("# name: home weight: 3\nGET http://h/\n\n# a comment\nPUT http://h/x\nX-A: 1\nContent-Type: text/plain\n").unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].name.as_str(), t[0].weight, t[0].line), ("home", 3, 2));
        assert_eq!(t[1].name, "PUT http://h/x");
        assert_eq!(
            t[1].headers,
            vec![
                ("X-A".into(), "1".into()),
                ("Content-Type".into(), "text/plain".into())
            ]
        );
        let e = p("GET http://h/\nnot a header\n").unwrap_err().to_string();
        assert!(e.contains("t.txt:2:"), "{e}");
        let e = p("GET http://h/\n@missing.json\n").unwrap_err().to_string();
        assert!(e.contains(":2:") && e.contains("missing.json"), "{e}");
    }

    #[test]
    fn vegeta_json_lines() {
        let t = p("{\"method\":\"POST\",\"url\":\"http://h/a\",\"header\":{\"X\":[\"1\",\"2\"]},\"body\":\"aGk=\"}\n").unwrap();
        assert_eq!(t[0].body.as_deref(), Some(&b"hi"[..]));
        assert_eq!(t[0].headers.len(), 2);
        let e = p("{\"method\":\"GET\",\"url\":\"http://h/\"}\n{\"url\": 3}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains(":2:"), "{e}");
    }

    #[test]
    fn siege_with_variables_and_bodies() {
        let t =
            p("HOST=127.0.0.1:8080\nhttp://$(HOST)/\nhttp://${HOST}/login POST user=a&pass=b\n")
                .unwrap();
        assert_eq!(t[0].url, "http://127.0.0.1:8080/");
        assert_eq!(
            (t[1].method.as_str(), t[1].body.as_deref()),
            ("POST", Some(&b"user=a&pass=b"[..]))
        );
        let e = p("http://h/ DELETE\n").unwrap_err().to_string();
        assert!(e.contains(":1:") && e.contains("POST or PUT"), "{e}");
        let e = p("http://$(NOPE)/\n").unwrap_err().to_string();
        assert!(e.contains("NOPE"), "{e}");
        let e = p("# name: x weight: 0\nhttp://h/\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains(":1:") && e.contains("above 0"), "{e}");
    }
}
