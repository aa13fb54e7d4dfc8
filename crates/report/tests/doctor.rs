//! The "Doctor findings" section, in Markdown and HTML, of a run whose trials carry
//! synthetic `doctor.json` artifacts (the `perflab doctor --json` object): one row per
//! finding id, most severe first, the evidence of the first trial at the worst
//! severity, and in how many trials and configs it was seen. A run without the
//! artifact has no such section.

use perflab_report::{render_html, render_markdown, Options};
use perflab_store::{
    ArtifactData, HostInfo, MetricValue, NewRun, Params, RunStatus, Store, TrialRecord, TrialStatus,
};
use serde_json::json;

/// A finding as `perflab doctor --json` writes it.
fn finding(id: &str, severity: &str, evidence: &str, fix: &str) -> serde_json::Value {
    json!({"id": id, "severity": severity, "evidence": evidence, "why": "because",
           "fix": fix, "doc": format!("docs/doctor.md#{id}")})
}

fn doctor_json(findings: Vec<serde_json::Value>) -> ArtifactData {
    let doc = json!({"schema_version": 1, "watch_s": 1.0, "findings": findings,
                     "not_available": []});
    ArtifactData {
        name: "doctor.json".into(),
        media_type: "application/json".into(),
        content: serde_json::to_vec_pretty(&doc).unwrap(),
    }
}

/// Two configs, four trials; `with_doctor` false: the same run with no doctor.json.
fn run(store: &Store, with_doctor: bool) -> i64 {
    let host = store
        .upsert_host(&HostInfo {
            hostname: "h".into(),
            ..Default::default()
        })
        .unwrap();
    let run = store
        .create_run(
            &NewRun {
                name: "doctor-report".into(),
                kind: "experiment".into(),
                ..Default::default()
            },
            host,
        )
        .unwrap();
    let swap = |t: u32| {
        finding(
            "swap",
            "warn",
            &format!("swap in use, trial {t}"),
            "swapoff -a",
        )
    };
    // (config, trial ordinal, findings); trial 2 stored none.
    let trials = [
        (
            0u32,
            1u32,
            Some(vec![
                swap(1),
                finding("somaxconn", "info", "somaxconn 4096", "sysctl -w a=b"),
            ]),
        ),
        (0, 2, None),
        (
            1,
            3,
            Some(vec![
                finding(
                    "listen-overflows",
                    "critical",
                    "queue 65 > backlog 64 | port 8080",
                    "sysctl -w net.core.somaxconn=4096",
                ),
                swap(3),
            ]),
        ),
        (
            1,
            4,
            Some(vec![
                swap(4),
                finding(
                    "listen-overflows",
                    "warn",
                    "a milder overflow, trial 4",
                    "later fix",
                ),
            ]),
        ),
    ];
    let mut configs = Vec::new();
    for (ordinal, workers) in [(0u32, 1), (1, 2)] {
        let mut p = Params::new();
        p.insert("workers".into(), json!(workers));
        configs.push(store.ensure_config(run, ordinal, &p).unwrap());
    }
    for (config, ordinal, findings) in trials {
        let artifacts = match findings {
            Some(f) if with_doctor => vec![doctor_json(f)],
            _ => vec![],
        };
        store
            .record_trial(
                run,
                &TrialRecord {
                    config_id: configs[config as usize],
                    repetition: ordinal,
                    ordinal,
                    started_at: perflab_store::now_rfc3339(),
                    duration_s: 1.0,
                    status: TrialStatus::Ok,
                    error: None,
                    method: None,
                    metrics: vec![MetricValue::new("rps", "req/s", 100.0, "higher")],
                    histograms: vec![],
                    series: vec![],
                    artifacts,
                },
            )
            .unwrap();
    }
    store.finish_run(run, RunStatus::Complete).unwrap();
    run
}

/// Byte offsets of each needle in `text`, which must all be there.
fn positions(text: &str, needles: &[&str]) -> Vec<usize> {
    needles
        .iter()
        .map(|n| {
            text.find(n)
                .unwrap_or_else(|| panic!("{n:?} missing from:\n{text}"))
        })
        .collect()
}

#[test]
fn markdown_lists_findings_most_severe_first_with_trial_counts() {
    let store = Store::in_memory().unwrap();
    let id = run(&store, true);
    let md = render_markdown(&store, id, &Options::default()).unwrap();
    let section = &md[md.find("## Doctor findings").expect("section")..];
    assert!(
        section.contains("stored with 3 of 4 trials (`doctor.json`)"),
        "{section}"
    );
    assert!(
        section.contains("| severity | finding | trials | configs | evidence | fix | docs |"),
        "{section}"
    );
    let rows: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| severity"))
        .collect();
    assert_eq!(
        rows,
        [
            "| **critical** | listen-overflows | 2 of 4 | workers=2 | trial 3: queue 65 &gt; backlog 64 \\| port 8080 | sysctl -w net.core.somaxconn=4096 | docs/doctor.md#listen-overflows |",
            "| warn | swap | 3 of 4 | all 2 configs | trial 1: swap in use, trial 1 | swapoff -a | docs/doctor.md#swap |",
            "| info | somaxconn | 1 of 4 | workers=1 | trial 1: somaxconn 4096 | sysctl -w a=b | docs/doctor.md#somaxconn |",
        ],
        "{section}"
    );
}

#[test]
fn html_lists_findings_most_severe_first_with_trial_counts() {
    let store = Store::in_memory().unwrap();
    let id = run(&store, true);
    let html = render_html(&store, id, &Options::default()).unwrap();
    let section = &html[html.find("<h2>Doctor findings</h2>").expect("section")..];
    let section = &section[..section.find("</table>").expect("table")];
    assert!(section.contains("stored with 3 of 4 trials"), "{section}");
    let p = positions(
        section,
        &["listen-overflows<br>", "swap<br>", "somaxconn<br>"],
    );
    assert!(p[0] < p[1] && p[1] < p[2], "most severe first: {section}");
    let critical = section
        .lines()
        .find(|l| l.contains("listen-overflows<br>"))
        .unwrap();
    assert!(
        critical.starts_with("<tr class=\"worse\"><td class=\"v\""),
        "{critical}"
    );
    assert!(critical.contains(">critical</td>"), "{critical}");
    assert!(
        critical.contains("<span class=\"muted\">docs/doctor.md#listen-overflows</span>"),
        "{critical}"
    );
    assert!(
        critical.contains("2 of 4 trials</span><br><span class=\"muted\">workers=2</span>"),
        "{critical}"
    );
    // The evidence of the worst trial (3, critical), not of the later warning (4).
    assert!(
        critical.contains("trial 3:</span> queue 65 &gt; backlog 64 | port 8080"),
        "{critical}"
    );
    assert!(!section.contains("a milder overflow"), "{section}");
    assert!(
        section.contains("3 of 4 trials</span><br><span class=\"muted\">all 2 configs</span>"),
        "{section}"
    );
    assert!(
        section.contains("<code>swapoff -a</code>"),
        "the fix: {section}"
    );
}

#[test]
fn a_run_without_doctor_artifacts_has_no_doctor_section() {
    let store = Store::in_memory().unwrap();
    let id = run(&store, false);
    let md = render_markdown(&store, id, &Options::default()).unwrap();
    let html = render_html(&store, id, &Options::default()).unwrap();
    assert!(!md.contains("Doctor findings"), "{md}");
    assert!(!html.contains("Doctor findings"));
}
