//! The why block in the terminal: under every comparison `perflab compare`, `perflab
//! run` and `perflab bench` print, the differences that explain the verdict
//! (`perflab_analysis::why`), or the one sentence that says nothing passed. The
//! evidence is gathered from export documents of the runs, loaded here once per run.

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use perflab_analysis::why::{self, Adjust, WhyBlock, WhyOptions, WhySide};
use perflab_store::{RunExport, RunId, Store};

use crate::format::STYLE;

/// `--why-adjust`: how the why block adjusts its p-values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AdjustArg {
    /// Holm: the family-wise error rate (A against A lists nothing in 1 − α of runs).
    Holm,
    /// Benjamini–Hochberg: the false discovery rate.
    Bh,
}

impl From<AdjustArg> for Adjust {
    fn from(a: AdjustArg) -> Adjust {
        match a {
            AdjustArg::Holm => Adjust::Holm,
            AdjustArg::Bh => Adjust::BenjaminiHochberg,
        }
    }
}

/// The runs a command's comparisons read, each exported once.
#[derive(Default)]
pub struct Exports(Vec<RunExport>);

impl Exports {
    /// The export of run `id` (loaded on first use).
    pub fn get(&mut self, store: &Store, id: RunId) -> anyhow::Result<&RunExport> {
        let i = match self.0.iter().position(|e| e.run.id == id) {
            Some(i) => i,
            None => {
                self.0.push(store.export_run(id)?);
                self.0.len() - 1
            }
        };
        Ok(&self.0[i])
    }

    /// The why block of config `b` (run, ordinal) against config `a`.
    pub fn block(
        &mut self,
        store: &Store,
        a: (RunId, u32),
        b: (RunId, u32),
        opts: &WhyOptions,
    ) -> anyhow::Result<WhyBlock> {
        self.get(store, a.0)?;
        self.get(store, b.0)?;
        let find = |id: RunId| self.0.iter().find(|e| e.run.id == id);
        let (ea, eb) = (find(a.0), find(b.0));
        let (Some(ea), Some(eb)) = (ea, eb) else {
            anyhow::bail!("run {} or {} vanished from the store", a.0, b.0);
        };
        Ok(why::explain(
            WhySide {
                export: ea,
                config: a.1,
            },
            WhySide {
                export: eb,
                config: b.1,
            },
            opts,
        ))
    }
}

/// Prints the block: its headline, and a table of the reasons when there are any.
pub fn print(block: &WhyBlock, confidence: f64) {
    println!("{}", block.headline());
    if block.reasons.is_empty() {
        return;
    }
    println!("{}", table(block, confidence));
}

/// The reasons as a table: kind, name, both sides, the change with its interval, the
/// adjusted p.
pub fn table(block: &WhyBlock, confidence: f64) -> Table {
    let mut t = Table::new();
    t.load_style(STYLE)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec![
        "kind".to_string(),
        "what".to_string(),
        "baseline".to_string(),
        "candidate".to_string(),
        format!(
            "change [{} CI]",
            perflab_analysis::format::level(confidence)
        ),
        "p (adjusted)".to_string(),
    ]);
    let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
    for r in &block.reasons {
        let change = if r.change.is_some() {
            r.change_text()
        } else {
            "differs".to_string()
        };
        t.add_row(vec![
            Cell::new(r.kind_text()),
            Cell::new(&r.name),
            right(r.baseline_text()),
            right(r.candidate_text()),
            Cell::new(change),
            right(r.p_text()),
        ]);
    }
    t
}
