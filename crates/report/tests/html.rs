//! The HTML report of a run with every kind of data (histograms, CPU series, a
//! profile and a flame graph), written through the store API.

use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;
use perflab_store::{
    ArtifactData, HistogramData, HostInfo, MetricValue, NewRun, Params, RunStatus, SeriesData,
    Store, TrialRecord, TrialStatus,
};

use perflab_report::{render_html, Options};

fn latency_bytes(base: u64) -> Vec<u8> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    for i in 0..10_000 {
        h.record(base + i % 500).unwrap();
    }
    let mut out = Vec::new();
    V2Serializer::new().serialize(&h, &mut out).unwrap();
    out
}

/// A run with everything a report can draw: two configs, histograms, CPU
/// series, a profile and a flame graph.
fn full_run(store: &Store) -> i64 {
    let host = store
        .upsert_host(&HostInfo {
            hostname: "h".into(),
            ..Default::default()
        })
        .unwrap();
    let run = store
        .create_run(
            &NewRun {
                name: "full".into(),
                kind: "experiment".into(),
                file_text: Some("url = \"http://127.0.0.1:1/\"".into()),
                ..Default::default()
            },
            host,
        )
        .unwrap();
    let profile = br#"{"images":[{"name":"libc.so","functions":[{"name":"memcpy","samples":5,"pct_image":50.0,"pct_total":25.0},{"name":"strlen","samples":1,"pct_image":10.0,"pct_total":5.0}]}]}"#;
    for (ordinal, workers) in [(0u32, 1u64), (1, 2)] {
        let mut p = Params::new();
        p.insert("workers".into(), serde_json::json!(workers));
        let c = store.ensure_config(run, ordinal, &p).unwrap();
        for rep in 1..=3u32 {
            let rec = TrialRecord {
                config_id: c,
                repetition: rep,
                ordinal: ordinal * 3 + rep,
                started_at: perflab_store::now_rfc3339(),
                duration_s: 1.0,
                status: TrialStatus::Ok,
                error: None,
                method: None,
                metrics: vec![MetricValue::new(
                    "rps",
                    "req/s",
                    1000.0 * workers as f64 + rep as f64,
                    "higher",
                )],
                histograms: vec![HistogramData {
                    name: "latency".into(),
                    unit: "us".into(),
                    data: latency_bytes(100 * workers),
                }],
                series: ["cpu.user_pct", "cpu.system_pct"]
                    .iter()
                    .map(|n| SeriesData {
                        name: n.to_string(),
                        unit: "%".into(),
                        points: vec![(0.0, 10.0), (1.0, 30.0), (2.0, 20.0)],
                    })
                    .collect(),
                artifacts: vec![
                    ArtifactData {
                        name: "profile.json".into(),
                        media_type: "application/json".into(),
                        content: profile.to_vec(),
                    },
                    ArtifactData {
                        name: "flamegraph.svg".into(),
                        media_type: "image/svg+xml".into(),
                        content: b"<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>".to_vec(),
                    },
                ],
            };
            store.record_trial(run, &rec).unwrap();
        }
    }
    store.finish_run(run, RunStatus::Complete).unwrap();
    run
}

#[test]
fn every_section_with_data_is_drawn_and_nothing_is_loaded_from_elsewhere() {
    let store = Store::in_memory().unwrap();
    let run = full_run(&store);
    let html = render_html(&store, run, &Options::default()).unwrap();
    assert!(html.contains("latency by percentile"));
    assert!(html.contains("99.999%"));
    assert!(html.contains("CPU time by state") && html.contains("cpu.user_pct"));
    assert!(html.contains("<td>memcpy</td>") && html.contains("25.00%"));
    assert!(html.contains("data:image/svg+xml;base64,"));
    assert!(
        html.contains("<tr class=\"better\">"),
        "workers=2 has more rps"
    );
    // The experiment file's URL is text, never an attribute.
    assert!(!html.contains("=\"http://127"));
    assert!(!html.contains("<script") && !html.contains("<link"));
    assert_eq!(html.matches("class=\"chart\"").count(), 3);
}
