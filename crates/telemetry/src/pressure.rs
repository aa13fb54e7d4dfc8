//! Pressure stall information: `/proc/pressure/{cpu,memory,io}` (Linux 4.20+, PSI).
//!
//! Each file has a `some` line (at least one runnable task was stalled on the
//! resource) and, for memory and io (and cpu since 5.13, where it reads zero at the
//! system level), a `full` line (every non-idle task was stalled):
//!
//! ```text
//! some avg10=37.91 avg60=35.51 avg300=22.28 total=15664476805
//! full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! ```
//!
//! The `avgN` figures are the kernel's own decaying averages (percent); `total` is the
//! stall time in µs since boot. Over a window perflab chooses (a find-max step), the
//! share is the delta of `total` over the window's wall time ([`stall_share`]), exact
//! where the averages would blur neighbouring steps together.
//!
//! A kernel without PSI (CONFIG_PSI off, or booted with `psi=0`, where the files exist
//! but reading them fails with EOPNOTSUPP) has no pressure: [`read_pressure`] says so
//! as a reason ("not available"), never as an error — it is a figure missing, not a
//! failure of the run.

use std::io;
use std::path::Path;

use crate::error::ParseError;

/// One line of a pressure file.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PsiLine {
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    /// Stall time since boot, µs.
    pub total_us: u64,
}

/// One pressure file: `some`, and `full` where the kernel writes it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pressure {
    pub some: PsiLine,
    pub full: Option<PsiLine>,
}

/// The three resources at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PressureSet {
    pub cpu: Pressure,
    pub memory: Pressure,
    pub io: Pressure,
}

/// Parses one `/proc/pressure/*` file; `file` names it in errors.
pub fn parse_pressure(file: &str, text: &str) -> Result<Pressure, ParseError> {
    let mut some = None;
    let mut full = None;
    for (i, line) in text.lines().enumerate() {
        let mut f = line.split_ascii_whitespace();
        let slot = match f.next() {
            Some("some") => &mut some,
            Some("full") => &mut full,
            Some(other) => {
                return Err(ParseError::new(
                    file,
                    Some(i + 1),
                    format!("expected `some` or `full`, found `{other}`"),
                ))
            }
            None => continue,
        };
        let mut l = PsiLine::default();
        for kv in f {
            let Some((k, v)) = kv.split_once('=') else {
                return Err(ParseError::new(
                    file,
                    Some(i + 1),
                    format!("expected KEY=VALUE, found `{kv}`"),
                ));
            };
            let bad = || ParseError::new(file, Some(i + 1), format!("`{kv}` is not a number"));
            match k {
                "avg10" => l.avg10 = v.parse().map_err(|_| bad())?,
                "avg60" => l.avg60 = v.parse().map_err(|_| bad())?,
                "avg300" => l.avg300 = v.parse().map_err(|_| bad())?,
                "total" => l.total_us = v.parse().map_err(|_| bad())?,
                _ => {}
            }
        }
        *slot = Some(l);
    }
    let some = some.ok_or_else(|| ParseError::new(file, None, "no `some` line"))?;
    Ok(Pressure { some, full })
}

/// Reads the three files under `root` (`/proc`). `Err` is the reason there is no
/// pressure here (a kernel without PSI); a file that exists and does not parse is a
/// reason too, with the parser's words.
pub fn read_pressure(root: &Path) -> Result<PressureSet, String> {
    let one = |name: &str| -> Result<Pressure, String> {
        let path = root.join("pressure").join(name);
        match crate::snapshot::read_proc(&path) {
            Ok(text) => parse_pressure(&format!("/proc/pressure/{name}"), &text)
                .map_err(|e| format!("pressure: {e}")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(format!(
                "pressure: /proc/pressure/{name} not present (a kernel without PSI)"
            )),
            // psi=0 on the command line: the files exist, reading them fails.
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Err(format!(
                "pressure: PSI is disabled on this kernel (psi=0): /proc/pressure/{name}: {e}"
            )),
            Err(e) => Err(format!("pressure: cannot read /proc/pressure/{name}: {e}")),
        }
    };
    Ok(PressureSet {
        cpu: one("cpu")?,
        memory: one("memory")?,
        io: one("io")?,
    })
}

/// The share of `secs` of wall time the stall counter grew by between two reads
/// (0..=1; 0 when the window is empty or the counter went back).
pub fn stall_share(before: &PsiLine, after: &PsiLine, secs: f64) -> f64 {
    if secs <= 0.0 {
        return 0.0;
    }
    let us = after.total_us.saturating_sub(before.total_us) as f64;
    (us / 1e6 / secs).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPU: &str = "some avg10=37.91 avg60=35.51 avg300=22.28 total=15664476805\n\
                       full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";

    #[test]
    fn parses_some_and_full() {
        let p = parse_pressure("/proc/pressure/cpu", CPU).unwrap();
        assert_eq!(p.some.avg10, 37.91);
        assert_eq!(p.some.total_us, 15_664_476_805);
        assert_eq!(p.full.unwrap().total_us, 0);
        // A 4.20 kernel's cpu file has no `full` line.
        let old = parse_pressure("cpu", "some avg10=1.00 avg60=0.50 avg300=0.10 total=42\n");
        assert_eq!(old.unwrap().full, None);
    }

    #[test]
    fn a_malformed_file_names_the_file_and_line() {
        let e = parse_pressure("/proc/pressure/io", "some avg10=x total=1\n").unwrap_err();
        assert!(e.to_string().contains("/proc/pressure/io line 1"), "{e}");
        let e = parse_pressure("/proc/pressure/io", "").unwrap_err();
        assert!(e.to_string().contains("no `some` line"), "{e}");
    }

    #[test]
    fn no_pressure_directory_is_a_reason_not_an_error() {
        let dir = std::env::temp_dir().join(format!("perflab-psi-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let why = read_pressure(&dir).unwrap_err();
        assert!(why.contains("not present (a kernel without PSI)"), "{why}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_share_is_the_counter_delta_over_the_window() {
        let a = PsiLine {
            total_us: 1_000_000,
            ..Default::default()
        };
        let b = PsiLine {
            total_us: 1_500_000,
            ..Default::default()
        };
        assert!((stall_share(&a, &b, 2.0) - 0.25).abs() < 1e-12);
        assert_eq!(stall_share(&b, &a, 2.0), 0.0);
        assert_eq!(stall_share(&a, &b, 0.0), 0.0);
    }
}
