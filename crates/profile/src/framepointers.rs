//! What `--call-graph auto` records, and the bounds of a DWARF recording: turns the
//! mode asked for ([`CallGraphMode`]) and the profiled target into the perf options
//! actually used ([`CallGraphChoice`]), with a note that says why.
//!
//! **How `auto` decides.** A binary built without frame pointers cuts `fp` stacks at
//! its first frame, so `auto` looks at the code that will be sampled: the profiled
//! binary first (a command's argv\[0\] on PATH, a `#!` script's interpreter; a process's
//! `/proc/PID/exe`), then its libraries (a command's `DT_NEEDED` in the loader's
//! directories; a process's executable mappings in `/proc/PID/maps`), and for the
//! whole system the C library every process runs through. For each it reads the ELF's
//! function entry points — the static symbols, or the dynamic ones of a stripped
//! binary (Debian's nginx and libc) — and counts the entries that begin with the
//! frame-pointer prologue: `push %rbp` (after an optional `endbr64`), then `mov
//! %rsp,%rbp` within a few instructions ([`has_prologue`]).
//! A compiler that keeps frame pointers emits it in nearly every function, one that
//! omits them almost nowhere (measured: gcc -fno-omit-frame-pointer in every function
//! but `_start` and leaf functions, -fomit-frame-pointer in none; Debian's nginx in 0
//! of 573, libc.so.6 in 17 of 1,077), so a tenth ([`KEPT_SHARE`]) separates them with
//! margin on both sides. The first binary
//! without them picks `dwarf`, and the note names it with its count. It must be
//! decided before recording (the mode is an option of `perf record`), and it is
//! cheap: 24 bytes per function, at most [`MAX_ENTRIES_CHECKED`] functions per binary
//! and [`MAX_BINARIES`] binaries (1 ms for nginx, 3 ms for libc here).
//!
//! Exceptions: a process that is still perflab (a trial's command held before its
//! `exec`, `[profile] target = "workload"`) cannot be judged yet: `dwarf`. A JVM or
//! Node (`java`, `node`) runs JIT code that has no unwind tables for DWARF; the JVM
//! keeps frame pointers in it when asked (the jit option), so `auto` keeps `fp` there.
//! A file that cannot be read as x86-64 ELF (another architecture, a script whose
//! interpreter cannot be found, no permission) gives `dwarf` — which needs no frame
//! pointers — with a note saying what could not be read; never an error.
//!
//! **Bounds.** `dwarf` copies the user stack with every sample: perf's default is 8,192
//! bytes, its maximum 65,528. The copy is bounded here ([`MIN_DWARF_STACK_BYTES`] to
//! [`MAX_DWARF_STACK_BYTES`], default [`DEFAULT_DWARF_STACK_BYTES`]) and recorded with
//! the profile, and the size of perf.data is shown with it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::elf::{Elf, ElfError, EM_X86_64};
use crate::error::{ProfileError, Result};
use crate::perf;
use crate::record::Target;
use crate::stacks::CallGraphMode;

/// Bytes of user stack copied per sample by default (perf's own default): enough for
/// nginx's deepest request stacks (measured: every worker sample reached
/// `ngx_process_events_and_timers`), about 8.5 KB of perf.data per sample.
pub const DEFAULT_DWARF_STACK_BYTES: u32 = 8192;
/// Less than this unwinds only a frame or two: refused rather than silently useless.
pub const MIN_DWARF_STACK_BYTES: u32 = 1024;
/// perf's maximum (a sample's size field is 16 bits, less the header).
pub const MAX_DWARF_STACK_BYTES: u32 = 65528;
/// Function entries read per binary (evenly spread over its symbols).
pub const MAX_ENTRIES_CHECKED: usize = 2000;
/// Binaries inspected per decision (the profiled one and its libraries).
pub const MAX_BINARIES: usize = 24;
/// A binary keeps frame pointers when at least this share of its functions begin
/// with the prologue. Not a half: gcc here omits the frame of leaf functions even
/// with -fno-omit-frame-pointer (a sample there loses its caller, not the stack), so a
/// small program built with frame pointers measured 1 of 4 (`_start` and two leaves
/// without); binaries built without them measured 0 to 1.6 % (nginx, libc, bash,
/// python3, OpenSSL, zlib, PCRE2, a Rust debug build).
pub const KEPT_SHARE: f64 = 0.1;

/// Checks a DWARF stack copy size.
pub fn check_stack_bytes(bytes: u32) -> Result<u32> {
    if !(MIN_DWARF_STACK_BYTES..=MAX_DWARF_STACK_BYTES).contains(&bytes) || !bytes.is_multiple_of(8)
    {
        return Err(ProfileError::BadInput(format!(
            "DWARF stack size {bytes} bytes: expected a multiple of 8 from \
             {MIN_DWARF_STACK_BYTES} to {MAX_DWARF_STACK_BYTES} (perf's maximum), e.g. \
             --call-graph dwarf,16384"
        )));
    }
    Ok(bytes)
}

/// `MODE[,SIZE]` as `--call-graph` takes it: `fp`, `dwarf`, `dwarf,16384`, `auto`,
/// `auto,16384` (the size where auto picks dwarf), `off`.
pub fn parse_call_graph(s: &str) -> Result<(CallGraphMode, Option<u32>)> {
    let (mode, size) = match s.split_once(',') {
        Some((m, size)) => (m, Some(size)),
        None => (s, None),
    };
    let mode: CallGraphMode = mode.trim().parse()?;
    let Some(size) = size else {
        return Ok((mode, None));
    };
    if !matches!(mode, CallGraphMode::Dwarf | CallGraphMode::Auto) {
        return Err(ProfileError::BadInput(format!(
            "call graph {s:?}: a stack size goes with dwarf or auto only (dwarf,16384)"
        )));
    }
    let bytes = size.trim().parse::<u32>().map_err(|_| {
        ProfileError::BadInput(format!(
            "call graph {s:?}: the stack size is a number of bytes, e.g. dwarf,16384"
        ))
    })?;
    Ok((mode, Some(check_stack_bytes(bytes)?)))
}

/// How call chains are actually recorded: `fp`, `dwarf` (with its stack copy size) or
/// `off`, never `auto`; and why, where `auto` chose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallGraphChoice {
    pub mode: CallGraphMode,
    /// Bytes of user stack copied per sample (dwarf only).
    pub dwarf_stack_bytes: Option<u32>,
    /// What `auto` saw (`auto: /usr/sbin/nginx has no frame pointers (...)`).
    pub note: Option<String>,
}

impl CallGraphChoice {
    fn fixed(mode: CallGraphMode, stack_bytes: Option<u32>, note: Option<String>) -> Self {
        CallGraphChoice {
            mode,
            dwarf_stack_bytes: (mode == CallGraphMode::Dwarf)
                .then(|| stack_bytes.unwrap_or(DEFAULT_DWARF_STACK_BYTES)),
            note,
        }
    }

    /// perf record's call-graph options.
    pub fn perf_args(&self) -> Vec<String> {
        match (self.mode, self.dwarf_stack_bytes) {
            (CallGraphMode::Off, _) => vec![],
            (CallGraphMode::Dwarf, b) => vec![
                "--call-graph".into(),
                format!("dwarf,{}", b.unwrap_or(DEFAULT_DWARF_STACK_BYTES)),
            ],
            _ => vec!["-g".into()],
        }
    }

    /// `dwarf (8192-byte stack copies; auto: ...)`, `fp`, `off`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(b) = self.dwarf_stack_bytes {
            parts.push(format!("{b}-byte stack copies"));
        }
        parts.extend(self.note.clone());
        match parts.is_empty() {
            true => self.mode.to_string(),
            false => format!("{} ({})", self.mode, parts.join("; ")),
        }
    }
}

/// The call-graph options for `mode` on `target`: `auto` looks at the target's code.
pub fn choose(mode: CallGraphMode, stack_bytes: Option<u32>, target: &Target) -> CallGraphChoice {
    if mode != CallGraphMode::Auto {
        return CallGraphChoice::fixed(mode, stack_bytes, None);
    }
    let (mode, note) = decide(target);
    CallGraphChoice::fixed(mode, stack_bytes, Some(format!("auto: {note}")))
}

/// What a binary's function entries say about frame pointers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FramePointers {
    /// `with` of the `checked` entries begin with the prologue: at least [`KEPT_SHARE`].
    Kept { with: usize, checked: usize },
    /// Fewer do.
    Omitted { with: usize, checked: usize },
    /// The file could not be judged (why).
    Unknown(String),
}

/// Reads `path`'s function entries (at most [`MAX_ENTRIES_CHECKED`]) and judges.
pub fn inspect(path: &Path) -> FramePointers {
    match count_prologues(path) {
        Ok((_, 0)) => FramePointers::Unknown("no function symbols".into()),
        Ok((with, checked)) if with as f64 >= KEPT_SHARE * checked as f64 => {
            FramePointers::Kept { with, checked }
        }
        Ok((with, checked)) => FramePointers::Omitted { with, checked },
        Err(e) => FramePointers::Unknown(e.to_string()),
    }
}

fn count_prologues(path: &Path) -> std::result::Result<(usize, usize), ElfError> {
    let elf = Elf::open(path)?;
    if elf.machine != EM_X86_64 {
        return Err(ElfError::Unsupported(format!(
            "machine {} is not x86-64, whose prologue is the one recognised",
            elf.machine
        )));
    }
    let entries = elf.function_entries()?;
    let step = entries.len().div_ceil(MAX_ENTRIES_CHECKED).max(1);
    let (mut with, mut checked) = (0, 0);
    let mut code = [0u8; PROLOGUE_WINDOW];
    for &addr in entries.iter().step_by(step) {
        if elf.code_at(addr, &mut code).is_some() {
            checked += 1;
            with += usize::from(has_prologue(&code));
        }
    }
    Ok((with, checked))
}

/// Bytes read at each function entry: the prologue, with what an optimising compiler
/// schedules between its two instructions.
pub const PROLOGUE_WINDOW: usize = 24;

/// `push %rbp` first (after an optional `endbr64`), then `mov %rsp,%rbp` (either
/// encoding) within the window: gcc -O2 schedules argument moves between the two
/// (`push %rbp; mov %rdi,%rsi; mov %rsp,%rbp`). Code without frame pointers may push
/// %rbp as a callee-saved register, but does not point it at the stack.
pub fn has_prologue(code: &[u8; PROLOGUE_WINDOW]) -> bool {
    let body = match code {
        [0xf3, 0x0f, 0x1e, 0xfa, rest @ ..] => rest,
        _ => &code[..],
    };
    let [0x55, rest @ ..] = body else {
        return false;
    };
    rest.windows(3)
        .any(|w| w == [0x48, 0x89, 0xe5] || w == [0x48, 0x8b, 0xec])
}

/// `auto`'s mode and the note that says why.
fn decide(target: &Target) -> (CallGraphMode, String) {
    let (binaries, whose) = match binaries_of(target) {
        Ok(found) => found,
        Err(why) => {
            return (
                CallGraphMode::Dwarf,
                format!("{why}; dwarf needs no frame pointers"),
            )
        }
    };
    let Some(main) = binaries.first() else {
        return (CallGraphMode::Dwarf, "no binary to inspect".into());
    };
    if let Some(runtime) = jit_runtime(main) {
        return (
            CallGraphMode::Fp,
            format!(
                "{} runs JIT code, which DWARF cannot unwind; {runtime} keeps frame pointers \
                 in it",
                main.display()
            ),
        );
    }
    let mut kept = 0;
    for (i, bin) in binaries.iter().take(MAX_BINARIES).enumerate() {
        match inspect(bin) {
            FramePointers::Kept { .. } => kept += 1,
            FramePointers::Omitted { with, checked } => {
                return (
                    CallGraphMode::Dwarf,
                    format!(
                        "{whose}{} has no frame pointers ({with} of {checked} functions begin \
                         with the frame-pointer prologue)",
                        bin.display()
                    ),
                )
            }
            FramePointers::Unknown(why) if i == 0 => {
                return (
                    CallGraphMode::Dwarf,
                    format!(
                        "cannot tell whether {} keeps frame pointers ({why}); dwarf needs none",
                        bin.display()
                    ),
                )
            }
            FramePointers::Unknown(_) => {}
        }
    }
    (
        CallGraphMode::Fp,
        format!(
            "{whose}{} and its libraries keep frame pointers ({kept} binaries checked)",
            main.display()
        ),
    )
}

/// `java` / `node` where the binary is one of those runtimes.
fn jit_runtime(bin: &Path) -> Option<&'static str> {
    let name = bin.file_name()?.to_str()?;
    match name {
        "java" => Some("the JVM (-XX:+PreserveFramePointer)"),
        "node" | "nodejs" => Some("Node"),
        _ => None,
    }
}

/// The binaries whose code the target runs, the profiled one first, and how the note
/// introduces them.
fn binaries_of(target: &Target) -> std::result::Result<(Vec<PathBuf>, &'static str), String> {
    match target {
        Target::Command(argv) => {
            let first = argv.first().ok_or("an empty command")?;
            let main = command_binary(first)?;
            let mut all = vec![main.clone()];
            if let Ok(elf) = Elf::open(&main) {
                all.extend(elf.needed().iter().filter_map(|n| library(n)));
            }
            Ok((all, ""))
        }
        Target::Pid(pid) => Ok((process_binaries(*pid)?, "")),
        Target::System => {
            let libc = library("libc.so.6").ok_or("system-wide, and no libc.so.6 found")?;
            Ok((vec![libc], "system-wide: "))
        }
    }
}

/// A command's executable: argv\[0\] on PATH, or the interpreter of a `#!` script
/// (through `/usr/bin/env NAME`), two levels at most.
fn command_binary(argv0: &str) -> std::result::Result<PathBuf, String> {
    let mut path = perf::which(argv0).ok_or_else(|| format!("{argv0} is not on PATH"))?;
    for _ in 0..2 {
        let Some(interp) = interpreter(&path) else {
            return Ok(path);
        };
        path = interp.ok_or_else(|| {
            format!(
                "{} is a script whose interpreter is not found",
                path.display()
            )
        })?;
    }
    Ok(path)
}

/// None: not a script; Some(None): a script whose interpreter is not found.
fn interpreter(script: &Path) -> Option<Option<PathBuf>> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = String::from_utf8_lossy(line);
    let line = line.lines().next().unwrap_or_default();
    let mut words = line.split_whitespace();
    let first = words.next();
    let program = match first {
        Some(p) if p.ends_with("/env") => words.find(|w| !w.starts_with('-')),
        other => other,
    };
    Some(program.and_then(perf::which))
}

/// Where the loader finds a library by its `DT_NEEDED` name (the usual directories;
/// `LD_LIBRARY_PATH` first).
fn library(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name)).filter(|p| p.is_file());
    }
    let extra = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
    std::env::split_paths(&extra)
        .filter(|d| !d.as_os_str().is_empty())
        .chain(
            [
                "/lib/x86_64-linux-gnu",
                "/usr/lib/x86_64-linux-gnu",
                "/lib64",
                "/usr/lib64",
                "/lib",
                "/usr/lib",
            ]
            .map(PathBuf::from),
        )
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A process's executable, then the other files it has mapped executable.
fn process_binaries(pid: i32) -> std::result::Result<Vec<PathBuf>, String> {
    use std::io::Read;
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
        .map_err(|e| format!("cannot read /proc/{pid}/exe ({e})"))?;
    // A trial's command held before its exec (`target = "workload"`) is still perflab.
    if std::env::current_exe().is_ok_and(|me| me == exe) {
        return Err(format!(
            "process {pid} has not started its program yet (held before its exec)"
        ));
    }
    let mut maps = String::new();
    if let Ok(f) = std::fs::File::open(format!("/proc/{pid}/maps")) {
        let _ = f.take(1 << 20).read_to_string(&mut maps);
    }
    let mut all = vec![exe];
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (perms, path) = (f.nth(1), f.nth(3));
        let (Some(perms), Some(path)) = (perms, path) else {
            continue;
        };
        let path = PathBuf::from(path);
        if perms.contains('x') && path.is_absolute() && !all.contains(&path) {
            all.push(path);
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests;
