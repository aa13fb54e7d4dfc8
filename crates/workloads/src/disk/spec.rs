//! What a disk run does: [`DiskSpec`], its byte sizes and its checks.
//!
//! The spec is plain data (serde, so `[workload] kind = "disk"` in an experiment file
//! deserializes straight into it) and [`DiskSpec::validate`] checks everything that can
//! be checked without touching the file system. What needs the file system (does the
//! directory exist, what alignment does O_DIRECT need there) is checked when the
//! target is prepared, before the first measured byte.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::{bad, DiskError};
use perflab_units::Phrase;

/// Block size when none is given.
pub const DEFAULT_BS: u64 = 1 << 20;
/// Amount of data when neither `size` nor `count` is given.
pub const DEFAULT_SIZE: u64 = 1 << 30;
/// Largest block size accepted (one I/O buffer per thread is this big).
pub const MAX_BS: u64 = 1 << 30;
/// Most threads `iodepth` may ask for.
pub const MAX_IODEPTH: u32 = 256;

/// Access pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Sequential writes from offset 0.
    #[default]
    Write,
    /// Sequential reads of a file laid out first.
    Read,
    /// Writes at random block offsets, each block once.
    Randwrite,
    /// Reads at random block offsets, each block once.
    Randread,
}

impl Mode {
    pub fn as_str(&self) -> &'static str {
        match self {
            Mode::Write => "write",
            Mode::Read => "read",
            Mode::Randwrite => "randwrite",
            Mode::Randread => "randread",
        }
    }

    pub fn is_write(&self) -> bool {
        matches!(self, Mode::Write | Mode::Randwrite)
    }

    pub fn is_random(&self) -> bool {
        matches!(self, Mode::Randwrite | Mode::Randread)
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        Ok(match s {
            "write" => Mode::Write,
            "read" => Mode::Read,
            "randwrite" => Mode::Randwrite,
            "randread" => Mode::Randread,
            other => {
                return Err(format!(
                    "unknown mode {other:?}: expected write, read, randwrite or randread"
                ))
            }
        })
    }
}

/// What the written data looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Pseudo-random bytes, slightly changed in every I/O so nothing compresses or
    /// deduplicates (like fio's `scramble_buffers`).
    #[default]
    Random,
    /// All zeros (what `dd if=/dev/zero` writes).
    Zero,
}

impl Pattern {
    pub fn as_str(&self) -> &'static str {
        match self {
            Pattern::Random => "random",
            Pattern::Zero => "zero",
        }
    }
}

impl FromStr for Pattern {
    type Err = String;
    fn from_str(s: &str) -> Result<Pattern, String> {
        match s {
            "random" => Ok(Pattern::Random),
            "zero" => Ok(Pattern::Zero),
            other => Err(format!(
                "unknown pattern {other:?}: expected random or zero"
            )),
        }
    }
}

/// A byte count written with an optional power-of-1024 suffix: `512`, `16k`, `16KiB`,
/// `1M`, `1G`, `1T`. Decimal-looking suffixes (`kB`, `MB`) are refused as ambiguous
/// (dd reads `kB` as 1000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub fn bytes(&self) -> u64 {
        self.0
    }
}

impl fmt::Display for ByteSize {
    /// The shortest exact form: `16k`, `1M`, `1000`.
    // `is_multiple_of` needs Rust 1.87; the workspace's rust-version is 1.80.
    #[allow(clippy::manual_is_multiple_of)]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        for (shift, suffix) in [(40, "T"), (30, "G"), (20, "M"), (10, "k")] {
            if v != 0 && v % (1u64 << shift) == 0 {
                return write!(f, "{}{suffix}", v >> shift);
            }
        }
        write!(f, "{v}")
    }
}

impl FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<ByteSize, String> {
        let t = s.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, suffix) = t.split_at(split);
        let expected = "expected a whole number of bytes with an optional power-of-1024 suffix: 4096, 16k, 1M, 1G";
        if num.is_empty() {
            return Err(format!("{s:?} is not a size: {expected}"));
        }
        let shift = match suffix.trim() {
            "" | "b" | "B" => 0,
            "k" | "K" | "KiB" | "kiB" => 10,
            "m" | "M" | "MiB" => 20,
            "g" | "G" | "GiB" => 30,
            "t" | "T" | "TiB" => 40,
            "kB" | "KB" | "MB" | "GB" | "TB" | "mB" | "gB" | "tB" => {
                let (short, long) = match suffix.as_bytes()[0].to_ascii_lowercase() {
                    b'k' => ("k", "KiB"),
                    b'm' => ("M", "MiB"),
                    b'g' => ("G", "GiB"),
                    _ => ("T", "TiB"),
                };
                return Err(format!(
                    "{s:?} is ambiguous (1000 or 1024?): perflab sizes are powers of 1024, write {num}{short} or {num}{long}"
                ));
            }
            _ => return Err(format!("{s:?} is not a size: {expected}")),
        };
        let n: u64 = num
            .parse()
            .map_err(|_| format!("{s:?} is too large for a size"))?;
        n.checked_mul(1u64 << shift)
            .map(ByteSize)
            .ok_or_else(|| format!("{s:?} is too large for a size"))
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size: a number of bytes or a string such as \"16k\", \"1M\", \"1G\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom(format!("a size cannot be negative, got {v}")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

fn default_bs() -> ByteSize {
    ByteSize(DEFAULT_BS)
}

fn default_iodepth() -> u32 {
    1
}

/// One disk run: `perflab disk PATH ...`, or `[workload] kind = "disk"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskSpec {
    /// The workload kind of an experiment file's `[workload]` table; accepted so the
    /// table deserializes as is, and must be `"disk"` when present.
    #[serde(default, skip_serializing)]
    pub kind: Option<String>,
    /// A file to create, a directory to create it in, or (with
    /// `i_know_this_destroys_data` for writes) a block device.
    pub path: PathBuf,
    #[serde(default)]
    pub mode: Mode,
    /// Bytes per I/O [default 1M].
    #[serde(default = "default_bs")]
    pub bs: ByteSize,
    /// Total bytes (a multiple of `bs`) [default 1G unless `count` is given].
    #[serde(default)]
    pub size: Option<ByteSize>,
    /// Number of I/Os (instead of `size`).
    #[serde(default)]
    pub count: Option<u64>,
    /// O_DIRECT: bypass the page cache (aligned buffers, sizes and offsets).
    #[serde(default)]
    pub direct: bool,
    /// O_DSYNC: every write returns once it is on stable storage.
    #[serde(default)]
    pub dsync: bool,
    /// fdatasync once after the last write, inside the timed interval (dd's
    /// `conv=fdatasync`, fio's `end_fsync=1`).
    #[serde(default)]
    pub fdatasync_end: bool,
    #[serde(default)]
    pub pattern: Pattern,
    /// I/Os in flight: that many threads doing pread/pwrite (no io_uring).
    #[serde(default = "default_iodepth")]
    pub iodepth: u32,
    /// Read modes: keep the laid-out file in the page cache (measures memory).
    #[serde(default)]
    pub cached: bool,
    /// The block device PATH names, repeated to allow writing to it.
    #[serde(default)]
    pub i_know_this_destroys_data: Option<PathBuf>,
}

impl DiskSpec {
    /// A spec with every option at its default.
    pub fn new(path: impl Into<PathBuf>) -> DiskSpec {
        DiskSpec {
            kind: None,
            path: path.into(),
            mode: Mode::default(),
            bs: default_bs(),
            size: None,
            count: None,
            direct: false,
            dsync: false,
            fdatasync_end: false,
            pattern: Pattern::default(),
            iodepth: 1,
            cached: false,
            i_know_this_destroys_data: None,
        }
    }

    /// Number of I/Os the run makes.
    pub fn ios(&self) -> u64 {
        match (self.count, self.size) {
            (Some(c), _) => c,
            (None, Some(s)) => s.0 / self.bs.0.max(1),
            (None, None) => DEFAULT_SIZE / self.bs.0.max(1),
        }
    }

    /// Bytes the run moves.
    pub fn total_bytes(&self) -> u64 {
        self.ios().saturating_mul(self.bs.0)
    }

    /// Checks everything that does not need the file system. Messages name the options
    /// as fields (`bs`): an experiment file shows its key, the CLI its flag.
    // `is_multiple_of` needs Rust 1.87; the workspace's rust-version is 1.80.
    #[allow(clippy::manual_is_multiple_of)]
    pub fn validate(&self) -> Result<(), DiskError> {
        if let Some(k) = &self.kind {
            if k != "disk" {
                return bad(format!("workload kind {k:?} is not \"disk\""));
            }
        }
        if self.path.as_os_str().is_empty() {
            return bad("PATH is empty: give a file to create or a directory");
        }
        let bs = self.bs.0;
        if bs == 0 {
            return bad(Phrase::field("bs")
                .then(" 0: the block size must be at least 1 byte (e.g. ")
                .and_field("bs")
                .then(" 4k)"));
        }
        if bs > MAX_BS {
            return bad(
                Phrase::field("bs").then(format!(" {}: the block size can be at most 1G", self.bs))
            );
        }
        if self.count.is_some() && self.size.is_some() {
            return bad(Phrase::text("give ")
                .and_field("size")
                .then(" or ")
                .and_field("count")
                .then(", not both"));
        }
        if self.count == Some(0) {
            return bad(Phrase::field("count").then(" 0: nothing to do; give at least 1"));
        }
        if let Some(size) = self.size {
            if size.0 == 0 {
                return bad(Phrase::field("size")
                    .then(" 0: nothing to do (e.g. ")
                    .and_field("size")
                    .then(" 256M)"));
            }
            if size.0 % bs != 0 {
                return bad(Phrase::field("size")
                    .then(format!(
                        " {} ({} bytes) is not a multiple of ",
                        size, size.0
                    ))
                    .and_field("bs")
                    .then(format!(" {} ({bs} bytes): use ", self.bs))
                    .and_field("count")
                    .then(" N or a size of N × bs"));
            }
        } else if self.count.is_none() && DEFAULT_SIZE % bs != 0 {
            return bad(Phrase::field("bs")
                .then(format!(
                    " {} does not divide the default size 1G: give ",
                    self.bs
                ))
                .and_field("size")
                .then(" or ")
                .and_field("count"));
        }
        if self.ios().checked_mul(bs).is_none() {
            return bad(Phrase::field("count")
                .then(" × ")
                .and_field("bs")
                .then(" overflows 64 bits"));
        }
        if self.iodepth == 0 || self.iodepth > MAX_IODEPTH {
            return bad(Phrase::field("iodepth")
                .then(format!(" {}: expected 1 to {MAX_IODEPTH}", self.iodepth)));
        }
        let write = self.mode.is_write();
        if !write && self.dsync {
            return bad(Phrase::field("dsync").then(format!(
                " only applies to writes (mode {} reads)",
                self.mode
            )));
        }
        if !write && self.fdatasync_end {
            return bad(Phrase::field("fdatasync_end").then(format!(
                " only applies to writes (mode {} reads)",
                self.mode
            )));
        }
        if write && self.cached {
            return bad(Phrase::field("cached").then(format!(
                " only applies to read modes (mode {} writes)",
                self.mode
            )));
        }
        if self.cached && self.direct {
            return bad(Phrase::field("cached")
                .then(" and ")
                .and_field("direct")
                .then(" contradict: O_DIRECT bypasses the page cache"));
        }
        Ok(())
    }

    /// The options as store parameters (`ensure_config`): every field, sizes in bytes.
    pub fn params(&self) -> perflab_store::Params {
        let mut p = perflab_store::Params::new();
        let mut put = |k: &str, v: serde_json::Value| {
            p.insert(k.to_string(), v);
        };
        put("path", self.path.display().to_string().into());
        put("mode", self.mode.as_str().into());
        put("bs", self.bs.0.into());
        put("bytes", self.total_bytes().into());
        put("count", self.ios().into());
        put("direct", self.direct.into());
        put("dsync", self.dsync.into());
        put("fdatasync_end", self.fdatasync_end.into());
        put("pattern", self.pattern.as_str().into());
        put("iodepth", self.iodepth.into());
        put("cached", self.cached.into());
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(spec: &DiskSpec) -> String {
        match spec.validate() {
            Err(DiskError::Invalid(m)) => m.to_string(),
            other => panic!("expected an invalid-input error, got {other:?}"),
        }
    }

    #[test]
    fn sizes_are_powers_of_1024() {
        assert_eq!("16k".parse::<ByteSize>().unwrap().0, 16384);
        assert_eq!("16KiB".parse::<ByteSize>().unwrap().0, 16384);
        assert_eq!("1M".parse::<ByteSize>().unwrap().0, 1 << 20);
        assert_eq!("1G".parse::<ByteSize>().unwrap().0, 1 << 30);
        assert_eq!("512".parse::<ByteSize>().unwrap().0, 512);
        assert!("16kB"
            .parse::<ByteSize>()
            .unwrap_err()
            .contains("ambiguous"));
        assert!("1.5G".parse::<ByteSize>().is_err());
        assert!("k".parse::<ByteSize>().is_err());
        assert!("99999999999T".parse::<ByteSize>().is_err());
        assert_eq!(ByteSize(16384).to_string(), "16k");
        assert_eq!(ByteSize(1000).to_string(), "1000");
    }

    #[test]
    fn sizes_deserialize_from_strings_and_integers() {
        #[derive(Deserialize)]
        struct W {
            a: ByteSize,
            b: ByteSize,
        }
        let w: W = serde_json::from_str(r#"{"a": "16k", "b": 4096}"#).unwrap();
        assert_eq!((w.a.0, w.b.0), (16384, 4096));
    }

    #[test]
    fn a_workload_table_deserializes() {
        let s: DiskSpec = serde_json::from_str(
            r#"{"kind": "disk", "path": "/tmp", "mode": "randread", "bs": "4k", "size": "1M", "iodepth": 4}"#,
        )
        .unwrap();
        assert_eq!(s.mode, Mode::Randread);
        assert_eq!(s.ios(), 256);
        s.validate().unwrap();
        assert!(serde_json::from_str::<DiskSpec>(r#"{"path": "/tmp", "bz": 1}"#).is_err());
    }

    #[test]
    fn bad_combinations_are_refused_with_the_flag_named() {
        let mut s = DiskSpec::new("/tmp");
        s.bs = ByteSize(0);
        assert!(invalid(&s).contains("`bs` 0"));
        let mut s = DiskSpec::new("/tmp");
        s.bs = ByteSize(16384);
        s.size = Some(ByteSize(1000));
        assert!(invalid(&s).contains("not a multiple of `bs`"));
        let mut s = DiskSpec::new("/tmp");
        s.size = Some(ByteSize(1 << 20));
        s.count = Some(2);
        assert!(invalid(&s).contains("not both"));
        let mut s = DiskSpec::new("/tmp");
        s.cached = true;
        assert!(invalid(&s).contains("`cached`"));
        let mut s = DiskSpec::new("/tmp");
        s.mode = Mode::Read;
        s.fdatasync_end = true;
        assert!(invalid(&s).contains("`fdatasync_end`"));
        let mut s = DiskSpec::new("/tmp");
        s.iodepth = 0;
        assert!(invalid(&s).contains("`iodepth`"));
        let mut s = DiskSpec::new("/tmp");
        s.bs = ByteSize(1000);
        assert!(invalid(&s).contains("default size"));
        s.count = Some(3);
        s.validate().unwrap();
        assert_eq!(s.total_bytes(), 3000);
    }
}
