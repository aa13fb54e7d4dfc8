//! The experiment file a bench is: written as text and read back by the lab's parser
//! (`Experiment::parse`, the only place a bench becomes an `Experiment`), so a bench is
//! checked by the same rules as a file, stored with its text, and `perflab run --resume`
//! continues an interrupted one. See docs/architecture.md for the one runner.
//!
//! Also here: the rule that a command run without a shell must not need one. `a | b`
//! split into words would run `a` with the arguments `|` and `b` — never what was
//! meant — so it is refused with a pointer to `--shell sh`.

use std::path::Path;

use perflab_lab::Experiment;

use super::plan::{Runs, Shell, Spec};
use crate::exit::InvalidInput;

/// The name the generated file goes by in messages and in the store.
pub const FILE_NAME: &str = "perflab-bench.toml";

/// Refuses a command that only a shell understands when it runs without one, and
/// one with unbalanced quotes.
pub fn check_without_shell(command: &str) -> Result<(), InvalidInput> {
    let refuse = |what: &str| {
        Err(InvalidInput(format!(
            "command {command:?} uses {what}, which only a shell understands: use --shell sh (perflab runs commands without a shell unless asked)"
        )))
    };
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut prev = ' ';
    for ch in command.chars() {
        if escaped {
            escaped = false;
        } else if single {
            single = ch != '\'';
        } else if ch == '\\' {
            escaped = true;
        } else if double {
            match ch {
                '"' => double = false,
                '`' => return refuse("`"),
                '(' if prev == '$' => return refuse("$(...)"),
                _ => {}
            }
        } else {
            match ch {
                '\'' => single = true,
                '"' => double = true,
                '|' | '&' | ';' | '<' | '>' | '`' => return refuse(&format!("`{ch}`")),
                '(' if prev == '$' => return refuse("$(...)"),
                _ => {}
            }
        }
        prev = ch;
    }
    if single || double || escaped {
        return Err(InvalidInput(format!(
            "command {command:?} has unbalanced quotes (it is split into words like a shell would; use --shell sh to run it with sh -c)"
        )));
    }
    Ok(())
}

/// A TOML basic string.
pub fn toml_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `text` as a lab template that renders back to itself, except `{NAME}` for the
/// given names, which stay placeholders: every other brace is doubled.
pub fn escape_braces(text: &str, names: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(ch) = rest.chars().next() {
        if ch == '{' {
            let hit = names.iter().find(|n| {
                rest[1..].starts_with(n.as_str()) && rest[1 + n.len()..].starts_with('}')
            });
            if let Some(n) = hit {
                out.push_str(&rest[..n.len() + 2]);
                rest = &rest[n.len() + 2..];
                continue;
            }
            out.push_str("{{");
        } else if ch == '}' {
            out.push_str("}}");
        } else {
            out.push(ch);
        }
        rest = &rest[ch.len_utf8()..];
    }
    out
}

/// A POSIX shell word that splits back to `s`.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Whether the parameters become the matrix and the one command the template (see
/// the module docs of `plan`).
pub fn templated(spec: &Spec, user_commands: usize, reference: bool) -> bool {
    user_commands == 1
        && !reference
        && !spec.params.is_empty()
        && matches!(spec.shell, Shell::None | Shell::Sh)
}

/// The experiment file text. `template`: the single user command (with its `{NAME}`
/// placeholders) when `templated`, else `None`.
pub fn experiment_text(
    spec: &Spec,
    name: &str,
    description: &str,
    template: Option<&str>,
) -> Result<String, InvalidInput> {
    let names: Vec<String> = match template {
        Some(_) => spec.params.iter().map(|p| p.name.clone()).collect(),
        None => Vec::new(),
    };
    let mut t = String::from(
        "# Written by `perflab bench` (docs/json.md); the lab reads it like any file.\n",
    );
    t.push_str("[experiment]\n");
    t.push_str(&format!("name = {}\n", toml_str(name)));
    t.push_str(&format!("description = {}\n", toml_str(description)));
    match spec.runs {
        Runs::Fixed(n) => t.push_str(&format!("repetitions = {n}\n")),
        Runs::Auto { min, max } => t.push_str(&format!(
            "repetitions = \"auto\"\nmin_repetitions = {min}\nmax_repetitions = {max}\n"
        )),
    }
    t.push_str(&format!(
        "warmup = {}\norder = \"interleaved\"\n",
        spec.warmup
    ));
    for (key, flag, hook) in [
        ("prepare", "--prepare", &spec.prepare),
        ("setup", "--setup", &spec.setup),
        ("teardown", "--cleanup", &spec.cleanup),
    ] {
        let Some(h) = hook else { continue };
        if template.is_none() {
            if let Some(p) = spec
                .params
                .iter()
                .find(|p| h.contains(&format!("{{{}}}", p.name)))
            {
                return Err(InvalidInput(format!(
                    "{flag} uses {{{}}}: parameters in {flag} work only with one benchmarked command (and no --reference)",
                    p.name
                )));
            }
        }
        t.push_str(&format!(
            "{key} = {}\n",
            toml_str(&escape_braces(h, &names))
        ));
    }
    t.push_str("\n[matrix]\n");
    let command = match template {
        Some(cmd) => {
            for p in &spec.params {
                let values: Vec<String> = p
                    .values
                    .iter()
                    .map(|v| if p.numeric { v.clone() } else { toml_str(v) })
                    .collect();
                t.push_str(&format!("{} = [{}]\n", p.name, values.join(", ")));
            }
            escape_braces(cmd, &names)
        }
        None => {
            let values: Vec<String> = spec
                .benches
                .iter()
                .map(|b| toml_str(&runnable(&b.command, &spec.shell)))
                .collect();
            t.push_str(&format!("command = [{}]\n", values.join(", ")));
            "{command}".to_string()
        }
    };
    t.push_str("\n[workload]\nkind = \"command\"\n");
    t.push_str(&format!("command = {}\n", toml_str(&command)));
    t.push_str(&format!(
        "shell = {}\nallow_failure = {}\n",
        spec.shell == Shell::Sh,
        spec.ignore_failure
    ));
    Ok(t)
}

/// The command line the workload splits into words: as written, or wrapped in a
/// shell other than `sh` (`sh` is the workload's own `shell = true`).
fn runnable(command: &str, shell: &Shell) -> String {
    match shell {
        Shell::None | Shell::Sh => command.to_string(),
        Shell::Other(words) => {
            let mut parts: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
            parts.push("-c".into());
            parts.push(shell_quote(command));
            parts.join(" ")
        }
    }
}

/// Checks the commands against the shell rules, writes the file and has the lab parse it.
pub fn experiment(
    spec: &Spec,
    name: &str,
    description: &str,
    template: Option<&str>,
) -> anyhow::Result<Experiment> {
    if spec.shell == Shell::None {
        for b in &spec.benches {
            check_without_shell(&b.command)?;
        }
    }
    let text = experiment_text(spec, name, description, template)?;
    Ok(Experiment::parse(Path::new(FILE_NAME), &text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_syntax_is_refused_without_a_shell_unless_quoted() {
        for bad in [
            "a | b",
            "true && true",
            "echo x > f",
            "a; b",
            "echo `x`",
            "echo $(x)",
            "echo 'x",
        ] {
            assert!(check_without_shell(bad).is_err(), "{bad}");
        }
        for good in [
            "sleep 0.1",
            "echo 'a|b'",
            "echo \"a;b\"",
            "echo a\\|b",
            "awk '{print $1}'",
        ] {
            assert!(check_without_shell(good).is_ok(), "{good}");
        }
        let e = check_without_shell("a | b").unwrap_err();
        assert!(e.0.contains("use --shell sh"), "{}", e.0);
    }

    #[test]
    fn braces_are_doubled_except_named_placeholders() {
        let names = vec!["n".to_string()];
        assert_eq!(escape_braces("sleep 0.0{n}", &names), "sleep 0.0{n}");
        assert_eq!(
            escape_braces("awk '{print}' {m}", &names),
            "awk '{{print}}' {{m}}"
        );
        assert_eq!(escape_braces("${n}x{n}", &[]), "${{n}}x{{n}}");
    }

    #[test]
    fn toml_strings_escape_quotes_and_controls() {
        assert_eq!(toml_str("a\"b\\c\n\u{7f}"), "\"a\\\"b\\\\c\\n\\u007F\"");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("--norc"), "--norc");
    }
}
