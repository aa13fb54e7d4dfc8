//! A message about options that keeps each option as its field, so that whoever shows
//! it names the option the way its reader wrote it.
//!
//! The same check ("`find_max` needs an SLO") is read by two audiences: an experiment
//! file names the option by its key (`find_max`), a command line by its flag
//! (`--find-max`). A library cannot know which; it names neither flags nor keys in
//! prose, it builds a [`Phrase`] whose options are [`Part::Field`]s. The experiment file
//! shows a field as its key in backquotes (the `Display` form) and locates the key in
//! the file from [`Phrase::field`]; the CLI maps each field to its flag through a small
//! table of its own ([`Phrase::render`]). Nothing parses the words back.

use std::fmt;

/// One piece of a [`Phrase`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Words, shown as they are.
    Text(String),
    /// An option, by its field name as an experiment file writes it (`bs`, `find_max`).
    Field(&'static str),
    /// An option with a value (`http` = `2`), for options a command line spells as a
    /// flag of their own (`--http2`).
    Setting(&'static str, &'static str),
}

/// Words with the options they are about kept as fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Phrase(Vec<Part>);

impl Phrase {
    /// A phrase that starts with `field`.
    pub fn field(field: &'static str) -> Phrase {
        Phrase(vec![Part::Field(field)])
    }

    /// A phrase that starts with a field and its value.
    pub fn setting(field: &'static str, value: &'static str) -> Phrase {
        Phrase(vec![Part::Setting(field, value)])
    }

    /// A phrase that starts with words.
    pub fn text(words: impl Into<String>) -> Phrase {
        Phrase(vec![Part::Text(words.into())])
    }

    /// Appends words.
    pub fn then(mut self, words: impl Into<String>) -> Phrase {
        self.0.push(Part::Text(words.into()));
        self
    }

    /// Appends a field.
    pub fn and_field(mut self, field: &'static str) -> Phrase {
        self.0.push(Part::Field(field));
        self
    }

    /// Appends a field with its value.
    pub fn and_setting(mut self, field: &'static str, value: &'static str) -> Phrase {
        self.0.push(Part::Setting(field, value));
        self
    }

    /// Appends another phrase, its fields kept.
    pub fn and(mut self, other: Phrase) -> Phrase {
        self.0.extend(other.0);
        self
    }

    /// The pieces, in order.
    pub fn parts(&self) -> &[Part] {
        &self.0
    }

    /// The field the message is about: the first one it names.
    pub fn subject(&self) -> Option<&'static str> {
        self.0.iter().find_map(|p| match p {
            Part::Field(f) | Part::Setting(f, _) => Some(*f),
            Part::Text(_) => None,
        })
    }

    /// The message with each field named by `name` (a command's flag for it, say); a
    /// setting is named by `name("field=value")`.
    pub fn render(&self, name: &dyn Fn(&str) -> String) -> String {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Field(f) => out.push_str(&name(f)),
                Part::Setting(f, v) => out.push_str(&name(&format!("{f}={v}"))),
            }
        }
        out
    }
}

/// Fields as an experiment file writes them, in backquotes: "`find_max` needs an SLO",
/// "`http` 2".
impl fmt::Display for Phrase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(&|name| match name.split_once('=') {
            Some((k, v)) => format!("`{k}` {v}"),
            None => format!("`{name}`"),
        }))
    }
}

/// Words alone, about no field in particular.
impl From<&str> for Phrase {
    fn from(words: &str) -> Phrase {
        Phrase::text(words)
    }
}

/// Words alone, about no field in particular.
impl From<String> for Phrase {
    fn from(words: String) -> Phrase {
        Phrase::text(words)
    }
}

/// The experiment-file wording, where a seam still carries text.
impl From<Phrase> for String {
    fn from(p: Phrase) -> String {
        p.to_string()
    }
}

/// A command's way of naming a field: `--field-name`, or the flag its table lists.
/// `table` holds only the fields whose flag is not `--` + the field with `-` for `_`
/// (`("requests", "-n")`, `("peer", "PEER")` for a positional argument, or
/// `("http=2", "--http2")` for a setting); an unlisted setting is `--field value`.
pub fn flag_for(table: &[(&str, &str)], field: &str) -> String {
    if let Some((_, flag)) = table.iter().find(|(f, _)| *f == field) {
        return flag.to_string();
    }
    match field.split_once('=') {
        Some((k, v)) => format!("--{} {v}", k.replace('_', "-")),
        None => format!("--{}", field.replace('_', "-")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_named_by_the_reader() {
        let p = Phrase::field("find_max")
            .then(" needs an SLO, like ")
            .and_field("slo")
            .then(" 'p99<20ms'");
        assert_eq!(
            p.to_string(),
            "`find_max` needs an SLO, like `slo` 'p99<20ms'"
        );
        assert_eq!(
            p.render(&|f| flag_for(&[], f)),
            "--find-max needs an SLO, like --slo 'p99<20ms'"
        );
        assert_eq!(p.subject(), Some("find_max"));
        let q = Phrase::text("a request count (")
            .and_field("requests")
            .then(") with ")
            .and_field("rate");
        assert_eq!(
            q.render(&|f| flag_for(&[("requests", "-n")], f)),
            "a request count (-n) with --rate"
        );
        assert_eq!(Phrase::from("no field").subject(), None);
        let r = Phrase::text("add ").and_setting("http", "2");
        assert_eq!(r.to_string(), "add `http` 2");
        assert_eq!(
            r.render(&|f| flag_for(&[("http=2", "--http2")], f)),
            "add --http2"
        );
        assert_eq!(r.render(&|f| flag_for(&[], f)), "add --http 2");
        // Backquotes in the words are words: nothing is read back out of them.
        assert_eq!(
            Phrase::text("quote `P99 < 2`").render(&|f| flag_for(&[], f)),
            "quote `P99 < 2`"
        );
    }
}
