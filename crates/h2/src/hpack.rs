//! HPACK (RFC 7541) header blocks.
//!
//! Encoding is this crate's own and keeps no dynamic table: every field is an index
//! into the static table or a literal *without indexing*, so a block depends only on
//! its fields and can be serialised once — per target in the load engine, per response
//! shape in the server — and copied into every HEADERS frame. The cost is a few dozen
//! bytes per request over an encoder that indexes (h2load's): on the loopback
//! benchmarks a copy of bytes is cheaper than per-connection encoder state and a
//! table search per field.
//!
//! Decoding is [`Decoder`], over `loona-hpack` (Huffman, the dynamic table, size
//! updates): peers encode however they like and a decoder must follow.

use std::borrow::Cow;

/// The static table (RFC 7541 Appendix A), index 1 first.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// Appends `value` as an HPACK integer with an `n`-bit prefix; `first` holds the bits
/// above the prefix.
fn integer(out: &mut Vec<u8>, first: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// Appends a string literal (no Huffman coding).
fn string(out: &mut Vec<u8>, s: &[u8]) {
    integer(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// Appends one field: indexed when the static table has it whole, else a literal
/// without indexing (with the static table's name index when it has the name). Names
/// must be lower case (HTTP/2 requires it; the caller lowers them).
pub fn encode_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    let mut name_index = None;
    for (i, (n, v)) in STATIC.iter().enumerate() {
        if n.as_bytes() == name {
            if v.as_bytes() == value {
                return integer(out, 0x80, 7, i + 1);
            }
            name_index.get_or_insert(i + 1);
        }
    }
    match name_index {
        Some(i) => integer(out, 0x00, 4, i),
        None => {
            out.push(0x00);
            string(out, name);
        }
    }
    string(out, value);
}

/// A header block of `fields`, in order.
pub fn encode<'a>(fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, v) in fields {
        encode_field(&mut out, n, v);
    }
    out
}

/// A header block that does not decode: a connection error (COMPRESSION_ERROR).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressionError(pub String);

impl std::fmt::Display for CompressionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HPACK: {}", self.0)
    }
}

impl std::error::Error for CompressionError {}

/// One connection's HPACK decoder (its dynamic table follows the peer's encoder).
pub struct Decoder {
    inner: loona_hpack::Decoder<'static>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            inner: loona_hpack::Decoder::new(),
        }
    }
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("hpack::Decoder")
    }
}

impl Decoder {
    /// Decodes a whole header block, handing each field to `field` in order.
    pub fn decode(
        &mut self,
        block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), CompressionError> {
        self.inner
            .decode_with_cb(block, |n: Cow<[u8]>, v: Cow<[u8]>| field(&n, &v))
            .map_err(|e| CompressionError(format!("{e:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(block: &[u8]) -> Vec<(String, String)> {
        let mut d = Decoder::default();
        let mut v = Vec::new();
        d.decode(block, |n, val| {
            v.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(val).into_owned(),
            ))
        })
        .unwrap();
        v
    }

    #[test]
    fn blocks_decode_to_what_was_encoded() {
        let fields: [(&[u8], &[u8]); 6] = [
            (b":method", b"GET"),
            (b":scheme", b"http"),
            (
                b":path",
                b"/a/long/path/with/more/than/thirty/bytes.html?q=1",
            ),
            (b":authority", b"127.0.0.1:8080"),
            (b"x-custom", b"yes"),
            (b"user-agent", b"perflab"),
        ];
        let block = encode(fields);
        assert_eq!(
            block[..2],
            [0x82, 0x86],
            "exact static matches are one byte"
        );
        let got = decode(&block);
        let want: Vec<(String, String)> = fields
            .iter()
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn integers_use_continuation_bytes_past_the_prefix() {
        let mut out = Vec::new();
        integer(&mut out, 0, 5, 1337); // RFC 7541 C.1.2
        assert_eq!(out, [31, 154, 10]);
    }

    #[test]
    fn a_broken_block_is_an_error() {
        let mut d = Decoder::default();
        assert!(d
            .decode(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff], |_, _| {})
            .is_err());
    }

    #[test]
    fn decodes_huffman_and_indexed_fields_from_other_encoders() {
        // RFC 7541 C.4.1: a request with Huffman-coded literals and incremental indexing.
        let block = [
            0x82, 0x86, 0x84, 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab,
            0x90, 0xf4, 0xff,
        ];
        let got = decode(&block);
        assert_eq!(got[3], (":authority".into(), "www.example.com".into()));
    }
}
