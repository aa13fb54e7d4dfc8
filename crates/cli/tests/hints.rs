//! Hints that lead somewhere: every `perflab …` command a message suggests, in the
//! scenarios that print one (an empty store, an unknown run, a bad experiment file, bad
//! flags, a failed check, a bad import), must parse — run with `--help` appended, it
//! exits 0, not 2 with "unexpected argument" — and every flag an error names for the
//! command at hand must be one of that command's flags. Then the hints of the one-line
//! commands (bench's noise warning and failure hint, the suite's report hint), each run
//! as printed; and the duration flags, which take the one duration grammar of
//! crates/units (`-d 1s`, `--min-time 10ms`).

mod common;
use common::*;

/// Known subcommands, so that prose like "this perflab reads" is not taken for one.
const COMMANDS: &[&str] = &[
    "run",
    "bench",
    "show",
    "runs",
    "compare",
    "report",
    "export",
    "import",
    "http",
    "serve",
    "scimark",
    "disk",
    "profile",
    "doctor",
    "top",
    "suite",
    "net",
    "mem",
    "compress",
    "crypto",
    "worker",
    "completions",
    "thresholds",
];

/// Every `perflab …` command in `text`: a backquoted one whole, an unquoted one (at
/// the start of a line, after `: ` or `(`) up to the end of its clause (`(`, `)`, `;`,
/// `,`, a newline, a quote). Clap's own `Usage:` lines are not hints.
fn suggested(text: &str) -> Vec<Vec<String>> {
    let text: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("Usage:"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("perflab ") {
        let before = &rest[..i];
        let quoted = before.ends_with('`');
        let lead = quoted
            || before.is_empty()
            || before.ends_with('\n')
            || before.ends_with(": ")
            || before.ends_with('(');
        let after = &rest[i + "perflab ".len()..];
        let end = if quoted {
            after.find('`').unwrap_or(after.len())
        } else {
            after
                .find(['(', ')', ';', ',', '\n', '`', '"'])
                .unwrap_or(after.len())
        };
        let words: Vec<String> = after[..end]
            .split_whitespace()
            .map(|w| w.trim_end_matches(['.', ':']).to_string())
            .filter(|w| !w.is_empty())
            .collect();
        // `perflab serve: answered …` is a label, not a command.
        let label = after[..end]
            .split_whitespace()
            .next()
            .is_some_and(|w| w.ends_with(':'));
        if lead
            && !label
            && words
                .first()
                .is_some_and(|w| COMMANDS.contains(&w.as_str()))
        {
            // A redirection is the shell's, not perflab's.
            let words = words.into_iter().take_while(|w| w != ">").collect();
            found.push(words);
        }
        rest = &after[end.min(after.len())..];
    }
    found
}

/// The flags (`--name`, `-x`) an `error:` or `hint:` line names.
fn flags_named(stderr: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in stderr
        .lines()
        .filter(|l| l.starts_with("error:") || l.starts_with("hint:"))
    {
        for w in line.split(|c: char| c.is_whitespace() || "`'\"(),;".contains(c)) {
            let w = w.trim_end_matches([':', '.']);
            let long = w.len() > 2
                && w.starts_with("--")
                && w[2..]
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
            let short = w.len() == 2
                && w.starts_with('-')
                && w[1..].chars().all(|c| c.is_ascii_alphabetic());
            if long || short {
                out.push(w.to_string());
            }
        }
    }
    out
}

/// One scenario: the arguments, and what its output must suggest (so that a scenario
/// that stops printing its hint is noticed).
struct Scenario {
    args: Vec<String>,
    must_suggest: &'static [&'static str],
}

fn scenario(args: &[&str], must_suggest: &'static [&'static str]) -> Scenario {
    Scenario {
        args: args.iter().map(|s| s.to_string()).collect(),
        must_suggest,
    }
}

/// Runs every scenario and checks its hints; returns the problems found.
fn check(lab: &Lab, scenarios: &[Scenario]) -> Vec<String> {
    let mut problems = Vec::new();
    for s in scenarios {
        let args: Vec<&str> = s.args.iter().map(String::as_str).collect();
        let out = lab.run(&args);
        let text = format!("{}\n{}", stdout(&out), stderr(&out));
        let commands = suggested(&text);
        for want in s.must_suggest {
            if !text.contains(want) {
                problems.push(format!("perflab {args:?}: expected {want:?} in: {text}"));
            }
        }
        for c in &commands {
            // A placeholder (RUN, N, OTHER_RUN) stands for a run id or a number.
            let sample = |w: &String| {
                if !w.is_empty() && w.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                    "1".to_string()
                } else {
                    w.clone()
                }
            };
            let sampled: Vec<String> = c.iter().map(sample).collect();
            let mut help: Vec<&str> = sampled.iter().map(String::as_str).collect();
            help.push("--help");
            let h = lab.run(&help);
            if h.status.code() != Some(0) || stderr(&h).contains("unexpected argument") {
                problems.push(format!(
                    "perflab {args:?} suggests `perflab {}`, which does not parse: {}",
                    c.join(" "),
                    stderr(&h)
                ));
            }
        }
        // The flags its error names exist for the command at hand.
        let command = &s.args[0];
        let help = stdout(&lab.run(&[command, "--help"]));
        for f in flags_named(&stderr(&out)) {
            let listed = help
                .split(|c: char| c.is_whitespace() || c == ',' || c == '=' || c == '[' || c == ']')
                .any(|w| w == f);
            if !listed {
                problems.push(format!(
                    "perflab {args:?} names {f}, which `perflab {command} --help` does not list: {}",
                    stderr(&out)
                ));
            }
        }
    }
    problems
}

#[test]
fn the_extractor_finds_commands_and_flags() {
    let text =
        "hint: run an experiment first: perflab run EXPERIMENT.toml (or pass --store PATH)\n\
                `perflab runs` lists the stored runs; this perflab reads it; perflab serve: up";
    assert_eq!(
        suggested(text),
        vec![
            vec!["run".to_string(), "EXPERIMENT.toml".to_string()],
            vec!["runs".to_string()]
        ]
    );
    assert!(suggested("x is not a perflab run export").is_empty());
    assert_eq!(
        suggested("`perflab export 3 > this.json`"),
        vec![vec!["export".to_string(), "3".to_string()]]
    );
    assert_eq!(
        flags_named("error: --find-max needs an SLO, like --slo 'p99<20ms' (-n)\nnot: --x"),
        vec!["--find-max", "--slo", "-n"]
    );
}

#[test]
fn every_hint_names_a_command_and_flags_that_exist() {
    let lab = Lab::new();
    let dir = lab.dir.path().to_str().unwrap().to_string();
    let bad_file = lab.write(
        "bad.toml",
        "[experiment]\nrepetitions = 1\n[workload]\nkind = \"http\"\nurl = \"http://127.0.0.1:9/\"\nfind_max = true\n",
    );
    let bad_import = lab.write("export.json", "{\"not\": \"an export\"}");
    let empty_store = vec![
        scenario(&["show"], &["perflab run"]),
        scenario(&["runs"], &["perflab run"]),
        scenario(&["report", "--markdown", "r.md"], &["perflab run"]),
    ];
    let problems = check(&lab, &empty_store);
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));

    // A store with one run.
    let good = lab.write(
        "ok.toml",
        "[experiment]\nrepetitions = 1\nwarmup = 0\n[workload]\nkind = \"command\"\ncommand = \"true\"\n",
    );
    let out = lab.run(&["run", good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let scenarios = vec![
        scenario(&["show", "999"], &["perflab runs"]),
        scenario(&["compare", "999", "1"], &["perflab runs"]),
        scenario(&["run", bad_file.to_str().unwrap()], &["find_max"]),
        scenario(
            &["import", bad_import.to_str().unwrap()],
            &["perflab export"],
        ),
        // Flags that a library's field names became.
        scenario(
            &["http", "http://127.0.0.1:9/", "--find-max"],
            &["--find-max", "--slo", "perflab http --help"],
        ),
        scenario(
            &["http", "http://127.0.0.1:9/", "--streams", "4", "-n", "1"],
            &["--http2"],
        ),
        scenario(
            &["http", "http://127.0.0.1:9/", "--rate", "10", "-n", "5"],
            &["-n", "--rate"],
        ),
        scenario(
            &[
                "http",
                "http://127.0.0.1:9/",
                "--io",
                "uring",
                "--rate",
                "5",
                "-d",
                "1s",
            ],
            &["--io"],
        ),
        scenario(
            &["disk", &dir, "--bs", "0"],
            &["--bs 0", "perflab disk --help"],
        ),
        scenario(
            &["disk", &dir, "--size", "1M", "--bs", "3k"],
            &["--size", "--bs", "--count"],
        ),
        scenario(&["net", "127.0.0.1:9", "-P", "0"], &["-P"]),
        scenario(
            &["compress", "--level", "42", "--size", "64k"],
            &["--level"],
        ),
        // The one duration grammar, on every duration flag of these commands.
        scenario(&["top", "-i", "ten"], &["ten"]),
        scenario(&["doctor", "--watch", "ten"], &["ten"]),
    ];
    let problems = check(&lab, &scenarios);
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// Every duration flag of these commands reads the one grammar: `1s`, `500ms`, and a
/// plain number of seconds; a clap-level failure would exit 2.
#[test]
fn duration_flags_take_the_one_grammar() {
    let lab = Lab::new();
    for args in [
        vec!["top", "-i", "250ms", "-n", "1", "--json"],
        vec!["top", "-i", "1", "-n", "1", "--json"],
        vec!["doctor", "--watch", "0", "--json"],
    ] {
        let out = lab.run(&args);
        assert_ne!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    let serve = HelloServer::start();
    for d in ["300ms", "0.3", "1s"] {
        let out = lab.run(&[
            "http",
            &serve.url,
            "-c",
            "1",
            "-d",
            d,
            "--timeout",
            "2s",
            "--json",
        ]);
        assert_eq!(out.status.code(), Some(0), "-d {d}: {}", stderr(&out));
    }
}

#[test]
fn the_noise_warning_of_bench_names_its_cpus_flag_and_that_flag_works() {
    let lab = Lab::new();
    // A threshold of 0 makes any machine "noisy": the warning path runs.
    let out = lab
        .cmd()
        .env("PERFLAB_NOISE_THRESHOLD", "0")
        .args(["bench", "true", "-r", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("this machine is noisy right now"), "{err}");
    assert!(
        err.contains("(--cpus 1)") && !err.contains("cpus = "),
        "{err}"
    );
    // The hint, as printed, on this machine (CPU 0 is always there).
    let out = lab.run(&["bench", "--cpus", "0", "true", "-r", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = lab.open_store().latest_run().unwrap();
    let text = run.file_text.unwrap_or_default();
    assert!(text.contains("cpus = \"0\""), "{text}");
}

#[test]
fn a_failing_bench_command_names_the_flag_that_keeps_measuring_it() {
    let lab = Lab::new();
    let out = lab.run(&["bench", "false", "-r", "2"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("(run with -i if that is expected)"), "{err}");
    assert!(!err.contains("allow_failure"), "{err}");
    // The hint, as printed.
    let out = lab.run(&["bench", "-i", "false", "-r", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn the_suite_hint_draws_a_report_with_the_flags_it_needs() {
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        "[experiment]\nrepetitions = 1\nwarmup = 0\nnoise_check = false\n[workload]\nkind = \"command\"\ncommand = \"true\"\n",
    );
    let out = lab.run(&["run", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // `perflab report 1` alone is the usage error the old hint led to.
    assert_eq!(lab.run(&["report", "1"]).status.code(), Some(2));
    // What `perflab suite machine` now prints: `perflab report RUN --html suite-RUN.html`.
    let html = lab.path("suite-1.html");
    let out = lab.run(&["report", "1", "--html", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(html.exists());
}

#[test]
fn duration_flags_take_units() {
    let lab = Lab::new();
    for args in [
        &["net", "-d", "200ms", "-r", "1", "--json"][..],
        &["net", "-d", "0.2", "-r", "1", "--json"][..],
        &[
            "mem",
            "--min-time",
            "10ms",
            "-b",
            "4K",
            "--op",
            "copy",
            "-r",
            "1",
            "--json",
        ][..],
        &[
            "crypto",
            "--min-time",
            "10ms",
            "--algorithm",
            "sha256",
            "-r",
            "1",
            "--json",
        ][..],
    ] {
        let out = lab.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    }
    let out = lab.run(&["net", "-d", "fast"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("expected a duration"),
        "{}",
        stderr(&out)
    );
}
