//! Cross-language checks of the SciMark 2 kernels in `kernels/scimark/`.
//!
//! For each language whose toolchain is on PATH (gcc; javac + java; cargo; go;
//! node; python3) the program is built into a temporary directory (never into
//! the source tree), then:
//!
//! 1. `--self-test` must print `ok` (the RNG test vectors of the specification
//!    and Monte Carlo with 10^6 samples = 3.139796 exactly);
//! 2. a bad flag must exit with status 2;
//! 3. `--verify-only` must print one JSON line whose checksums and integer
//!    checks agree across all languages (integers exactly, floats to a relative
//!    1e-9) and with the values pinned below, with FFT round-trip RMS error
//!    <= 1e-10 and LU residual <= 1e-9;
//! 4. a short timed run (`--min-time 0.05`) must give finite positive MFLOPS
//!    for every kernel, and the same checksums as the verification pass.
//!
//! A missing toolchain prints a skip line and does not fail the test — except under
//! `PERFLAB_REQUIRE` (CI, where all six exist), where it fails naming the tool
//! (tests/require.rs). The definitions are in docs/scimark.md.

#[path = "../../../tests/require.rs"]
mod require;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Default-size checksums of the verification pass. All six languages produce
/// these bit for bit on x86-64; they pin the data order and the arithmetic so
/// that a change made in every language at once is caught too.
const PINNED_CHECKSUMS: [(&str, f64); 5] = [
    ("fft", 1057.2870330965595),
    ("sor", 5067.959404839512),
    ("mc", 3.139796),
    ("sparse", 1034.967627663019),
    ("lu", 347.58121387819307),
];
const PINNED_MC_INSIDE: i64 = 784_949;
const PINNED_LU_PIVOT_HEAD: [i64; 10] = [93, 14, 96, 33, 59, 94, 85, 76, 81, 59];

const KERNELS: [&str; 5] = ["fft", "sor", "mc", "sparse", "lu"];
/// Check fields that are rounding noise: bounded, not compared across
/// languages (the FFT error depends on each runtime's sin()).
const NOISE_CHECKS: [&str; 2] = ["rms_error", "residual"];
const REL_TOL: f64 = 1e-9;

const BUILD_TIMEOUT: Duration = Duration::from_secs(150);
const RUN_TIMEOUT: Duration = Duration::from_secs(90);

fn kernels_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels/scimark")
}

/// A scratch directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir =
            std::env::temp_dir().join(format!("perflab-scimark-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs a command to completion, killing it after `timeout`.
fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> Result<Output, String> {
    let desc = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {desc}: {e}"))?;
    // Drain the pipes on threads so a chatty child cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).ok();
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).ok();
        v
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => break status,
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{desc} did not finish within {timeout:?}"));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    Ok(Output {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    })
}

fn tool_available(program: &str, version_arg: &str) -> bool {
    Command::new(program)
        .arg(version_arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn cargo_program() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

/// How to build and run one language's program.
struct Lang {
    name: &'static str,
    /// (program, version flag) pairs that must all work.
    tools: Vec<(String, &'static str)>,
}

fn languages() -> Vec<Lang> {
    let l = |name, tools: &[(&str, &'static str)]| Lang {
        name,
        tools: tools.iter().map(|(p, a)| (p.to_string(), *a)).collect(),
    };
    vec![
        l("c", &[("gcc", "--version")]),
        l("java", &[("javac", "-version"), ("java", "-version")]),
        Lang {
            name: "rust",
            tools: vec![(cargo_program(), "--version")],
        },
        l("go", &[("go", "version")]),
        l("js", &[("node", "--version")]),
        l("python", &[("python3", "--version")]),
    ]
}

/// Builds the program into `tmp` and returns the command line that runs it.
fn build(lang: &str, tmp: &Path) -> Result<Vec<String>, String> {
    let src = kernels_dir();
    let check = |out: Output, what: &str| -> Result<(), String> {
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{what} failed ({}):\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    let path = |p: &Path| p.to_string_lossy().into_owned();
    match lang {
        "c" => {
            let exe = tmp.join("scimark_c");
            let out = run_with_timeout(
                Command::new("gcc")
                    .args(["-O3", "-ffp-contract=off", "-o"])
                    .arg(&exe)
                    .arg(src.join("c/scimark.c"))
                    .arg("-lm"),
                BUILD_TIMEOUT,
            )?;
            check(out, "gcc")?;
            Ok(vec![path(&exe)])
        }
        "java" => {
            let classes = tmp.join("java-classes");
            let out = run_with_timeout(
                Command::new("javac")
                    .arg("-d")
                    .arg(&classes)
                    .arg(src.join("java/Scimark.java")),
                BUILD_TIMEOUT,
            )?;
            check(out, "javac")?;
            Ok(vec![
                "java".into(),
                "-cp".into(),
                path(&classes),
                "Scimark".into(),
            ])
        }
        "rust" => {
            let target = tmp.join("rust-target");
            let out = run_with_timeout(
                Command::new(cargo_program())
                    .args([
                        "build",
                        "--release",
                        "--quiet",
                        "--offline",
                        "--manifest-path",
                    ])
                    .arg(src.join("rust/Cargo.toml"))
                    .env("CARGO_TARGET_DIR", &target)
                    // the binary path below assumes the host target
                    .env_remove("CARGO_BUILD_TARGET"),
                BUILD_TIMEOUT,
            )?;
            check(out, "cargo build")?;
            Ok(vec![path(&target.join("release/scimark"))])
        }
        "go" => {
            let exe = tmp.join("scimark_go");
            let mut cmd = Command::new("go");
            cmd.args(["build", "-o"])
                .arg(&exe)
                .arg(".")
                .current_dir(src.join("go"))
                .env("GOTOOLCHAIN", "local");
            if std::env::var_os("GOCACHE").is_none() && std::env::var_os("HOME").is_none() {
                cmd.env("GOCACHE", tmp.join("gocache"));
            }
            check(run_with_timeout(&mut cmd, BUILD_TIMEOUT)?, "go build")?;
            Ok(vec![path(&exe)])
        }
        "js" => Ok(vec!["node".into(), path(&src.join("js/scimark.js"))]),
        "python" => Ok(vec!["python3".into(), path(&src.join("python/scimark.py"))]),
        other => Err(format!("unknown language {other}")),
    }
}

fn run_program(argv: &[String], args: &[&str]) -> Result<Output, String> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    run_with_timeout(&mut cmd, RUN_TIMEOUT)
}

/// Runs the program and parses its single JSON line.
fn run_json(lang: &str, argv: &[String], args: &[&str]) -> Result<Value, String> {
    let out = run_program(argv, args)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{lang} {args:?} exited with {}: {}{}",
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() != 1 {
        return Err(format!(
            "{lang} {args:?}: expected one line of JSON, got {stdout:?}"
        ));
    }
    serde_json::from_str(lines[0]).map_err(|e| format!("{lang} {args:?}: bad JSON ({e}): {stdout}"))
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= REL_TOL * a.abs().max(b.abs())
}

/// Compares two JSON values: integers exactly, floats to a relative 1e-9,
/// skipping the noise checks. Pushes one message per difference.
fn compare(path: &str, a: &Value, b: &Value, diffs: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                if NOISE_CHECKS.contains(&k.as_str()) {
                    continue;
                }
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => compare(&format!("{path}.{k}"), u, v, diffs),
                    _ => diffs.push(format!("{path}.{k}: present in only one")),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                diffs.push(format!("{path}: lengths {} vs {}", x.len(), y.len()));
            } else {
                for (i, (u, v)) in x.iter().zip(y).enumerate() {
                    compare(&format!("{path}[{i}]"), u, v, diffs);
                }
            }
        }
        (Value::Number(x), Value::Number(y)) => {
            let both_int = x.is_i64() && y.is_i64() || x.is_u64() && y.is_u64();
            let ok = if both_int {
                x == y
            } else {
                close(x.as_f64().unwrap(), y.as_f64().unwrap())
            };
            if !ok {
                diffs.push(format!("{path}: {x} vs {y}"));
            }
        }
        _ if a == b => {}
        _ => diffs.push(format!("{path}: {a} vs {b}")),
    }
}

/// The per-kernel part that must agree: checksum and checks.
fn verification_view(doc: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for k in KERNELS {
        let kernel = &doc["kernels"][k];
        out.insert(
            k.to_string(),
            serde_json::json!({"checksum": kernel["checksum"], "checks": kernel["checks"]}),
        );
    }
    Value::Object(out)
}

/// Checks one language's verification output on its own.
fn check_verification(lang: &str, doc: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let mut err = |m: String| errs.push(format!("{lang}: {m}"));
    if doc["language"] != lang {
        err(format!("language field is {}", doc["language"]));
    }
    if doc["runtime"].as_str().is_none_or(|s| s.is_empty()) {
        err("runtime field missing".into());
    }
    if doc["size"] != "default" {
        err(format!("size field is {}", doc["size"]));
    }
    if !doc["composite"].is_null() {
        err("composite must be null with --verify-only".into());
    }
    for k in KERNELS {
        let kernel = &doc["kernels"][k];
        for f in ["mflops", "cycles", "seconds", "cpu_seconds"] {
            if !kernel[f].is_null() {
                err(format!("{k}.{f} must be null with --verify-only"));
            }
        }
    }
    for (k, want) in PINNED_CHECKSUMS {
        match doc["kernels"][k]["checksum"].as_f64() {
            Some(got) if close(got, want) => {}
            got => err(format!("{k} checksum {got:?}, pinned {want:?}")),
        }
    }
    let rms = doc["kernels"]["fft"]["checks"]["rms_error"].as_f64();
    if !rms.is_some_and(|r| r <= 1e-10) {
        err(format!("FFT round-trip RMS error {rms:?} > 1e-10"));
    }
    let resid = doc["kernels"]["lu"]["checks"]["residual"].as_f64();
    if !resid.is_some_and(|r| r <= 1e-9) {
        err(format!("LU residual {resid:?} > 1e-9"));
    }
    if doc["kernels"]["mc"]["checksum"].as_f64() != Some(3.139796) {
        err("Monte Carlo estimate is not exactly 3.139796".into());
    }
    if doc["kernels"]["mc"]["checks"]["inside"].as_i64() != Some(PINNED_MC_INSIDE) {
        err("Monte Carlo inside count differs from the pinned value".into());
    }
    let head: Option<Vec<i64>> = doc["kernels"]["lu"]["checks"]["pivot"]
        .as_array()
        .map(|p| p.iter().take(10).filter_map(Value::as_i64).collect());
    if head.as_deref() != Some(&PINNED_LU_PIVOT_HEAD[..]) {
        err(format!(
            "LU pivot starts {head:?}, pinned {PINNED_LU_PIVOT_HEAD:?}"
        ));
    }
    errs
}

/// Checks a short timed run: positive finite MFLOPS, same checksums.
fn check_timed(lang: &str, timed: &Value, verified: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    for k in KERNELS {
        let kernel = &timed["kernels"][k];
        let mflops = kernel["mflops"].as_f64();
        if !mflops.is_some_and(|m| m.is_finite() && m > 0.0) {
            errs.push(format!("{lang}: {k} mflops {mflops:?}"));
        }
        if kernel["cycles"].as_u64().is_none_or(|c| c < 1) {
            errs.push(format!("{lang}: {k} cycles {}", kernel["cycles"]));
        }
        if !kernel["seconds"].as_f64().is_some_and(|s| s >= 0.05) {
            errs.push(format!(
                "{lang}: {k} seconds {} < min-time",
                kernel["seconds"]
            ));
        }
    }
    if !timed["composite"].as_f64().is_some_and(|c| c > 0.0) {
        errs.push(format!("{lang}: composite {}", timed["composite"]));
    }
    let mut diffs = Vec::new();
    compare(
        lang,
        &verification_view(timed),
        &verification_view(verified),
        &mut diffs,
    );
    errs.extend(
        diffs
            .into_iter()
            .map(|d| format!("timed vs verify-only: {d}")),
    );
    errs
}

#[test]
fn scimark_kernels_agree_across_languages() {
    let tmp = TempDir::new();
    let mut verified: Vec<(&str, Value)> = Vec::new();
    let mut failures: Vec<String> = Vec::new();

    for lang in languages() {
        if let Some((tool, _)) = lang.tools.iter().find(|(p, a)| !tool_available(p, a)) {
            let from = require::package(tool).map_or(String::new(), |p| format!(" ({p})"));
            require::missing(format!(
                "scimark {}: `{tool}`{from} is missing or refuses here",
                lang.name
            ));
            continue;
        }
        let started = Instant::now();
        let argv = match build(lang.name, &tmp.0) {
            Ok(argv) => argv,
            Err(e) => {
                failures.push(format!("{}: build: {e}", lang.name));
                continue;
            }
        };

        match run_program(&argv, &["--self-test"]) {
            Ok(out)
                if out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok" => {}
            Ok(out) => failures.push(format!(
                "{}: --self-test: {} {}{}",
                lang.name,
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )),
            Err(e) => failures.push(format!("{}: --self-test: {e}", lang.name)),
        }

        match run_program(&argv, &["--no-such-flag"]) {
            Ok(out) if out.status.code() == Some(2) && !out.stderr.is_empty() => {}
            Ok(out) => failures.push(format!(
                "{}: a bad flag gave {} (want exit 2 and a message on stderr)",
                lang.name, out.status
            )),
            Err(e) => failures.push(format!("{}: bad flag: {e}", lang.name)),
        }

        let verify = match run_json(lang.name, &argv, &["--verify-only"]) {
            Ok(v) => v,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        failures.extend(check_verification(lang.name, &verify));

        match run_json(lang.name, &argv, &["--min-time", "0.05"]) {
            Ok(timed) => failures.extend(check_timed(lang.name, &timed, &verify)),
            Err(e) => failures.push(e),
        }
        eprintln!(
            "scimark {}: checked in {:.1} s",
            lang.name,
            started.elapsed().as_secs_f64()
        );
        verified.push((lang.name, verify));
    }

    // Cross-language agreement, everything against the first language checked.
    if let Some(((base_lang, base), rest)) = verified.split_first() {
        let base_view = verification_view(base);
        for (lang, doc) in rest {
            let mut diffs = Vec::new();
            compare("kernels", &verification_view(doc), &base_view, &mut diffs);
            let bitwise = KERNELS
                .iter()
                .all(|k| doc["kernels"][k]["checksum"] == base["kernels"][k]["checksum"]);
            let verdict = match (diffs.is_empty(), bitwise) {
                (true, true) => "identical",
                (true, false) => "agree within 1e-9",
                (false, _) => "DISAGREE",
            };
            eprintln!("scimark {lang} vs {base_lang}: checksums {verdict}");
            failures.extend(
                diffs
                    .into_iter()
                    .map(|d| format!("{lang} vs {base_lang}: {d}")),
            );
        }
    }

    assert!(
        failures.is_empty(),
        "SciMark kernel checks failed:\n  {}",
        failures.join("\n  ")
    );
}
