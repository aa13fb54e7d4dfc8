//! Property tests of the request parser and the path normalizer, with a small
//! seeded generator (xorshift; failures print the seed and the input).
//!
//! Properties: generated valid requests parse to exactly what was generated; every
//! strict prefix is "incomplete"; pipelined requests parse back one by one; random
//! mutations and random bytes never panic and never claim more bytes than given;
//! normalized paths never contain dot segments, backslashes or control bytes.

use perflab_serve::parse::{parse, Method, Version};
use perflab_serve::path::normalize;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    fn token(&mut self, alphabet: &[u8], max: usize) -> String {
        let n = 1 + self.below(max);
        (0..n).map(|_| *self.pick(alphabet) as char).collect()
    }
}

const TCHAR: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
const PCHAR: &[u8] = b"abcxyz019-._~%2e/?=&+:@!$'()*,;";
const VCHAR: &[u8] = b"abc XYZ 0123 ,;=/\"()";

struct Generated {
    bytes: Vec<u8>,
    method: &'static str,
    target: String,
    version: Version,
    keep_alive: bool,
    body_len: usize,
    headers: usize,
}

fn generate(rng: &mut Rng) -> Generated {
    let method = *rng.pick(&["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PURGE"]);
    let target = format!("/{}", rng.token(PCHAR, 40));
    let version = *rng.pick(&[Version::Http10, Version::Http11]);
    let mut head = format!(
        "{method} {target} HTTP/1.{}\r\n",
        if version == Version::Http11 { 1 } else { 0 }
    );
    let mut headers = 0;
    if version == Version::Http11 || rng.below(2) == 0 {
        head.push_str("Host: example.test\r\n");
        headers += 1;
    }
    for _ in 0..rng.below(8) {
        let name = format!("X-{}", rng.token(TCHAR, 12));
        let value = rng.token(VCHAR, 30);
        head.push_str(&format!(
            "{name}:{}{}\r\n",
            " ".repeat(rng.below(3)),
            value.trim()
        ));
        headers += 1;
    }
    let mut keep_alive = version == Version::Http11;
    match rng.below(3) {
        0 => {
            head.push_str("Connection: close\r\n");
            keep_alive = false;
            headers += 1;
        }
        1 => {
            head.push_str("Connection: keep-alive\r\n");
            keep_alive = true;
            headers += 1;
        }
        _ => {}
    }
    let body_len = if rng.below(2) == 0 { rng.below(50) } else { 0 };
    if body_len > 0 {
        head.push_str(&format!("Content-Length: {body_len}\r\n"));
        headers += 1;
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend((0..body_len).map(|i| b'a' + (i % 26) as u8));
    Generated {
        bytes,
        method,
        target,
        version,
        keep_alive,
        body_len,
        headers,
    }
}

#[test]
fn generated_requests_parse_exactly() {
    for seed in 1..=1500u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let g = generate(&mut rng);
        let shown = String::from_utf8_lossy(&g.bytes).into_owned();
        let h = parse(&g.bytes, 16384)
            .unwrap_or_else(|e| panic!("seed {seed}: {e} for {shown:?}"))
            .unwrap_or_else(|| panic!("seed {seed}: incomplete {shown:?}"));
        assert_eq!(h.method_str, g.method, "seed {seed}");
        assert_eq!(
            h.method == Method::Other,
            g.method == "PURGE",
            "seed {seed}"
        );
        assert_eq!(h.target, g.target, "seed {seed}");
        assert_eq!(h.version, g.version, "seed {seed}");
        assert_eq!(h.keep_alive, g.keep_alive, "seed {seed}: {shown:?}");
        assert_eq!(h.content_length as usize, g.body_len, "seed {seed}");
        assert_eq!(h.len + g.body_len, g.bytes.len(), "seed {seed}");
        assert_eq!(h.headers().count(), g.headers, "seed {seed}: {shown:?}");
        for cut in 0..h.len {
            assert!(
                matches!(parse(&g.bytes[..cut], 16384), Ok(None)),
                "seed {seed}: prefix of {cut} bytes not incomplete"
            );
        }
    }
}

#[test]
fn pipelined_requests_parse_one_by_one() {
    let mut rng = Rng(42);
    for round in 0..200 {
        let batch: Vec<Generated> = (0..1 + rng.below(6)).map(|_| generate(&mut rng)).collect();
        let all: Vec<u8> = batch.iter().flat_map(|g| g.bytes.clone()).collect();
        let mut at = 0;
        for g in &batch {
            let h = parse(&all[at..], 16384).unwrap().unwrap();
            assert_eq!(h.target, g.target, "round {round}");
            at += h.len + h.content_length as usize;
        }
        assert_eq!(at, all.len());
    }
}

#[test]
fn mutations_and_noise_never_panic_or_overclaim() {
    let mut rng = Rng(7);
    for _ in 0..5000 {
        let mut bytes = generate(&mut rng).bytes;
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(bytes.len());
            match rng.below(4) {
                0 => bytes[i] = rng.next() as u8,
                1 => bytes.insert(i, *rng.pick(b"\r\n:\0 \x7f\xff%")),
                2 => {
                    bytes.remove(i);
                }
                _ => bytes.truncate(i),
            }
            if bytes.is_empty() {
                break;
            }
        }
        if let Ok(Some(h)) = parse(&bytes, 16384) {
            assert!(h.len <= bytes.len());
            assert!(
                h.target.bytes().all(|b| b > b' ' && b != 0x7f),
                "{:?}",
                h.target
            );
        }
    }
    for len in 0..3000 {
        let noise: Vec<u8> = (0..len % 300).map(|_| rng.next() as u8).collect();
        let _ = parse(&noise, 256);
    }
}

#[test]
fn normalized_paths_are_clean() {
    let mut rng = Rng(99);
    let pieces = [
        "/", "..", ".", "%2e", "%2E", "%2f", "%5c", "%00", "%c0%ae", "a", "b c", "%25", "%", "é",
        "\\", "//",
    ];
    for _ in 0..20000 {
        let n = 1 + rng.below(8);
        let path: String = std::iter::once("/")
            .chain((0..n).map(|_| *rng.pick(&pieces)))
            .collect();
        let Ok(norm) = normalize(&path) else { continue };
        assert!(norm.starts_with('/'), "{path:?} -> {norm:?}");
        assert!(!norm.contains("//"), "{path:?} -> {norm:?}");
        for seg in norm.split('/') {
            assert!(seg != ".." && seg != ".", "{path:?} -> {norm:?}");
        }
        assert!(
            !norm.bytes().any(|b| b < 0x20 || b == b'\\'),
            "{path:?} -> {norm:?}"
        );
        if !norm.contains('%') {
            assert_eq!(
                normalize(&norm).unwrap(),
                norm,
                "not idempotent for {path:?}"
            );
        }
    }
}
