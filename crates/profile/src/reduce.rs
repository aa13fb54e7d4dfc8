//! The reducer: samples → the ipreduce-style report (per image, then per function,
//! with "% of image" and "% of total", a threshold, a kernel/user mode filter, idle
//! excluded by default), and the top functions used as stored metrics.
//!
//! Shares are of *samples*, as in the original reducer: with a fixed-frequency
//! software clock (`cpu-clock`) each sample stands for the same time; with `cycles` in
//! frequency mode perf adjusts the period, so sample shares are close to, not equal
//! to, period-weighted shares.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::{ProfileError, Result};
use crate::script::Sample;

/// Which samples count: kernel code, user code, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Mode {
    #[serde(rename = "k")]
    Kernel,
    #[serde(rename = "u")]
    User,
    #[default]
    #[serde(rename = "ku")]
    Both,
}

impl Mode {
    pub fn as_str(&self) -> &'static str {
        match self {
            Mode::Kernel => "k",
            Mode::User => "u",
            Mode::Both => "ku",
        }
    }

    fn admits(&self, kernel: bool) -> bool {
        match self {
            Mode::Kernel => kernel,
            Mode::User => !kernel,
            Mode::Both => true,
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = ProfileError;
    fn from_str(s: &str) -> Result<Mode> {
        match s {
            "k" | "kernel" => Ok(Mode::Kernel),
            "u" | "user" => Ok(Mode::User),
            "ku" | "uk" | "both" => Ok(Mode::Both),
            _ => Err(ProfileError::BadInput(format!(
                "mode {s:?}: expected k (kernel), u (user) or ku (both)"
            ))),
        }
    }
}

/// How to reduce a profile.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOptions {
    /// Rows below this share of the total (percent) are left out.
    pub threshold: f64,
    pub mode: Mode,
    /// Count the idle task (pid 0) too.
    pub include_idle: bool,
    /// Only samples of this command name.
    pub comm: Option<String>,
    /// Only samples of this process.
    pub pid: Option<i32>,
}

impl Default for ReportOptions {
    fn default() -> ReportOptions {
        ReportOptions {
            threshold: 1.0,
            mode: Mode::Both,
            include_idle: false,
            comm: None,
            pid: None,
        }
    }
}

impl ReportOptions {
    pub fn validate(&self) -> Result<()> {
        if !(0.0..=100.0).contains(&self.threshold) {
            return Err(ProfileError::BadInput(format!(
                "threshold {}: expected a percentage in [0, 100]",
                self.threshold
            )));
        }
        Ok(())
    }

    /// The filters that do not depend on where the sample landed (idle, comm, pid).
    pub(crate) fn selects_task(&self, s: &Sample) -> bool {
        (self.include_idle || !s.is_idle())
            && self.comm.as_ref().is_none_or(|c| *c == s.comm)
            && self.pid.is_none_or(|p| p == s.pid)
    }

    /// All filters: task filters and the kernel/user mode.
    pub(crate) fn selects(&self, s: &Sample) -> bool {
        self.selects_task(s) && self.mode.admits(s.is_kernel())
    }
}

/// The reduced profile (the `perflab profile --json` document).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The event perf sampled on (`cycles`, or `cpu-clock` where there is no PMU).
    pub event: String,
    /// Samples counted (after the idle, comm, pid and mode filters).
    pub samples: u64,
    /// Kernel and user shares (percent) of the samples that pass the idle, comm and pid
    /// filters, whatever the mode: the split at the top of the report.
    pub kernel_pct: f64,
    pub user_pct: f64,
    /// `k`, `u` or `ku`.
    pub mode: Mode,
    /// Rows under this percentage of the total are left out.
    pub threshold: f64,
    pub images: Vec<ImageShare>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageShare {
    /// Short name (file name of the image, or perf's `[kernel.kallsyms]`).
    pub name: String,
    /// The image as perf named it (full path).
    pub path: String,
    pub samples: u64,
    pub pct_total: f64,
    pub functions: Vec<FunctionShare>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionShare {
    pub name: String,
    pub samples: u64,
    pub pct_image: f64,
    pub pct_total: f64,
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Reduces samples into the report.
pub fn report(event: &str, samples: &[Sample], o: &ReportOptions) -> Report {
    let (mut kernel, mut user) = (0u64, 0u64);
    // image path → (samples, function → samples)
    let mut images: HashMap<&str, (u64, HashMap<String, u64>)> = HashMap::new();
    let mut total = 0u64;
    for s in samples.iter().filter(|s| o.selects_task(s)) {
        let k = s.is_kernel();
        if k {
            kernel += 1;
        } else {
            user += 1;
        }
        if !o.mode.admits(k) {
            continue;
        }
        total += 1;
        let (dso, func) = match s.leaf() {
            Some(f) => (f.dso.as_str(), f.sym.clone().unwrap_or("[unknown]".into())),
            None => ("[unknown]", "[unknown]".to_string()),
        };
        let e = images.entry(dso).or_default();
        e.0 += 1;
        *e.1.entry(func).or_default() += 1;
    }
    let mut rows: Vec<ImageShare> = images
        .into_iter()
        .filter(|(_, (n, _))| pct(*n, total) >= o.threshold)
        .map(|(path, (n, funcs))| {
            let mut functions: Vec<FunctionShare> = funcs
                .into_iter()
                .filter(|(_, f)| pct(*f, total) >= o.threshold)
                .map(|(name, f)| FunctionShare {
                    name,
                    samples: f,
                    pct_image: pct(f, n),
                    pct_total: pct(f, total),
                })
                .collect();
            functions.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.name.cmp(&b.name)));
            ImageShare {
                name: image_name(path),
                path: path.to_string(),
                samples: n,
                pct_total: pct(n, total),
                functions,
            }
        })
        .collect();
    rows.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.path.cmp(&b.path)));
    Report {
        event: event.to_string(),
        samples: total,
        kernel_pct: pct(kernel, kernel + user),
        user_pct: pct(user, kernel + user),
        mode: o.mode,
        threshold: o.threshold,
        images: rows,
    }
}

fn image_name(dso: &str) -> String {
    crate::script::Frame {
        ip: 0,
        sym: None,
        dso: dso.to_string(),
        offset: None,
    }
    .image()
    .to_string()
}

/// The `n` functions with the largest share of all non-idle samples (percent), across
/// images. A function without a symbol is named `[image]`.
pub fn top_functions(samples: &[Sample], n: usize) -> Vec<(String, f64)> {
    let o = ReportOptions::default();
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut total = 0u64;
    for s in samples.iter().filter(|s| o.selects(s)) {
        total += 1;
        if let Some(f) = s.leaf() {
            *counts.entry(f.name()).or_default() += 1;
        }
    }
    let mut v: Vec<(String, u64)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.into_iter()
        .take(n)
        .map(|(name, c)| (name, pct(c, total)))
        .collect()
}
