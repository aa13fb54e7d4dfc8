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
        let headers = match r.headers {
            None => Vec::new(),
            Some(RawHeaders::List(l)) => l
                .iter()
                .map(|h| parse_header(h))
                .collect::<Result<_, _>>()?,
            Some(RawHeaders::Map(m)) => m.into_iter().collect(),
        };
        let over = match r.ramp_over.as_deref() {
            None | Some("rate") => RampOver::Rate,
            Some("connections") => RampOver::Connections,
            Some(o) => {
                return Err(SpecError::value(
                    "ramp_over",
                    o,
                    "\"rate\" or \"connections\"",
                ))
            }
        };
        let spec = LoadSpec {
            urls,
            urls_file: r.urls_file,
            random: r.random.unwrap_or(false) || r.order.as_deref() == Some("random"),
            weighted: match r.order.as_deref() {
                None | Some("sequential" | "random") => false,
                Some("weighted") => true,
                Some(o) => {
                    return Err(SpecError::value(
                        "order",
                        o,
                        "sequential, random or weighted",
                    ))
                }
            },
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
