//! Experiment-file errors, read by `Experiment::parse` alone: each names the file, the
//! line and column, and what was expected. (The binary's own test, crates/cli/tests/
//! malformed.rs, keeps a few of these to check the exit code and that nothing runs.)

use std::path::Path;

use perflab_lab::experiment::Experiment;

/// (name, file text, expected "line:col", words the message must contain)
const CASES: &[(&str, &str, &str, &[&str])] = &[
    (
        "unknown key",
        "[experiment]\nrepetition = 5\n[workload]\nkind = \"command\"\ncommand = \"touch MARK\"\n",
        "2:1",
        &["unknown field", "repetition"],
    ),
    (
        "wrong type",
        "[experiment]\nrepetitions = \"five\"\n[workload]\nkind = \"command\"\ncommand = \"touch MARK\"\n",
        "2:15",
        &["integer"],
    ),
    (
        "unknown placeholder",
        "[experiment]\n[matrix]\nlevel = [1, 2]\n[workload]\nkind = \"command\"\ncommand = \"touch MARK -{levle}\"\n",
        "6:24",
        &["unknown placeholder {levle}", "level"],
    ),
    (
        "empty matrix list",
        "[experiment]\n[matrix]\nlevel = []\n[workload]\nkind = \"command\"\ncommand = \"touch MARK\"\n",
        "3:9",
        &["empty list", "level"],
    ),
    (
        "backwards range",
        "[experiment]\n[matrix]\nn = { from = 8, to = 1 }\n[workload]\nkind = \"command\"\ncommand = \"touch MARK\"\n",
        "3:5",
        &["backwards"],
    ),
    (
        "zero step",
        "[experiment]\n[matrix]\nn = { from = 1, to = 8, step = 0 }\n[workload]\nkind = \"command\"\ncommand = \"touch MARK\"\n",
        "3:5",
        &["step must be positive"],
    ),
    (
        "unknown workload kind",
        "[experiment]\n[workload]\nkind = \"comand\"\ncommand = \"touch MARK\"\n",
        "3:8",
        &["unknown workload kind", "command"],
    ),
    (
        "unknown order",
        "[experiment]\norder = \"shuffled\"\n[workload]\nkind = \"command\"\ncommand = \"touch MARK\"\n",
        "2:9",
        &["interleaved", "random", "sequential"],
    ),
    (
        "bad duration",
        "[experiment]\ntimeout = \"fast\"\n[workload]\nkind = \"command\"\ncommand = \"touch MARK\"\n",
        "2:11",
        &["bad duration", "30s"],
    ),
    (
        "bad better",
        "[experiment]\n[workload]\nkind = \"command\"\ncommand = \"touch MARK\"\nmetrics.x = { regex = '(\\d+)', better = \"up\" }\n",
        "5:41",
        &["higher", "lower"],
    ),
    (
        "regex without group",
        "[experiment]\n[workload]\nkind = \"command\"\ncommand = \"touch MARK\"\nmetrics.x = { regex = 'rate \\d+' }\n",
        "5:23",
        &["capture group"],
    ),
    (
        "toml syntax",
        "[experiment]\nname = \"unterminated\n[workload]\nkind = \"command\"\ncommand = \"touch MARK\"\n",
        "2:",
        &["string"],
    ),
    (
        "bad cpus",
        "[experiment]\ncpus = \"0-x\"\n[workload]\nkind = \"command\"\ncommand = \"touch MARK\"\n",
        "2:8",
        &["CPU"],
    ),
    (
        "unbalanced quotes",
        "[experiment]\n[workload]\nkind = \"command\"\ncommand = \"touch 'MARK\"\n",
        "4:11",
        &["unbalanced quotes", "shell = true"],
    ),
];

#[test]
fn every_malformed_file_is_located_with_what_was_expected() {
    for (name, text, at, words) in CASES {
        let err = Experiment::parse(Path::new("bad.toml"), text)
            .err()
            .unwrap_or_else(|| panic!("{name}: parsed"))
            .to_string();
        let located = format!("bad.toml:{at}");
        assert!(
            err.starts_with(&located),
            "{name}: expected {located} in: {err}"
        );
        for w in *words {
            assert!(err.contains(w), "{name}: expected {w:?} in: {err}");
        }
    }
}

#[test]
fn durations_take_the_one_grammar() {
    for (text, secs) in [
        ("1m30s", 90.0),
        ("500ms", 0.5),
        ("2.5s", 2.5),
        ("1m 30s", 90.0),
    ] {
        let file = format!(
            "[experiment]\ntimeout = \"{text}\"\n[workload]\nkind = \"command\"\ncommand = \"true\"\n"
        );
        let exp = Experiment::parse(Path::new("t.toml"), &file).unwrap();
        assert_eq!(exp.timeout.map(|d| d.as_secs_f64()), Some(secs), "{text}");
    }
}

#[test]
fn a_table_kind_error_names_the_key_where_it_is_written() {
    let text = "[experiment]\n[workload]\nkind = \"scimark\"\nlang = \"cobol\"\n";
    let err = Experiment::parse(Path::new("s.toml"), text)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("s.toml:4:"), "{err}");
    assert!(err.contains("lang") && err.contains("python"), "{err}");
}

#[test]
fn library_errors_name_the_field_not_a_command_line_flag() {
    let disk = "[experiment]\n[workload]\nkind = \"disk\"\npath = \"/tmp\"\nmode = \"write\"\nbs = \"0\"\n";
    let err = Experiment::parse(Path::new("d.toml"), disk)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("d.toml:6:"), "{err}");
    assert!(err.contains("`bs` 0") && !err.contains("--bs"), "{err}");
    let http = "[experiment]\n[workload]\nkind = \"http\"\nurls = [\"http://127.0.0.1:1/\"]\nfind_max = true\n";
    let err = Experiment::parse(Path::new("h.toml"), http)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`find_max` needs an SLO") && !err.contains("--"),
        "{err}"
    );
}

#[test]
fn a_type_error_names_the_key_and_the_form_expected() {
    // (file, "line:col", words): the key, what it expects, never a Rust type.
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "[experiment]\nwarmup = \"x\"\n[workload]\nkind = \"command\"\ncommand = \"true\"\n",
            "2:10",
            &["`warmup`", "expected an integer"],
        ),
        (
            "[experiment]\nrepetitions = \"x\"\n[workload]\nkind = \"command\"\ncommand = \"true\"\n",
            "2:15",
            &["repetitions", "an integer from 1 to 100000 or \"auto\""],
        ),
        (
            "[experiment]\n[workload]\nkind = \"mem\"\nop = \"copy\"\nblock = \"4K\"\nthreads = \"two\"\n",
            "6:1",
            &["`threads`", "\"two\"", "expected a non-negative integer"],
        ),
        (
            "[experiment]\n[workload]\nkind = \"net\"\nduration = true\n",
            "4:1",
            &["`duration`", "expected a number"],
        ),
    ];
    for (text, at, words) in cases {
        let err = Experiment::parse(Path::new("t.toml"), text)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(&format!("t.toml:{at}")), "{err}");
        for w in *words {
            assert!(err.contains(w), "expected {w:?} in: {err}");
        }
        assert!(
            !err.contains("usize") && !err.contains("i64") && !err.contains("f64"),
            "{err}"
        );
    }
}
