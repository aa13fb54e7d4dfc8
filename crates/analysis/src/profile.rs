//! A profiled trial's top functions, from its profile artifact (the `perflab profile
//! --json` document), read loosely so that a newer document with more fields still
//! reads. The artifact is [`ARTIFACT_PROFILE`]; runs stored by `perflab profile` before
//! the name was shared called it [`LEGACY_ARTIFACT_PROFILE`], and they still read.

use perflab_store::vocab::ARTIFACT_PROFILE;
use perflab_store::{ExportedArtifact, ExportedTrial};
use serde_json::Value;

/// What older `perflab profile` runs named their profile artifact.
pub const LEGACY_ARTIFACT_PROFILE: &str = "report.json";

/// The first ok trial with a profile artifact, and the artifact — by its name, or by
/// the legacy name when no trial has the current one.
pub fn profile_artifact(trials: &[ExportedTrial]) -> Option<(&ExportedTrial, &ExportedArtifact)> {
    [ARTIFACT_PROFILE, LEGACY_ARTIFACT_PROFILE]
        .into_iter()
        .find_map(|name| find_artifact(trials, name))
}

/// The first ok trial with an artifact called `name`, and the artifact.
pub fn find_artifact<'a>(
    trials: &'a [ExportedTrial],
    name: &str,
) -> Option<(&'a ExportedTrial, &'a ExportedArtifact)> {
    trials
        .iter()
        .filter(|t| t.status == "ok")
        .find_map(|t| t.artifacts.iter().find(|a| a.name == name).map(|a| (t, a)))
}

/// One function: (name, image, share of all samples in %).
#[derive(Debug, Clone, PartialEq)]
pub struct TopFunction {
    pub name: String,
    pub image: String,
    pub pct_total: f64,
}

/// The `n` functions with the largest share of all samples, largest first.
pub fn top_functions(profile_json: &[u8], n: usize) -> Vec<TopFunction> {
    let Ok(doc) = serde_json::from_slice::<Value>(profile_json) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for img in doc["images"].as_array().into_iter().flatten() {
        let image = img["name"].as_str().unwrap_or("?").to_string();
        for f in img["functions"].as_array().into_iter().flatten() {
            out.push(TopFunction {
                name: f["name"].as_str().unwrap_or("?").to_string(),
                image: image.clone(),
                pct_total: f["pct_total"].as_f64().unwrap_or(0.0),
            });
        }
    }
    out.sort_by(|a, b| b.pct_total.total_cmp(&a.pct_total));
    out.truncate(n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_functions_are_sorted_across_images_and_bad_json_gives_none() {
        let doc = br#"{"images":[{"name":"a","functions":[{"name":"f","pct_total":1.0}]},
            {"name":"b","functions":[{"name":"g","pct_total":3.0},{"name":"h","pct_total":2.0}]}]}"#;
        let top = top_functions(doc, 2);
        let names: Vec<&str> = top.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["g", "h"]);
        assert_eq!(top[0].image, "b");
        assert!(top_functions(b"not json", 5).is_empty());
    }
}
