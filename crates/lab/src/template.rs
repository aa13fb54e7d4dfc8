//! Placeholders in experiment strings.
//!
//! `{ident}` (ident = `[A-Za-z_][A-Za-z0-9_]*`) names a matrix parameter or one of the
//! built-ins `repetition`, `trial`, `run_dir`, `port`, `perflab` (this perflab binary),
//! `experiment_dir` (the experiment file's directory, absolute), `service_host` (the
//! address of the service's host: its inventory address with `[service] host`, else
//! 127.0.0.1); `{{` and `}}` are
//! literal braces; any other `{` is left as it is, and so is `${...}`, so shell
//! variables and awk programs pass through untouched. Templates are parsed once, when the file is read,
//! so an unknown placeholder is an error before anything runs.

use std::collections::BTreeMap;

/// Names every experiment knows besides its matrix parameters.
pub const BUILTINS: &[&str] = &[
    "repetition",
    "trial",
    "run_dir",
    "port",
    "perflab",
    "experiment_dir",
    "service_host",
];

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Lit(String),
    Var(String),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
    source: String,
}

/// A placeholder that names nothing known, with its byte offset in the string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPlaceholder {
    pub name: String,
    pub offset: usize,
}

/// Whether `s` is a placeholder name: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

impl Template {
    /// Parses `s`, checking every placeholder against `known`.
    pub fn parse(s: &str, known: &dyn Fn(&str) -> bool) -> Result<Template, UnknownPlaceholder> {
        let mut pieces = Vec::new();
        let mut lit = String::new();
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < s.len() {
            let rest = &s[i..];
            if rest.starts_with("{{") || rest.starts_with("}}") {
                lit.push_str(&rest[..1]);
                i += 2;
                continue;
            }
            if bytes[i] == b'{' && !(i > 0 && bytes[i - 1] == b'$') {
                if let Some(end) = rest.find('}') {
                    let name = &rest[1..end];
                    if is_ident(name) {
                        if !known(name) {
                            return Err(UnknownPlaceholder {
                                name: name.to_string(),
                                offset: i,
                            });
                        }
                        if !lit.is_empty() {
                            pieces.push(Piece::Lit(std::mem::take(&mut lit)));
                        }
                        pieces.push(Piece::Var(name.to_string()));
                        i += end + 1;
                        continue;
                    }
                }
            }
            let ch = rest.chars().next().unwrap_or_default();
            lit.push(ch);
            i += ch.len_utf8();
        }
        if !lit.is_empty() {
            pieces.push(Piece::Lit(lit));
        }
        Ok(Template {
            pieces,
            source: s.to_string(),
        })
    }

    /// Renders with the given values; a name without a value renders as written.
    pub fn render(&self, vars: &BTreeMap<String, String>) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Lit(s) => out.push_str(s),
                Piece::Var(v) => match vars.get(v) {
                    Some(val) => out.push_str(val),
                    None => {
                        out.push('{');
                        out.push_str(v);
                        out.push('}');
                    }
                },
            }
        }
        out
    }

    /// The text as written in the file.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the template uses `name`.
    pub fn uses(&self, name: &str) -> bool {
        self.pieces
            .iter()
            .any(|p| matches!(p, Piece::Var(v) if v == name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(n: &str) -> bool {
        matches!(n, "level" | "port" | "run_dir")
    }

    fn vars() -> BTreeMap<String, String> {
        [("level", "6"), ("port", "8080"), ("run_dir", "/tmp/r")]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn replaces_known_names() {
        let t = Template::parse("gzip -{level} -c {run_dir}/x", &known).unwrap();
        assert_eq!(t.render(&vars()), "gzip -6 -c /tmp/r/x");
    }

    #[test]
    fn shell_variables_and_awk_pass_through() {
        for s in [
            "echo ${HOME}",
            "awk '{print $1}'",
            "a { b }",
            "{1x}",
            "{}",
            "x{",
        ] {
            let t = Template::parse(s, &known).unwrap();
            assert_eq!(t.render(&vars()), s, "{s}");
        }
    }

    #[test]
    fn doubled_braces_are_literal() {
        let t = Template::parse("{{level}} {level} }}", &known).unwrap();
        assert_eq!(t.render(&vars()), "{level} 6 }");
    }

    #[test]
    fn unknown_names_are_errors_with_offset() {
        let e = Template::parse("run {levle} now", &known).unwrap_err();
        assert_eq!(e.name, "levle");
        assert_eq!(e.offset, 4);
    }
}
