//! The C examples compile with the system C compiler against the cdylib and the
//! header, then answer real requests: `hello` (callback), `dirlist` (static files,
//! listing, a dynamic page with fallback, restart on the same port).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

/// The directory holding `libperflab_serve.so` built for this test run.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let found = [deps, deps.parent().unwrap()]
        .into_iter()
        .find(|d| d.join("libperflab_serve.so").exists())
        .expect("libperflab_serve.so next to the test binary (crate-type cdylib)")
        .to_path_buf();
    found
}

fn compile(name: &str, out_dir: &Path) -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = lib_dir();
    let exe = out_dir.join(name);
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join(format!("examples/c/{name}.c")))
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib)
        .arg("-lperflab_serve")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .status()
        .expect("run the system C compiler (cc)");
    assert!(status.success(), "{name}.c did not compile");
    exe
}

/// Starts an example and reads its `listening on http://127.0.0.1:PORT/` line.
fn launch(
    exe: &Path,
    args: &[&str],
) -> (
    Child,
    ChildStdin,
    BufReader<std::process::ChildStdout>,
    std::net::SocketAddr,
) {
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|s| s.strip_suffix('/'))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .parse()
        .unwrap();
    (child, stdin, out, addr)
}

fn finish(mut child: Child, stdin: ChildStdin) {
    drop(stdin); // EOF: the example stops its server and exits
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn c_hello_compiles_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("hello", dir.path());
    let (child, stdin, _out, addr) = launch(&exe, &["0"]);
    let r = common::get(addr, "/abc");
    assert_eq!(
        (r.status, r.text().as_str()),
        (200, "Hello from C! GET /abc\n")
    );
    finish(child, stdin);
}

#[test]
fn c_dirlist_compiles_lists_and_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("dirlist", dir.path());
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("a.txt"), "A").unwrap();
    std::fs::write(site.join("b&c.txt"), "B").unwrap();
    let (child, mut stdin, mut out, addr) = launch(&exe, &[site.to_str().unwrap(), "0"]);
    let listing = common::get(addr, "/").text();
    assert!(
        listing.contains("href=\"a.txt\"") && listing.contains("b&amp;c.txt"),
        "{listing}"
    );
    assert_eq!(common::get(addr, "/a.txt").text(), "A");
    let stats = common::get(addr, "/_stats");
    assert_eq!(stats.header("content-type"), Some("application/json"));
    assert!(stats.text().contains("\"requests\":"), "{}", stats.text());
    stdin.write_all(b"r\n").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), format!("restarted on port {}", addr.port()));
    assert_eq!(common::get(addr, "/a.txt").text(), "A");
    finish(child, stdin);
}
