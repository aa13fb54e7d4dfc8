//! HTML directory listings.
//!
//! Entries are sorted by name (bytewise, directories marked with a trailing `/`),
//! names are HTML-escaped for display and percent-encoded for the `href`, so a file
//! called `<script>` or `a b#?.txt` is shown and linked as itself. Names that are not
//! UTF-8 are displayed lossily but linked by their exact bytes.

use std::fmt::Write as _;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Escapes text for HTML element content and attribute values.
pub fn html_escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// Percent-encodes one path segment (everything but RFC 3986 unreserved characters).
pub fn percent_encode(bytes: &[u8], out: &mut String) {
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

struct Entry {
    name: Vec<u8>,
    dir: bool,
    size: u64,
}

/// Renders the listing of `dir`, shown as `url_path` (decoded, ends with `/`).
pub fn render(dir: &Path, url_path: &str) -> io::Result<String> {
    let mut entries = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        // Follow symlinks for the kind; a dangling one is listed as a file.
        let meta = std::fs::metadata(e.path()).ok();
        entries.push(Entry {
            name: e.file_name().as_bytes().to_vec(),
            dir: meta.as_ref().is_some_and(|m| m.is_dir()),
            size: meta.map_or(0, |m| m.len()),
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let mut html = String::with_capacity(256 + entries.len() * 96);
    let mut title = String::new();
    html_escape(url_path, &mut title);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of {title}</title></head>\n\
         <body><h1>Index of {title}</h1>\n<table>\n"
    );
    if url_path != "/" {
        html.push_str("<tr><td><a href=\"../\">../</a></td><td></td></tr>\n");
    }
    for e in &entries {
        let mut href = String::new();
        percent_encode(&e.name, &mut href);
        let mut shown = String::new();
        html_escape(&String::from_utf8_lossy(&e.name), &mut shown);
        let slash = if e.dir { "/" } else { "" };
        let size = if e.dir {
            "-".to_string()
        } else {
            e.size.to_string()
        };
        let _ = writeln!(
            html,
            "<tr><td><a href=\"{href}{slash}\">{shown}{slash}</a></td><td>{size}</td></tr>"
        );
    }
    html.push_str("</table>\n</body></html>\n");
    Ok(html)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_encodes() {
        let mut s = String::new();
        html_escape("<a href='x'>&\"", &mut s);
        assert_eq!(s, "&lt;a href=&#39;x&#39;&gt;&amp;&quot;");
        let mut e = String::new();
        percent_encode("a b#?/é".as_bytes(), &mut e);
        assert_eq!(e, "a%20b%23%3F%2F%C3%A9");
    }

    #[test]
    fn lists_sorted() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("b.txt"), "bb").unwrap();
        std::fs::write(d.path().join("<a>"), "").unwrap();
        std::fs::create_dir(d.path().join("c")).unwrap();
        let html = render(d.path(), "/x/").unwrap();
        let a = html.find("&lt;a&gt;").unwrap();
        let b = html.find("b.txt").unwrap();
        let c = html.find("href=\"c/\"").unwrap();
        assert!(a < b && b < c, "{html}");
        assert!(html.contains("href=\"%3Ca%3E\""));
        assert!(html.contains("href=\"../\""));
    }
}
