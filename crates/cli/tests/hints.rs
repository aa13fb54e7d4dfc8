//! The hints the measuring commands print name commands that exist for the command at
//! hand: run as printed, none is a usage error (exit 2). Also: their duration flags
//! take the one duration grammar of crates/units (`-d 1s`, `--min-time 10ms`).

mod common;

use common::*;

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
