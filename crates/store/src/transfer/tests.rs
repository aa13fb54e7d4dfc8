use super::*;
use crate::{ArtifactData, HistogramData, NewRun, RunStatus, SeriesData, TrialRecord, TrialStatus};

fn host() -> HostInfo {
    HostInfo {
        hostname: "arm-box".into(),
        cpu_model: Some("Neoverse-N1".into()),
        cores: Some(4),
        memory_bytes: Some(8 << 30),
        arch: Some("aarch64".into()),
        sysctls: [("net.core.somaxconn".to_string(), "4096".to_string())].into(),
        ..HostInfo::default()
    }
}

/// A run with two configs, a failed trial, every kind of data and awkward floats.
fn sample_store() -> (Store, RunId) {
    let s = Store::in_memory().unwrap();
    let h = s.upsert_host(&host()).unwrap();
    let run = s
        .create_run(
            &NewRun {
                name: "transfer".into(),
                kind: "experiment".into(),
                file_path: Some("e.toml".into()),
                file_text: Some("[experiment]\nname = \"transfer\"\n".into()),
                seed: Some(u64::MAX - 7),
                environment: serde_json::json!({"rustc": "1.80", "x": 0.1 + 0.2}),
                started_at: None,
            },
            h,
        )
        .unwrap();
    let mut params = Params::new();
    params.insert("level".into(), 6.into());
    params.insert("mode".into(), "fast".into());
    let c0 = s.ensure_config(run, 0, &params).unwrap();
    params.insert("level".into(), 9.into());
    let c1 = s.ensure_config(run, 1, &params).unwrap();
    let awkward = [0.1 + 0.2, 0.012345678901234567, 123456789.12345679, 5e-324];
    for (i, &v) in awkward.iter().enumerate() {
        let failed = i == 3;
        s.record_trial(
            run,
            &TrialRecord {
                config_id: if i % 2 == 0 { c0 } else { c1 },
                repetition: i as u32 / 2 + 1,
                ordinal: i as u32 + 1,
                started_at: format!("2026-01-01T00:00:0{i}.000Z"),
                duration_s: v * 3.0,
                status: if failed {
                    TrialStatus::Failed
                } else {
                    TrialStatus::Ok
                },
                error: failed.then(|| "exit status 3".to_string()),
                method: Some("cgroup-v2".into()),
                metrics: vec![
                    MetricValue::new("wall_s", "s", v, "lower"),
                    MetricValue::new("rps", "req/s", 1.0 / v, "higher"),
                ],
                histograms: vec![HistogramData {
                    name: "latency".into(),
                    unit: "us".into(),
                    data: (0..=255u8).cycle().take(1000 + i).collect(),
                }],
                series: vec![SeriesData {
                    name: "cpu".into(),
                    unit: "%".into(),
                    points: vec![(0.0, v), (0.1, 0.7 + v)],
                }],
                artifacts: vec![ArtifactData {
                    name: "service.log".into(),
                    media_type: "text/plain".into(),
                    content: format!("line {i}\n").into_bytes(),
                }],
            },
        )
        .unwrap();
    }
    s.add_run_artifact(run, "flame.svg", "image/svg+xml", b"<svg/>")
        .unwrap();
    s.finish_run(run, RunStatus::CompleteWithFailures).unwrap();
    (s, run)
}

#[test]
fn export_then_import_is_lossless() {
    let (a, run) = sample_store();
    let doc = a.export_run(run).unwrap();
    assert_eq!(doc.trials.len(), 4);
    assert_eq!(doc.trials[3].status, "failed");
    let text = doc.to_json().unwrap();
    let read = RunExport::from_json(&text).unwrap();
    assert_eq!(read, doc);

    let b = Store::in_memory().unwrap();
    // Another host first, so local ids differ from the exporting store's.
    b.upsert_host(&HostInfo {
        hostname: "x86".into(),
        ..HostInfo::default()
    })
    .unwrap();
    let id = b.import_run(&read).unwrap();
    let again = b.export_run(id).unwrap();
    assert!(again.run.imported_at.is_some());
    let mut expect = doc.clone();
    expect.run.id = id;
    expect.run.imported_at = again.run.imported_at.clone();
    assert_eq!(again, expect);
    assert_eq!(b.host(b.run(id).unwrap().host_id).unwrap(), host());
    // Bit for bit, through the store.
    let wall: Vec<u64> = b
        .metrics(id)
        .unwrap()
        .iter()
        .filter(|m| m.name == "wall_s")
        .map(|m| m.value.to_bits())
        .collect();
    let orig: Vec<u64> = a
        .metrics(run)
        .unwrap()
        .iter()
        .filter(|m| m.name == "wall_s")
        .map(|m| m.value.to_bits())
        .collect();
    assert_eq!(wall, orig);
}

#[test]
fn importing_the_same_run_twice_is_refused_and_changes_nothing() {
    let (a, run) = sample_store();
    let doc = a.export_run(run).unwrap();
    let b = Store::in_memory().unwrap();
    let id = b.import_run(&doc).unwrap();
    match b.import_run(&doc) {
        Err(StoreError::AlreadyImported { id: existing, uuid }) => {
            assert_eq!(existing, id);
            assert_eq!(uuid, doc.run.uuid);
        }
        other => panic!("expected AlreadyImported, got {other:?}"),
    }
    assert_eq!(b.runs().unwrap().len(), 1);
    // Also into the store it came from.
    assert!(matches!(
        a.import_run(&doc),
        Err(StoreError::AlreadyImported { .. })
    ));
}

/// Many `perflab import`s into one store file at once, each its own process's
/// connection: every distinct run lands, and of several imports of one run exactly one
/// lands and the others are told it is already there.
#[test]
fn concurrent_imports_into_one_store_all_land_once() {
    let (a, run) = sample_store();
    let doc = a.export_run(run).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("into.db");
    drop(Store::open(&path).unwrap());
    for round in 0..10 {
        let docs: Vec<RunExport> = (0..6)
            .map(|i| {
                let mut d = doc.clone();
                // Threads 0-2 import one shared run; 3-5 a run each.
                d.run.uuid = format!("r{round}-{}", if i < 3 { 0 } else { i });
                d
            })
            .collect();
        let start = std::sync::Arc::new(std::sync::Barrier::new(docs.len()));
        let handles: Vec<_> = docs
            .into_iter()
            .map(|d| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    let s = Store::open(&path)?;
                    start.wait();
                    s.import_run(&d)
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let (shared, own) = results.split_at(3);
        assert!(own.iter().all(|r| r.is_ok()), "round {round}: {results:?}");
        let landed = shared.iter().filter(|r| r.is_ok()).count();
        let refused = shared
            .iter()
            .filter(|r| matches!(r, Err(StoreError::AlreadyImported { .. })))
            .count();
        assert_eq!((landed, refused), (1, 2), "round {round}: {results:?}");
    }
    let s = Store::open(&path).unwrap();
    assert_eq!(s.runs().unwrap().len(), 40, "10 rounds of 4 distinct runs");
}

#[test]
fn a_bad_document_is_rolled_back() {
    let (a, run) = sample_store();
    let mut doc = a.export_run(run).unwrap();
    doc.trials[2].config = 42;
    let b = Store::in_memory().unwrap();
    let e = b.import_run(&doc).unwrap_err().to_string();
    assert!(e.contains("config 42"), "{e}");
    assert!(b.runs().unwrap().is_empty());
    let mut newer = a.export_run(run).unwrap();
    newer.schema_version = 2;
    let text = newer.to_json().unwrap();
    let e = RunExport::from_json(&text).unwrap_err().to_string();
    assert!(e.contains("schema_version 2"), "{e}");
}

#[test]
fn base64_round_trips_and_matches_rfc4648() {
    // RFC 4648 §10 test vectors.
    for (raw, enc) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64::encode(raw.as_bytes()), enc);
        assert_eq!(base64::decode(enc).unwrap(), raw.as_bytes());
    }
    let all: Vec<u8> = (0..=255u8).rev().collect();
    for n in 0..all.len() {
        assert_eq!(
            base64::decode(&base64::encode(&all[..n])).unwrap(),
            &all[..n]
        );
    }
    assert!(base64::decode("Zm9").is_err());
    assert!(base64::decode("Zg==Zg==").is_err());
    assert!(base64::decode("Z!==").is_err());
}
