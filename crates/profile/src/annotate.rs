//! The per-routine hot-spot view: the share of samples on each instruction of one
//! function, from `perf annotate --stdio` (disassembly interleaved with source lines),
//! with the hottest instructions marked — those that together hold half of the
//! routine's samples.
//!
//! When perf cannot disassemble (kernel code without a vmlinux or /proc/kcore access,
//! a binary that is gone), the view falls back to the sampled offsets inside the
//! symbol that `perf script` reported (`symoff`): the same shares, without the
//! instruction text, and says so in `note`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::error::{ProfileError, Result};
use crate::reduce::ReportOptions;
use crate::script::Sample;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoutineView {
    pub routine: String,
    /// The image the routine lives in.
    pub image: String,
    /// Samples inside the routine.
    pub samples: u64,
    /// `perf annotate` or `sample offsets`.
    pub source: String,
    /// Why the fallback was used, if it was.
    pub note: Option<String>,
    pub lines: Vec<InstructionShare>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstructionShare {
    /// Address (perf annotate) or offset in the symbol (fallback).
    pub addr: u64,
    /// Percent of the routine's samples.
    pub pct: f64,
    /// The instruction, as disassembled (empty in the fallback).
    pub asm: String,
    /// The source line it was compiled from, where debug info says.
    pub source_line: Option<String>,
    /// One of the instructions that together hold half of the routine's samples.
    pub hot: bool,
}

fn header_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"Disassembly of (?P<image>\S+) for (?P<event>\S+) \((?P<n>\d+) samples")
            .expect("valid regex")
    })
}

fn insn_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^\s*(?P<pct>\d+(?:\.\d+)?)\s*:\s+(?P<addr>[0-9a-f]+):\s*(?P<asm>.*?)\s*$")
            .expect("valid regex")
    })
}

fn source_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^\s*:\s*(?:\d+\s+)?(?P<src>.*?)\s*$").expect("valid regex"))
}

/// Parses `perf annotate --stdio` output for one symbol (the first block, when perf
/// printed several symbols of that name).
pub fn parse_annotate(routine: &str, text: &str) -> Option<RoutineView> {
    let mut view: Option<RoutineView> = None;
    let mut source_line: Option<String> = None;
    for line in text.lines() {
        if let Some(c) = header_re().captures(line) {
            if view.is_some() {
                break;
            }
            view = Some(RoutineView {
                routine: routine.to_string(),
                image: c["image"].to_string(),
                samples: c["n"].parse().unwrap_or(0),
                source: "perf annotate".into(),
                note: None,
                lines: Vec::new(),
            });
            continue;
        }
        let Some(v) = view.as_mut() else { continue };
        if let Some(c) = insn_re().captures(line) {
            v.lines.push(InstructionShare {
                addr: u64::from_str_radix(&c["addr"], 16).unwrap_or(0),
                pct: c["pct"].parse().unwrap_or(0.0),
                asm: c["asm"].to_string(),
                source_line: source_line.clone(),
                hot: false,
            });
        } else if let Some(c) = source_re().captures(line) {
            let src = c["src"].trim();
            let is_label = src.ends_with(">:") || src.starts_with("Disassembly of section");
            if !src.is_empty() && !is_label {
                source_line = Some(src.to_string());
            }
        }
    }
    let mut v = view?;
    if v.lines.is_empty() {
        return None;
    }
    mark_hot(&mut v.lines);
    Some(v)
}

/// Marks the fewest instructions that together hold at least half of the samples.
pub fn mark_hot(lines: &mut [InstructionShare]) {
    let total: f64 = lines.iter().map(|l| l.pct).sum();
    let mut order: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].pct > 0.0).collect();
    order.sort_by(|&a, &b| lines[b].pct.total_cmp(&lines[a].pct).then(a.cmp(&b)));
    let mut acc = 0.0;
    for i in order {
        if acc >= total / 2.0 {
            break;
        }
        acc += lines[i].pct;
        lines[i].hot = true;
    }
}

/// The view from the sampled offsets (no disassembly).
pub fn from_samples(
    samples: &[Sample],
    routine: &str,
    o: &ReportOptions,
    note: Option<String>,
) -> Result<RoutineView> {
    let mut offsets: BTreeMap<u64, u64> = BTreeMap::new();
    let mut image = String::new();
    let mut n = 0u64;
    for s in samples.iter().filter(|s| o.selects(s)) {
        let Some(f) = s.leaf() else { continue };
        if f.sym.as_deref() != Some(routine) {
            continue;
        }
        n += 1;
        image = f.image().to_string();
        *offsets.entry(f.offset.unwrap_or(0)).or_default() += 1;
    }
    if n == 0 {
        return Err(ProfileError::NoSuchRoutine(routine.to_string()));
    }
    let mut lines: Vec<InstructionShare> = offsets
        .into_iter()
        .map(|(off, c)| InstructionShare {
            addr: off,
            pct: 100.0 * c as f64 / n as f64,
            asm: String::new(),
            source_line: None,
            hot: false,
        })
        .collect();
    mark_hot(&mut lines);
    Ok(RoutineView {
        routine: routine.to_string(),
        image,
        samples: n,
        source: "sample offsets".into(),
        note,
        lines,
    })
}

/// Runs `perf annotate` on the recording; falls back to the sampled offsets.
pub fn routine(
    perf: &Path,
    data: Option<&Path>,
    samples: &[Sample],
    routine: &str,
    o: &ReportOptions,
) -> Result<RoutineView> {
    // Samples first: an unknown routine is bad input whatever perf annotate says.
    let fallback = from_samples(samples, routine, o, None)?;
    let Some(data) = data else {
        return Ok(RoutineView {
            note: Some("no perf.data to disassemble; shares by offset in the symbol".into()),
            ..fallback
        });
    };
    let out = std::process::Command::new(perf)
        .arg("annotate")
        .arg("--stdio")
        .arg("-i")
        .arg(data)
        .arg(routine)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| ProfileError::io("cannot run perf annotate", e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    match parse_annotate(routine, &text) {
        Some(v) => Ok(v),
        None => {
            let err = String::from_utf8_lossy(&out.stderr);
            let why = err
                .lines()
                .chain(text.lines())
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with("Error"))
                .unwrap_or("no disassembly")
                .to_string();
            Ok(RoutineView {
                note: Some(format!(
                    "perf annotate could not disassemble ({why}); shares by offset in the symbol"
                )),
                ..fallback
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANNOTATE: &str = " Percent |\tSource code & Disassembly of hot for cpu-clock (213 samples, percent: local period)
---------------------------------------------------------------------------------------------------
         :
         : 5    0000000000001190 <hot_function>:
         : 6    hot_function():
         : 12   for (unsigned long i = 0; i < n; i++) { x += i * i ^ (x >> 3); }
    0.00 :   1190:   test   %rdi,%rdi
    0.00 :   119f:   mov    %rcx,%rdx
   16.90 :   11a2:   shr    $0x3,%rdx
   13.62 :   11a9:   imul   %rax,%rsi
    7.04 :   11ad:   xor    %rsi,%rdx
   17.37 :   11b0:   add    %rdx,%rcx
   17.37 :   11b3:   add    $0x1,%rax
   11.74 :   11b7:   cmp    %rax,%rdi
   15.96 :   11ba:   jne    119f <hot_function+0xf>
         : 9    return x;
    0.00 :   11bf:   ret
";

    #[test]
    fn parses_perf_annotate_and_marks_the_hottest_half() {
        let v = parse_annotate("hot_function", ANNOTATE).expect("a view");
        assert_eq!(v.image, "hot");
        assert_eq!(v.samples, 213);
        assert_eq!(v.lines.len(), 10);
        let shr = &v.lines[2];
        assert_eq!((shr.addr, shr.asm.as_str()), (0x11a2, "shr    $0x3,%rdx"));
        assert_eq!(
            shr.source_line.as_deref(),
            Some("for (unsigned long i = 0; i < n; i++) { x += i * i ^ (x >> 3); }")
        );
        assert_eq!(v.lines[9].source_line.as_deref(), Some("return x;"));
        let hot: Vec<u64> = v.lines.iter().filter(|l| l.hot).map(|l| l.addr).collect();
        // 17.37 + 17.37 + 16.90 = 51.64 ≥ 50.
        assert_eq!(hot, vec![0x11a2, 0x11b0, 0x11b3]);
    }

    #[test]
    fn no_block_means_no_view() {
        assert!(parse_annotate("x", "Error:\nThe p.data data has no samples!\n").is_none());
    }
}
