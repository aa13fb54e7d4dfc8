//! `--unix-socket`: perflab http through a unix-domain socket against perflab serve
//! listening on one and against nginx listening on one (where nginx is installed), and
//! `unix_socket` in an experiment's http workload.

mod common;
use common::*;

use std::process::{Command, Stdio};
use std::time::Duration;

fn serve_unix(sock: &std::path::Path) -> Killed {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("perflab"))
        .args(["serve", "--hello", "--workers", "2", "--unix-socket"])
        .arg(sock)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(
        line.trim_end(),
        format!("listening on unix:{}", sock.display())
    );
    Killed(child)
}

#[test]
fn http_through_a_unix_socket_to_perflab_serve_counts_every_request() {
    let lab = Lab::new();
    let sock = lab.path("s.sock");
    let server = serve_unix(&sock);
    let s = sock.to_str().unwrap();
    let v = lab.json(&[
        "http",
        "--unix-socket",
        s,
        "http://localhost/",
        "-n",
        "3000",
        "-c",
        "4",
        "--json",
    ]);
    assert_eq!(v["requests"], 3000);
    assert_eq!(v["errors"]["total"], 0);
    assert_eq!(v["io"], "epoll");
    // https and io_uring are refused with the reason (exit 2).
    for (url, io) in [
        ("https://localhost/", "auto"),
        ("http://localhost/", "uring"),
    ] {
        let out = lab.run(&["http", "--unix-socket", s, url, "-n", "1", "--io", io]);
        assert_eq!(out.status.code(), Some(2), "{url} {io}: {}", stderr(&out));
        assert!(stderr(&out).contains("--unix-socket"), "{}", stderr(&out));
    }
    drop(server);
}

#[test]
fn a_missing_socket_exits_1_at_once_as_a_refused_connection() {
    let lab = Lab::new();
    let sock = lab.path("nobody.sock");
    let out = lab.run(&[
        "http",
        "--unix-socket",
        sock.to_str().unwrap(),
        "http://localhost/",
        "-n",
        "5",
        "-c",
        "1",
        "--json",
    ]);
    // No connection can be made: the run stops before the load, as wrk does.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("connection refused"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
}

#[test]
fn an_experiment_loads_a_service_on_a_unix_socket() {
    let lab = Lab::new();
    let exp = lab.write(
        "u.toml",
        "[experiment]\nrepetitions = 2\nwarmup = 0\nnoise_check = false\n\
         [service]\ncommand = \"{perflab} serve --hello --unix-socket {run_dir}/s.sock\"\n\
         ready.log = \"listening on unix:\"\n\
         [workload]\nkind = \"http\"\nurls = [\"http://localhost/\"]\n\
         unix_socket = \"{run_dir}/s.sock\"\nrequests = 500\nconnections = 2\n",
    );
    let out = lab.run(&["run", exp.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let requests = v["configs"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "requests")
        .unwrap()["mean"]
        .as_f64()
        .unwrap();
    assert_eq!(requests, 500.0);
}

#[test]
fn http_through_a_unix_socket_to_nginx() {
    let lab = Lab::new();
    let dir = lab.dir.path();
    let sock = dir.join("nginx.sock");
    let server = format!(
        "server {{ listen unix:{}; root {}/www; }}",
        sock.display(),
        dir.display()
    );
    let Some(_nginx) = start_nginx(dir, &server) else {
        return;
    };
    std::fs::write(dir.join("www/index.html"), "from nginx\n").unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || sock.exists()),
        "nginx did not create its socket: {}",
        std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
    );
    let v = lab.json(&[
        "http",
        "--unix-socket",
        sock.to_str().unwrap(),
        "http://localhost/",
        "-n",
        "1000",
        "-c",
        "4",
        "--json",
    ]);
    assert_eq!(v["requests"], 1000);
    assert_eq!(v["status"]["200"], 1000, "{v}");
}
