//! Content types by file extension.
//!
//! A short table of the types a static site actually serves (the same set nginx's
//! default `mime.types` maps most traffic to); anything else is
//! `application/octet-stream`, so a browser downloads rather than guesses.

use std::path::Path;

/// The `Content-Type` value for a file name.
pub fn content_type(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("json") => "application/json",
        Some("txt" | "text" | "log" | "md" | "toml" | "csv" | "rs" | "c" | "h") => {
            "text/plain; charset=utf-8"
        }
        Some("xml") => "application/xml",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("ico") => "image/x-icon",
        Some("avif") => "image/avif",
        Some("woff") => "font/woff",
        Some("woff2") => "font/woff2",
        Some("ttf") => "font/ttf",
        Some("otf") => "font/otf",
        Some("pdf") => "application/pdf",
        Some("wasm") => "application/wasm",
        Some("zip") => "application/zip",
        Some("gz") => "application/gzip",
        Some("tar") => "application/x-tar",
        Some("mp4") => "video/mp4",
        Some("webm") => "video/webm",
        Some("mp3") => "audio/mpeg",
        Some("ogg") => "audio/ogg",
        Some("wav") => "audio/wav",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_unknown() {
        assert_eq!(
            content_type(Path::new("a/INDEX.HTML")),
            "text/html; charset=utf-8"
        );
        assert_eq!(content_type(Path::new("x.png")), "image/png");
        assert_eq!(
            content_type(Path::new("Makefile")),
            "application/octet-stream"
        );
    }
}
