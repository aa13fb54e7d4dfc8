//! The HTML report's charts tell the truth (issue 31, item 5), read from reports of
//! runs written through the store API: no axis below zero for a latency, no empty
//! chart for errors that never happened, each suite item once in the results table,
//! and a log axis where crypto scores span decades.

use perflab_report::{render_html, render_markdown, Options};
use perflab_store::{
    HostInfo, MetricValue, NewRun, Params, RunStatus, Store, TrialRecord, TrialStatus,
};

/// One config: its `(parameter, value)` and, per repetition, its metrics.
type Config = (&'static str, &'static str, Vec<Vec<MetricValue>>);

/// A completed run named `name` with these configs, every trial ok.
fn run(store: &Store, name: &str, configs: Vec<Config>) -> i64 {
    let host = store
        .upsert_host(&HostInfo {
            hostname: "h".into(),
            ..Default::default()
        })
        .unwrap();
    let run = store
        .create_run(
            &NewRun {
                name: name.into(),
                kind: "experiment".into(),
                ..Default::default()
            },
            host,
        )
        .unwrap();
    let mut ordinal = 0;
    for (i, (key, value, reps)) in configs.into_iter().enumerate() {
        let mut p = Params::new();
        p.insert(key.into(), serde_json::json!(value));
        let c = store.ensure_config(run, i as u32, &p).unwrap();
        for (rep, metrics) in reps.into_iter().enumerate() {
            ordinal += 1;
            let rec = TrialRecord {
                config_id: c,
                repetition: rep as u32 + 1,
                ordinal,
                started_at: perflab_store::now_rfc3339(),
                duration_s: 1.0,
                status: TrialStatus::Ok,
                error: None,
                method: None,
                metrics,
                histograms: vec![],
                series: vec![],
                artifacts: vec![],
            };
            store.record_trial(run, &rec).unwrap();
        }
    }
    store.finish_run(run, RunStatus::Complete).unwrap();
    run
}

fn html_of(name: &str, configs: Vec<Config>) -> String {
    let store = Store::in_memory().unwrap();
    let id = run(&store, name, configs);
    render_html(&store, id, &Options::default()).unwrap()
}

/// The `<svg>` of the chart whose title starts with `title`.
fn chart<'a>(html: &'a str, title: &str) -> Option<&'a str> {
    let at = html.find(&format!("<title>{title}"))?;
    let start = html[..at].rfind("<svg")?;
    let end = at + html[at..].find("</svg>")?;
    Some(&html[start..end])
}

/// The x-axis tick labels of a per-metric chart (centred under the axis).
fn x_ticks(svg: &str) -> Vec<String> {
    svg.split(r#"<text class="tick" "#)
        .skip(1)
        .filter(|t| t.contains(r#"text-anchor="middle">"#))
        .map(|t| {
            let t = &t[t.find('>').unwrap() + 1..];
            t[..t.find('<').unwrap()].to_string()
        })
        .collect()
}

/// A compact tick label as a number: `-2`, `0.5`, `25k`, `1M`.
fn tick_value(label: &str) -> f64 {
    let label = label.replace('−', "-");
    let (n, scale) = match label.chars().last() {
        Some('k') => (&label[..label.len() - 1], 1e3),
        Some('M') => (&label[..label.len() - 1], 1e6),
        Some('G') => (&label[..label.len() - 1], 1e9),
        _ => (&label[..], 1.0),
    };
    n.parse::<f64>()
        .unwrap_or_else(|_| panic!("tick {label:?}"))
        * scale
}

fn latency_trials(p999: &[f64]) -> Vec<Vec<MetricValue>> {
    p999.iter()
        .map(|v| {
            vec![
                MetricValue::new("rps", "req/s", 1000.0 + v, "higher"),
                MetricValue::new("latency_p999_ms", "ms", *v, "lower"),
                MetricValue::new("errors", "", 0.0, "lower"),
                MetricValue::new("http_errors", "", 0.0, "lower"),
                MetricValue::new("error_rate", "", 0.0, "lower"),
            ]
        })
        .collect()
}

/// The issue's p99.9 chart started at −2 ms: the 95 % interval of three noisy
/// trials (0.2, 0.3, 5 ms: from −5 to 8.7 ms) was padded into the axis.
#[test]
fn a_latency_axis_never_starts_below_zero() {
    let html = html_of(
        "latency",
        vec![
            ("keepalive", "true", latency_trials(&[0.2, 0.3, 5.0])),
            ("keepalive", "false", latency_trials(&[0.25, 0.3, 0.35])),
        ],
    );
    let svg = chart(&html, "latency_p999_ms — mean").expect("a p99.9 chart");
    let ticks: Vec<f64> = x_ticks(svg).iter().map(|t| tick_value(t)).collect();
    assert!(ticks.len() >= 3, "{ticks:?}");
    assert!(ticks.iter().all(|t| *t >= 0.0), "p99.9 axis: {ticks:?}");
    assert_eq!(ticks[0], 0.0);
    // The clipped interval is still told in full where it is hovered.
    assert!(svg.contains("below the axis"), "{svg}");
    assert!(svg.contains("latency_p999_ms (ms) — lower is better"));
}

/// An error-free run drew four empty charts of zeros; now one line says so, and no
/// chart on the page is without data.
#[test]
fn an_error_free_run_has_no_empty_error_chart() {
    let html = html_of(
        "no-errors",
        vec![
            ("workers", "1", latency_trials(&[0.2, 0.3, 0.4])),
            ("workers", "2", latency_trials(&[0.3, 0.3, 0.5])),
        ],
    );
    for title in ["errors", "http_errors", "error_rate"] {
        assert!(
            chart(&html, &format!("{title} — mean")).is_none(),
            "a chart of {title}, all zeros"
        );
    }
    assert!(html.contains("No errors: <code>errors</code>, <code>http_errors</code>, <code>error_rate</code> were 0 in every trial"), "{html}");
    for svg in html.split("<svg").skip(1) {
        let svg = &svg[..svg.find("</svg>").unwrap()];
        assert!(
            svg.contains("<circle") || svg.contains("<polyline") || svg.contains("<path"),
            "a chart without data: {svg}"
        );
    }
    assert!(chart(&html, "latency_p999_ms — mean").is_some());
}

fn score(metric: &str, unit: &str, values: &[f64]) -> Vec<Vec<MetricValue>> {
    values
        .iter()
        .map(|v| {
            vec![
                MetricValue::new(metric, unit, *v, "higher"),
                MetricValue::new("score", unit, *v, "higher"),
            ]
        })
        .collect()
}

fn suite_run() -> String {
    let store = Store::in_memory().unwrap();
    let id = run(&store, "machine-suite-quick", suite_configs());
    render_html(&store, id, &Options::default()).unwrap()
}

/// The items of a quick machine-suite run: scores spanning decades.
fn suite_configs() -> Vec<Config> {
    let mut compress = score("compress_mb_s", "MB/s", &[500.0, 520.0, 510.0]);
    for (t, r) in compress.iter_mut().zip([1026.0, 1026.0, 1026.0]) {
        t.push(MetricValue::new("ratio", "x", r, "higher"));
    }
    {
        vec![
            (
                "item",
                "mem.write.4K",
                score("gb_s", "GB/s", &[80.0, 84.0, 82.0]),
            ),
            (
                "item",
                "mem.write.256M",
                score("gb_s", "GB/s", &[9.0, 11.0, 10.0]),
            ),
            ("item", "compress.gzip-9.zeros", compress),
            (
                "item",
                "crypto.rsa4096-sign",
                score("ops_s", "op/s", &[130.0, 134.0, 138.0]),
            ),
            (
                "item",
                "crypto.ecdsa-p256-sign",
                score("ops_s", "op/s", &[40_000.0, 41_000.0, 39_000.0]),
            ),
            (
                "item",
                "crypto.ed25519-sign",
                score("ops_s", "op/s", &[2.4e6, 2.5e6, 2.6e6]),
            ),
        ]
    }
}

/// The suite's results table listed every item twice: its score and the figure the
/// score copies.
#[test]
fn each_suite_item_is_listed_once_in_the_results_table() {
    let html = suite_run();
    let results = &html[html.find("<h2>Results</h2>").unwrap()..];
    let table = &results[..results.find("</table>").unwrap()];
    let items: Vec<&str> = table
        .split("<tr><td>")
        .skip(1)
        .map(|r| &r[..r.find("</td>").unwrap()])
        .collect();
    let mut unique = items.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), items.len(), "rows repeat an item: {items:?}");
    assert_eq!(items.len(), 6, "{table}");
    assert!(table.contains("<td>gb_s (score) ↑</td>"), "{table}");
    // The item's other figures are kept, folded away.
    assert!(results.contains("Other figures of the items") && results.contains("<td>ratio ↑</td>"));
}

/// The Markdown report's results table lists each suite item once too.
#[test]
fn each_suite_item_is_listed_once_in_the_markdown_results() {
    let store = Store::in_memory().unwrap();
    let id = run(&store, "machine-suite-quick", suite_configs());
    let md = render_markdown(&store, id, &Options::default()).unwrap();
    let results = &md[md.find("## Results").unwrap()..];
    let table = &results[..results[3..].find("\n## ").map_or(results.len(), |i| i + 3)];
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| item=")).collect();
    let scores = rows.iter().filter(|l| l.contains("(score)")).count();
    assert_eq!(scores, 6, "{table}");
    assert!(
        !rows
            .iter()
            .any(|l| l.contains("| gb_s ↑") || l.contains("| ops_s ↑")),
        "a score's twin is listed again: {table}"
    );
    assert!(
        table.contains("| ratio ↑"),
        "the other figures stay: {table}"
    );
}

/// 134 op/s of RSA-4096 beside millions of Ed25519 signs: on a linear axis its bar
/// was a pixel; on decades it is seen.
#[test]
fn crypto_scores_that_span_decades_get_a_log_axis() {
    let html = suite_run();
    let svg = chart(&html, "crypto score — mean").expect("a crypto chart");
    assert!(svg.contains("crypto score (op/s), log scale"), "{svg}");
    let ticks = x_ticks(svg);
    for decade in ["100", "1k", "10k", "100k", "1M"] {
        assert!(ticks.iter().any(|t| t == decade), "{ticks:?}");
    }
    // The RSA bar (the first row) is long enough to see.
    let bar = &svg[svg.find(r#"<rect class="bar""#).unwrap()..];
    let width = &bar[bar.find("width=\"").unwrap() + 7..];
    let width: f64 = width[..width.find('"').unwrap()].parse().unwrap();
    assert!(width > 40.0, "RSA bar {width} px");
    // Memory bandwidth within a decade stays linear.
    let mem = chart(&html, "mem score — mean").expect("a mem chart");
    assert!(!mem.contains("log scale"));
}
