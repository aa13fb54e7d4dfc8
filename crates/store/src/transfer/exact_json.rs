//! A JSON reader whose floats are exact: numbers are parsed by the standard library's
//! correctly rounded `str::parse::<f64>`, so a float written by serde_json (shortest
//! round-trip form) reads back bit for bit. serde_json's own reader does that only
//! with its `float_roundtrip` feature, which this workspace does not enable (see the
//! module doc of `transfer`). Everything else is plain RFC 8259; errors say where.

use serde_json::{Map, Number, Value};

use crate::StoreError;

/// Parses a whole JSON text into a `Value`.
pub fn parse(text: &str) -> Result<Value, StoreError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    p.ws();
    let v = p.value()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("trailing characters after the JSON value"));
    }
    Ok(v)
}

/// serde_json's own nesting limit.
const MAX_DEPTH: usize = 128;

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> StoreError {
        let before = &self.s[..self.i.min(self.s.len())];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let col = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
        StoreError::Json(<serde_json::Error as serde::de::Error>::custom(format!(
            "{what} at line {line} column {col}"
        )))
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), StoreError> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.err(&format!("expected '{}'", c as char)))
        }
    }

    fn value(&mut self) -> Result<Value, StoreError> {
        match self.peek() {
            Some(b'{') => self.nested(Self::object),
            Some(b'[') => self.nested(Self::array),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(_) => Err(self.err("expected a JSON value")),
            None => Err(self.err("unexpected end of the JSON text")),
        }
    }

    fn nested(
        &mut self,
        f: fn(&mut Self) -> Result<Value, StoreError>,
    ) -> Result<Value, StoreError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err("JSON nested too deeply"));
        }
        let v = f(self);
        self.depth -= 1;
        v
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, StoreError> {
        if self.s[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.err("expected a JSON value"))
        }
    }

    fn object(&mut self) -> Result<Value, StoreError> {
        self.expect(b'{')?;
        let mut map = Map::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err(self.err("expected a string key"));
            }
            let key = self.string()?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            let v = self.value()?;
            map.insert(key, v);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Object(map));
                }
                _ => return Err(self.err("expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self) -> Result<Value, StoreError> {
        self.expect(b'[')?;
        let mut items = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value()?);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.err("expected ',' or ']'")),
            }
        }
    }

    fn number(&mut self) -> Result<Value, StoreError> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let from = p.i;
            while matches!(p.peek(), Some(b'0'..=b'9')) {
                p.i += 1;
            }
            p.i - from
        };
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let int_start = self.i;
        let n = digits(self);
        if n == 0 || (n > 1 && self.s[int_start] == b'0') {
            return Err(self.err("malformed number"));
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.i += 1;
            float = true;
            if digits(self) == 0 {
                return Err(self.err("malformed number: digits expected after '.'"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            float = true;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if digits(self) == 0 {
                return Err(self.err("malformed number: digits expected in the exponent"));
            }
        }
        // Only ASCII was consumed.
        let text = std::str::from_utf8(&self.s[start..self.i]).expect("ASCII number");
        if !float {
            if let Ok(v) = text.parse::<i64>() {
                return Ok(Value::Number(v.into()));
            }
            if let Ok(v) = text.parse::<u64>() {
                return Ok(Value::Number(v.into()));
            }
        }
        let v: f64 = text.parse().map_err(|_| self.err("malformed number"))?;
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| self.err("number out of range"))
    }

    fn hex4(&mut self) -> Result<u32, StoreError> {
        let h = self
            .s
            .get(self.i..self.i + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.err("expected four hex digits after \\u"))?;
        self.i += 4;
        Ok(h)
    }

    fn string(&mut self) -> Result<String, StoreError> {
        self.expect(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err("unterminated string"));
            };
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(e) = self.peek() else {
                        return Err(self.err("unterminated string"));
                    };
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return Err(self.err("invalid escape in string")),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                0..=0x1f => return Err(self.err("control character in string")),
                _ => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.err("invalid UTF-8 in string"))
    }

    /// The code point of `\uXXXX` (the `\u` consumed), joining surrogate pairs.
    fn unicode_escape(&mut self) -> Result<char, StoreError> {
        let hi = self.hex4()?;
        let cp = if (0xD800..0xDC00).contains(&hi) {
            if !self.s[self.i..].starts_with(b"\\u") {
                return Err(self.err("unpaired surrogate in \\u escape"));
            }
            self.i += 2;
            let lo = self.hex4()?;
            if !(0xDC00..0xE000).contains(&lo) {
                return Err(self.err("unpaired surrogate in \\u escape"));
            }
            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
        } else {
            hi
        };
        char::from_u32(cp).ok_or_else(|| self.err("unpaired surrogate in \\u escape"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_back_bit_for_bit() {
        let values = [
            0.1 + 0.2,
            0.012345678901234567,
            1e-300,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            -2.5e-8,
            123456789.12345679,
            9007199254740993.0,
            1.7976931348623157e308,
        ];
        for v in values {
            let text = serde_json::to_string(&v).unwrap();
            let back = parse(&text).unwrap().as_f64().unwrap();
            assert_eq!(back.to_bits(), v.to_bits(), "{text}");
        }
        // serde_json 1.0.154 without `float_roundtrip` reads this as
        // 0.0015621682280354105 (one ulp up), as it does ~20 % of random floats in
        // [0.001, 0.1): the reason this reader exists.
        let text = "0.0015621682280354103";
        assert_eq!(
            parse(text).unwrap().as_f64().unwrap().to_bits(),
            0.0015621682280354103f64.to_bits()
        );
    }

    #[test]
    fn reads_what_serde_json_reads() {
        let text = r#" {"a": [1, -2, 18446744073709551615, 1.5e3, true, false, null],
            "s": "q\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00 ü", "o": {}, "e": []} "#;
        let expect: Value = serde_json::from_str(text).unwrap();
        assert_eq!(parse(text).unwrap(), expect);
    }

    #[test]
    fn malformed_text_is_located() {
        for bad in [
            "{",
            "[1,]",
            "01",
            "1.",
            "\"\\x\"",
            "{\"a\" 1}",
            "[1] x",
            "\"\\ud800\"",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("line 1 column"), "{bad}: {e}");
        }
        let e = parse("{\n  \"a\": tru\n}").unwrap_err().to_string();
        assert!(e.contains("line 2 column 8"), "{e}");
    }
}
