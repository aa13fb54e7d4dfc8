//! The file form of a [`LoadSpec`]: an experiment's `[workload] kind = "http"` table (or
//! JSON), every field optional and loosely typed — durations as strings (`"10s"`) or
//! seconds, rates as numbers or `"2.5k"`, fractions as `"0.1%"` — converted and
//! validated by `TryFrom`. Unknown keys are rejected (a typo must not silently run a
//! different test).

use crate::error::SpecError;
use crate::slo::Slo;
use crate::spec::{parse_header, HttpVersion, IoChoice, LoadSpec, Ramp, RampOver};
use crate::threshold::Threshold;
use crate::units::{parse_duration, parse_fraction, parse_rate};
use perflab_units::Phrase;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The file form: every field optional, loosely typed, converted by `TryFrom`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSpec {
    kind: Option<String>,
    url: Option<String>,
    urls: Option<Vec<String>>,
    urls_file: Option<PathBuf>,
    random: Option<bool>,
    targets: Option<PathBuf>,
    targets_format: Option<String>,
    order: Option<String>,
    method: Option<String>,
    headers: Option<RawHeaders>,
    body: Option<String>,
    body_file: Option<PathBuf>,
    connections: Option<usize>,
    threads: Option<usize>,
    duration: Option<Number>,
    requests: Option<u64>,
    warmup: Option<Number>,
    rate: Option<Number>,
    max_connections: Option<usize>,
    ramp: Option<String>,
    ramp_over: Option<String>,
    step_duration: Option<Number>,
    find_max: Option<bool>,
    find_max_repetitions: Option<u32>,
    find_max_precision: Option<Number>,
    slo: Option<String>,
    #[serde(default)]
    thresholds: Vec<String>,
    unix_socket: Option<PathBuf>,
    max_error_rate: Option<Number>,
    keepalive: Option<bool>,
    pipeline: Option<usize>,
    timeout: Option<Number>,
    connect_timeout: Option<Number>,
    hdr_log: Option<PathBuf>,
    insecure: Option<bool>,
    cacert: Option<PathBuf>,
    io: Option<String>,
    http: Option<String>,
    streams: Option<usize>,
    h2_window: Option<u32>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Number {
    Num(f64),
    Text(String),
}

impl Number {
    fn text(&self) -> String {
        match self {
            Number::Num(n) => n.to_string(),
            Number::Text(s) => s.clone(),
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawHeaders {
    List(Vec<String>),
    Map(BTreeMap<String, String>),
}

impl TryFrom<RawSpec> for LoadSpec {
    type Error = SpecError;

    fn try_from(r: RawSpec) -> Result<Self, SpecError> {
        if let Some(k) = &r.kind {
            if k != "http" {
                return Err(SpecError::value("kind", k, "\"http\""));
            }
        }
        let d = LoadSpec::default();
        let dur = |field, v: &Option<Number>| -> Result<Option<Duration>, SpecError> {
            v.as_ref()
                .map(|v| parse_duration(field, &v.text()))
                .transpose()
        };
        let mut urls = r.urls.unwrap_or_default();
        urls.extend(r.url);
        let headers = headers(r.headers)?;
        let over = ramp_over(r.ramp_over.as_deref())?;
        let weighted = weighted(r.order.as_deref())?;
        let spec = LoadSpec {
            urls,
            urls_file: r.urls_file,
            random: r.random.unwrap_or(false) || r.order.as_deref() == Some("random"),
            weighted,
            targets: r.targets,
            targets_format: r
                .targets_format
                .as_deref()
                .map(crate::targets::TargetsFormat::parse)
                .transpose()?,
            method: r.method.unwrap_or(d.method),
            headers,
            body: r.body.map(String::into_bytes),
            body_file: r.body_file,
            connections: r.connections.unwrap_or(d.connections),
            threads: r.threads,
            duration: dur("duration", &r.duration)?,
            requests: r.requests,
            warmup: dur("warmup", &r.warmup)?.unwrap_or_default(),
            rate: r.rate.map(|v| parse_rate("rate", &v.text())).transpose()?,
            max_connections: r.max_connections,
            ramp: r.ramp.map(|s| Ramp::parse(&s, over)).transpose()?,
            step_duration: dur("step_duration", &r.step_duration)?,
            find_max: r.find_max.unwrap_or(false),
            find_max_repetitions: r.find_max_repetitions.unwrap_or(d.find_max_repetitions),
            find_max_precision: r
                .find_max_precision
                .map(|v| parse_fraction("find_max_precision", &v.text()))
                .transpose()?,
            slo: r.slo.map(|s| Slo::parse(&s)).transpose()?,
            thresholds: r
                .thresholds
                .iter()
                .map(|t| Threshold::parse(t))
                .collect::<Result<_, _>>()?,
            unix_socket: r.unix_socket,
            max_error_rate: match r.max_error_rate {
                Some(v) => parse_fraction("max_error_rate", &v.text())?,
                None => d.max_error_rate,
            },
            keepalive: r.keepalive.unwrap_or(true),
            pipeline: r.pipeline.unwrap_or(1),
            timeout: dur("timeout", &r.timeout)?.unwrap_or(d.timeout),
            connect_timeout: dur("connect_timeout", &r.connect_timeout)?
                .unwrap_or(d.connect_timeout),
            hdr_log: r.hdr_log,
            insecure: r.insecure.unwrap_or(false),
            cacert: r.cacert,
            io: r
                .io
                .as_deref()
                .map(IoChoice::parse)
                .transpose()?
                .unwrap_or_default(),
            http: r
                .http
                .as_deref()
                .map(HttpVersion::parse)
                .transpose()?
                .unwrap_or_default(),
            streams: r.streams.unwrap_or(d.streams),
            h2_window: r.h2_window.unwrap_or(d.h2_window),
        };
        spec.validate()?;
        Ok(spec)
    }
}

/// `headers`, as a list of `Name: value` lines or a table.
fn headers(raw: Option<RawHeaders>) -> Result<Vec<(String, String)>, SpecError> {
    Ok(match raw {
        None => Vec::new(),
        Some(RawHeaders::List(l)) => l
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<_, _>>()?,
        Some(RawHeaders::Map(m)) => m.into_iter().collect(),
    })
}

/// `ramp_over`: what a ramp varies (the rate unless told).
fn ramp_over(raw: Option<&str>) -> Result<RampOver, SpecError> {
    match raw {
        None | Some("rate") => Ok(RampOver::Rate),
        Some("connections") => Ok(RampOver::Connections),
        Some(o) => Err(SpecError::value(
            "ramp_over",
            o,
            "\"rate\" or \"connections\"",
        )),
    }
}

/// `order`: whether targets are drawn by weight.
fn weighted(order: Option<&str>) -> Result<bool, SpecError> {
    match order {
        None | Some("sequential" | "random") => Ok(false),
        Some("weighted") => Ok(true),
        Some(o) => Err(SpecError::value(
            "order",
            o,
            "sequential, random or weighted",
        )),
    }
}

impl LoadSpec {
    /// The spec from its file form (an experiment's table as JSON), with the typed
    /// error of the check — what `Deserialize` turns into text. A value of the wrong
    /// type or an unknown key is serde's message, as words.
    pub fn from_json(v: serde_json::Value) -> Result<LoadSpec, SpecError> {
        let raw: RawSpec =
            serde_json::from_value(v).map_err(|e| SpecError::Conflict(e.to_string().into()))?;
        LoadSpec::try_from(raw)
    }

    /// The table form of this spec — what [`LoadSpec`]'s `Deserialize` reads back —
    /// for sending a spec to another process (a distributed load's agents). Only what
    /// travels is written: thresholds and SLOs are judged where the results meet, and
    /// a spec that names local files (`urls_file`, `targets`, `body_file`, `cacert`,
    /// `unix_socket`, `hdr_log`) or is a ramp or a knee search cannot be sent (the
    /// error names the field).
    pub fn to_table(&self) -> Result<serde_json::Value, SpecError> {
        let local = [
            ("urls_file", self.urls_file.is_some()),
            ("targets", self.targets.is_some()),
            ("body_file", self.body_file.is_some()),
            ("cacert", self.cacert.is_some()),
            ("unix_socket", self.unix_socket.is_some()),
            ("hdr_log", self.hdr_log.is_some()),
            ("ramp", self.ramp.is_some()),
            ("find_max", self.find_max),
        ];
        if let Some((field, _)) = local.iter().find(|(_, set)| *set) {
            return Err(SpecError::Conflict(Phrase::field(field).then(
                " cannot be sent to another host (it names a local file, or is a ramp or a \
                 knee search)",
            )));
        }
        let secs = |d: Duration| format!("{}ns", d.as_nanos());
        let mut t = serde_json::Map::new();
        let mut put = |k: &str, v: serde_json::Value| {
            t.insert(k.to_string(), v);
        };
        put("urls", serde_json::json!(self.urls));
        put(
            "order",
            serde_json::json!(if self.weighted {
                "weighted"
            } else if self.random {
                "random"
            } else {
                "sequential"
            }),
        );
        put("method", serde_json::json!(self.method));
        let headers: Vec<String> = self
            .headers
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        put("headers", serde_json::json!(headers));
        if let Some(b) = &self.body {
            let text = String::from_utf8(b.clone()).map_err(|_| {
                SpecError::Conflict(
                    "a body that is not UTF-8 cannot be sent to another host".into(),
                )
            })?;
            put("body", serde_json::json!(text));
        }
        put("connections", serde_json::json!(self.connections));
        if let Some(n) = self.threads {
            put("threads", serde_json::json!(n));
        }
        if let Some(d) = self.duration {
            put("duration", serde_json::json!(secs(d)));
        }
        if let Some(n) = self.requests {
            put("requests", serde_json::json!(n));
        }
        put("warmup", serde_json::json!(secs(self.warmup)));
        if let Some(r) = self.rate {
            put("rate", serde_json::json!(r));
        }
        if let Some(n) = self.max_connections {
            put("max_connections", serde_json::json!(n));
        }
        put("keepalive", serde_json::json!(self.keepalive));
        put("pipeline", serde_json::json!(self.pipeline));
        put("timeout", serde_json::json!(secs(self.timeout)));
        put(
            "connect_timeout",
            serde_json::json!(secs(self.connect_timeout)),
        );
        put("insecure", serde_json::json!(self.insecure));
        let io = match self.io {
            IoChoice::Auto => "auto",
            IoChoice::Epoll => "epoll",
            IoChoice::Uring => "uring",
        };
        put("io", serde_json::json!(io));
        let http = match self.http {
            HttpVersion::Auto => "auto",
            HttpVersion::Http1 => "1.1",
            HttpVersion::Http2 => "2",
        };
        put("http", serde_json::json!(http));
        put("streams", serde_json::json!(self.streams));
        put("h2_window", serde_json::json!(self.h2_window));
        Ok(serde_json::Value::Object(t))
    }
}

#[cfg(test)]
mod table_tests {
    use super::*;

    #[test]
    fn the_table_form_reads_back_as_the_same_spec() {
        let mut s = LoadSpec::new("http://127.0.0.1:9/x");
        s.connections = 3;
        s.duration = Some(Duration::from_millis(2500));
        s.rate = Some(250.5);
        s.timeout = Duration::from_millis(1500);
        s.warmup = Duration::from_micros(1);
        s.headers = vec![("X-A".into(), "b: c".into())];
        s.body = Some(b"hello".to_vec());
        s.http = HttpVersion::Http1;
        s.io = IoChoice::Epoll;
        s.random = true;
        let back: LoadSpec = serde_json::from_value(s.to_table().unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn local_files_do_not_travel() {
        let mut s = LoadSpec::new("http://127.0.0.1:9/");
        s.body_file = Some("b.json".into());
        let e = s.to_table().unwrap_err().to_string();
        assert!(e.contains("body_file"), "{e}");
    }
}
