//! Fuzzes the request parser and the path normalizer of perflab-serve with the
//! invariants the server relies on: no panic; a complete head never claims more
//! bytes than it was given; its target has no control bytes; a normalized path
//! starts with `/` and holds no dot segment, backslash or control byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use perflab_serve::parse::parse;
use perflab_serve::path::{normalize, split_target};

fuzz_target!(|data: &[u8]| {
    let Ok(Some(head)) = parse(data, 16 * 1024) else {
        return;
    };
    assert!(head.len <= data.len());
    assert!(head.target.bytes().all(|b| b > b' ' && b != 0x7f));
    for (name, _value) in head.headers() {
        assert!(!name.is_empty());
    }
    let Ok((path, _query)) = split_target(head.target) else {
        return;
    };
    if let Ok(norm) = normalize(path) {
        assert!(norm.starts_with('/'));
        assert!(!norm.bytes().any(|b| b < 0x20 || b == b'\\' || b == 0x7f));
        assert!(norm.split('/').all(|seg| seg != "." && seg != ".."));
    }
});
