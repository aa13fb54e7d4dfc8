//! HPACK's Huffman code (RFC 7541 §5.2, Appendix B), decoding only.
//!
//! The code is canonical (codes of one length are consecutive, in symbol order, and
//! each length's first code follows from the counts of the shorter ones), so the table
//! is just each symbol's code length; [`decode`] reads 8 bits at a time through a
//! 256-entry table for the short codes that make up nearly all header text, and walks
//! the lengths for the rest. Built once per process.

use std::sync::OnceLock;

/// Code length of each symbol (0..=255, then EOS = 256), from RFC 7541 Appendix B.
#[rustfmt::skip]
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
    30,];

const EOS: u16 = 256;
const MAX_LEN: usize = 30;

struct Canon {
    /// Per length: its first code, how many codes, where its symbols start in `symbols`.
    first_code: [u32; MAX_LEN + 1],
    count: [u32; MAX_LEN + 1],
    first_index: [u32; MAX_LEN + 1],
    /// Symbols ordered by (length, symbol).
    symbols: [u16; 257],
    /// Indexed by the next 8 bits: `symbol << 4 | length` for codes of ≤ 8 bits, else 0.
    fast: [u16; 256],
}

fn canon() -> &'static Canon {
    static CANON: OnceLock<Canon> = OnceLock::new();
    CANON.get_or_init(|| {
        let mut c = Canon {
            first_code: [0; MAX_LEN + 1],
            count: [0; MAX_LEN + 1],
            first_index: [0; MAX_LEN + 1],
            symbols: [0; 257],
            fast: [0; 256],
        };
        for &l in &LENGTHS {
            c.count[l as usize] += 1;
        }
        let mut order: Vec<u16> = (0..257).collect();
        order.sort_by_key(|&s| (LENGTHS[s as usize], s));
        c.symbols.copy_from_slice(&order);
        let (mut code, mut index) = (0u32, 0u32);
        for l in 1..=MAX_LEN {
            code = (code + c.count[l - 1]) << 1;
            c.first_code[l] = code;
            c.first_index[l] = index;
            index += c.count[l];
        }
        for l in 1..=8 {
            for k in 0..c.count[l] {
                let sym = c.symbols[(c.first_index[l] + k) as usize];
                let prefix = (c.first_code[l] + k) << (8 - l);
                for low in 0..(1u32 << (8 - l)) {
                    c.fast[(prefix | low) as usize] = sym << 4 | l as u16;
                }
            }
        }
        c
    })
}

/// Why a Huffman string does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadHuffman(pub &'static str);

/// Appends the decoding of `src` to `out`.
pub fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), BadHuffman> {
    let c = canon();
    // The next `bits` bits of input sit at the top of `acc`.
    let (mut acc, mut bits, mut i) = (0u64, 0u32, 0usize);
    loop {
        while bits <= 56 && i < src.len() {
            acc |= u64::from(src[i]) << (56 - bits);
            bits += 8;
            i += 1;
        }
        if bits == 0 {
            return Ok(());
        }
        let fast = c.fast[(acc >> 56) as usize];
        let (sym, len) = if fast != 0 && u32::from(fast & 0xf) <= bits {
            (fast >> 4, u32::from(fast & 0xf))
        } else {
            let mut hit = None;
            for l in 1..=MAX_LEN.min(bits as usize) {
                let code = (acc >> (64 - l)) as u32;
                let off = code.wrapping_sub(c.first_code[l]);
                if code >= c.first_code[l] && off < c.count[l] {
                    hit = Some((c.symbols[(c.first_index[l] + off) as usize], l as u32));
                    break;
                }
            }
            match hit {
                Some(h) => h,
                None => {
                    // What is left must be padding: fewer than 8 bits, all ones (EOS).
                    let all_ones = (acc >> (64 - bits)) == (1u64 << bits) - 1;
                    return if i == src.len() && bits < 8 && all_ones {
                        Ok(())
                    } else {
                        Err(BadHuffman("invalid Huffman code or padding"))
                    };
                }
            }
        };
        if sym == EOS {
            return Err(BadHuffman("EOS inside a Huffman string"));
        }
        out.push(sym as u8);
        acc <<= len;
        bits -= len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn huff(hex: &str) -> String {
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let mut out = Vec::new();
        decode(&bytes, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn decodes_the_rfc_examples() {
        // RFC 7541 C.4.1, C.4.2, C.6.1 (Huffman-coded strings).
        assert_eq!(huff("f1e3c2e5f23a6ba0ab90f4ff"), "www.example.com");
        assert_eq!(huff("a8eb10649cbf"), "no-cache");
        assert_eq!(huff("6402"), "302");
        assert_eq!(huff("aec3771a4b"), "private");
        assert_eq!(
            huff("d07abe941054d444a8200595040b8166e082a62d1bff"),
            "Mon, 21 Oct 2013 20:13:21 GMT"
        );
        assert_eq!(
            huff("9d29ad171863c78f0b97c8e9ae82ae43d3"),
            "https://www.example.com"
        );
    }

    #[test]
    fn every_symbol_round_trips_through_its_code() {
        let c = canon();
        // Encode each byte with the canonical code and decode it back (padding 1s).
        for s in 0..256u32 {
            let l = LENGTHS[s as usize] as usize;
            let pos = c.symbols.iter().position(|&x| x as u32 == s).unwrap() as u32;
            let code = c.first_code[l] + (pos - c.first_index[l]);
            let total = l.div_ceil(8) * 8;
            let v = (u64::from(code) << (total - l)) | ((1u64 << (total - l)) - 1);
            let bytes: Vec<u8> = (0..total / 8).rev().map(|k| (v >> (8 * k)) as u8).collect();
            let mut out = Vec::new();
            decode(&bytes, &mut out).unwrap();
            assert_eq!(out, [s as u8], "symbol {s}");
        }
    }

    #[test]
    fn bad_padding_and_eos_are_errors() {
        let mut out = Vec::new();
        decode(&[0x07], &mut out).unwrap(); // '0' is 00000, then three 1s of padding
        assert_eq!(out, b"0");
        assert!(
            decode(&[0x00], &mut Vec::new()).is_err(),
            "padding of zeros"
        );
        assert!(
            decode(&[0xff, 0xff, 0xff, 0xff], &mut Vec::new()).is_err(),
            "EOS"
        );
    }
}
