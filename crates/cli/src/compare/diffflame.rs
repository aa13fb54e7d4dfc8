//! `perflab compare ... --flamegraph-diff FILE.svg`: the differential flame graph of the
//! two sides' profiled trials (`perflab_analysis::diffprof`, drawn by
//! `perflab_report::diffflame`), written for every form of compare — `A B` of one run or
//! two, and `RUN --baseline k=v`, where each candidate config gets its own file.

use std::path::{Path, PathBuf};

use anyhow::Context;
use perflab_analysis::diffprof::{profiled, DiffProfile};
use perflab_report::diffflame::{svg, Shade};
use perflab_store::{ExportedTrial, RunId, Store};

/// One side: a config of a stored run, and how it is named.
pub struct DiffSide<'a> {
    pub run: RunId,
    pub config: u32,
    pub label: &'a str,
}

/// The ok and failed trials of a config of a run.
fn trials(store: &Store, run: RunId, config: u32) -> anyhow::Result<Vec<ExportedTrial>> {
    let export = store
        .export_run(run)
        .with_context(|| format!("cannot read run {run}"))?;
    Ok(export
        .trials
        .into_iter()
        .filter(|t| t.config == config)
        .collect())
}

/// Draws the differential flame graph of `cand` against `base` into `path`, frames
/// coloured at `alpha`; says on stderr where it went and which frames changed.
pub fn write(
    store: &Store,
    base: &DiffSide<'_>,
    cand: &DiffSide<'_>,
    path: &Path,
    alpha: f64,
) -> anyhow::Result<()> {
    let (b, c) = (
        trials(store, base.run, base.config)?,
        trials(store, cand.run, cand.config)?,
    );
    let Some(diff) = DiffProfile::of(&b, &c) else {
        anyhow::bail!(
            "no differential flame graph: it needs at least 2 profiled ok trials on each side, and {} has {}, {} has {} (profile every repetition: [profile] repetitions = \"all\")",
            base.label,
            profiled(&b).len(),
            cand.label,
            profiled(&c).len()
        );
    };
    let title = format!("{} vs {}", cand.label, base.label);
    std::fs::write(path, svg(&diff, alpha, &title))
        .with_context(|| format!("cannot write {}", path.display()))?;
    let named = |shade: Shade| -> Vec<&str> {
        diff.judge(alpha)
            .filter(|f| Shade::of(f, alpha) == shade)
            .filter_map(|f| f.path.last().map(String::as_str))
            .collect()
    };
    let (more, less) = (named(Shade::More), named(Shade::Less));
    eprintln!(
        "differential flame graph ({title}): {} · {} frames coloured (more: {}; less: {})",
        path.display(),
        more.len() + less.len(),
        list(&more),
        list(&less)
    );
    Ok(())
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// The file of candidate `n` of `count`: FILE itself for one, else `STEM-N.EXT`.
pub fn nth_path(path: &Path, n: u32, count: usize) -> PathBuf {
    if count <= 1 {
        return path.to_path_buf();
    }
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("diff");
    let ext = path.extension().and_then(|s| s.to_str()).unwrap_or("svg");
    path.with_file_name(format!("{stem}-{n}.{ext}"))
}
