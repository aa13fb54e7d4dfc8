//! `perflab scimark`: builds, verifies against C, stores, reports; a broken language
//! is dropped with a clear error while the others' results are kept.

mod common;
use common::*;

fn scimark(lab: &Lab, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "scimark",
        "--min-time",
        "0.02",
        "--repeat",
        "2",
        "--kernels",
        "mc,lu,sparse",
        "--json",
    ];
    args.extend_from_slice(extra);
    lab.cmd()
        .env("PERFLAB_CACHE", lab.path("cache"))
        .args(&args)
        .output()
        .unwrap()
}

#[test]
fn c_runs_verified_and_is_stored() {
    let lab = Lab::new();
    let out = scimark(&lab, &["--lang", "c"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &doc["languages"][0];
    assert_eq!(c["lang"], "c");
    assert_eq!(c["verified"], true);
    assert_eq!(c["kernels"]["mc"]["checksum"], 3.139796);
    assert!(c["kernels"]["lu"]["mflops_mean"].as_f64().unwrap() > 0.0);
    let store = lab.open_store();
    let run = store.run(doc["run_id"].as_i64().unwrap()).unwrap();
    assert_eq!((run.kind.as_str(), run.trials_ok), ("scimark", 2));
}

#[test]
fn a_missing_toolchain_drops_only_that_language() {
    let lab = Lab::new();
    let out = scimark(
        &lab,
        &["--lang", "c,java", "--java", "/nonexistent/bin/java"],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("java: toolchain not found: /nonexistent/bin/java"),
        "{}",
        stderr(&out)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["languages"][0]["verified"], true);
    assert_eq!(doc["languages"][1]["verified"], false);
    assert_eq!(
        lab.open_store().latest_run().unwrap().trials_ok,
        2,
        "C's results are kept"
    );
}

#[test]
fn a_bad_flag_fails_that_language_with_the_compiler_message() {
    let lab = Lab::new();
    let out = scimark(&lab, &["--lang", "c", "--cflags", "-O3 -fno-such-flag"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("c: build failed") && stderr(&out).contains("no-such-flag"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn unknown_languages_and_kernels_are_usage_errors() {
    let lab = Lab::new();
    let out = lab.run(&["scimark", "--lang", "cobol"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cobol"));
    let out = lab.run(&["scimark", "--kernels", "fft,gemm"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("gemm"));
}
