//! `perflab report`: Markdown and HTML reports of real runs (a command experiment
//! with a failing config, an HTTP experiment against `perflab serve` with the
//! monitor on) and of a run with interrupted and single-trial configs written
//! through the store API. Where Chromium is installed, the HTML reports are also
//! screenshotted and the pixels checked (see [`blank`]).

mod common;
use common::*;

use perflab_store::{
    HostInfo, MetricValue, NewRun, Params, RunStatus, SeriesData, Store, TrialRecord, TrialStatus,
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
[monitor]
interval = "50ms"
probes = ["cpu", "sched", "disk", "net"]
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
    screenshot(&lab.path("r.html"), "command", Shot::default());

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
    assert!(md.contains("**better**"), "{md}");
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
    screenshot(&lab.path("r.html"), "http", Shot::default());
    assert!(md.contains("run 1 (report-http) as baseline"), "{md}");
    assert!(md.contains("| workers=1 | rps |"), "{md}");
    assert_self_contained(&html);
    let charts = assert_charts_have_axes_with_units(&html);
    assert!(charts >= 3, "got {charts}");
    assert!(html.contains("latency by percentile"));
    assert!(html.contains("percentile (%, log scale)") && html.contains("latency (ms)"));
    assert!(html.contains("99.999%"));

    // The monitor's part: per-config summaries and the CPU breakdown stacked.
    assert!(html.contains("<h2>Telemetry</h2>"), "no telemetry section");
    assert!(html.contains("<th>softirq</th>") && html.contains("<th>context switches</th>"));
    let cpu = html
        .split("<svg")
        .find(|s| s.contains("CPU time by state"))
        .expect("a CPU chart");
    assert!(cpu.contains("class=\"area\"") && cpu.contains("class=\"total\""));
    assert!(cpu.contains("CPU time (% of all CPUs)") && cpu.contains("time since trial start (s)"));
    assert!(cpu.contains("<title>at "), "hover values");
    // The whole page, telemetry at the bottom included, light and dark.
    let tall = Shot {
        height: 9000,
        ..Shot::default()
    };
    screenshot(&lab.path("r.html"), "http-full", tall);
    let dark = Shot { dark: true, ..tall };
    screenshot(&lab.path("r.html"), "http-full-dark", dark);
}

/// How to take a screenshot: the window's height (the width is always 1200) and
/// whether the page is asked for its dark colour scheme.
#[derive(Debug, Clone, Copy)]
struct Shot {
    height: u32,
    dark: bool,
}

impl Default for Shot {
    fn default() -> Shot {
        Shot {
            height: 2000,
            dark: false,
        }
    }
}

/// Loads `html` in headless Chromium and writes a screenshot under the tests' output
/// folder (`CARGO_TARGET_TMPDIR/report-screenshots/NAME.png`, for people to look at);
/// checks that the page logged no script error and that its pixels are not blank
/// ([`blank`]). Skipped, with the reason printed, when Chromium is not installed
/// (scripts/test.sh installs it).
fn screenshot(html: &std::path::Path, name: &str, shot: Shot) {
    let found = require::which("chromium-browser");
    let Some(browser) = found.or_else(|| require::program("chromium")) else {
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&png);
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = assert_cmd::Command::new(browser);
    cmd.args([
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
    .arg(format!("--window-size=1200,{}", shot.height));
    if shot.dark {
        // prefers-color-scheme: dark, as a browser in a dark desktop would ask.
        cmd.arg("--force-dark-mode");
    }
    let out = cmd
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
    let p = pixels(&bytes);
    eprintln!("{}: {p:?}", png.display());
    assert_eq!((p.width, p.height), (1200, shot.height));
    if let Some(why) = blank(&p) {
        panic!("{} looks blank: {why}", png.display());
    }
    let light = p.background.iter().all(|c| *c > 200);
    assert_eq!(
        !light,
        shot.dark,
        "{} has background {:?} for dark = {}",
        png.display(),
        p.background,
        shot.dark
    );
}

/// What a screenshot's pixels show.
#[derive(Debug, Clone, PartialEq)]
struct Pixels {
    width: u32,
    height: u32,
    /// The most common colour (RGB): the page's background.
    background: [u8; 3],
    /// The share of pixels that differ from the background by more than
    /// [`INK_TOLERANCE`] in some channel: text, rules, table cells, charts.
    ink: f64,
    /// Distinct colours (RGB).
    colours: usize,
}

/// How far (0–255, in any channel) a pixel must be from the background to count as
/// ink: more than PNG-exact rendering noise, less than the faintest grid line.
const INK_TOLERANCE: u8 = 12;

/// The least share of ink a report's screenshot has. The reports here have 5–7 % at
/// 1200 × 2000 px, and the whole HTTP report, empty bottom included, 4 % at
/// 1200 × 9000; a page of one colour has 0, one with only a heading well under 0.5 %.
const MIN_INK: f64 = 0.01;

/// The fewest distinct colours a report's screenshot has: anti-aliased text alone
/// gives hundreds, the charts' palette more; a blank page has one or two.
const MIN_COLOURS: usize = 64;

/// Decodes a PNG (any colour type and depth, as 8-bit) and counts its colours.
fn pixels(png_bytes: &[u8]) -> Pixels {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![
        0;
        reader
            .output_buffer_size()
            .expect("a PNG that fits in memory")
    ];
    let info = reader.next_frame(&mut buf).expect("a decodable PNG");
    let channels = info.color_type.samples();
    let mut counts: std::collections::HashMap<[u8; 3], usize> = Default::default();
    for row in buf[..info.buffer_size()].chunks_exact(info.line_size) {
        for px in row[..info.width as usize * channels].chunks_exact(channels) {
            // Grey (with or without alpha) or RGB(A); alpha is ignored: Chromium's
            // screenshots are opaque.
            let rgb = if channels < 3 {
                [px[0]; 3]
            } else {
                [px[0], px[1], px[2]]
            };
            *counts.entry(rgb).or_default() += 1;
        }
    }
    let total = (info.width as usize * info.height as usize).max(1);
    let background = counts
        .iter()
        .max_by_key(|(c, n)| (**n, **c))
        .map(|(c, _)| *c)
        .unwrap_or([0; 3]);
    let ink: usize = counts
        .iter()
        .filter(|(c, _)| {
            c.iter()
                .zip(background)
                .any(|(a, b)| a.abs_diff(b) > INK_TOLERANCE)
        })
        .map(|(_, n)| n)
        .sum();
    Pixels {
        width: info.width,
        height: info.height,
        background,
        ink: ink as f64 / total as f64,
        colours: counts.len(),
    }
}

/// Why a screenshot looks blank, or None when it shows a page of content: some
/// ink and many colours. Blank in light or dark alike: the background is whatever
/// colour is most common, not white.
fn blank(p: &Pixels) -> Option<String> {
    if p.ink < MIN_INK {
        return Some(format!(
            "only {:.3} % of the pixels differ from the background {:?} (at least {} % expected)",
            p.ink * 100.0,
            p.background,
            MIN_INK * 100.0
        ));
    }
    if p.colours < MIN_COLOURS {
        return Some(format!(
            "only {} distinct colours (at least {MIN_COLOURS} expected)",
            p.colours
        ));
    }
    None
}

/// A `w` × `h` PNG whose pixel (x, y) is `f(x, y)`, as RGB or RGBA.
fn synthetic_png(w: u32, h: u32, rgba: bool, f: impl Fn(u32, u32) -> [u8; 3]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(if rgba {
        png::ColorType::Rgba
    } else {
        png::ColorType::Rgb
    });
    enc.set_depth(png::BitDepth::Eight);
    let mut data = Vec::new();
    for y in 0..h {
        for x in 0..w {
            data.extend_from_slice(&f(x, y));
            if rgba {
                data.push(255);
            }
        }
    }
    let mut writer = enc.write_header().unwrap();
    writer.write_image_data(&data).unwrap();
    writer.finish().unwrap();
    out
}

#[test]
fn the_blank_check_fails_blank_pages_and_passes_drawn_ones() {
    const WHITE: [u8; 3] = [255, 255, 255];
    const DARK: [u8; 3] = [13, 17, 23]; // the report's dark background
    let blank_white = pixels(&synthetic_png(300, 200, false, |_, _| WHITE));
    assert_eq!(blank_white.background, WHITE);
    assert_eq!((blank_white.ink, blank_white.colours), (0.0, 1));
    assert!(blank(&blank_white).is_some());
    let blank_dark = pixels(&synthetic_png(300, 200, true, |_, _| DARK));
    assert_eq!(blank_dark.background, DARK);
    assert!(blank(&blank_dark)
        .unwrap()
        .contains("differ from the background"));
    // Barely off-white noise is no content either.
    let faint = pixels(&synthetic_png(300, 200, false, |x, y| {
        let v = 255 - ((x * 7 + y * 13) % 10) as u8;
        [v, v, v]
    }));
    assert!(blank(&faint).is_some(), "{faint:?}");
    // A heading's worth of ink on an empty page: too little.
    let heading = pixels(&synthetic_png(300, 200, false, |x, y| {
        if x < 40 && y < 5 {
            [(x * 6) as u8, (y * 50) as u8, 0]
        } else {
            WHITE
        }
    }));
    assert!(heading.colours >= MIN_COLOURS, "{heading:?}");
    assert!(blank(&heading).unwrap().contains("differ"), "{heading:?}");
    // Plenty of ink in one colour (a solid block): too few colours for a page.
    let block = pixels(&synthetic_png(300, 200, false, |x, _| {
        if x < 100 {
            [0, 0, 0]
        } else {
            WHITE
        }
    }));
    assert!(
        blank(&block).unwrap().contains("distinct colours"),
        "{block:?}"
    );
    // Chart-like content on white and on the dark background passes.
    for bg in [WHITE, DARK] {
        let drawn = pixels(&synthetic_png(300, 200, bg == DARK, |x, y| {
            if (40..260).contains(&x) && (50..150).contains(&y) {
                [(x % 256) as u8, (y * 2 % 256) as u8, 120]
            } else {
                bg
            }
        }));
        assert_eq!(drawn.background, bg);
        assert!(blank(&drawn).is_none(), "{drawn:?}");
    }
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

/// A run whose first config has the monitor's per-trial metrics (two trials) and CPU
/// series, and whose second config has none.
fn monitored_run(store: &Store) -> i64 {
    let host = store
        .upsert_host(&HostInfo {
            hostname: "h".into(),
            ..Default::default()
        })
        .unwrap();
    let run = store
        .create_run(
            &NewRun {
                name: "monitored".into(),
                kind: "experiment".into(),
                ..Default::default()
            },
            host,
        )
        .unwrap();
    let cpu = |name: &str, v: [f64; 3]| SeriesData {
        name: name.into(),
        unit: "%".into(),
        points: vec![(1.0, v[0]), (2.0, v[1]), (3.0, v[2])],
    };
    for (ordinal, workers) in [(0u32, 1), (1, 2)] {
        let mut params = Params::new();
        params.insert("workers".into(), serde_json::json!(workers));
        let c = store.ensure_config(run, ordinal, &params).unwrap();
        // (idle, iowait, softirq, ctxt/s, sda and sdb max aqu-sz, retrans %) per trial.
        for (rep, m) in [
            (1u32, [60.0, 5.0, 2.0, 1000.0, 1.5, 4.0, 0.1]),
            (2, [70.0, 5.0, 4.0, 3000.0, 2.5, 0.5, 0.3]),
        ] {
            let mut metrics = vec![MetricValue::new("wall_s", "s", 1.0, "lower")];
            if workers == 1 {
                for (name, unit, v) in [
                    ("cpu.idle_pct", "%", m[0]),
                    ("cpu.iowait_pct", "%", m[1]),
                    ("cpu.softirq_pct", "%", m[2]),
                    ("sched.ctxt_per_s", "1/s", m[3]),
                    ("disk.sda.aqu_sz_max", "count", m[4]),
                    ("disk.sdb.aqu_sz_max", "count", m[5]),
                    ("net.retrans_pct", "%", m[6]),
                ] {
                    metrics.push(MetricValue::new(name, unit, v, "lower"));
                }
            }
            let series = if workers == 1 && rep == 1 {
                vec![
                    cpu("cpu.idle_pct", [70.0, 40.0, 90.0]),
                    cpu("cpu.iowait_pct", [5.0, 5.0, 0.0]),
                    cpu("cpu.softirq_pct", [5.0, 15.0, 0.0]),
                    cpu("cpu.system_pct", [5.0, 10.0, 2.5]),
                    cpu("cpu.user_pct", [15.0, 30.0, 7.5]),
                ]
            } else {
                vec![]
            };
            let rec = TrialRecord {
                config_id: c,
                repetition: rep,
                ordinal: ordinal * 2 + rep,
                started_at: perflab_store::now_rfc3339(),
                duration_s: 3.0,
                status: TrialStatus::Ok,
                error: None,
                method: None,
                metrics,
                histograms: vec![],
                series,
                artifacts: vec![],
            };
            store.record_trial(run, &rec).unwrap();
        }
    }
    store.finish_run(run, RunStatus::Complete).unwrap();
    run
}

#[test]
fn telemetry_has_a_per_config_table_and_the_cpu_breakdown_stacked() {
    let lab = Lab::new();
    let run = monitored_run(&lab.open_store());
    let (_, html) = report(&lab, &[&run.to_string()]);
    let section = &html[html
        .find("<h2>Telemetry</h2>")
        .expect("a telemetry section")..];
    let table = &section[..section.find("</table>").unwrap()];
    assert!(
        table.contains(
            "<th>config</th><th>CPU busy</th><th>softirq</th><th>context switches</th>\
             <th>max aqu-sz</th><th>retransmits</th>"
        ),
        "only the columns some config has: {table}"
    );
    let row = |label: &str| {
        let r = &table[table.find(&format!("<tr><td>{label}</td>")).unwrap()..];
        r[..r.find("</tr>").unwrap()].to_string()
    };
    // Means of the two trials; busy = 100 − idle − iowait; the deepest queue of any
    // trial and disk, named.
    assert_eq!(
        row("workers=1"),
        "<tr><td>workers=1</td><td class=\"num\">30 %</td><td class=\"num\">3 %</td>\
         <td class=\"num\">2000 /s</td><td class=\"num\">4 (sdb)</td>\
         <td class=\"num\">0.2 %</td>"
    );
    assert_eq!(
        row("workers=2").matches("<td class=\"num\">—</td>").count(),
        5
    );

    let cpu = &section[section.find("<svg").unwrap()..];
    let cpu = &cpu[..cpu.find("</svg>").unwrap()];
    assert!(cpu.contains("CPU time by state"));
    assert_eq!(cpu.matches("class=\"area\"").count(), 4, "idle is no layer");
    // At 2 s: user 30 + system 10 + softirq 15 + iowait 5 = 60 = 100 − idle.
    assert!(
        cpu.contains("<title>at 2 s\ntotal (100 − idle) 60 %\niowait 5 %\nsoftirq 15 %\nsystem 10 %\nuser 30 %</title>"),
        "{cpu}"
    );
    assert!(section.contains("Trial 1 (workers=1)"));
    assert_self_contained(&html);
    assert_charts_have_axes_with_units(&html);
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
    screenshot(&lab.path("r.html"), "scimark", Shot::default());
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
    screenshot(&lab.path("r.html"), "disk", Shot::default());
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
