//! Named metrics parsed from a program's output: a regex's first capture group, or a
//! field of a JSON document.

use regex::Regex;

use crate::MetricValue;

/// Where a metric's value comes from. As data, a regex is its pattern (compiled again
/// when read back).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "SourceData", into = "SourceData")]
pub enum Source {
    /// First capture group of the first match, searched in stdout, then stderr.
    Regex(Regex),
    /// A dotted path (`a.b.0.c`) into the JSON on stdout (the whole output, or else
    /// the last line that parses as JSON).
    Json(String),
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum SourceData {
    Regex(String),
    Json(String),
}

impl TryFrom<SourceData> for Source {
    type Error = String;
    fn try_from(d: SourceData) -> Result<Source, String> {
        match d {
            SourceData::Regex(p) => Regex::new(&p)
                .map(Source::Regex)
                .map_err(|e| format!("regex {p:?}: {e}")),
            SourceData::Json(p) => Ok(Source::Json(p)),
        }
    }
}

impl From<Source> for SourceData {
    fn from(s: Source) -> SourceData {
        match s {
            Source::Regex(r) => SourceData::Regex(r.as_str().to_string()),
            Source::Json(p) => SourceData::Json(p),
        }
    }
}

impl PartialEq for Source {
    fn eq(&self, other: &Source) -> bool {
        match (self, other) {
            (Source::Regex(a), Source::Regex(b)) => a.as_str() == b.as_str(),
            (Source::Json(a), Source::Json(b)) => a == b,
            _ => false,
        }
    }
}

/// One metric to extract.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MetricSpec {
    pub name: String,
    pub unit: String,
    /// `higher` or `lower`.
    pub better: String,
    pub source: Source,
}

impl MetricSpec {
    /// Extracts the value, or says precisely why it could not.
    pub fn extract(&self, stdout: &str, stderr: &str) -> Result<MetricValue, String> {
        let raw = match &self.source {
            Source::Regex(re) => {
                let caps = re
                    .captures(stdout)
                    .or_else(|| re.captures(stderr))
                    .ok_or_else(|| {
                        format!(
                            "metric {:?}: regex /{}/ matched nothing in the output",
                            self.name,
                            re.as_str()
                        )
                    })?;
                let m = caps.get(1).ok_or_else(|| {
                    format!(
                        "metric {:?}: regex /{}/ has no capture group (put the number in parentheses)",
                        self.name,
                        re.as_str()
                    )
                })?;
                m.as_str().trim().to_string()
            }
            Source::Json(path) => {
                let doc = parse_json_output(stdout)
                    .ok_or_else(|| format!("metric {:?}: the output is not JSON", self.name))?;
                let v = json_path(&doc, path).ok_or_else(|| {
                    format!(
                        "metric {:?}: no field {path:?} in the JSON output",
                        self.name
                    )
                })?;
                match v {
                    serde_json::Value::Number(n) => n.to_string(),
                    serde_json::Value::String(s) => s.clone(),
                    other => {
                        return Err(format!(
                            "metric {:?}: field {path:?} is {other}, not a number",
                            self.name
                        ))
                    }
                }
            }
        };
        let value: f64 = raw
            .replace(',', "")
            .parse()
            .map_err(|_| format!("metric {:?}: {raw:?} is not a number", self.name))?;
        Ok(MetricValue::new(
            &self.name,
            &self.unit,
            value,
            &self.better,
        ))
    }
}

fn parse_json_output(s: &str) -> Option<serde_json::Value> {
    if let Ok(v) = serde_json::from_str(s.trim()) {
        return Some(v);
    }
    s.lines()
        .rev()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
        .filter(|v| v.is_object() || v.is_array())
}

/// Follows a dotted path; numeric segments index arrays.
pub fn json_path<'a>(v: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    path.split('.').try_fold(v, |cur, seg| match cur {
        serde_json::Value::Array(a) => a.get(seg.parse::<usize>().ok()?),
        serde_json::Value::Object(o) => o.get(seg),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(source: Source) -> MetricSpec {
        MetricSpec {
            name: "x".into(),
            unit: "u".into(),
            better: "higher".into(),
            source,
        }
    }

    #[test]
    fn regex_takes_first_group_from_stdout_then_stderr() {
        let s = spec(Source::Regex(Regex::new(r"rate: ([\d.]+)").unwrap()));
        assert_eq!(s.extract("rate: 12.5\n", "").unwrap().value, 12.5);
        assert_eq!(s.extract("", "rate: 3").unwrap().value, 3.0);
        assert!(s
            .extract("nothing", "")
            .unwrap_err()
            .contains("matched nothing"));
    }

    #[test]
    fn json_paths_follow_objects_and_arrays() {
        let s = spec(Source::Json("a.b.1".into()));
        assert_eq!(s.extract(r#"{"a":{"b":[1,2.5]}}"#, "").unwrap().value, 2.5);
        let s = spec(Source::Json("k".into()));
        assert_eq!(s.extract("log line\n{\"k\": 7}\n", "").unwrap().value, 7.0);
        assert!(s.extract("{\"j\":1}", "").unwrap_err().contains("no field"));
    }
}
