//! `perflab http --find-max` end to end (issue 33): the open loop does not charge the
//! generator's own lateness to the server, a repeated knee search gives `max_rate` with
//! a tight 95 % interval against a one-CPU server held to a cgroup CPU quota (the limit
//! named `service_cpu`, with the quota), and its flags refuse bad values.

mod common;

use common::{require, stderr, HelloServer, Killed, Lab};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The tests that measure take turns: the five-search test keeps both CPUs busy at
/// nice -10 for two minutes, and the lateness test run beside it (cargo runs a file's
/// tests in parallel) measured 65 ms p99s at 300 req/s on a busy CI run.
static MEASURING: Mutex<()> = Mutex::new(());

/// `perflab http URL ARGS --json` at `rate` for `secs`: (corrected p99, uncorrected p99,
/// generator-late p99), all in ms.
fn p99s(lab: &Lab, url: &str, rate: &str, secs: &str) -> (f64, f64, f64) {
    let v = lab.json(&["http", url, "--rate", rate, "-d", secs, "--json"]);
    let p = |k: &str| v[k]["p99"].as_f64().unwrap_or_else(|| panic!("{k}: {v}"));
    (
        p("latency_ms"),
        p("latency_uncorrected_ms"),
        p("generator_late_ms"),
    )
}

/// At rates the server handles easily, the corrected p99 stays within 10 % or 0.2 ms
/// of the uncorrected one: the timer's and the loop's slack is the generator's
/// (reported as `generator_late_ms`), not the server's latency.
#[test]
fn generator_lateness_is_not_charged_to_the_server() {
    let _turn = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::new();
    let server = HelloServer::start();
    // The best of three runs per rate: a busy machine slows the test's server too, and
    // the wait for its busy connection is rightly charged; the generator's own slack,
    // which this guards, was 11 ms against 3 ms in every run before the change.
    for (rate, secs) in [("300", "4s"), ("3000", "2s")] {
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let (corrected, uncorrected, late) = p99s(&lab, &server.url, rate, secs);
            eprintln!(
                "{rate} req/s: p99 corrected {corrected:.3} ms, uncorrected {uncorrected:.3} \
                 ms, generator late {late:.3} ms"
            );
            let margin = (0.1 * uncorrected).max(0.2);
            best = best.min((corrected - uncorrected).abs() - margin);
            if best <= 0.0 {
                break;
            }
        }
        assert!(
            best <= 0.0,
            "{rate} req/s: corrected p99 over the uncorrected by {best:.3} ms more than \
             the margin in the best of three runs"
        );
    }
}

/// A `perflab serve --hello --workers 1 --access-log` (the log to /dev/null: a line
/// formatted and written per request, work the client does not do) pinned to CPU 0 at
/// nice -15, sharing that CPU with a busy loop at nice -19: the scheduler's weights give
/// the server about 29 % of it (29,154 against 71,755), a share other work on the
/// machine (at normal priority) hardly moves. So the server runs out well before the
/// one-thread debug-build generator on the other CPU. With half a CPU the two ran out at
/// about the same rate (about 60,000 req/s): either was named and the knees scattered by
/// ± 11-13 %; alone on its CPU the generator was named every time; with two busy loops
/// the generator slowed with them (this virtual machine's CPUs are not independent).
/// A cgroup with a CPU quota, removed when dropped (after the processes in it ended:
/// drop the server first). cgroup v1's `cpu` hierarchy where it is mounted, else v2.
struct QuotaGroup(std::path::PathBuf);

impl QuotaGroup {
    /// `quota_us` of every `period_us`; Err(why) where no cgroup can be made here.
    fn new(quota_us: u64, period_us: u64) -> Result<QuotaGroup, String> {
        let name = format!("perflab-test-{}", std::process::id());
        let v1 = std::path::Path::new("/sys/fs/cgroup/cpu");
        let (dir, files) = if v1.join("cpu.cfs_quota_us").exists() {
            let dir = v1.join(&name);
            let files = vec![
                ("cpu.cfs_period_us", period_us.to_string()),
                ("cpu.cfs_quota_us", quota_us.to_string()),
            ];
            (dir, files)
        } else {
            let top = std::path::Path::new("/sys/fs/cgroup");
            // The cpu controller must be on for the children (a no-op when it is).
            let _ = std::fs::write(top.join("cgroup.subtree_control"), "+cpu");
            (
                top.join(&name),
                vec![("cpu.max", format!("{quota_us} {period_us}"))],
            )
        };
        if let Some(parent) = dir.parent() {
            remove_abandoned_groups(parent);
        }
        std::fs::create_dir(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let group = QuotaGroup(dir);
        for (file, value) in files {
            let path = group.0.join(file);
            std::fs::write(&path, &value)
                .map_err(|e| format!("cannot write {value} to {}: {e}", path.display()))?;
        }
        Ok(group)
    }
}

/// Groups an earlier run of this test left when it was killed (`perflab-test-PID` whose
/// PID is gone). rmdir refuses a group that still holds a process, so a server that
/// outlived its test keeps its group until it ends.
fn remove_abandoned_groups(parent: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("perflab-test-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

impl Drop for QuotaGroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("could not remove {}", self.0.display());
    }
}

/// Search `k`'s knee: the highest rate that most of its tries passed (a retested rate
/// is decided two of three).
fn knee_of(steps: &[serde_json::Value], k: u64) -> f64 {
    let mut tries: Vec<(f64, bool)> = steps
        .iter()
        .filter(|s| s["repetition"] == k)
        .filter_map(|s| Some((s["target"].as_f64()?, s["passed"] == true)))
        .collect();
    tries.sort_by(|a, b| a.0.total_cmp(&b.0));
    tries
        .chunk_by(|a, b| a.0 == b.0)
        .filter(|c| 2 * c.iter().filter(|t| t.1).count() > c.len())
        .map(|c| c[0].0)
        .fold(f64::NAN, f64::max)
}

/// `perflab serve --hello --workers 1` pinned to CPU 0 and held to 0.15 of it by a
/// cgroup CPU quota (1.5 ms of every 10 ms): the server is what runs out, near 15k
/// req/s, while the test's generator (a debug build, one thread on CPU 1) stays far
/// from its own limit. The server enters the group before it starts (`sh` writes its
/// own pid, then becomes the server).
fn pinned_server(taskset: &std::path::Path) -> Option<(InGroup, String)> {
    let group = require::have(QuotaGroup::new(1_500, 10_000))?;
    let procs = group.0.join("cgroup.procs");
    let mut child = Command::new("nice")
        .args(["-n", "-10"])
        .arg(taskset)
        .args(["-c", "0", "sh", "-c"])
        .arg(format!(
            "echo $$ > '{}' && exec \"$0\" \"$@\"",
            procs.display()
        ))
        .arg(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["serve", "--hello", "--port", "0", "--workers", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start perflab serve under taskset");
    let addr = common::listening_addr(&mut child);
    let server = InGroup {
        _server: Killed(child),
        _group: group,
    };
    Some((server, format!("http://{addr}/")))
}

/// A server and its cgroup: fields drop in order, so the server is stopped (by its
/// pid) before its group is removed, also when the test fails.
struct InGroup {
    _server: Killed,
    _group: QuotaGroup,
}

/// t(0.985, n − 1) for n = 5..=20 knees: the 97 % interval used when searches stop on
/// precision (scipy 1.17.1, `scipy.stats.t.ppf(0.985, df)` for df 4..=19).
const T_985: [f64; 16] = [
    3.297629727890704,
    3.002874973841795,
    2.8289278624883503,
    2.7145730112787807,
    2.633814378338465,
    2.5738039775468033,
    2.527484244002856,
    2.4906639333079346,
    2.4607001661144765,
    2.4358452121107943,
    2.4148977275422223,
    2.397005037842792,
    2.3815453734873797,
    2.368054760913472,
    2.3561800073007912,
    2.345647533562753,
];

/// Mean and t-interval half-width of `knees` with the quantile `t`.
fn t_interval(knees: &[f64], t: f64) -> (f64, f64) {
    let n = knees.len() as f64;
    let m = knees.iter().sum::<f64>() / n;
    let sd = (knees.iter().map(|k| (k - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    (m, t * sd / n.sqrt())
}

/// The knee of every search in the report, printing each with the rates it broke at.
fn knees_of(steps: &[serde_json::Value], n: u32) -> Vec<f64> {
    let mut knees = Vec::new();
    for k in 1..=n {
        let best = knee_of(steps, k.into());
        eprintln!("  search {k}: knee {best:.0} req/s (highest rate passed by most of its tries)");
        knees.push(best);
        for s in steps
            .iter()
            .filter(|s| s["repetition"] == k && s["passed"] == false)
        {
            eprintln!(
                "    broke at {}: {} req/s, p50 {} ms, error rate {}",
                s["target"], s["rps"], s["latency_ms"]["p50"], s["error_rate"]
            );
        }
        assert!(
            steps.iter().any(|s| s["repetition"] == k),
            "no step of search {k}"
        );
    }
    knees
}

/// Five searches against a one-CPU server, the generator on the other CPU, and more
/// until the knee's interval is within 10 % of its mean (`--find-max-precision 10%`):
/// the first five are the issue's `--find-max-repetitions 5` run, whose plain 95 %
/// interval the test prints; the searches stop at the first count whose 97 % interval
/// is within 10 %, or at 20 saying the target was missed. Steps at the default length
/// (2 s). The SLO is on the median: above its capacity the server's queue grows through
/// the step and the median with it, while the tail below capacity is this shared
/// machine's scheduling (other builds on the same two CPUs), which a p99 bound would
/// measure.
#[test]
fn five_searches_give_a_knee_with_a_tight_interval() {
    let _turn = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    if !require::programs(&["taskset", "nice"]) {
        return;
    }
    let Some(taskset) = require::program("taskset") else {
        return;
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(cpus >= 2, "needs two CPUs, has {cpus}");
    let lab = Lab::new();
    let Some((_server, url)) = pinned_server(&taskset) else {
        return;
    };
    let started = Instant::now();
    // The generator on CPU 1, one thread; bounded like every perflab the tests run
    // (20 searches of ~20 s at most). At nice -10 like the server: other work on this
    // machine (builds beside the test) must not take the generator's CPU, nor the
    // server's 15 % of its own.
    let out = assert_cmd::Command::new("nice")
        .args(["-n", "-10"])
        .arg(&taskset)
        .args(["-c", "1"])
        .arg(assert_cmd::cargo::cargo_bin("perflab"))
        .current_dir(lab.dir.path())
        .env("PERFLAB_STORE", lab.store())
        .timeout(Duration::from_secs(900))
        .arg("http")
        .arg(&url)
        .args(["--find-max", "--find-max-repetitions", "5"])
        .args(["--find-max-precision", "10%", "--slo", "p50<20ms"])
        .args(["-t", "1", "--json"])
        .output()
        .expect("run perflab http");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let f = |k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k}: {}", v[k]));
    let (mean, lo, hi) = (f("max_rate"), f("max_rate_ci_low"), f("max_rate_ci_high"));
    let steps = v["steps"].as_array().expect("steps");
    let n = v["repetitions"].as_u64().expect("repetitions") as u32;
    eprintln!(
        "max_rate {mean:.0} req/s, CI {lo:.0}–{hi:.0} at 97 % (± {:.1} %) after {n} searches, \
         broke_at {}, {} steps ({} retests), limit {}, {:.0} s",
        50.0 * (hi - lo) / mean,
        v["broke_at"],
        steps.len(),
        steps.iter().filter(|s| s["retest"] == true).count(),
        v["limit"],
        started.elapsed().as_secs_f64()
    );
    assert!((5..=20).contains(&n), "{n} searches: from 5 to 4 × 5");
    let knees = knees_of(steps, n);
    // The figure: the first five searches' 95 % t interval, t(0.975, 4) =
    // 2.7764451051977987 (scipy 1.17.1, `scipy.stats.t.ppf(0.975, 4)`).
    let (m5, h5) = t_interval(&knees[..5], 2.776_445_105_197_798_7);
    let pct5 = 100.0 * h5 / m5;
    eprintln!(
        "first five searches: {m5:.0} ± {h5:.0} req/s, half-width {pct5:.1} % of the mean: \
         the 10 % target {} at five",
        if pct5 <= 10.0 { "held" } else { "missed" }
    );
    // The bound catches a search that lost its footing (no retests, lateness charged to
    // the server): 2.5 times the target.
    assert!(pct5 <= 25.0, "half-width {pct5:.1} % over 25 %: {knees:?}");
    // The report: the mean of all knees, their interval at 97 %.
    let (m, half) = t_interval(&knees, T_985[n as usize - 5]);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-3 * b.abs().max(1.0);
    assert!(
        close(mean, m),
        "max_rate {mean} is not the knees' mean {m}: {knees:?}"
    );
    assert!(
        close(lo, m - half) && close(hi, m + half),
        "CI {lo}–{hi} is not the 97 % t interval {}–{} of {knees:?}",
        m - half,
        m + half
    );
    assert_eq!(v["max_rate_ci_level"], 0.97);
    // It stopped at the first count within 10 % (counts before it were wider) ...
    for k in 5..n as usize {
        let (mk, hk) = t_interval(&knees[..k], T_985[k - 5]);
        assert!(
            hk > 0.1 * mk,
            "{k} searches were already within 10 %: {knees:?}"
        );
    }
    // ... and says whether it got there: within 10 %, or 20 searches and a note.
    let met = v["max_rate_precision_met"] == true;
    eprintln!(
        "half-width {:.1} % of the mean after {n} searches: the 10 % target {}",
        100.0 * half / m,
        if met { "met" } else { "missed" }
    );
    assert_eq!(
        met,
        half <= 0.1 * m,
        "max_rate_precision_met: {}",
        v["max_rate_precision_met"]
    );
    if !met {
        assert_eq!(n, 20, "stopped short of the cap without the target");
        let warnings = v["warnings"].to_string();
        assert!(
            warnings.contains("short of the ±10.0 % asked"),
            "{warnings}"
        );
    }
    assert_eq!(
        v["limit"]["resource"], "service_cpu",
        "the pinned one-worker server is what runs out: {}",
        v["limit"]
    );
    let evidence = v["limit"]["evidence"].as_str().unwrap_or_default();
    assert!(
        evidence.contains("cgroup CPU quota of 0.15"),
        "the evidence names the quota: {evidence}"
    );
}

/// Bad values of the new flag and of the step length are refused, naming the flag.
#[test]
fn find_max_flags_refuse_bad_values() {
    let lab = Lab::new();
    for (args, needle) in [
        (
            vec!["--find-max-repetitions", "0"],
            "--find-max-repetitions",
        ),
        (
            vec!["--find-max-repetitions", "1000"],
            "--find-max-repetitions",
        ),
        (
            vec!["--find-max-repetitions", "many"],
            "--find-max-repetitions",
        ),
        (vec!["--step-duration", "0s"], "--step-duration"),
        (vec!["--find-max-precision", "0%"], "--find-max-precision"),
        (vec!["--find-max-precision", "100%"], "--find-max-precision"),
        (
            vec!["--find-max-precision", "tight"],
            "--find-max-precision",
        ),
    ] {
        let out = lab
            .cmd()
            .args([
                "http",
                "http://127.0.0.1:9/",
                "--find-max",
                "--slo",
                "p99<20ms",
            ])
            .args(&args)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // Either search flag without --find-max: refused, naming the flags.
    for (flag, value, needles) in [
        ("--find-max-repetitions", "3", vec!["--find-max"]),
        (
            "--find-max-precision",
            "10%",
            vec!["--find-max-precision", "--find-max"],
        ),
    ] {
        let out = lab
            .cmd()
            .args(["http", "http://127.0.0.1:9/", flag, value])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(needles.iter().all(|n| err.contains(n)), "{err}");
    }
}

/// A careless user's URL (here a page the server does not have: every answer a 404):
/// the knee search stops at its first step instead of descending through ever longer
/// steps and retests (it took over 400 s before this guard), runs no further search,
/// and says why.
#[test]
fn a_url_that_always_fails_stops_the_search_at_once() {
    let www = tempfile::tempdir().expect("an empty directory to serve");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .arg("serve")
        .arg(www.path())
        .args(["--port", "0", "--workers", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start perflab serve");
    let addr = common::listening_addr(&mut child);
    let _server = Killed(child);
    let lab = Lab::new();
    let started = Instant::now();
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(120))
        .arg("http")
        .arg(format!("http://{addr}/missing"))
        .args(["--find-max", "--find-max-repetitions", "3"])
        .args(["--slo", "p99<20ms", "--json"])
        .output()
        .expect("run perflab http");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let steps = v["steps"].as_array().expect("steps");
    eprintln!(
        "{} step(s) in {:.1} s",
        steps.len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(steps.len(), 1, "{}", v["steps"]);
    assert!(v["max_rate"].is_null(), "{}", v["max_rate"]);
    let warned = v["warnings"].as_array().expect("warnings").iter();
    assert!(
        warned.clone().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains("every request of the last step failed"))),
        "{}",
        v["warnings"]
    );
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
}
