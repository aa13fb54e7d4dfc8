//! The thresholds section, shared by the HTML and Markdown reports: one row per
//! threshold (`perflab_analysis::thresholds`), the cells as plain text.

use perflab_analysis::thresholds::ThresholdRow;

use crate::data::ReportData;

/// Column heads of the section.
pub const HEAD: [&str; 4] = ["threshold", "failed in", "worst trial", "past the limit by"];

/// The cells of one row, as text (the caller escapes them).
pub fn cells(d: &ReportData, r: &ThresholdRow) -> [String; 4] {
    let unit = if r.unit.is_empty() {
        String::new()
    } else {
        format!(" {}", r.unit)
    };
    let worst = if r.failed == 0 {
        "—".to_string()
    } else {
        format!(
            "trial {} ({}): {:.4}{unit}",
            r.worst_trial,
            d.config_label(r.worst_config),
            r.worst_value
        )
    };
    let by = if r.failed == 0 {
        "—".to_string()
    } else {
        format!("{:.0} %", r.worst_by * 100.0)
    };
    [
        r.threshold.clone(),
        format!("{} of {} trials", r.failed, r.trials),
        worst,
        by,
    ]
}
