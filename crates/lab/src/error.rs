//! Errors in experiment files, located by file, line and column.

use std::fmt;
use std::path::PathBuf;

/// A problem in an experiment file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    pub path: PathBuf,
    /// 1-based line and column, when the problem has a place.
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{}:{l}:{c}: {}", self.path.display(), self.message),
            _ => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for FileError {}

/// 1-based (line, column) of a byte offset; columns count characters.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, col)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Builds located errors for one file.
pub struct Locator<'a> {
    pub path: &'a std::path::Path,
    pub text: &'a str,
}

impl Locator<'_> {
    pub fn at(&self, offset: usize, message: impl Into<String>) -> FileError {
        let (l, c) = line_col(self.text, offset);
        FileError {
            path: self.path.to_path_buf(),
            line: Some(l),
            column: Some(c),
            message: message.into(),
        }
    }

    pub fn nowhere(&self, message: impl Into<String>) -> FileError {
        FileError {
            path: self.path.to_path_buf(),
            line: None,
            column: None,
            message: message.into(),
        }
    }

    /// The offset inside a string value of the character at `index` of its decoded
    /// content, when the literal has no escapes before it; else the literal's start.
    pub fn inside_string(
        &self,
        span: std::ops::Range<usize>,
        decoded: &str,
        index: usize,
    ) -> usize {
        let raw = &self.text[span.start.min(self.text.len())..span.end.min(self.text.len())];
        let mut open = if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
            3
        } else if raw.starts_with('"') || raw.starts_with('\'') {
            1
        } else {
            return span.start;
        };
        if open == 3 && raw[open..].starts_with('\n') {
            open += 1;
        }
        let prefix = &decoded[..index.min(decoded.len())];
        if raw[open..].starts_with(prefix) {
            span.start + open + index
        } else {
            span.start
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based() {
        let t = "ab\ncde\nf";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 4), (2, 2));
        assert_eq!(line_col(t, 7), (3, 1));
    }
}
