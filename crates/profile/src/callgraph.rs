//! Callers and callees of one routine, from the recorded call chains.
//!
//! Each sample whose chain holds the routine counts once (at its innermost
//! occurrence, so recursion is not counted twice): toward the caller one frame up,
//! toward the callee one frame down, or as "self" when the routine is the leaf.
//! Without call graphs (`--no-call-graph`) only the self samples are known.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::reduce::ReportOptions;
use crate::script::Sample;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallGraph {
    pub routine: String,
    /// Samples counted after the filters (the denominator of the percentages).
    pub samples: u64,
    /// Samples with the routine as the sampled function.
    pub self_samples: u64,
    pub self_pct: f64,
    /// Samples with the routine anywhere on the stack.
    pub total_samples: u64,
    pub total_pct: f64,
    /// Who called it, with the share of the routine's total samples.
    pub callers: Vec<Edge>,
    /// What it called, with the share of the routine's total samples.
    pub callees: Vec<Edge>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    pub name: String,
    pub samples: u64,
    pub pct: f64,
}

fn edges(m: HashMap<String, u64>, whole: u64) -> Vec<Edge> {
    let mut v: Vec<Edge> = m
        .into_iter()
        .map(|(name, samples)| Edge {
            name,
            samples,
            pct: if whole == 0 {
                0.0
            } else {
                100.0 * samples as f64 / whole as f64
            },
        })
        .collect();
    v.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.name.cmp(&b.name)));
    v
}

/// Callers and callees of `routine` (matched on the symbol name).
pub fn call_graph(samples: &[Sample], routine: &str, o: &ReportOptions) -> CallGraph {
    let (mut total, mut inclusive, mut own) = (0u64, 0u64, 0u64);
    let mut callers: HashMap<String, u64> = HashMap::new();
    let mut callees: HashMap<String, u64> = HashMap::new();
    for s in samples.iter().filter(|s| o.selects(s)) {
        total += 1;
        let Some(i) = s
            .frames
            .iter()
            .position(|f| f.sym.as_deref() == Some(routine))
        else {
            continue;
        };
        inclusive += 1;
        if i == 0 {
            own += 1;
        } else {
            *callees.entry(s.frames[i - 1].name()).or_default() += 1;
        }
        if let Some(up) = s.frames.get(i + 1) {
            *callers.entry(up.name()).or_default() += 1;
        }
    }
    let p = |n: u64| {
        if total == 0 {
            0.0
        } else {
            100.0 * n as f64 / total as f64
        }
    };
    CallGraph {
        routine: routine.to_string(),
        samples: total,
        self_samples: own,
        self_pct: p(own),
        total_samples: inclusive,
        total_pct: p(inclusive),
        callers: edges(callers, inclusive),
        callees: edges(callees, inclusive),
    }
}
