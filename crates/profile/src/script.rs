//! Parser of `perf script` text, as produced with explicit fields
//! (`-F comm,pid,tid,cpu,time,event,ip,sym,dso,symoff`, see [`SCRIPT_FIELDS`]).
//!
//! Why text and not perf's JSON export: `perf data convert --to-json` is missing from
//! many distribution builds (it needs libbabeltrace for CTF and is new in 5.x), while
//! `perf script` with fixed fields is stable across perf versions from 4.x to 6.x.
//! Fixing the fields (instead of relying on the default layout) is what makes the
//! format parseable. Two layouts exist: with call graphs, a header line followed by
//! one indented frame per line (leaf first) and a blank line; without, the single frame
//! on the header line. An off-CPU recording adds the `trace` field (a tracepoint's
//! fields, after the event) and context-switch records (`PERF_RECORD_SWITCH IN`, one
//! line, no colon after the name), both kept in [`Sample::trace`].

use std::sync::OnceLock;

use regex::Regex;

/// The fields perflab asks `perf script` for. `cpu` is dropped when the samples lack it.
pub const SCRIPT_FIELDS: &str = "comm,pid,tid,cpu,time,event,ip,sym,dso,symoff";

/// One stack frame: address, symbol (None when perf could not resolve it) and image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub ip: u64,
    pub sym: Option<String>,
    /// The image (DSO) as perf names it: a path, `[kernel.kallsyms]`, `[unknown]`, ...
    pub dso: String,
    /// Offset of `ip` inside `sym`, when perf printed it.
    pub offset: Option<u64>,
}

impl Frame {
    /// True for kernel code: the kernel image and modules (perf writes them in square
    /// brackets), else an address in the upper half (x86-64 and arm64 kernels live there).
    pub fn is_kernel(&self) -> bool {
        let d = self.dso.as_str();
        if d.starts_with('[') && d.ends_with(']') {
            return match d {
                "[unknown]" => self.ip >= 0xffff_8000_0000_0000,
                "[vdso]" | "[vsyscall]" | "[vectors]" | "[heap]" | "[stack]" | "[uprobes]" => false,
                _ => !d.starts_with("[anon"),
            };
        }
        false
    }

    /// The image's short name: the file name of a path, perf's bracketed names as is.
    pub fn image(&self) -> &str {
        if self.dso.starts_with('[') {
            return &self.dso;
        }
        let path = self.dso.strip_suffix(" (deleted)").unwrap_or(&self.dso);
        path.rsplit('/').next().unwrap_or(path)
    }

    /// The name shown in stacks: the symbol, or `[image]` where there is none
    /// (what FlameGraph's stackcollapse-perf does).
    pub fn name(&self) -> String {
        match &self.sym {
            Some(s) => s.clone(),
            None => format!("[{}]", self.image().trim_matches(|c| c == '[' || c == ']')),
        }
    }
}

/// One sample: who was running, where, and the call chain (leaf first).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub comm: String,
    pub pid: i32,
    pub tid: i32,
    pub cpu: Option<u32>,
    pub time: Option<f64>,
    pub event: String,
    /// Leaf (the sampled instruction) first, then its callers.
    pub frames: Vec<Frame>,
    /// A tracepoint's fields as perf prints them (`prev_pid=12 prev_state=S ==> ...`),
    /// or `IN` / `OUT preempt` of a context-switch record (`PERF_RECORD_SWITCH`); None
    /// for a sampled instruction (see [`crate::offcpu`]).
    pub trace: Option<String>,
}

impl Sample {
    /// The sampled instruction's frame.
    pub fn leaf(&self) -> Option<&Frame> {
        self.frames.first()
    }

    /// True when the sampled instruction was kernel code.
    pub fn is_kernel(&self) -> bool {
        self.leaf().is_some_and(Frame::is_kernel)
    }

    /// The idle task (pid 0, `swapper`): a CPU with nothing to run.
    pub fn is_idle(&self) -> bool {
        self.pid == 0
    }
}

/// What a parse found: the samples and how many lines it could not read.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    pub samples: Vec<Sample>,
    pub skipped_lines: usize,
}

/// `comm 12/12 [001] 3.25: PERF_RECORD_SWITCH OUT preempt` (`--show-switch-events`).
fn switch_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^\s*(?P<comm>.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+(?:\[(?P<cpu>\d+)\]\s+)?(?:(?P<time>\d+\.\d+):\s+)?(?P<event>PERF_RECORD_SWITCH(?:_CPU_WIDE)?)\s+(?P<rest>(?:IN|OUT).*?)\s*$",
        )
        .expect("valid regex")
    })
}

fn header_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^\s*(?P<comm>.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+(?:\[(?P<cpu>\d+)\]\s+)?(?:(?P<time>\d+\.\d+):\s+)?(?:(?P<period>\d+)\s+)?(?P<event>[^\s]+):(?:\s+(?P<rest>.*?))?\s*$",
        )
        .expect("valid regex")
    })
}

/// Parses `perf script` output (see the module doc for the layouts).
pub fn parse(text: &str) -> Parsed {
    let mut p = Parser::default();
    let mut samples = Vec::new();
    for line in text.lines() {
        samples.extend(p.line(line));
    }
    let skipped_lines = p.skipped_lines;
    samples.extend(p.finish());
    Parsed {
        samples,
        skipped_lines,
    }
}

/// The parser one line at a time, for output read as perf writes it (an off-CPU
/// recording's switches are reduced as they come, never all held: see
/// [`crate::offcpu`]).
#[derive(Debug, Default)]
pub struct Parser {
    current: Option<Sample>,
    /// Lines that were not understood so far.
    pub skipped_lines: usize,
}

impl Parser {
    /// Reads one line; returns the sample it completed, if any.
    pub fn line(&mut self, line: &str) -> Option<Sample> {
        if line.trim().is_empty() {
            return self.current.take();
        }
        if line.starts_with('\t') {
            if let (Some(s), Some(f)) = (self.current.as_mut(), parse_frame(line)) {
                s.frames.push(f);
            } else {
                self.skipped_lines += 1;
            }
            return None;
        }
        let Some(c) = switch_re()
            .captures(line)
            .or_else(|| header_re().captures(line))
        else {
            self.skipped_lines += 1;
            return None;
        };
        let num = |k: &str| c.name(k).and_then(|m| m.as_str().parse::<i64>().ok());
        let mut s = Sample {
            comm: c["comm"].to_string(),
            pid: num("pid").unwrap_or(-1) as i32,
            tid: num("tid").unwrap_or(-1) as i32,
            cpu: num("cpu").map(|v| v as u32),
            time: c.name("time").and_then(|m| m.as_str().parse().ok()),
            event: c["event"].to_string(),
            frames: Vec::new(),
            trace: None,
        };
        if let Some(rest) = c.name("rest").map(|m| m.as_str()) {
            match parse_frame(rest) {
                Some(f) => s.frames.push(f),
                None if !rest.is_empty() => s.trace = Some(rest.to_string()),
                None => {}
            }
        }
        self.current.replace(s)
    }

    /// The last sample, at the end of the output.
    pub fn finish(self) -> Option<Sample> {
        self.current
    }
}

/// `ffffffff821f2c2b pv_native_safe_halt+0xb ([kernel.kallsyms])`
fn parse_frame(line: &str) -> Option<Frame> {
    let line = line.trim();
    let (ip, rest) = line.split_once(char::is_whitespace)?;
    let ip = u64::from_str_radix(ip, 16).ok()?;
    let rest = rest.trim();
    // The image is the last balanced parenthesised group: "(/x/y (deleted))".
    let body = rest.strip_suffix(')')?;
    let mut depth = 1usize;
    let mut open = None;
    for (i, ch) in body.char_indices().rev() {
        match ch {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    open = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let open = open?;
    let dso = body[open + 1..].to_string();
    let sym = body[..open].trim();
    let (sym, offset) = split_offset(sym);
    let sym = if sym.is_empty() || sym == "[unknown]" {
        None
    } else {
        Some(sym.to_string())
    };
    Some(Frame {
        ip,
        sym,
        dso,
        offset,
    })
}

/// `name+0x1f` → (`name`, Some(0x1f)).
fn split_offset(sym: &str) -> (&str, Option<u64>) {
    if let Some((name, off)) = sym.rsplit_once("+0x") {
        if let Ok(v) = u64::from_str_radix(off, 16) {
            return (name, Some(v));
        }
    }
    (sym, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALLCHAINS: &str = "\
swapper     0/0     [000]  3217.832561: cpu-clock: 
\tffffffff821f2c2b pv_native_safe_halt+0xb ([kernel.kallsyms])
\tffffffff821f4735 default_idle+0x5 ([kernel.kallsyms])

Web Content  4242/4243  [001]  3217.833548: cpu-clock: 
\t           7c6f6 [unknown] (/usr/bin/bash)
\t    55748d2c03d0 std::vector<int, std::allocator<int> >::push_back(int const&)+0x10 (/opt/x (deleted))

kworker/0:1    17/17    [001]  3217.833847:    1001001 sched:sched_switch: 
\tffffffff81e32fbe sock_def_readable+0x3e ([kernel.kallsyms])
";

    #[test]
    fn parses_callchain_layout() {
        let p = parse(CALLCHAINS);
        assert_eq!(p.skipped_lines, 0);
        assert_eq!(p.samples.len(), 3);
        let s = &p.samples[0];
        assert_eq!(
            (s.comm.as_str(), s.pid, s.tid, s.cpu),
            ("swapper", 0, 0, Some(0))
        );
        assert_eq!(s.event, "cpu-clock");
        assert_eq!(s.frames.len(), 2);
        assert_eq!(s.frames[0].sym.as_deref(), Some("pv_native_safe_halt"));
        assert_eq!(s.frames[0].offset, Some(0xb));
        assert!(s.is_idle() && s.is_kernel());
        let w = &p.samples[1];
        assert_eq!(w.comm, "Web Content");
        assert_eq!((w.pid, w.tid), (4242, 4243));
        assert_eq!(w.frames[0].sym, None);
        assert_eq!(w.frames[0].image(), "bash");
        assert_eq!(w.frames[0].name(), "[bash]");
        assert_eq!(
            w.frames[1].sym.as_deref(),
            Some("std::vector<int, std::allocator<int> >::push_back(int const&)")
        );
        assert_eq!(w.frames[1].dso, "/opt/x (deleted)");
        assert_eq!(w.frames[1].image(), "x");
        assert!(!w.is_kernel());
        let k = &p.samples[2];
        assert_eq!(k.comm, "kworker/0:1");
        assert_eq!(k.event, "sched:sched_switch");
    }

    #[test]
    fn parses_single_line_layout_without_cpu() {
        let text = "             hot  8322/8322   3355.877382: cpu-clock:      55f6733d01b0 hot_function+0x20 (/tmp/pp/hot)\n\
                    \x20            hot  8322/8322   3355.878377: cpu-clock:      55f6733d01ad hot_function+0x1d (/tmp/pp/hot)\n";
        let p = parse(text);
        assert_eq!(p.samples.len(), 2);
        assert_eq!(p.samples[0].cpu, None);
        assert_eq!(p.samples[0].time, Some(3355.877382));
        assert_eq!(p.samples[1].frames[0].offset, Some(0x1d));
        assert_eq!(p.samples[1].frames[0].image(), "hot");
    }

    #[test]
    fn kernel_addresses_without_symbols_count_as_kernel() {
        let f = |ip, dso: &str| Frame {
            ip,
            sym: None,
            dso: dso.into(),
            offset: None,
        };
        assert!(f(0xffff_ffff_8100_0000, "[unknown]").is_kernel());
        assert!(!f(0x55f6_733d_01b0, "[unknown]").is_kernel());
        assert!(f(0xffff_ffff_c000_0000, "[nf_conntrack]").is_kernel());
        assert!(!f(0x7fff_0000_1000, "[vdso]").is_kernel());
    }

    #[test]
    fn garbage_lines_are_counted_not_fatal() {
        let p = parse("Warning: something\n\tnot a frame\n");
        assert_eq!(p.samples.len(), 0);
        assert_eq!(p.skipped_lines, 2);
    }
}
