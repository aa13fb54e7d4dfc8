//! Closed loop means `c` in flight: against nginx with `-c 10`, `perflab http` keeps
//! about ten requests in flight on io_uring, on epoll and with its defaults — by
//! Little's law on its own report (`effective_concurrency`, req/s × mean latency) —
//! and says so in the text. (io_uring used to wait for half the connections' responses
//! before sending the next requests, and kept ~7 of 10 in flight.)

mod common;
use common::*;

/// nginx (one worker) serving a small page on a free port of 127.0.0.1; `None` where
/// nginx is missing (a failure under `PERFLAB_REQUIRE`).
fn nginx(lab: &Lab) -> Option<(Killed, String)> {
    let (child, port) = common::nginx_page(lab.dir.path(), "hello, world\n")?;
    Some((child, format!("http://127.0.0.1:{port}/")))
}

/// `--io` choices to check: the default (no flag), epoll, and io_uring where the kernel
/// allows it (its absence is a failure under `PERFLAB_REQUIRE`).
fn choices() -> Vec<Option<&'static str>> {
    let mut v = vec![None, Some("epoll")];
    match perflab_load::uring_support() {
        Ok(()) => v.push(Some("uring")),
        Err(why) => require::missing(format!("io_uring is unavailable here: {why}")),
    }
    v
}

#[test]
fn ten_connections_keep_ten_requests_in_flight_on_every_engine() {
    let lab = Lab::new();
    let Some((_nginx, url)) = nginx(&lab) else {
        return;
    };
    for io in choices() {
        let mut args = vec!["http", "-q", "-c", "10", "-d", "2s", "--json"];
        if let Some(io) = io {
            args.extend(["--io", io]);
        }
        args.push(&url);
        let v = lab.json(&args);
        let eff = v["effective_concurrency"].as_f64().unwrap();
        let little = v["rps"].as_f64().unwrap() * v["latency_ms"]["mean"].as_f64().unwrap() / 1e3;
        eprintln!(
            "--io {io:?} ({}, {} threads): {} req/s, mean {} ms, {eff:.2} in flight",
            v["io"], v["threads"], v["rps"], v["latency_ms"]["mean"]
        );
        assert_eq!(v["errors"]["total"], 0, "{v}");
        assert!(
            (eff - little).abs() < 0.01 * little.max(1.0),
            "effective_concurrency {eff} is not req/s × mean latency {little}"
        );
        assert!(
            eff >= 9.0,
            "--io {io:?} ({}): {eff:.2} requests in flight of 10",
            v["io"]
        );
        assert_eq!(v["latency_clock"], perflab_load::LATENCY_CLOCK);
        let warnings = v["warnings"].to_string();
        assert!(!warnings.contains("limited the offered load"), "{warnings}");
    }
    // The text names the figure and its clock.
    let out = lab.run(&["http", "-q", "-c", "10", "-d", "1s", &url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("In flight") && text.contains("user-space monotonic clock"),
        "{text}"
    );
}
