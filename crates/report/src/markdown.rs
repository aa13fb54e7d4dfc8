//! The GitHub-flavoured Markdown report: pipe tables only (they render on GitHub,
//! in most blog engines and read fine as plain text), the experiment file folded in
//! a `<details>` block, failed and interrupted trials listed with their errors.

use std::fmt::Write;

use perflab_analysis::interaction::grid;

use crate::data::ReportData;
use crate::format::{bytes, duration, md_cell};
use perflab_analysis::format::{arrow, cv, mean_ci, num, ratio_ci, sig, value};

/// The whole Markdown document.
pub fn render(d: &ReportData) -> String {
    let mut out = String::new();
    header(&mut out, d);
    results(&mut out, d);
    comparison(&mut out, d);
    crate::why::markdown(&mut out, d);
    interaction(&mut out, d);
    agents(&mut out, d);
    doctor(&mut out, d);
    thresholds(&mut out, d);
    problems(&mut out, d);
    out
}

fn table(out: &mut String, head: &[&str], rows: &[Vec<String>]) {
    let _ = writeln!(out, "| {} |", head.join(" | "));
    let _ = writeln!(
        out,
        "|{}|",
        head.iter().map(|_| "---").collect::<Vec<_>>().join("|")
    );
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out.push('\n');
}

fn opt(s: &Option<String>) -> String {
    md_cell(s.as_deref().unwrap_or("—"))
}

fn header(out: &mut String, d: &ReportData) {
    let r = &d.export.run;
    let h = &d.export.host;
    let _ = writeln!(out, "# {}\n", md_cell(&r.name));
    let count = |s: &str| d.trials_with(s).count();
    table(
        out,
        &["run", "kind", "status", "started", "duration", "trials"],
        &[vec![
            r.id.to_string(),
            md_cell(&r.kind),
            md_cell(&r.status),
            md_cell(&r.started_at),
            d.duration_s().map(duration).unwrap_or_else(|| "—".into()),
            format!(
                "{} ok · {} failed · {} interrupted",
                count("ok"),
                count("failed"),
                count("interrupted")
            ),
        ]],
    );
    out.push_str("## Host\n\n");
    table(
        out,
        &["host", "CPU", "cores", "memory", "kernel", "governor"],
        &[vec![
            md_cell(&h.hostname),
            opt(&h.cpu_model),
            h.cores.map(|c| c.to_string()).unwrap_or_else(|| "—".into()),
            h.memory_bytes.map(bytes).unwrap_or_else(|| "—".into()),
            opt(&h.kernel),
            opt(&h.governor),
        ]],
    );
    if d.configs.iter().any(|c| c.label != c.params) {
        let rows: Vec<Vec<String>> = d
            .configs
            .iter()
            .map(|c| vec![md_cell(&c.label), md_cell(&c.params)])
            .collect();
        table(out, &["config", "parameters"], &rows);
    }
    if let Some(text) = &r.file_text {
        let name = r.file_path.as_deref().unwrap_or("experiment file");
        let fence = if text.contains("```") { "~~~~" } else { "```" };
        let _ = writeln!(
            out,
            "<details><summary>{}</summary>\n\n{fence}toml\n{}\n{fence}\n\n</details>\n",
            md_cell(name),
            text.trim_end()
        );
    }
}

fn results(out: &mut String, d: &ReportData) {
    let level = d.level();
    let _ = writeln!(out, "## Results\n");
    let mut rows = Vec::new();
    // A suite run's `score` copies one of the item's metrics: one row, named for both.
    let suite = crate::html::suite::is_suite(d);
    for c in &d.configs {
        let twin = if suite {
            crate::html::suite::score_twin(c)
        } else {
            None
        };
        for m in &c.metrics {
            let Some(s) = &m.summary else { continue };
            if Some(m.name.as_str()) == twin {
                continue;
            }
            let name = match twin {
                Some(t) if m.name == "score" => format!("{t} (score)"),
                _ => m.name.clone(),
            };
            rows.push(vec![
                md_cell(&c.label),
                format!("{} {}", md_cell(&name), arrow(&m.better)),
                md_cell(&mean_ci(s, &m.unit)),
                s.n.to_string(),
                cv(s),
                md_cell(&value(s.median, &m.unit)),
            ]);
        }
    }
    if rows.is_empty() {
        out.push_str("No successful trial measured anything.\n\n");
        return;
    }
    let mean_head = format!("mean ± {level} CI");
    table(
        out,
        &["config", "metric", &mean_head, "n", "CV", "median"],
        &rows,
    );
}

fn comparison(out: &mut String, d: &ReportData) {
    let Some(title) = &d.compare_title else {
        return;
    };
    if d.comparisons.is_empty() {
        return;
    }
    let level = d.level();
    let _ = writeln!(out, "## Comparison ({})\n", md_cell(title));
    let rows: Vec<Vec<String>> = d
        .comparisons
        .iter()
        .filter(|c| c.shown())
        .map(|c| {
            let r = &c.row;
            let verdict = match r.class() {
                "better" => format!("**{}**", r.verdict_text()),
                "worse" => format!("**{}** ⚠", r.verdict_text()),
                _ => md_cell(&r.verdict_text()),
            };
            vec![
                md_cell(&c.candidate),
                md_cell(&r.name),
                md_cell(&value(r.baseline.mean, &r.unit)),
                md_cell(&value(r.candidate.mean, &r.unit)),
                r.ratio_text(),
                r.p_text(),
                verdict,
            ]
        })
        .collect();
    let ratio_head = format!("ratio [{level} CI]");
    table(
        out,
        &[
            "candidate",
            "metric",
            "baseline",
            "candidate mean",
            &ratio_head,
            "p (Welch)",
            "verdict",
        ],
        &rows,
    );
    let notes = crate::compare::notes(&d.comparisons);
    for line in &notes {
        let _ = writeln!(out, "- {}", md_cell(line));
    }
    if !notes.is_empty() {
        out.push('\n');
    }
}

fn interaction(out: &mut String, d: &ReportData) {
    let rows = grid(&d.samples, d.confidence);
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Ratio of ratios (interaction of the two factors)\n");
    let ci_head = format!("ratio of ratios [{} CI]", d.level());
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let i = &r.interaction;
            let rr = ratio_ci(i.ratio_of_ratios, i.ci_low, i.ci_high);
            vec![
                md_cell(&r.metric),
                md_cell(&r.effect),
                md_cell(&r.across),
                format!("{} / {}", sig(i.ratio_x.ratio), sig(i.ratio_y.ratio)),
                if r.significant() {
                    format!("**{rr}**")
                } else {
                    rr
                },
            ]
        })
        .collect();
    table(
        out,
        &["metric", "effect", "across", "ratio / ratio", &ci_head],
        &rows,
    );
}

fn doctor(out: &mut String, d: &ReportData) {
    let Some(s) = crate::doctor::section(d) else {
        return;
    };
    let _ = writeln!(out, "## Doctor findings\n");
    let _ = writeln!(
        out,
        "From `perflab doctor`'s rules, stored with {} of {} trials (`doctor.json`); each rule, \
         its threshold and its fix: docs/doctor.md.\n",
        s.diagnosed, s.trials
    );
    if s.rows.is_empty() {
        out.push_str("Nothing found.\n\n");
        return;
    }
    let rows: Vec<Vec<String>> = s
        .rows
        .iter()
        .map(|r| {
            vec![
                if r.severity == "critical" {
                    "**critical**".into()
                } else {
                    md_cell(&r.severity)
                },
                md_cell(&r.id),
                s.seen(r),
                md_cell(&crate::doctor::configs(d, r)),
                format!("trial {}: {}", r.trial, md_cell(&r.evidence)),
                md_cell(&r.fix),
                md_cell(&r.doc),
            ]
        })
        .collect();
    table(
        out,
        &[
            "severity", "finding", "trials", "configs", "evidence", "fix", "docs",
        ],
        &rows,
    );
}

fn agents(out: &mut String, d: &ReportData) {
    let rows = crate::agents::rows(d);
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Agents\n");
    if let Some(s) = crate::agents::skew(d) {
        let _ = writeln!(out, "{s}\n");
    }
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| md_cell(c)).collect())
        .collect();
    table(out, &crate::agents::HEAD, &rows);
}

fn thresholds(out: &mut String, d: &ReportData) {
    if d.thresholds.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Thresholds\n\nJudged on each trial (`thresholds.json`); `perflab run` also judged \
         each config's CI bound.\n"
    );
    let rows: Vec<Vec<String>> = d
        .thresholds
        .iter()
        .map(|r| {
            crate::thresholds::cells(d, r)
                .iter()
                .map(|c| md_cell(c))
                .collect()
        })
        .collect();
    table(out, &crate::thresholds::HEAD, &rows);
}

fn problems(out: &mut String, d: &ReportData) {
    let bad: Vec<_> = d
        .export
        .trials
        .iter()
        .filter(|t| t.status != "ok")
        .collect();
    if bad.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Failed and interrupted trials\n");
    let rows: Vec<Vec<String>> = bad
        .iter()
        .map(|t| {
            vec![
                t.ordinal.to_string(),
                md_cell(d.config_label(t.config)),
                md_cell(&t.status),
                format!("{} s", num(t.duration_s)),
                md_cell(t.error.as_deref().unwrap_or("(no error recorded)")),
            ]
        })
        .collect();
    table(out, &["trial", "config", "status", "after", "error"], &rows);
}
