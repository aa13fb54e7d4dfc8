//! Every shipped example experiment checks out (`perflab run FILE --dry-run`, and its
//! quick form with `--quick` when it has one), and the studies' examples run in their
//! quick form where this machine allows — skipped with the reason printed, never
//! silently, where a tool or a permission is missing, and failed for it under
//! `PERFLAB_REQUIRE` (tests/require.rs).

mod common;
use common::*;

use std::path::PathBuf;
use std::process::Command as Std;
use std::time::Duration;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn example(name: &str) -> String {
    examples()
        .join(format!("{name}.toml"))
        .to_str()
        .unwrap()
        .to_string()
}

#[test]
fn every_example_checks_out_in_both_forms() {
    let mut n = 0;
    for e in std::fs::read_dir(examples()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let mut forms = vec![vec!["run", p.to_str().unwrap(), "--dry-run"]];
        if text.contains("[quick") {
            forms.push(vec!["run", p.to_str().unwrap(), "--dry-run", "--quick"]);
        }
        for args in forms {
            let lab = Lab::new();
            let out = lab.run(&args);
            assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        }
        n += 1;
    }
    // The studies of docs/studies.md and the quickstart, at least.
    assert!(n >= 8, "examples found: {n}");
}

#[test]
fn quick_is_refused_for_a_file_without_a_quick_table() {
    let lab = Lab::new();
    let out = lab.run(&["run", &example("quickstart"), "--dry-run", "--quick"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no [quick] table"),
        "{}",
        stderr(&out)
    );
}

/// The quick form's plan is smaller than the full one's.
#[test]
fn the_quick_form_is_a_smaller_plan() {
    let lab = Lab::new();
    let trials = |quick: bool| {
        let mut args = vec!["run"];
        let f = example("thundering-herd");
        args.push(&f);
        args.push("--dry-run");
        if quick {
            args.push("--quick");
        }
        let out = lab.run(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let (full, quick) = (trials(false), trials(true));
    let count = |s: &str| s.lines().filter(|l| l.contains("accept=")).count();
    assert!(
        count(&quick) < count(&full),
        "quick plan:\n{quick}\nfull plan:\n{full}"
    );
}

/// Runs an example's quick form; prints and returns false where it cannot run here.
fn run_quick(lab: &Lab, name: &str, needs: &[(&str, &[&str])]) -> Option<serde_json::Value> {
    for (tool, args) in needs {
        let ok = Std::new(tool)
            .args(*args)
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            let from = require::package(tool).map_or(String::new(), |p| format!(" ({p})"));
            require::missing(format!("{name}: `{tool}`{from} is missing or refuses here"));
            return None;
        }
    }
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(300))
        .args(["run", &example(name), "--quick", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name} --quick: {}",
        stderr(&out)
    );
    Some(serde_json::from_slice(&out.stdout).expect("summary JSON"))
}

/// The metric names of the first config of a `show --json` summary.
fn metric_names(summary: &serde_json::Value) -> Vec<String> {
    summary["configs"][0]["metrics"]
        .as_array()
        .expect("configs[0].metrics")
        .iter()
        .filter_map(|m| m["name"].as_str().map(String::from))
        .collect()
}

#[test]
fn dd_block_vs_direct_runs_quick() {
    let lab = Lab::new();
    let Some(s) = run_quick(&lab, "dd-block-vs-direct", &[]) else {
        return;
    };
    let names = metric_names(&s);
    assert!(names.iter().any(|m| m == "mb_s"), "{names:?}");
}

#[test]
fn thundering_herd_runs_quick_with_the_monitor() {
    let lab = Lab::new();
    let Some(s) = run_quick(&lab, "thundering-herd", &[]) else {
        return;
    };
    let names = metric_names(&s);
    for m in ["rps", "sched.ctxt_per_s"] {
        assert!(names.iter().any(|n| n == m), "{m} in {names:?}");
    }
}

#[test]
fn jvm_modes_runs_quick() {
    let lab = Lab::new();
    let needs: &[(&str, &[&str])] = &[("javac", &["-version"]), ("java", &["-version"])];
    let Some(s) = run_quick(&lab, "jvm-modes", needs) else {
        return;
    };
    let names = metric_names(&s);
    for m in ["phase1_s", "phase2_s", "heap_after_gc_mb", "peak_rss_bytes"] {
        assert!(names.iter().any(|n| n == m), "{m} in {names:?}");
    }
}

/// Root, `ip` and nginx; if not, the rule of tests/require.rs.
fn netns_ready() -> bool {
    require::root("nginx-sysctl (network namespaces)") && require::programs(&["ip", "nginx"])
}

fn host_somaxconn() -> String {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn").unwrap()
}

fn perflab_namespaces() -> Vec<String> {
    let out = Std::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("perflab-sysctl-"))
        .map(String::from)
        .collect()
}

#[test]
fn nginx_sysctl_shows_overflows_at_128_and_leaves_the_host_untouched() {
    if !netns_ready() {
        return;
    }
    let _one = NETNS.lock().unwrap_or_else(|e| e.into_inner());
    let before = host_somaxconn();
    let lab = Lab::new();
    let Some(s) = run_quick(&lab, "nginx-sysctl", &[]) else {
        return;
    };
    let overflows = |i: usize| {
        s["configs"][i]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "listen_overflows")
            .map(|m| m["mean"].as_f64().unwrap())
            .unwrap()
    };
    assert_eq!(s["configs"][0]["params"]["somaxconn"], 128);
    assert!(overflows(0) > 0.0, "somaxconn 128 overflows: {s}");
    assert_eq!(overflows(1), 0.0, "somaxconn 4096 does not: {s}");
    assert_eq!(
        host_somaxconn(),
        before,
        "the host's somaxconn is untouched"
    );
    assert!(
        perflab_namespaces().is_empty(),
        "{:?}",
        perflab_namespaces()
    );
}

#[test]
fn nginx_sysctl_interrupted_removes_its_namespace() {
    if !netns_ready() {
        return;
    }
    let _one = NETNS.lock().unwrap_or_else(|e| e.into_inner());
    let before = host_somaxconn();
    // At once (during the setup or the service's start) and during a trial.
    for delay_ms in [0, 1500] {
        let lab = Lab::new();
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"))
            .current_dir(lab.dir.path())
            .env("PERFLAB_STORE", lab.store())
            .args(["--quiet", "run", &example("nginx-sysctl"), "--quick"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = wait_until(Duration::from_secs(30), || !perflab_namespaces().is_empty());
        std::thread::sleep(Duration::from_millis(delay_ms));
        // SAFETY: plain kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let ok = wait_until(Duration::from_secs(30), || {
            child.try_wait().unwrap().is_some()
        });
        if !ok {
            let _ = child.kill();
        }
        let status = child.wait().unwrap();
        assert!(started, "the namespace never appeared");
        assert_eq!(status.code(), Some(130), "interrupted after {delay_ms} ms");
        assert!(
            perflab_namespaces().is_empty(),
            "after {delay_ms} ms: {:?}",
            perflab_namespaces()
        );
        assert_eq!(host_somaxconn(), before);
        let nginx_left = Std::new("sh")
            .args([
                "-c",
                &format!("pgrep -f '[n]ginx -p {}'", lab.dir.path().display()),
            ])
            .output()
            .unwrap();
        assert!(
            nginx_left.stdout.is_empty(),
            "nginx left running after {delay_ms} ms"
        );
    }
}

/// The two namespace tests run one at a time.
static NETNS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn accept_herd_profile_runs_quick_with_a_profile_per_strategy() {
    let lab = Lab::new();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("p.data");
    let perf: &[&str] = &[
        "record",
        "-q",
        "-e",
        "cpu-clock",
        "-o",
        data.to_str().unwrap(),
        "--",
        "true",
    ];
    let Some(s) = run_quick(&lab, "accept-herd-profile", &[("perf", perf)]) else {
        return;
    };
    for i in 0..2 {
        let names: Vec<String> = s["configs"][i]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["name"].as_str().map(String::from))
            .collect();
        for m in ["max_rate", "profile.kernel_pct", "sched.ctxt_per_s"] {
            assert!(names.iter().any(|n| n == m), "{m} in {names:?}");
        }
        assert!(names.iter().any(|n| n.starts_with("fn:")), "{names:?}");
    }
}

#[test]
fn c_vs_java_runs_quick() {
    let lab = Lab::new();
    let needs: &[(&str, &[&str])] = &[("cc", &["--version"]), ("javac", &["-version"])];
    let Some(s) = run_quick(&lab, "c-vs-java", needs) else {
        return;
    };
    assert!(metric_names(&s).iter().any(|m| m == "composite_mflops"));
}

#[test]
fn embedded_server_runs_quick() {
    let lab = Lab::new();
    let needs: &[(&str, &[&str])] = &[("cc", &["--version"]), ("cargo", &["--version"])];
    // The example's setup runs `cargo build --release -p perflab-serve` under the
    // experiment's 60 s timeout; on a loaded machine a cold release build takes longer.
    // Build it here first, under a bound of its own, so the setup finds it up to date
    // and the timed part measures the experiment, not the compiler.
    if needs.iter().all(|(tool, args)| {
        Std::new(tool)
            .args(*args)
            .output()
            .is_ok_and(|o| o.status.success())
    }) {
        let built = assert_cmd::Command::new("cargo")
            .current_dir(examples().join(".."))
            .args(["build", "--release", "-q", "-p", "perflab-serve"])
            .timeout(Duration::from_secs(1800))
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "building perflab-serve: {}",
            stderr(&built)
        );
    }
    let Some(s) = run_quick(&lab, "embedded-server", needs) else {
        return;
    };
    assert!(metric_names(&s).iter().any(|m| m == "rps"));
    assert_eq!(s["configs"][0]["params"]["server"], "c-embedded");
}

#[test]
fn machine_suite_runs_quick_and_compares_with_itself() {
    let lab = Lab::new();
    let needs: &[(&str, &[&str])] = &[("cc", &["--version"])];
    let Some(s) = run_quick(&lab, "machine-suite", needs) else {
        return;
    };
    let configs = s["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 8);
    assert!(metric_names(&s).iter().any(|m| m == "score"));
    // Its run is a quick machine-suite run: `suite compare` takes it.
    let out = lab.run(&["suite", "compare", "1", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("geomean"), "{}", stdout(&out));
}
