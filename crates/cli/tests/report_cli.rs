//! `perflab report`: Markdown and HTML reports of real runs (a command experiment
//! with a failing config, an HTTP experiment against `perflab serve`) and of a run
//! with interrupted and single-trial configs written through the store API.

mod common;
use common::*;

use perflab_store::{
    HostInfo, MetricValue, NewRun, Params, RunStatus, Store, TrialRecord, TrialStatus,
};

const COMMAND: &str = r#"
[experiment]
name = "report-command"
repetitions = 3
warmup = 0
noise_check = false

[matrix]
x = [1, 2, 3]

[workload]
kind = "command"
command = "sh -c 'if [ {x} = 3 ]; then echo boom-{x} >&2; exit 3; fi; echo value=$(( {x} * 10 + {repetition} ))'"
metrics.value = { regex = 'value=(\d+)', unit = "pts", better = "higher" }
"#;

const HTTP: &str = r#"
[experiment]
name = "report-http"
repetitions = 2
warmup = 0
noise_check = false
[matrix]
workers = [1, 2]
[service]
command = "{perflab} serve --hello --port {port} --workers {workers}"
ready.http = "http://127.0.0.1:{port}/"
[workload]
kind = "http"
urls = ["http://127.0.0.1:{port}/"]
connections = 2
threads = 1
duration = "300ms"
"#;

fn report(lab: &Lab, args: &[&str]) -> (String, String) {
    let md = lab.path("r.md");
    let html = lab.path("r.html");
    let mut all = vec!["report"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--markdown", md.to_str().unwrap()]);
    all.extend_from_slice(&["--html", html.to_str().unwrap()]);
    let out = lab.run(&all);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    (
        std::fs::read_to_string(md).unwrap(),
        std::fs::read_to_string(html).unwrap(),
    )
}

/// The Markdown tables with every number masked as `#`: their structure, pinned.
fn table_shape(md: &str) -> String {
    md.lines()
        .filter(|l| l.starts_with('|') || l.starts_with('#'))
        .map(mask_numbers)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each number (`12`, `3.25`) becomes `#`.
fn mask_numbers(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|n| n.is_ascii_digit() || *n == '.')
            {
                chars.next();
            }
            out.push('#');
        } else {
            out.push(c);
        }
    }
    out
}

/// No external reference: nothing loaded from a network address, no scripts or
/// stylesheets from elsewhere; the SVG namespace is the only URL in an attribute.
fn assert_self_contained(html: &str) {
    for scheme in ["http://", "https://"] {
        for (i, _) in html.match_indices(scheme) {
            let before = &html[..i];
            // Text content (an experiment file, an error) may mention a URL; an
            // attribute value may not, except the SVG namespace.
            let in_attr = before.ends_with("=\"") || before.ends_with("='");
            assert!(
                !in_attr || before.ends_with("xmlns=\""),
                "external reference at {i}: {}",
                &html[i.saturating_sub(40)..(i + 40).min(html.len())]
            );
        }
    }
    for bad in ["src=\"//", "href=\"//"] {
        assert!(!html.contains(bad), "found {bad}");
    }
    for bad in [
        "<link",
        "<script src",
        "@import",
        "url(http",
        "url(//",
        "@font-face",
    ] {
        assert!(!html.contains(bad), "found {bad}");
    }
}

/// Every chart has two axis labels, each naming a unit in parentheses.
fn assert_charts_have_axes_with_units(html: &str) -> usize {
    let mut charts = 0;
    for svg in html.split("<svg").skip(1) {
        let svg = &svg[..svg.find("</svg>").expect("closed svg")];
        if !svg.contains("class=\"chart\"") {
            continue;
        }
        charts += 1;
        let labels: Vec<&str> = svg
            .split("class=\"axis-label\"")
            .skip(1)
            .map(|s| &s[s.find('>').unwrap() + 1..s.find("</text>").unwrap()])
            .collect();
        assert!(labels.len() >= 2, "a chart without both axis labels: {svg}");
        assert!(
            labels.iter().any(|l| l.contains('(') && l.contains(')')),
            "no unit in the axis labels {labels:?}"
        );
        assert!(
            svg.contains("class=\"tick\""),
            "a chart without tick labels"
        );
    }
    charts
}

#[test]
fn command_experiment_report_has_tables_charts_and_the_failed_trials() {
    let lab = Lab::new();
    let file = lab.write("e.toml", COMMAND);
    let out = lab.run(&["run", file.to_str().unwrap()]);
    assert!(matches!(out.status.code(), Some(0 | 4)), "{}", stderr(&out));
    let (md, html) = report(&lab, &[]);
    screenshot(&lab.path("r.html"), "command");

    let shape = table_shape(&md);
    let results = shape
        .lines()
        .skip_while(|l| !l.starts_with("## Results"))
        .filter(|l| {
            l.starts_with("##")
                || l.starts_with("|--")
                || l.contains("metric")
                || l.contains("| value")
        })
        .take(5)
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        results,
        "## Results\n\
         | config | metric | mean ± #% CI | n | CV | median |\n\
         |---|---|---|---|---|---|\n\
         | x=# | value ↑ | # ± # pts | # | #% | # pts |\n\
         | x=# | value ↑ | # ± # pts | # | #% | # pts |",
        "{md}"
    );
    assert!(shape.contains("| run | kind | status | started | duration | trials |"));
    assert!(shape.contains("| host | CPU | cores | memory | kernel | governor |"));
    assert!(shape.contains(
        "| candidate | metric | baseline | candidate mean | ratio [#% CI] | p (Welch) | verdict |"
    ));
    assert!(
        md.contains("| x=2 | value | 12 pts | 22 pts |"),
        "comparison with the first config: {md}"
    );
    assert!(md.contains("**faster**"), "{md}");
    assert!(md.contains("<details><summary>"), "experiment file: {md}");
    assert!(md.contains("## Failed and interrupted trials"), "{md}");
    assert!(md.contains("| x=3 | failed |"), "{md}");
    assert!(md.contains("3 failed"), "{md}");

    assert_self_contained(&html);
    let charts = assert_charts_have_axes_with_units(&html);
    assert!(charts >= 2, "one chart per metric, got {charts}");
    assert!(html.contains("value (pts) — higher is better"));
    assert!(html.contains("prefers-color-scheme"));
    assert!(html.contains("Failed and interrupted trials") && html.contains("failed"));

    // --baseline picks the config; a config that is not there is a usage error.
    let (md2, _) = report(&lab, &["--baseline", "x=2"]);
    assert!(md2.contains("| x=1 | value | 22 pts | 12 pts |"), "{md2}");
    let bad = lab.run(&["report", "--baseline", "x=9", "--markdown", "m.md"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("x=1"),
        "lists the configs: {}",
        stderr(&bad)
    );
    let bad = lab.run(&["report", "--baseline", "nonsense", "--markdown", "m.md"]);
    assert_eq!(bad.status.code(), Some(2));
    let bad = lab.run(&["report", "99", "--markdown", "m.md"]);
    assert_eq!(bad.status.code(), Some(2));
    let bad = lab.run(&["report"]);
    assert_eq!(bad.status.code(), Some(2), "an output file is required");
}

#[test]
fn http_report_has_latency_percentiles_and_compares_runs() {
    let lab = Lab::new();
    let file = lab.write("e.toml", HTTP);
    for _ in 0..2 {
        let out = lab.run(&["run", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let (md, html) = report(&lab, &["2", "--compare", "1"]);
    screenshot(&lab.path("r.html"), "http");
    assert!(md.contains("run 1 (report-http) as baseline"), "{md}");
    assert!(md.contains("| workers=1 | rps |"), "{md}");
    assert_self_contained(&html);
    let charts = assert_charts_have_axes_with_units(&html);
    assert!(charts >= 3, "got {charts}");
    assert!(html.contains("latency by percentile"));
    assert!(html.contains("percentile (%, log scale)") && html.contains("latency (ms)"));
    assert!(html.contains("99.999%"));
}

/// Loads `html` in headless Chromium and writes a screenshot under the tests' output
/// folder (`CARGO_TARGET_TMPDIR/report-screenshots/NAME.png`, for people to look at);
/// checks that the page logged no script error and that the PNG is not blank. Skipped,
/// with the reason printed, when Chromium is not installed (scripts/test.sh installs it).
fn screenshot(html: &std::path::Path, name: &str) {
    let Some(browser) = ["chromium", "chromium-browser"].into_iter().find(|b| {
        std::process::Command::new("sh")
            .args(["-c", &format!("command -v {b}")])
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        eprintln!("skipping the screenshot of {name}: chromium is not installed");
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&png);
    let profile = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1200,2000")
        .arg(format!("file://{}", html.display()))
        .timeout(std::time::Duration::from_secs(90))
        .output()
        .unwrap();
    let log = stderr(&out);
    assert!(
        !log.lines()
            .any(|l| l.contains("CONSOLE") && (l.contains("Error") || l.contains("Uncaught"))),
        "console errors: {log}"
    );
    let bytes = std::fs::read(&png)
        .unwrap_or_else(|e| panic!("no screenshot {}: {e}\n{log}", png.display()));
    // PNG signature, then IHDR: width and height, big-endian.
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!((w, h), (1200, 2000));
    // A page of one colour deflates to a few KB; text, tables and charts do not.
    assert!(
        bytes.len() > 40_000,
        "{} looks blank ({} bytes)",
        png.display(),
        bytes.len()
    );
}

fn synthetic_run(store: &Store) -> i64 {
    let host = store
        .upsert_host(&HostInfo {
            hostname: "h".into(),
            cores: Some(2),
            ..Default::default()
        })
        .unwrap();
    let run = store
        .create_run(
            &NewRun {
                name: "synthetic".into(),
                kind: "experiment".into(),
                ..Default::default()
            },
            host,
        )
        .unwrap();
    for (ordinal, level) in [(0u32, 1), (1, 2)] {
        let mut params = Params::new();
        params.insert("level".into(), serde_json::json!(level));
        let c = store.ensure_config(run, ordinal, &params).unwrap();
        let (status, error) = if level == 2 {
            (
                TrialStatus::Interrupted,
                Some("interrupted by SIGINT".into()),
            )
        } else {
            (TrialStatus::Ok, None)
        };
        for rep in 1..=2u32 {
            let status = if rep == 1 { TrialStatus::Ok } else { status };
            store
                .record_trial(
                    run,
                    &TrialRecord {
                        config_id: c,
                        repetition: rep,
                        ordinal: ordinal * 2 + rep,
                        started_at: perflab_store::now_rfc3339(),
                        duration_s: 0.5,
                        status,
                        error: if status == TrialStatus::Ok {
                            None
                        } else {
                            error.clone()
                        },
                        method: None,
                        metrics: vec![MetricValue::new(
                            "wall_s",
                            "s",
                            1.0 + level as f64 * 0.1 + rep as f64 * 0.01,
                            "lower",
                        )],
                        histograms: vec![],
                        series: vec![],
                        artifacts: vec![],
                    },
                )
                .unwrap();
        }
    }
    store.finish_run(run, RunStatus::Interrupted).unwrap();
    run
}

#[test]
fn interrupted_trials_are_listed_and_a_single_trial_shows_no_interval() {
    let lab = Lab::new();
    let run = synthetic_run(&lab.open_store());
    let (md, html) = report(&lab, &[&run.to_string()]);
    assert!(md.contains("1 interrupted"), "{md}");
    assert!(md.contains("| level=2 | interrupted |"), "{md}");
    assert!(md.contains("interrupted by SIGINT"), "{md}");
    let single = md
        .lines()
        .find(|l| l.starts_with("| level=2 | wall_s"))
        .expect("level=2 row");
    assert!(
        !single.contains('±'),
        "a single trial pretends to a CI: {single}"
    );
    assert!(single.contains("| 1 |"), "{single}");
    let pair = md
        .lines()
        .find(|l| l.starts_with("| level=1 | wall_s"))
        .unwrap();
    assert!(pair.contains('±'), "{pair}");
    assert!(md.contains("too few trials"), "{md}");
    assert!(html.contains("interrupted by SIGINT"));
    assert_self_contained(&html);
    assert_charts_have_axes_with_units(&html);
}

#[test]
fn scimark_report_shows_mflops_per_kernel_and_language() {
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        "[experiment]\nname = \"report-scimark\"\nrepetitions = 2\nwarmup = 0\nnoise_check = false\n[matrix]\nlang = [\"c\"]\n[workload]\nkind = \"scimark\"\nlang = \"{lang}\"\nmin_time = 0.02\nkernels = [\"mc\", \"lu\"]\n",
    );
    let out = lab
        .cmd()
        .env("PERFLAB_CACHE", lab.path("cache"))
        .args(["run", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (md, html) = report(&lab, &[]);
    screenshot(&lab.path("r.html"), "scimark");
    assert!(md.contains("| lang=c | lu_mflops ↑ |"), "{md}");
    assert!(html.contains("<h2>SciMark</h2>"));
    assert!(html.contains("<td>lu</td>") && html.contains("<td>mc</td>"));
    assert!(html.contains("lu_mflops (MFLOPS) — higher is better"));
    assert_self_contained(&html);
    assert_charts_have_axes_with_units(&html);
}

#[test]
fn disk_run_report_has_one_trial_without_intervals() {
    let lab = Lab::new();
    let data = lab.path("data");
    std::fs::create_dir_all(&data).unwrap();
    let out = lab.run(&[
        "disk",
        data.to_str().unwrap(),
        "--bs",
        "64k",
        "--size",
        "2M",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (md, html) = report(&lab, &[]);
    assert!(md.contains("1 ok · 0 failed · 0 interrupted"), "{md}");
    let results: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("## Results"))
        .skip(4)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(!results.is_empty(), "{md}");
    for l in &results {
        assert!(!l.contains('±'), "a single trial pretends to a CI: {l}");
    }
    assert!(
        !md.contains("## Comparison"),
        "one config: nothing to compare"
    );
    screenshot(&lab.path("r.html"), "disk");
    assert_self_contained(&html);
    assert!(assert_charts_have_axes_with_units(&html) >= 1);
    assert!(
        !html.contains("class=\"whisker\""),
        "no CI whisker for one trial"
    );
}

#[test]
fn two_factor_design_gets_a_ratio_of_ratios_table() {
    let lab = Lab::new();
    let file = lab.write(
        "e.toml",
        r#"
[experiment]
name = "two-factors"
repetitions = 3
warmup = 0
noise_check = false
[matrix]
a = [1, 2]
b = [1, 2]
[workload]
kind = "command"
command = "sh -c 'echo value=$(( {a} * {b} * 10 + {repetition} ))'"
metrics.value = { regex = 'value=(\d+)', unit = "pts", better = "higher" }
"#,
    );
    let out = lab.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (md, html) = report(&lab, &[]);
    assert!(md.contains("## Ratio of ratios"), "{md}");
    let row = md
        .lines()
        .find(|l| l.starts_with("| value | a: 1 → 2 | b=2 vs b=1 |"))
        .unwrap_or_else(|| panic!("no interaction row: {md}"));
    assert!(row.contains(" / "), "{row}");
    assert!(html.contains("<h2>Ratio of ratios</h2>"));
}

#[test]
fn a_ramp_run_gets_its_knee_plot() {
    let lab = Lab::new();
    let server = HelloServer::start();
    let url = server.url.clone();
    let out = lab.run(&[
        "http",
        &url,
        "--ramp",
        "100:400:3",
        "--step-duration",
        "300ms",
        "-c",
        "1",
    ]);
    drop(server);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let file = lab.path("ramp.html");
    let out = lab.run(&["report", "--html", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(html.contains("Where latency breaks"), "no knee plot");
    assert!(html.contains("offered rate (req/s)"));
}
