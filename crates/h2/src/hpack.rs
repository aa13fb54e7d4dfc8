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
//! Decoding is [`Decoder`]: integers, the static and dynamic tables, size updates, and
//! Huffman strings (`crate::huffman`) — peers encode however they like and a decoder
//! must follow. A table size update is accepted only before a block's first field
//! (RFC 7541 §4.2), and [`Decoder::decode_while`] lets a caller that has seen enough
//! (a header list over its limit) stop receiving fields while the table stays correct,
//! at a cost bounded by the block's encoded size. The one HPACK construct whose cost
//! the encoded size does not bound — a field that adds an entry *named* by a large
//! existing one, two bytes for up to 4 KB copied — has a budget per block
//! (`COPY_FACTOR`); a block past it is a decoding error.

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

/// A dynamic table entry: (name, value).
type Entry = (Vec<u8>, Vec<u8>);

/// How many bytes of table names a block may copy into new entries, per byte of
/// block (plus twice the table's size): a static name of 27 bytes named in two bytes
/// is 13.5 per byte.
const COPY_FACTOR: usize = 16;

/// Huffman strings remembered with their decoding (servers repeat theirs).
const MEMO: usize = 8;

/// One connection's HPACK decoder: its dynamic table follows the peer's encoder.
///
/// Decoding skips what nobody asked for: a literal that is not added to the table and
/// whose name the caller does not want ([`Decoder::decode_only`]) is stepped over, its
/// value never Huffman-decoded — a load generator needs `:status` and nothing else, and
/// servers send `date`, `etag` and `last-modified` as such literals on every response.
/// What must be decoded is decoded once: the last few Huffman strings are remembered
/// with their decoding (a server that adds the same field to the table on every
/// response costs a comparison, not a decode), and evicted entries' buffers are reused.
#[derive(Debug)]
pub struct Decoder {
    /// Newest first: (name, value).
    table: std::collections::VecDeque<Entry>,
    size: usize,
    max_size: usize,
    /// The most the peer may set `max_size` to (our SETTINGS_HEADER_TABLE_SIZE).
    limit: usize,
    name: Vec<u8>,
    value: Vec<u8>,
    /// Evicted entries, their buffers reused.
    spare: Vec<Entry>,
    /// (Huffman bytes, decoding), filled round-robin.
    memo: Vec<(Vec<u8>, Vec<u8>)>,
    memo_next: usize,
    /// Bytes of names copied out of the table for new entries, in this block.
    copied: usize,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            table: std::collections::VecDeque::new(),
            size: 0,
            max_size: 4096,
            limit: 4096,
            name: Vec::new(),
            value: Vec::new(),
            spare: Vec::new(),
            memo: Vec::new(),
            memo_next: 0,
            copied: 0,
        }
    }
}

fn bad(why: &str) -> CompressionError {
    CompressionError(why.to_string())
}

/// Reads an integer with an `n`-bit prefix at `b[*at]`.
fn read_integer(b: &[u8], at: &mut usize, n: u32) -> Result<usize, CompressionError> {
    let max = (1usize << n) - 1;
    let first = *b
        .get(*at)
        .ok_or_else(|| bad("block ends inside an integer"))?;
    *at += 1;
    let mut v = usize::from(first) & max;
    if v < max {
        return Ok(v);
    }
    let mut shift = 0;
    loop {
        let byte = *b
            .get(*at)
            .ok_or_else(|| bad("block ends inside an integer"))?;
        *at += 1;
        if shift > 28 {
            return Err(bad("integer too large"));
        }
        v += usize::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
}

/// Reads a string's header at `b[*at]`: (Huffman-coded, its bytes), moving past it.
fn read_string<'b>(b: &'b [u8], at: &mut usize) -> Result<(bool, &'b [u8]), CompressionError> {
    let huffman = b.get(*at).is_some_and(|x| x & 0x80 != 0);
    let len = read_integer(b, at, 7)?;
    let s = b
        .get(*at..*at + len)
        .ok_or_else(|| bad("block ends inside a string"))?;
    *at += len;
    Ok((huffman, s))
}

impl Decoder {
    /// Decodes a string into `out` (cleared first).
    fn string_into(
        &mut self,
        out: &mut Vec<u8>,
        huffman: bool,
        s: &[u8],
    ) -> Result<(), CompressionError> {
        out.clear();
        if !huffman {
            out.extend_from_slice(s);
            return Ok(());
        }
        if let Some((_, decoded)) = self.memo.iter().find(|(raw, _)| raw == s) {
            out.extend_from_slice(decoded);
            return Ok(());
        }
        crate::huffman::decode(s, out).map_err(|e| bad(e.0))?;
        if self.memo.len() < MEMO {
            self.memo.push((s.to_vec(), out.clone()));
        } else {
            let (raw, decoded) = &mut self.memo[self.memo_next];
            raw.clear();
            raw.extend_from_slice(s);
            decoded.clear();
            decoded.extend_from_slice(out);
            self.memo_next = (self.memo_next + 1) % MEMO;
        }
        Ok(())
    }

    /// Decodes a whole header block, handing every field to `field` in order.
    pub fn decode(
        &mut self,
        block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), CompressionError> {
        self.run(
            block,
            |_| true,
            |n, v| {
                field(n, v);
                true
            },
        )
    }

    /// Decodes a whole header block, handing `field` the fields whose name `want`s.
    pub fn decode_only(
        &mut self,
        block: &[u8],
        want: impl Fn(&[u8]) -> bool,
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), CompressionError> {
        self.run(block, want, |n, v| {
            field(n, v);
            true
        })
    }

    /// Decodes a whole header block, handing `field` every field until it returns
    /// `false`; the rest of the block is then only decoded as far as the dynamic table
    /// needs (entries it adds are decoded and inserted, indexed references are checked,
    /// literals that are not indexed are stepped over unread). So once a caller knows
    /// a header list is too large or malformed, the remaining cost is bounded by the
    /// block's encoded size plus the table's (at most one entry copied per field that
    /// adds one), never by what the fields would expand to.
    pub fn decode_while(
        &mut self,
        block: &[u8],
        field: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), CompressionError> {
        self.run(block, |_| true, field)
    }

    /// The decoding loop behind every `decode*`: `field` returning `false` turns the
    /// rest of the block into table upkeep only.
    fn run(
        &mut self,
        block: &[u8],
        want: impl Fn(&[u8]) -> bool,
        mut field: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), CompressionError> {
        let mut at = 0;
        let mut delivering = true;
        let mut first_field = true;
        self.copied = 0;
        // A field that adds an entry named by an existing one copies that name: up to
        // 4 KB for two bytes of block. Encoders name entries by short names; a block
        // that copies more than this is an amplification attack, refused.
        let copy_budget = COPY_FACTOR * block.len() + 2 * self.max_size;
        while at < block.len() {
            let b = block[at];
            if b & 0xe0 == 0x20 {
                // RFC 7541 §4.2: only at the start of a block.
                if !first_field {
                    return Err(bad("dynamic table size update after a field"));
                }
                let size = read_integer(block, &mut at, 5)?;
                if size > self.limit {
                    return Err(bad("table size update above SETTINGS_HEADER_TABLE_SIZE"));
                }
                self.max_size = size;
                self.evict(0);
                continue;
            }
            first_field = false;
            if b & 0x80 != 0 {
                let i = read_integer(block, &mut at, 7)?;
                let (n, v) = self.entry(i)?;
                if delivering && want(n) {
                    delivering = field(n, v);
                }
            } else {
                delivering = self.literal(block, &mut at, delivering, &want, &mut field)?;
                if self.copied > copy_budget {
                    return Err(bad("header block copies table entries past its budget"));
                }
            }
        }
        Ok(())
    }

    /// A literal field at `block[*at]` (with or without indexing); returns whether
    /// fields are still to be delivered.
    fn literal(
        &mut self,
        block: &[u8],
        at: &mut usize,
        delivering: bool,
        want: &impl Fn(&[u8]) -> bool,
        field: &mut impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<bool, CompressionError> {
        let indexing = block[*at] & 0x40 != 0;
        let i = read_integer(block, at, if indexing { 6 } else { 4 })?;
        if !indexing && !delivering {
            // Nothing to keep and nobody to tell: check the reference, skip the bytes.
            if i == 0 {
                read_string(block, at)?;
            } else {
                self.entry(i)?;
            }
            read_string(block, at)?;
            return Ok(false);
        }
        let mut name = std::mem::take(&mut self.name);
        if i == 0 {
            let (h, s) = read_string(block, at)?;
            self.string_into(&mut name, h, s)?;
        } else {
            name.clear();
            name.extend_from_slice(self.entry(i)?.0);
            self.copied += name.len();
        }
        let (h, s) = read_string(block, at)?;
        let wanted = delivering && want(&name);
        let mut still = delivering;
        if indexing || wanted {
            let mut value = std::mem::take(&mut self.value);
            self.string_into(&mut value, h, s)?;
            if wanted {
                still = field(&name, &value);
            }
            if indexing {
                self.insert(&mut name, &mut value);
            }
            self.value = value;
        }
        self.name = name;
        Ok(still)
    }

    /// Entry `i` of the static table (1..=61) or the dynamic one (62..).
    fn entry(&self, i: usize) -> Result<(&[u8], &[u8]), CompressionError> {
        match i {
            0 => Err(bad("index 0")),
            1..=61 => {
                let (n, v) = STATIC[i - 1];
                Ok((n.as_bytes(), v.as_bytes()))
            }
            _ => self
                .table
                .get(i - 62)
                .map(|(n, v)| (&n[..], &v[..]))
                .ok_or_else(|| bad("index past the dynamic table")),
        }
    }

    /// Evicts the oldest entries until `room` more bytes fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max_size {
            match self.table.pop_back() {
                Some(e) => {
                    self.size -= e.0.len() + e.1.len() + 32;
                    if self.spare.len() < 64 {
                        self.spare.push(e);
                    }
                }
                None => break,
            }
        }
    }

    /// Adds (name, value) to the table, taking their buffers (each is left holding a
    /// spare one): an entry is copied once, when it is decoded, never again here.
    fn insert(&mut self, name: &mut Vec<u8>, value: &mut Vec<u8>) {
        let size = name.len() + value.len() + 32;
        self.evict(size);
        if size <= self.max_size {
            let (mut n, mut v) = self.spare.pop().unwrap_or_default();
            std::mem::swap(&mut n, name);
            std::mem::swap(&mut v, value);
            self.table.push_front((n, v));
            self.size += size;
        }
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
    fn the_dynamic_table_follows_the_encoder_across_blocks() {
        // RFC 7541 C.6.1 then C.6.2: responses with Huffman strings and indexing; the
        // second refers to entries the first added.
        let hex = |h: &str| -> Vec<u8> {
            (0..h.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
                .collect()
        };
        let mut d = Decoder::default();
        let first = hex("488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3");
        let mut got = Vec::new();
        d.decode(&first, |n, v| got.push((n.to_vec(), v.to_vec())))
            .unwrap();
        assert_eq!(got[0], (b":status".to_vec(), b"302".to_vec()));
        assert_eq!(got[3].1, b"https://www.example.com".to_vec());
        let second = hex("4883640effc1c0bf");
        let mut got = Vec::new();
        d.decode(&second, |n, v| got.push((n.to_vec(), v.to_vec())))
            .unwrap();
        assert_eq!(got[0], (b":status".to_vec(), b"307".to_vec()));
        assert_eq!(got[2].1, b"Mon, 21 Oct 2013 20:13:21 GMT".to_vec());
        assert_eq!(got[3].1, b"https://www.example.com".to_vec());
        // decode_only hands over only what is wanted, and keeps the table in step.
        let mut only = Vec::new();
        let mut d2 = Decoder::default();
        d2.decode_only(
            &first,
            |n| n == b":status",
            |n, v| only.push((n.to_vec(), v.to_vec())),
        )
        .unwrap();
        d2.decode_only(
            &second,
            |n| n == b":status",
            |n, v| only.push((n.to_vec(), v.to_vec())),
        )
        .unwrap();
        assert_eq!(only.len(), 2);
        assert_eq!(only[1].1, b"307".to_vec());
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

    #[test]
    fn a_table_size_update_is_allowed_only_at_the_start_of_a_block() {
        // RFC 7541 §4.2: two updates first are fine, one after a field is not.
        let mut d = Decoder::default();
        assert!(d.decode(&[0x20, 0x3f, 0xe1, 0x1f, 0x82], |_, _| {}).is_ok());
        let mut d = Decoder::default();
        assert!(d.decode(&[0x82, 0x20], |_, _| {}).is_err());
    }

    #[test]
    fn decode_while_stops_delivering_but_keeps_the_table_in_step() {
        // One literal with incremental indexing ("x-a: 1"), then after the stop a
        // second one ("x-b: 2") and a reference; the next block must see both entries.
        let mut block = Vec::new();
        for (n, v) in [(b"x-a", b"1"), (b"x-b", b"2")] {
            block.push(0x40);
            string(&mut block, n);
            string(&mut block, v);
        }
        block.push(0x80 | 62); // x-b, the newest
        block.extend([0x00, 0x01, b'y', 0x01, b'z']); // not indexed, skipped unread
        let mut d = Decoder::default();
        let mut seen = 0;
        d.decode_while(&block, |_, _| {
            seen += 1;
            false
        })
        .unwrap();
        assert_eq!(seen, 1, "nothing is delivered after the stop");
        let got = {
            let mut v = Vec::new();
            d.decode(&[0x80 | 62, 0x80 | 63], |n, val| {
                v.push((n.to_vec(), val.to_vec()))
            })
            .unwrap();
            v
        };
        assert_eq!(got[0], (b"x-b".to_vec(), b"2".to_vec()));
        assert_eq!(got[1], (b"x-a".to_vec(), b"1".to_vec()));
        assert!(
            d.decode_while(&[0x80 | 70], |_, _| false).is_err(),
            "bad index"
        );
    }

    #[test]
    fn a_block_that_copies_a_large_name_over_and_over_is_refused() {
        // A 4,000-byte name in the table, then fields that add entries named by it
        // with an empty value: two bytes each for 4 KB copied.
        let mut d = Decoder::default();
        let mut first = vec![0x40];
        string(&mut first, &[b'n'; 4000]);
        string(&mut first, b"");
        d.decode(&first, |_, _| {}).unwrap();
        let few: Vec<u8> = [0x40 | 62, 0x00].repeat(2);
        assert!(d.decode(&few, |_, _| {}).is_ok(), "a few copies are fine");
        let many: Vec<u8> = [0x40 | 62, 0x00].repeat(1000);
        assert!(d.decode_while(&many, |_, _| false).is_err());
    }
}
