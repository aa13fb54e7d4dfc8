//! The SciMark 2 driver: builds the kernel programs of `kernels/scimark/<lang>/`
//! (embedded in this library at build time) into a cache, verifies that every
//! language computes the same numbers, runs them, and reads their one-line JSON.
//!
//! Every language's program takes `--large`, `--min-time S`, `--verify-only`,
//! `--kernels LIST` and prints one JSON line (see docs/scimark.md). Builds are cached by
//! a hash of the sources, the flags and the toolchain's path, so a second run starts at
//! once and a changed flag rebuilds.
//!
//! A trial profiled with `jit` ([`TrialContext::jit`]) starts the JVM with
//! `-XX:+PreserveFramePointer` and a perf map written at exit, Node with
//! `--perf-basic-prof`, and registers the process so that the profile keeps its map
//! (`perflab_profile::jit`). A workload profile (`[profile] target = "workload"`)
//! attaches to the timed program, not to the verification run before it.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::command::{run_tree_counted, which, Leftovers};
use crate::{Measurement, MetricValue, TrialContext, Workload, WorkloadError};
use perflab_profile::jit::{self, Runtime};
use perflab_telemetry::perfcount::Event;
use perflab_units::Phrase;

pub mod preflight;

include!(concat!(env!("OUT_DIR"), "/scimark_sources.rs"));

/// Languages, in the order results are shown.
pub const LANGS: &[&str] = &["c", "java", "rust", "go", "js", "python"];
/// The metric a SciMark run is compared on by default.
pub const PRIMARY: &[&str] = &["composite_mflops"];
/// Kernels, in SciMark's order.
pub const KERNELS: &[&str] = &["fft", "sor", "mc", "sparse", "lu"];

/// Errors of one language; the others go on.
#[derive(Debug, thiserror::Error)]
pub enum ScimarkError {
    #[error("{lang}: toolchain not found: {tool} is not on the PATH ({hint})")]
    MissingToolchain {
        lang: String,
        tool: String,
        /// How to get it; its options as fields (the `java` binary), which
        /// [`ScimarkError::render`] names a command's way.
        hint: Phrase,
    },
    #[error("unknown language {0:?}: expected one of c, java, rust, go, js, python")]
    UnknownLanguage(String),
    #[error("{lang}: build failed ({command}):\n{output}")]
    Build {
        lang: String,
        command: String,
        output: String,
    },
    #[error("{lang}: the kernel program failed: {message}")]
    Run { lang: String, message: String },
    #[error("{lang}: verification failed: {message}")]
    Verify { lang: String, message: String },
    #[error("{0}")]
    Io(String),
}

impl ScimarkError {
    /// The message with the options it names (a missing toolchain's hint) named by
    /// `name`, a command's flag for a field; the `Display` form names the key.
    pub fn render(&self, name: &dyn Fn(&str) -> String) -> String {
        match self {
            ScimarkError::MissingToolchain { lang, tool, hint } => format!(
                "{lang}: toolchain not found: {tool} is not on the PATH ({})",
                hint.render(name)
            ),
            other => other.to_string(),
        }
    }
}

/// Build-time options.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Where builds are cached (default `$XDG_CACHE_HOME/perflab/scimark` or
    /// `~/.cache/perflab/scimark`; `PERFLAB_CACHE` overrides).
    pub cache_dir: Option<PathBuf>,
    /// C compiler flags (default `-O3`).
    pub cflags: Option<String>,
    /// Flags for the JVM (`java`), e.g. `-Xmx1g -XX:+UseParallelGC`.
    pub jvm_flags: Option<String>,
    /// The `java` binary (this machine may have several JDKs).
    pub java: Option<String>,
}

/// A built kernel program, ready to run.
#[derive(Debug, Clone)]
pub struct Built {
    pub lang: String,
    /// Program and leading arguments.
    pub argv: Vec<String>,
}

/// One kernel's result, as the program printed it.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct KernelResult {
    pub mflops: Option<f64>,
    pub cycles: Option<f64>,
    pub seconds: Option<f64>,
    pub cpu_seconds: Option<f64>,
    pub checksum: f64,
    #[serde(default)]
    pub checks: serde_json::Value,
}

/// A program's whole output line.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct Output {
    pub language: String,
    pub runtime: String,
    pub size: String,
    pub kernels: BTreeMap<String, KernelResult>,
    pub composite: Option<f64>,
}

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub large: bool,
    pub min_time: Option<f64>,
    pub verify_only: bool,
    pub kernels: Option<Vec<String>>,
    /// Events to count over the program's tree (none: not counted).
    pub counters: Vec<Event>,
}

fn cache_root(opts: &BuildOptions) -> PathBuf {
    if let Some(d) = &opts.cache_dir {
        return d.clone();
    }
    if let Some(d) = std::env::var_os("PERFLAB_CACHE") {
        return PathBuf::from(d).join("scimark");
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("perflab").join("scimark")
}

fn need(lang: &str, tool: &str, hint: Phrase) -> Result<PathBuf, ScimarkError> {
    which(tool).ok_or_else(|| ScimarkError::MissingToolchain {
        lang: lang.into(),
        tool: tool.into(),
        hint,
    })
}

fn words(s: &str) -> Vec<String> {
    shlex::split(s).unwrap_or_else(|| s.split_whitespace().map(String::from).collect())
}

/// Writes the embedded sources of `lang` into `dir`.
fn write_sources(lang: &str, dir: &Path) -> Result<(), ScimarkError> {
    for (l, rel, text) in SOURCES.iter().filter(|(l, _, _)| *l == lang) {
        let _ = l;
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| ScimarkError::Io(format!("{}: {e}", parent.display())))?;
        }
        std::fs::write(&p, text).map_err(|e| ScimarkError::Io(format!("{}: {e}", p.display())))?;
    }
    Ok(())
}

fn run_build(lang: &str, mut cmd: Command) -> Result<(), ScimarkError> {
    let shown = format!("{cmd:?}");
    let out = cmd.output().map_err(|e| ScimarkError::Build {
        lang: lang.into(),
        command: shown.clone(),
        output: e.to_string(),
    })?;
    if out.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    Err(ScimarkError::Build {
        lang: lang.into(),
        command: shown,
        output: crate::command::last_lines(&text, 20),
    })
}

/// Builds (or finds in the cache) the program of one language.
pub fn build(lang: &str, opts: &BuildOptions) -> Result<Built, ScimarkError> {
    if !LANGS.contains(&lang) {
        return Err(ScimarkError::UnknownLanguage(lang.into()));
    }
    let cflags = opts.cflags.clone().unwrap_or_else(|| "-O3".into());
    let (tool, hint) = toolchain(lang);
    let tool_path = need(lang, &tool, Phrase::text(hint))?;
    let java = opts.java.clone().unwrap_or_else(|| "java".into());
    if lang == "java" {
        need(
            lang,
            &java,
            Phrase::text("apt-get install default-jre-headless, or pass ")
                .and_field("java")
                .then(" PATH"),
        )?;
    }
    let dir = cache_dir(lang, &tool_path, &cflags, opts);
    let stamp = dir.join(".built");
    let src = dir.join("src");
    let argv = run_argv(lang, &dir, &tool_path, &java, opts);
    if stamp.exists() {
        return Ok(Built {
            lang: lang.into(),
            argv,
        });
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&src)
        .map_err(|e| ScimarkError::Io(format!("{}: {e}", src.display())))?;
    write_sources(lang, &src)?;
    compile(lang, &tool_path, &cflags, &dir)?;
    std::fs::write(&stamp, b"ok").map_err(|e| ScimarkError::Io(e.to_string()))?;
    Ok(Built {
        lang: lang.into(),
        argv,
    })
}

/// The tool that builds (or runs) a language's kernels, and how to install it.
fn toolchain(lang: &str) -> (String, &'static str) {
    match lang {
        "c" => (
            std::env::var("CC").unwrap_or_else(|_| "gcc".into()),
            "apt-get install gcc",
        ),
        "java" => ("javac".into(), "apt-get install default-jdk-headless"),
        "rust" => ("cargo".into(), "install Rust with rustup"),
        "go" => ("go".into(), "apt-get install golang-go"),
        "js" => ("node".into(), "apt-get install nodejs"),
        _ => ("python3".into(), "apt-get install python3"),
    }
}

/// The build's folder in the cache, keyed by the sources, the flags and the toolchain.
fn cache_dir(lang: &str, tool_path: &Path, cflags: &str, opts: &BuildOptions) -> PathBuf {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (l, rel, text) in SOURCES.iter().filter(|(l, _, _)| *l == lang) {
        (l, rel, text).hash(&mut h);
    }
    tool_path.hash(&mut h);
    if lang == "c" {
        cflags.hash(&mut h);
    }
    cache_root(opts).join(format!("{lang}-{:016x}", h.finish()))
}

/// The command line that runs a built program.
fn run_argv(
    lang: &str,
    dir: &Path,
    tool_path: &Path,
    java: &str,
    opts: &BuildOptions,
) -> Vec<String> {
    let src = dir.join("src");
    match lang {
        "c" | "rust" | "go" => vec![dir.join("scimark").display().to_string()],
        "java" => {
            let mut v = vec![java.to_string()];
            v.extend(words(opts.jvm_flags.as_deref().unwrap_or("")));
            v.extend([
                "-cp".into(),
                dir.join("classes").display().to_string(),
                "Scimark".into(),
            ]);
            v
        }
        "js" => vec![
            tool_path.display().to_string(),
            src.join("scimark.js").display().to_string(),
        ],
        _ => vec![
            tool_path.display().to_string(),
            src.join("scimark.py").display().to_string(),
        ],
    }
}

/// Compiles the sources written under `dir/src` (nothing to do for the scripts).
fn compile(lang: &str, tool_path: &Path, cflags: &str, dir: &Path) -> Result<(), ScimarkError> {
    let src = dir.join("src");
    let exe = dir.join("scimark");
    let sources = |suffix: &str| {
        SOURCES
            .iter()
            .filter(move |(l, r, _)| *l == lang && r.ends_with(suffix))
            .map(|(_, rel, _)| src.join(rel))
            .collect::<Vec<_>>()
    };
    let mut c = Command::new(tool_path);
    match lang {
        "c" => {
            c.args(words(cflags)).arg("-o").arg(&exe);
            c.args(sources(".c"));
            c.arg("-lm");
            run_build(lang, c)
        }
        "java" => {
            c.arg("-d").arg(dir.join("classes"));
            c.args(sources(".java"));
            run_build(lang, c)
        }
        "rust" => {
            c.args(["build", "--release", "--quiet", "--offline"])
                .current_dir(&src)
                .env("CARGO_TARGET_DIR", dir.join("target"))
                .env_remove("RUSTFLAGS");
            run_build(lang, c)?;
            std::fs::copy(dir.join("target/release/scimark"), &exe)
                .map(|_| ())
                .map_err(|e| ScimarkError::Io(format!("copy the Rust kernel binary: {e}")))
        }
        "go" => {
            c.args(["build", "-o"]).arg(&exe).arg(".").current_dir(&src);
            run_build(lang, c)
        }
        _ => Ok(()),
    }
}

/// Runs a built program as a measured trial and parses its output line.
pub fn run(
    built: &Built,
    o: &RunOptions,
    ctx: &TrialContext,
) -> Result<(Output, crate::command::TreeRun), WorkloadError> {
    let mut cmd = Command::new(&built.argv[0]);
    let runtime = jit_runtime(built, ctx);
    match runtime {
        Some(Runtime::Java) => cmd.args(jit::java_args()),
        Some(Runtime::Node) => cmd.args(jit::node_args()),
        None => &mut cmd,
    };
    cmd.args(&built.argv[1..]);
    if o.large {
        cmd.arg("--large");
    }
    if o.verify_only {
        cmd.arg("--verify-only");
    }
    if let Some(t) = o.min_time {
        cmd.arg("--min-time").arg(t.to_string());
    }
    if let Some(k) = &o.kernels {
        cmd.arg("--kernels").arg(k.join(","));
    }
    let tree = run_tree_counted(cmd, ctx, Leftovers::Kill, &[], &o.counters)?;
    if let Some(rt) = runtime {
        // Its perf map, written at exit, is the profile's to keep.
        jit::started(tree.root_pid, rt);
    }
    if tree.interrupted {
        return Err(WorkloadError::Interrupted);
    }
    let ok = tree.status.map(|s| s.success()).unwrap_or(false);
    if !ok || tree.timed_out {
        let how = if tree.timed_out {
            "timed out".to_string()
        } else {
            tree.status
                .as_ref()
                .map(crate::command::describe_status)
                .unwrap_or_default()
        };
        return Err(WorkloadError::failed(format!(
            "{}: the kernel program ended with {how}; last output:\n{}",
            built.lang,
            tree.tail(20)
        )));
    }
    let text = String::from_utf8_lossy(&tree.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .unwrap_or("");
    let out: Output = serde_json::from_str(line).map_err(|e| {
        WorkloadError::failed(format!(
            "{}: cannot read the kernel program's JSON ({e}): {line:?}",
            built.lang
        ))
    })?;
    Ok((out, tree))
}

/// The runtime whose JIT frames a profiled trial names: the JVM or Node the program
/// runs on, when the trial is profiled with `jit` (its flags go first, so flags the
/// user gave the JVM can still override them).
fn jit_runtime(built: &Built, ctx: &TrialContext) -> Option<Runtime> {
    match built.lang.as_str() {
        "java" if ctx.jit => Some(Runtime::Java),
        "js" if ctx.jit => Some(Runtime::Node),
        _ => None,
    }
}

/// Checks that `other` computed what `reference` did: checksums to a relative 1e-9,
/// integer checks exactly, small float checks (errors, residuals) to 1e-9 absolute;
/// and the FFT round trip is ≤ 1e-10.
pub fn agree(reference: &Output, other: &Output) -> Result<(), String> {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
    for (name, r) in &reference.kernels {
        let Some(o) = other.kernels.get(name) else {
            return Err(format!("kernel {name} missing from the output"));
        };
        let rel = (r.checksum - o.checksum).abs() / r.checksum.abs().max(f64::MIN_POSITIVE);
        if rel > 1e-9 {
            return Err(format!(
                "{name} checksum {} differs from {}'s {} (relative {rel:.2e} > 1e-9)",
                o.checksum, reference.language, r.checksum
            ));
        }
        check_values(name, &r.checks, &o.checks, &close)?;
    }
    self_check(other)
}

fn check_values(
    path: &str,
    a: &serde_json::Value,
    b: &serde_json::Value,
    close: &dyn Fn(f64, f64) -> bool,
) -> Result<(), String> {
    use serde_json::Value::*;
    match (a, b) {
        (Number(x), Number(y)) if x.is_i64() && y.is_i64() => (x == y)
            .then_some(())
            .ok_or_else(|| format!("{path}: {y} differs from {x}")),
        (Number(x), Number(y)) => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            close(x, y)
                .then_some(())
                .ok_or_else(|| format!("{path}: {y} differs from {x}"))
        }
        (Array(x), Array(y)) => {
            if x.len() != y.len() {
                return Err(format!("{path}: {} values instead of {}", y.len(), x.len()));
            }
            x.iter()
                .zip(y)
                .enumerate()
                .try_for_each(|(i, (p, q))| check_values(&format!("{path}[{i}]"), p, q, close))
        }
        (Object(x), Object(y)) => x.iter().try_for_each(|(k, v)| match y.get(k) {
            Some(w) => check_values(&format!("{path}.{k}"), v, w, close),
            None => Err(format!("{path}.{k} missing")),
        }),
        _ => (a == b)
            .then_some(())
            .ok_or_else(|| format!("{path}: {b} differs from {a}")),
    }
}

/// Checks that need no reference: FFT round trip ≤ 1e-10, MC estimate exact.
pub fn self_check(o: &Output) -> Result<(), String> {
    if let Some(fft) = o.kernels.get("fft") {
        if let Some(rms) = fft.checks.get("rms_error").and_then(|v| v.as_f64()) {
            if rms > 1e-10 {
                return Err(format!("FFT round-trip RMS error {rms:e} > 1e-10"));
            }
        }
    }
    if let Some(mc) = o.kernels.get("mc") {
        if mc.checksum != 3.139796 {
            return Err(format!(
                "Monte Carlo estimate {} is not 3.139796",
                mc.checksum
            ));
        }
    }
    Ok(())
}

/// `[workload] kind = "scimark"` (and what `perflab scimark` runs per trial).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScimarkSpec {
    pub lang: String,
    /// `default` or `large`.
    #[serde(default = "default_size")]
    pub size: String,
    pub min_time: Option<f64>,
    pub cflags: Option<String>,
    pub jvm_flags: Option<String>,
    pub java: Option<String>,
    pub kernels: Option<Vec<String>>,
    /// Events counted over the timed kernel program's process tree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<Event>,
}

fn default_size() -> String {
    "default".into()
}

impl ScimarkSpec {
    /// Checks the values; errors name the field and the expected form.
    pub fn validate(&self) -> Result<(), String> {
        if !LANGS.contains(&self.lang.as_str()) {
            return Err(format!(
                "lang {:?}: expected one of {}",
                self.lang,
                LANGS.join(", ")
            ));
        }
        if !matches!(self.size.as_str(), "default" | "large") {
            return Err(format!(
                "size {:?}: expected \"default\" or \"large\"",
                self.size
            ));
        }
        if let Some(t) = self.min_time {
            if !(t > 0.0 && t.is_finite()) {
                return Err(format!(
                    "min_time {t}: expected a positive number of seconds"
                ));
            }
        }
        for k in self.kernels.iter().flatten() {
            if !KERNELS.contains(&k.as_str()) {
                return Err(format!(
                    "kernel {k:?}: expected some of {}",
                    KERNELS.join(", ")
                ));
            }
        }
        Ok(())
    }

    pub fn build_options(&self) -> BuildOptions {
        BuildOptions {
            cache_dir: None,
            cflags: self.cflags.clone(),
            jvm_flags: self.jvm_flags.clone(),
            java: self.java.clone(),
        }
    }

    pub fn run_options(&self) -> RunOptions {
        RunOptions {
            large: self.size == "large",
            min_time: self.min_time,
            verify_only: false,
            kernels: self.kernels.clone(),
            counters: self.counters.clone(),
        }
    }
}

/// The metrics of one timed run: MFLOPS per kernel and composite, CPU seconds.
pub fn metrics(out: &Output) -> Vec<MetricValue> {
    let mut m = Vec::new();
    for k in KERNELS {
        if let Some(r) = out.kernels.get(*k) {
            if let Some(v) = r.mflops {
                m.push(MetricValue::new(
                    &format!("{k}_mflops"),
                    "MFLOPS",
                    v,
                    "higher",
                ));
            }
        }
    }
    if let Some(c) = out.composite {
        m.push(MetricValue::new("composite_mflops", "MFLOPS", c, "higher"));
    }
    let cpu: f64 = out.kernels.values().filter_map(|r| r.cpu_seconds).sum();
    m.push(MetricValue::new("kernel_cpu_s", "s", cpu, "lower"));
    m
}

/// Verification results of this process, per build (so an experiment verifies once).
fn verified() -> &'static Mutex<HashMap<String, Result<Output, String>>> {
    static V: OnceLock<Mutex<HashMap<String, Result<Output, String>>>> = OnceLock::new();
    V.get_or_init(Default::default)
}

/// Builds, verifies (once per process and build; against C when C can be built) and
/// returns the program.
pub fn prepare(spec: &ScimarkSpec, ctx: &TrialContext) -> Result<Built, WorkloadError> {
    let built = build(&spec.lang, &spec.build_options())
        .map_err(|e| WorkloadError::Setup(e.to_string()))?;
    let key = built.argv.join(" ");
    let known = verified().lock().ok().and_then(|m| m.get(&key).cloned());
    let result = match known {
        Some(r) => r,
        None => {
            let vo = RunOptions {
                large: spec.size == "large",
                verify_only: true,
                kernels: spec.kernels.clone(),
                ..Default::default()
            };
            // The verification is not the trial's program: a workload profile attaches
            // to the timed run, and no JIT flags are given here.
            let vctx = TrialContext {
                attach: None,
                jit: false,
                ..ctx.clone()
            };
            let ctx = &vctx;
            let r = match run(&built, &vo, ctx) {
                Ok((out, _)) => {
                    let reference = if spec.lang == "c" {
                        None
                    } else {
                        build("c", &BuildOptions::default())
                            .ok()
                            .and_then(|c| run(&c, &vo, ctx).ok())
                            .map(|(o, _)| o)
                    };
                    match &reference {
                        Some(r) => agree(r, &out).map(|_| out),
                        None => self_check(&out).map(|_| out),
                    }
                }
                Err(WorkloadError::Interrupted) => return Err(WorkloadError::Interrupted),
                Err(e) => Err(e.to_string()),
            };
            if let Ok(mut m) = verified().lock() {
                m.insert(key, r.clone());
            }
            r
        }
    };
    result
        .map(|_| built)
        .map_err(|e| WorkloadError::Setup(format!("{}: verification failed: {e}", spec.lang)))
}

impl Workload for ScimarkSpec {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        self.validate().map_err(WorkloadError::Setup)?;
        let built = prepare(self, ctx)?;
        let (out, tree) = run(&built, &self.run_options(), ctx)?;
        let mut m = Measurement {
            metrics: metrics(&out),
            method: Some(tree.method.as_str().into()),
            ..Default::default()
        };
        m.metrics.extend(tree.metrics());
        if let Some(r) = &tree.counters {
            crate::command::add_counters(&mut m, r);
        }
        m.artifacts.push(crate::ArtifactData {
            name: "scimark.json".into(),
            media_type: "application/json".into(),
            content: serde_json::to_vec(&out).unwrap_or_default(),
        });
        Ok(m)
    }
}
