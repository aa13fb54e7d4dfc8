//! The experiment a bench is: its flags as a typed value (`perflab_lab::experiment::Draft`,
//! a `command` workload), serialised into the experiment file and read back by the
//! lab's parser, so a bench is checked by the same rules as a file, stored with its
//! text, and `perflab run --resume` continues an interrupted one. See
//! docs/architecture.md for the one runner.
//!
//! Also here: the rule that a command run without a shell must not need one. `a | b`
//! split into words would run `a` with the arguments `|` and `b` — never what was
//! meant — so it is refused with a pointer to `--shell sh`.

use std::path::Path;

use perflab_lab::experiment::{Draft, DraftError, Order, Repetitions};
use perflab_lab::Experiment;
use perflab_workloads::spec::Kind;

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

/// The experiment value. `template`: the single user command (with its `{NAME}`
/// placeholders) when `templated`, else `None`.
pub fn draft(
    spec: &Spec,
    name: &str,
    description: &str,
    template: Option<&str>,
) -> Result<Draft, InvalidInput> {
    let names: Vec<String> = match template {
        Some(_) => spec.params.iter().map(|p| p.name.clone()).collect(),
        None => Vec::new(),
    };
    let mut options = toml::Table::new();
    options.insert("command".into(), "{command}".into());
    options.insert("shell".into(), (spec.shell == Shell::Sh).into());
    options.insert("allow_failure".into(), spec.ignore_failure.into());
    if !spec.counters.is_empty() {
        let names: Vec<toml::Value> = spec.counters.iter().map(|e| e.name().into()).collect();
        options.insert("counters".into(), toml::Value::Array(names));
    }
    let mut d = Draft::with_options(name, Kind::Command, options);
    d.description = Some(description.to_string());
    d.repetitions = Some(match spec.runs {
        Runs::Fixed(n) => Repetitions::Fixed(n),
        Runs::Auto { min, max } => Repetitions::Auto {
            min,
            max,
            target: AUTO_TARGET,
        },
    });
    d.stop = spec.stop;
    d.warmup = Some(spec.warmup);
    d.order = Some(Order::Interleaved);
    d.cpus = spec.cpus.clone();
    hooks(&mut d, spec, template.is_some(), &names)?;
    let command = match template {
        Some(cmd) => {
            for p in &spec.params {
                let values = p
                    .values
                    .iter()
                    .map(|v| matrix_value(v, p.numeric))
                    .collect();
                d = d.param(&p.name, values);
            }
            escape_braces(cmd, &names)
        }
        None => {
            let values: Vec<String> = spec
                .benches
                .iter()
                .map(|b| runnable(&b.command, &spec.shell))
                .collect();
            match same_command(&values) {
                // An A/A bench (`bench 'sleep 0.1' 'sleep 0.1'`): a matrix cannot list
                // one value twice, so the copies are numbered and run the one command.
                Some(cmd) => {
                    let copies = (1..=values.len() as i64).map(Into::into).collect();
                    d = d.param("copy", copies);
                    escape_braces(cmd, &[])
                }
                None => {
                    d = d.param("command", values.into_iter().map(Into::into).collect());
                    "{command}".to_string()
                }
            }
        }
    };
    Ok(d.option("command", command))
}

/// The command every bench runs, when there are several and they are all the same.
fn same_command(commands: &[String]) -> Option<&str> {
    match commands {
        [first, rest @ ..] if !rest.is_empty() && rest.iter().all(|c| c == first) => {
            Some(first.as_str())
        }
        _ => None,
    }
}

/// The precision `--min-runs`/`--max-runs` add runs until (the lab's default).
const AUTO_TARGET: f64 = 0.02;

/// A parameter's value in the matrix: a number for `-P` scans, as a file would write
/// it, else the text.
fn matrix_value(v: &str, numeric: bool) -> toml::Value {
    if numeric {
        if let Ok(i) = v.parse::<i64>() {
            return i.into();
        }
        if let Ok(f) = v.parse::<f64>() {
            return f.into();
        }
    }
    v.into()
}

/// `--prepare`, `--setup` and `--cleanup` as the experiment's hooks; a parameter in a
/// hook needs the templated form.
fn hooks(
    d: &mut Draft,
    spec: &Spec,
    templated: bool,
    names: &[String],
) -> Result<(), InvalidInput> {
    for (slot, flag, hook) in [
        (&mut d.prepare, "--prepare", &spec.prepare),
        (&mut d.setup, "--setup", &spec.setup),
        (&mut d.teardown, "--cleanup", &spec.cleanup),
    ] {
        let Some(h) = hook else { continue };
        if !templated {
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
        *slot = Some(escape_braces(h, names));
    }
    Ok(())
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
    let d = draft(spec, name, description, template)?;
    d.check(Path::new(FILE_NAME)).map_err(|e| match e {
        DraftError::File(f) => anyhow::Error::new(f),
        other => anyhow::Error::new(other),
    })
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
    fn shell_words_quote_what_a_shell_would_split() {
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("--norc"), "--norc");
    }
}
