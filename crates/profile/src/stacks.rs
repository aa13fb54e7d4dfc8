//! How call chains are recorded: one mode, written once, read from a flag
//! (`--call-graph fp|dwarf|auto`), an experiment key (`[profile] call_graph`, which
//! also still takes the old bool) and a trial spec sent to another host.
//!
//! `fp` walks frame pointers (cheap, but a binary or library built without them cuts
//! the stack at its first frame); `dwarf` copies a bounded slice of the user stack with
//! every sample and unwinds it afterwards with the binaries' unwind tables; `auto` picks
//! DWARF when the profiled binary or its libraries were built without frame pointers,
//! and says so. LBR needs hardware this project's machines lack.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ProfileError;

/// How call chains are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum CallGraphMode {
    /// No call chains: only the sampled function.
    Off,
    /// Frame pointers (`perf record -g`): the old `call_graph = true`.
    #[default]
    Fp,
    /// DWARF unwinding of a bounded copy of the user stack.
    Dwarf,
    /// DWARF where the profiled code lacks frame pointers, else frame pointers.
    Auto,
}

impl CallGraphMode {
    /// Whether any call chain is recorded.
    pub fn records(self) -> bool {
        self != CallGraphMode::Off
    }

    /// The old bool form: `true` is `fp`, `false` is `off`.
    pub fn from_bool(on: bool) -> CallGraphMode {
        if on {
            CallGraphMode::Fp
        } else {
            CallGraphMode::Off
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CallGraphMode::Off => "off",
            CallGraphMode::Fp => "fp",
            CallGraphMode::Dwarf => "dwarf",
            CallGraphMode::Auto => "auto",
        }
    }
}

impl fmt::Display for CallGraphMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CallGraphMode {
    type Err = ProfileError;
    fn from_str(s: &str) -> Result<CallGraphMode, ProfileError> {
        match s {
            "fp" => Ok(CallGraphMode::Fp),
            "dwarf" => Ok(CallGraphMode::Dwarf),
            "auto" => Ok(CallGraphMode::Auto),
            "off" | "none" => Ok(CallGraphMode::Off),
            _ => Err(ProfileError::BadInput(format!(
                "call graph {s:?}: expected fp, dwarf, auto or off"
            ))),
        }
    }
}

impl Serialize for CallGraphMode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Accepts the mode's name or the old bool.
impl<'de> Deserialize<'de> for CallGraphMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<CallGraphMode, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Bool(bool),
            Name(String),
        }
        match Form::deserialize(d)? {
            Form::Bool(b) => Ok(CallGraphMode::from_bool(b)),
            Form::Name(n) => n.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_old_bool_and_the_names_both_read() {
        let m: Vec<CallGraphMode> =
            serde_json::from_str(r#"[true, false, "fp", "dwarf", "auto", "off"]"#).unwrap();
        use CallGraphMode::*;
        assert_eq!(m, vec![Fp, Off, Fp, Dwarf, Auto, Off]);
        assert_eq!(serde_json::to_string(&Dwarf).unwrap(), r#""dwarf""#);
        assert!("lbr".parse::<CallGraphMode>().is_err());
    }
}
