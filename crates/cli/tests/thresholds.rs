//! `perflab http --threshold` and an http experiment's `thresholds`: a failed threshold
//! exits 3 (over 4 for failed requests) and says which and by how much; experiments
//! judge each config's CI bound. Also: a URL file line that carries more than a URL is
//! refused with its line, never sent as a plain GET.

mod common;
use common::*;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

/// A keep-alive HTTP/1.1 server on 127.0.0.1 that answers every request after `delay`
/// (a thread per connection; they end when the client closes).
fn delayed_server(delay: Duration) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        std::thread::sleep(delay);
                        if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                            .is_err()
                        {
                            return;
                        }
                    }
                    match s.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    addr
}

/// A server on 127.0.0.1 that accepts every connection and closes it at once; its URL.
fn closing_server() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            drop(s);
        }
    });
    format!("http://{addr}/")
}

#[test]
fn a_latency_threshold_over_a_slow_server_exits_3_and_says_by_how_much() {
    let addr = delayed_server(Duration::from_millis(5));
    let lab = Lab::new();
    let url = format!("http://{addr}/");
    let out = lab.run(&[
        "http",
        &url,
        "-n",
        "200",
        "-c",
        "2",
        "--threshold",
        "p99<1ms",
        "--threshold",
        "error_rate<1%",
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "{text}{}", stderr(&out));
    assert!(text.contains("FAIL  p99<1ms"), "{text}");
    assert!(text.contains("% over the limit 1 ms"), "{text}");
    assert!(text.contains("ok    error_rate<1%"), "{text}");

    let out = lab.run(&[
        "http",
        &url,
        "-n",
        "100",
        "-c",
        "2",
        "--threshold",
        "p99<1ms",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &v["thresholds"][0];
    assert_eq!(t["threshold"], "p99<1ms");
    assert_eq!(t["metric"], "latency_p99_ms");
    assert_eq!(t["passed"], false);
    assert!(t["value"].as_f64().unwrap() >= 5.0, "{t}");
    assert!(t["by"].as_f64().unwrap() >= 4.0, "{t}");
}

#[test]
fn thresholds_that_hold_exit_0_and_a_bad_one_is_a_usage_error() {
    let addr = delayed_server(Duration::ZERO);
    let lab = Lab::new();
    let url = format!("http://{addr}/");
    let out = lab.run(&[
        "http",
        &url,
        "-n",
        "200",
        "-c",
        "2",
        "--threshold",
        "p99<1s",
        "--threshold",
        "rps>1",
        "--threshold",
        "errors<1",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    // Failed requests alone exit 4; with a failed threshold, 3 wins. (A server that
    // closes every connection: a refused port now exits 1 before the load starts.)
    let closing = closing_server();
    let closing = closing.as_str();
    let out = lab.run(&["http", closing, "-n", "5", "-c", "1"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let out = lab.run(&[
        "http",
        closing,
        "-n",
        "5",
        "-c",
        "1",
        "--threshold",
        "errors<1",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stdout(&out).contains("FAIL  errors<1"), "{}", stdout(&out));
    let out = lab.run(&["http", &url, "-n", "10", "--threshold", "p99<soon"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("threshold `p99<soon`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_latency_threshold_without_a_unit_exits_2_with_a_hint() {
    // Regression: `p99<200` read as 200 s, a k6 user's 200 ms gate that never fails.
    let lab = Lab::new();
    let out = lab.run(&[
        "http",
        "http://127.0.0.1:1/",
        "-n",
        "10",
        "--threshold",
        "p99<200",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--threshold 'p99<200': a latency needs a unit, e.g. p99<200ms"),
        "{err}"
    );
    // The unit is printed back in the verdict.
    let addr = delayed_server(Duration::ZERO);
    let url = format!("http://{addr}/");
    let out = lab.run(&[
        "http",
        &url,
        "-n",
        "50",
        "--threshold",
        "p99<200ms",
        "--threshold",
        "errors<1",
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("ok    p99<200ms: "), "{text}");
    assert!(text.contains(" ms\n"), "{text}");
}

#[test]
fn an_experiment_judges_each_configs_ci_bound() {
    let addr = delayed_server(Duration::from_millis(3));
    let lab = Lab::new();
    let exp = lab.write(
        "t.toml",
        &format!(
            "[experiment]\nrepetitions = 3\nwarmup = 0\nnoise_check = false\n\
             [matrix]\nc = [1, 2]\n\
             [workload]\nkind = \"http\"\nurls = [\"http://{addr}/\"]\nconnections = \"{{c}}\"\n\
             requests = 60\nthresholds = [\"p99<1ms\", \"rps>1\", \"p95<1s\"]\n"
        ),
    );
    let out = lab.run(&["run", exp.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let verdicts = v["thresholds"].as_array().unwrap();
    assert_eq!(verdicts.len(), 6, "3 thresholds x 2 configs");
    for t in verdicts {
        let passed = t["passed"].as_bool().unwrap();
        match t["threshold"].as_str().unwrap() {
            "p99<1ms" => {
                assert!(!passed);
                assert_eq!(t["judged"], "ci_high");
                // The bound judged is the config's CI upper bound of the stored metric.
                let c = v["configs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|c| c["params"] == t["params"])
                    .unwrap();
                let m = c["metrics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|m| m["name"] == "latency_p99_ms")
                    .unwrap();
                assert_eq!(t["value"], m["ci_high"]);
            }
            "rps>1" => assert!(passed && t["judged"] == "ci_low", "{t}"),
            // p95 is not a stored metric by default: the trials store it for the threshold.
            "p95<1s" => assert!(passed && t["metric"] == "latency_p95_ms", "{t}"),
            other => panic!("{other}"),
        }
    }
    // Each trial stored its own verdicts, and the report lists them.
    let text = lab.run(&["run", exp.to_str().unwrap()]);
    let s = stdout(&text);
    assert!(s.contains("Thresholds (a ceiling on the upper"), "{s}");
    assert!(s.contains("thresholds_failed"), "{s}");
    let md = lab.path("r.md");
    let html = lab.path("r.html");
    for (flag, file) in [("--markdown", &md), ("--html", &html)] {
        let out = lab.run(&["report", flag, file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("## Thresholds"), "{md}");
    // 2 configs x 3 repetitions; the table rows start with `|`.
    let row_of = |t: &str| {
        md.lines()
            .find(|l| l.starts_with('|') && l.contains(t))
            .unwrap_or_else(|| panic!("no row for {t}: {md}"))
    };
    let row = row_of("p99&lt;1ms"); // md_cell escapes `<`
    assert!(row.contains("6 of 6 trials") && row.contains(" %"), "{row}");
    assert!(row_of("rps&gt;1").contains("0 of 6 trials"));
    assert!(std::fs::read_to_string(html)
        .unwrap()
        .contains("<h2>Thresholds</h2>"));
}

#[test]
fn a_urls_file_line_with_a_method_or_body_is_refused_with_its_line() {
    let lab = Lab::new();
    for (text, line) in [
        (
            "http://127.0.0.1:1/a\nhttp://127.0.0.1:1/login POST user=a\n",
            ":2:",
        ),
        (
            "# siege variables\nHOST=127.0.0.1\nhttp://$(HOST)/\n",
            ":2:",
        ),
    ] {
        let f = lab.write("urls.txt", text);
        let out = lab.run(&["http", "--urls-file", f.to_str().unwrap(), "-n", "1"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(line) && err.contains("nothing is sent"),
            "{err}"
        );
    }
}
