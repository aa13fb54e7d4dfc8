//! `LoadSpec` from an experiment file's `[workload] kind = "http"` table.
use perflab_load::{IoChoice, LoadSpec, RampOver};
use std::time::Duration;

#[derive(serde::Deserialize)]
struct File {
    workload: LoadSpec,
}

#[test]
fn workload_table_deserializes() {
    let f: File = toml::from_str(
        r#"
        [workload]
        kind = "http"
        url = "http://127.0.0.1:8080/"
        connections = 20
        threads = 2
        duration = "30s"
        warmup = "500ms"
        rate = "2k"
        max_connections = 50
        headers = ["X-A: 1"]
        timeout = 2
        io = "epoll"
        "#,
    )
    .unwrap();
    let s = f.workload;
    assert_eq!(s.urls, vec!["http://127.0.0.1:8080/".to_string()]);
    assert_eq!(
        (s.connections, s.threads, s.rate),
        (20, Some(2), Some(2000.0))
    );
    assert_eq!(s.duration, Some(Duration::from_secs(30)));
    assert_eq!(s.warmup, Duration::from_millis(500));
    assert_eq!(s.timeout, Duration::from_secs(2));
    assert_eq!(s.headers, vec![("X-A".to_string(), "1".to_string())]);
    assert_eq!(s.io, IoChoice::Epoll);

    let f: File = toml::from_str(
        r#"
        [workload]
        url = "http://h/"
        find_max = true
        slo = "p99<20ms"
        max_error_rate = "0.1%"
        ramp = "100:1000:5"
        ramp_over = "rate"
        step_duration = "2s"
        "#,
    )
    .unwrap();
    assert!(f.workload.find_max);
    assert_eq!(f.workload.io, IoChoice::Auto, "the default");
    assert_eq!(f.workload.ramp.unwrap().over, RampOver::Rate);
    assert!((f.workload.max_error_rate - 0.001).abs() < 1e-12);
}

#[test]
fn bad_tables_are_rejected_with_the_field_named() {
    for (toml_text, needle) in [
        (
            "[workload]\nurl = \"http://h/\"\nduration = \"ten\"",
            "duration",
        ),
        (
            "[workload]\nurl = \"http://h/\"\nconections = 3",
            "conections",
        ),
        ("[workload]\nurl = \"ftp://h/\"", "scheme"),
        (
            "[workload]\nurl = \"http://h/\"\nconnections = 0",
            "connections",
        ),
        ("[workload]\nkind = \"disk\"\nurl = \"http://h/\"", "kind"),
        ("[workload]\nurl = \"http://h/\"\nio = \"kqueue\"", "io"),
        (
            "[workload]\nurl = \"https://h/\"\nio = \"uring\"",
            "plain http:// only",
        ),
        (
            "[workload]\nurl = \"http://h/\"\nio = \"uring\"\nrate = 100",
            "closed-loop",
        ),
    ] {
        let err = toml::from_str::<File>(toml_text)
            .err()
            .expect(toml_text)
            .to_string();
        assert!(err.contains(needle), "{err}");
    }
}
