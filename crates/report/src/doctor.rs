//! The "Doctor findings" section: what `perflab doctor` found on the host during the
//! run, by finding id (`perflab_analysis::doctor` reads the trials' `doctor.json` and
//! groups the findings; this module adds the config labels).

use perflab_analysis::doctor::{DoctorRow, DoctorSection};

use crate::data::ReportData;

/// The section, or `None` when no trial of the run has a `doctor.json`.
pub fn section(d: &ReportData) -> Option<DoctorSection> {
    perflab_analysis::doctor::by_finding(&d.doctor, d.export.trials.len())
}

/// The configs a row was seen in: their labels, or `all N configs`.
pub fn configs(d: &ReportData, r: &DoctorRow) -> String {
    if d.configs.len() > 1 && r.configs.len() == d.configs.len() {
        return format!("all {} configs", d.configs.len());
    }
    r.configs
        .iter()
        .map(|c| d.config_label(*c))
        .collect::<Vec<_>>()
        .join(", ")
}
