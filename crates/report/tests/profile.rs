//! A `perflab profile` run stored before the artifact names were shared kept its
//! profile as `report.json`; its HTML report must still show the top-functions table
//! (the bug: the report looked for `profile.json` only).

use perflab_report::{render_html, Options};
use perflab_store::{
    ArtifactData, HostInfo, MetricValue, NewRun, Params, RunStatus, Store, TrialRecord, TrialStatus,
};

/// A one-trial `profile` run whose profile artifact is called `artifact`.
fn profile_run(store: &Store, artifact: &str) -> i64 {
    let host = store
        .upsert_host(&HostInfo {
            hostname: "h".into(),
            ..Default::default()
        })
        .unwrap();
    let run = store
        .create_run(
            &NewRun {
                name: "profile".into(),
                kind: "profile".into(),
                ..Default::default()
            },
            host,
        )
        .unwrap();
    let config = store.ensure_config(run, 0, &Params::new()).unwrap();
    let doc = br#"{"images":[{"name":"a.out","functions":[{"name":"hot_loop","pct_total":61.5},{"name":"main","pct_total":2.0}]}]}"#;
    store
        .record_trial(
            run,
            &TrialRecord {
                config_id: config,
                repetition: 1,
                ordinal: 1,
                started_at: perflab_store::now_rfc3339(),
                duration_s: 1.0,
                status: TrialStatus::Ok,
                error: None,
                method: None,
                metrics: vec![MetricValue::new("wall_s", "s", 1.0, "lower")],
                histograms: vec![],
                series: vec![],
                artifacts: vec![ArtifactData {
                    name: artifact.into(),
                    media_type: "application/json".into(),
                    content: doc.to_vec(),
                }],
            },
        )
        .unwrap();
    store.finish_run(run, RunStatus::Complete).unwrap();
    run
}

#[test]
fn a_profile_stored_under_either_name_gets_the_top_functions_table() {
    for name in [perflab_store::vocab::ARTIFACT_PROFILE, "report.json"] {
        let store = Store::in_memory().unwrap();
        let run = profile_run(&store, name);
        let html = render_html(&store, run, &Options::default()).unwrap();
        assert!(
            html.contains("<h2>Profile</h2>"),
            "{name}: no profile section"
        );
        assert!(html.contains("Top functions, trial 1."), "{name}");
        assert!(
            html.contains("<td>hot_loop</td><td>a.out</td><td>61.50%</td>"),
            "{name}: {html}"
        );
    }
}

#[test]
fn a_run_without_a_profile_has_no_profile_section() {
    let store = Store::in_memory().unwrap();
    let run = profile_run(&store, "other.json");
    let html = render_html(&store, run, &Options::default()).unwrap();
    assert!(!html.contains("<h2>Profile</h2>"));
}
