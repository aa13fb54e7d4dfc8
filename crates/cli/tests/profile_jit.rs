//! JIT frames (issue 33, item 1): Java and Node code compiled at run time is named in
//! reports, folded stacks and `fn:` metrics — for a command perflab starts under perf
//! (`perflab profile -- java ...`, `-- node ...`) and for a SciMark trial with
//! `[profile]` — and `--no-jit` is what would leave it unnamed.
//!
//! "The samples of a profile" here are all the samples of the processes it recorded:
//! a command under perf (`-- java ...`) and a workload profile (`target = "workload"`)
//! record only the JVM's own process, so none of the other work on a shared machine
//! counts. A sample is *named* when its leaf frame has a symbol: a Java method from the
//! JVM's perf map, or a function of libjvm, libc or the kernel; unnamed ones are
//! `[unknown]` or an image in brackets (`[perf-PID.map]`), what the folded stacks write
//! for a frame perf could not name.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::time::Duration;

/// SciMark's Java source, compiled once per test into its lab.
fn scimark_classes(lab: &Lab) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels/scimark/java/Scimark.java");
    let out = lab.path("classes");
    let st = std::process::Command::new("javac")
        .arg("-d")
        .arg(&out)
        .arg(&src)
        .status()
        .expect("run javac");
    assert!(st.success(), "javac {}", src.display());
    out
}

/// (named, total) leaf frames of folded stacks (`comm;caller;...;leaf COUNT`).
fn named_leaves(folded: &str) -> (u64, u64) {
    let (mut named, mut total) = (0, 0);
    for line in folded.lines() {
        let Some((stack, n)) = line.rsplit_once(' ') else {
            continue;
        };
        let n: u64 = n.parse().unwrap_or(0);
        let leaf = stack.rsplit(';').next().unwrap_or("");
        total += n;
        let unnamed = leaf.is_empty() || (leaf.starts_with('[') && leaf.ends_with(']'));
        if !unnamed {
            named += n;
        }
    }
    (named, total)
}

/// The function with the most samples in a `perflab profile --json` report.
fn hottest(report: &serde_json::Value) -> (String, f64) {
    report["images"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["functions"].as_array().unwrap().iter())
        .max_by_key(|f| f["samples"].as_u64().unwrap())
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["pct_total"].as_f64().unwrap(),
            )
        })
        .unwrap_or_else(|| panic!("no functions in {report}"))
}

/// `perflab profile --json --threshold 0 --folded F EXTRA -- ARGV`: the report, and
/// the folded stacks.
fn profile(lab: &Lab, extra: &[&str], argv: &[&str]) -> (serde_json::Value, String) {
    let folded = lab.path(&format!("stacks-{}.folded", extra.len()));
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(120))
        .args([
            "profile",
            "--json",
            "--threshold",
            "0",
            "-F",
            "499",
            "--folded",
        ])
        .arg(&folded)
        // perf.data and the kept maps in the lab, removed with it.
        .arg("--output")
        .arg(lab.path(&format!("recording-{}", extra.len())))
        .args(extra)
        .arg("--")
        .args(argv)
        .output()
        .expect("run perflab profile");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&out), stderr(&out)));
    (report, std::fs::read_to_string(&folded).unwrap())
}

fn sor(classes: &Path) -> Vec<String> {
    [
        "java",
        "-cp",
        classes.to_str().unwrap(),
        "Scimark",
        "--kernels",
        "sor",
        "--min-time",
        "2",
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn java_methods_of_a_jvm_that_exits_by_itself_are_named_and_its_map_is_kept() {
    if !require::perf_records() || !require::programs(&["java", "javac"]) {
        return;
    }
    let lab = Lab::new();
    let classes = scimark_classes(&lab);
    let argv = sor(&classes);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (report, folded) = profile(&lab, &[], &argv);
    let (named, total) = named_leaves(&folded);
    let share = 100.0 * named as f64 / total.max(1) as f64;
    eprintln!("java: {named} of {total} samples named ({share:.1} %)");
    assert!(total >= 200, "too few samples to judge: {total}\n{folded}");
    assert!(share >= 90.0, "{share:.1} % named:\n{folded}");
    let (hot, pct) = hottest(&report);
    eprintln!("java: hottest {hot} {pct:.1} %");
    assert_eq!(hot, "Scimark.sorExecute", "{report}");
    assert_eq!(
        report["jit"]["java"].as_str(),
        Some("-XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit")
    );
    // The JVM's map left /tmp for the profile's folder, where a later report reads it.
    let maps: Vec<PathBuf> = report["jit"]["maps"]
        .as_array()
        .expect("kept maps")
        .iter()
        .map(|m| PathBuf::from(m.as_str().unwrap()))
        .collect();
    assert!(!maps.is_empty(), "{report}");
    for m in &maps {
        assert!(m.is_file(), "{} not kept", m.display());
        let tmp = Path::new("/tmp").join(m.file_name().unwrap());
        assert!(!tmp.exists(), "{} left behind", tmp.display());
    }
    let data = report["perf_data"].as_str().expect("perf_data");
    let again = lab.json(&["profile", "report", data, "--json", "--threshold", "0"]);
    assert_eq!(
        hottest(&again).0,
        "Scimark.sorExecute",
        "read back: {again}"
    );
}

#[test]
fn without_jit_the_same_java_profile_is_mostly_unnamed() {
    if !require::perf_records() || !require::programs(&["java", "javac"]) {
        return;
    }
    let lab = Lab::new();
    let classes = scimark_classes(&lab);
    let argv = sor(&classes);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (report, folded) = profile(&lab, &["--no-jit"], &argv);
    let (named, total) = named_leaves(&folded);
    let share = 100.0 * named as f64 / total.max(1) as f64;
    eprintln!("java --no-jit: {named} of {total} samples named ({share:.1} %)");
    assert!(total >= 200, "too few samples to judge: {total}");
    assert!(share < 50.0, "{share:.1} % named without jit:\n{folded}");
    assert!(report.get("jit").is_none(), "{report}");
}

#[test]
fn a_node_scripts_hot_function_is_named() {
    if !require::perf_records() || require::program("node").is_none() {
        return;
    }
    let lab = Lab::new();
    let script = lab.write(
        "hot.js",
        // hotLoop is on line 1 (the continuations add no newline).
        "function hotLoop(n) { let s = 0; \
         for (let i = 0; i < n; i++) { s += Math.sqrt(i) * 1.0000001; } return s; }\n\
         const end = Date.now() + 1500; let t = 0; while (Date.now() < end) t += hotLoop(1e6);\n\
         console.log(t > 0 ? 'ok' : 'no');\n",
    );
    let (report, folded) = profile(&lab, &[], &["node", script.to_str().unwrap()]);
    let (hot, pct) = hottest(&report);
    eprintln!("node: hottest {hot} {pct:.1} %");
    assert!(hot.starts_with("hotLoop (hot.js:1)"), "{hot}: {report}");
    assert!(folded.contains("hotLoop (hot.js:1)"), "{folded}");
    assert_eq!(report["jit"]["node"].as_str(), Some("--perf-basic-prof"));
}

#[test]
fn a_scimark_trial_with_a_profile_names_its_java_methods() {
    if !require::perf_records() || !require::programs(&["java", "javac"]) {
        return;
    }
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        r#"
[experiment]
name = "scimark-java-profiled"
repetitions = 1
warmup = 0
noise_check = false
timeout = "120s"
[profile]
target = "workload"
frequency = 499
top = 5
[workload]
kind = "scimark"
lang = "java"
kernels = ["sor"]
min_time = 2.0
"#,
    );
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(240))
        .env("PERFLAB_CACHE", lab.path("cache"))
        .args(["run", f.to_str().unwrap()])
        .output()
        .expect("run perflab");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let store = lab.open_store();
    let t = &store.trials(1).unwrap()[0];
    assert_eq!(t.status, "ok", "{:?}\n{err}", t.error);
    let arts = store.trial_artifacts(t.id).unwrap();
    let art = |name: &str| {
        let a = arts.iter().find(|a| a.0 == name);
        String::from_utf8_lossy(&a.unwrap_or_else(|| panic!("no {name}: {err}")).2).into_owned()
    };
    let (named, total) = named_leaves(&art("stacks.folded"));
    let share = 100.0 * named as f64 / total.max(1) as f64;
    eprintln!("scimark trial: {named} of {total} samples named ({share:.1} %)");
    assert!(total >= 200, "too few samples to judge: {total}");
    assert!(
        share >= 90.0,
        "{share:.1} % named:\n{}",
        art("stacks.folded")
    );
    let doc: serde_json::Value = serde_json::from_str(&art("profile.json")).unwrap();
    assert!(
        doc["jit"]["java"]
            .as_str()
            .is_some_and(|f| f.contains("-XX:+PreserveFramePointer")),
        "{doc}"
    );
    let fns: Vec<(String, f64)> = store
        .metrics(1)
        .unwrap()
        .into_iter()
        .filter(|m| m.name.starts_with("fn:"))
        .map(|m| (m.name, m.value))
        .collect();
    let top = fns
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or_else(|| panic!("no fn: metrics"));
    eprintln!("scimark trial: hottest {} {:.1} %", top.0, top.1);
    assert_eq!(top.0, "fn:Scimark.sorExecute", "{fns:?}");
}

#[test]
fn a_jvm_stopped_by_the_duration_has_its_map_written_before_the_report() {
    if !require::perf_records() || !require::programs(&["java", "javac"]) {
        return;
    }
    let lab = Lab::new();
    let classes = scimark_classes(&lab);
    let mut argv = sor(&classes);
    // Far longer than the recording: perf's SIGTERM ends the JVM, which writes its map
    // as it exits, before perf does.
    *argv.last_mut().unwrap() = "60".into();
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    let (report, folded) = profile(&lab, &["--duration", "4s"], &argv);
    assert!(started.elapsed() < Duration::from_secs(50), "not stopped");
    let (named, total) = named_leaves(&folded);
    let share = 100.0 * named as f64 / total.max(1) as f64;
    eprintln!("java --duration 4s: {named} of {total} samples named ({share:.1} %)");
    assert!(total >= 200, "too few samples to judge: {total}");
    assert!(share >= 90.0, "{share:.1} % named:\n{folded}");
    assert_eq!(hottest(&report).0, "Scimark.sorExecute", "{report}");
}

/// A child stopped with SIGTERM (a JVM then removes its own files), killed if it
/// lingers, when the test ends however it ends.
struct Terminated(std::process::Child);

impl Drop for Terminated {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child, not yet waited for.
        unsafe {
            libc::kill(self.0.id() as i32, libc::SIGTERM);
        }
        let exited = wait_until(Duration::from_secs(10), || {
            matches!(self.0.try_wait(), Ok(Some(_)))
        });
        if !exited {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

#[test]
fn a_running_jvm_profiled_by_pid_is_named_through_jcmd_and_said_to_be_shallow() {
    if !require::perf_records() || !require::programs(&["java", "javac", "jcmd"]) {
        return;
    }
    let lab = Lab::new();
    let classes = scimark_classes(&lab);
    let mut argv = sor(&classes);
    *argv.last_mut().unwrap() = "60".into();
    // Started as a user would, without perflab's flags.
    let jvm = Terminated(
        std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start java"),
    );
    let pid = jvm.0.id();
    // The JVM can be attached to once it has made its performance data file.
    let user = if require::is_root() {
        "root".to_string()
    } else {
        std::env::var("USER").unwrap_or_default()
    };
    let perfdata = std::env::temp_dir().join(format!("hsperfdata_{user}/{pid}"));
    assert!(
        wait_until(Duration::from_secs(30), || perfdata.exists()),
        "JVM {pid} not up"
    );
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(120))
        .args([
            "profile",
            "--json",
            "--threshold",
            "0",
            "-F",
            "499",
            "--duration",
            "3s",
            "-p",
        ])
        .arg(pid.to_string())
        .arg("--output")
        .arg(lab.path("recording"))
        .output()
        .expect("run perflab profile");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let note = report["jit_note"].as_str().unwrap_or_default();
    assert!(
        note.contains("without -XX:+PreserveFramePointer"),
        "{report}"
    );
    assert!(stderr(&out).contains(note), "{}", stderr(&out));
    let (hot, pct) = hottest(&report);
    eprintln!("java -p: hottest {hot} {pct:.1} %");
    assert_eq!(hot, "Scimark.sorExecute", "{report}");
    // perflab gave this JVM no flags; the map jcmd wrote is moved out of /tmp.
    assert!(report["jit"].get("java").is_none(), "{report}");
    let tmp_map = PathBuf::from(format!("/tmp/perf-{pid}.map"));
    assert!(!tmp_map.exists(), "{} left behind", tmp_map.display());
    assert_eq!(
        report["jit"]["maps"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
}
