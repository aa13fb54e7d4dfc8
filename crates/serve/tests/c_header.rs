//! The C header declares every function the cdylib exports: each
//! `#[no_mangle] pub ... extern "C" fn` in src/ffi.rs must appear in
//! include/perflab_serve.h (regenerate it with cbindgen, see cbindgen.toml).

#[test]
fn every_exported_function_is_declared() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(dir.join("src/ffi.rs")).unwrap();
    let header = std::fs::read_to_string(dir.join("include/perflab_serve.h")).unwrap();
    let exported: Vec<&str> = src
        .lines()
        .filter_map(|l| l.split("extern \"C\" fn ").nth(1))
        .filter(|rest| rest.starts_with("perflab_"))
        .filter_map(|rest| rest.split('(').next())
        .collect();
    assert!(exported.len() >= 20, "found only {exported:?}");
    for name in &exported {
        assert!(
            header.contains(&format!(" {name}(")) || header.contains(&format!("*{name}(")),
            "{name} missing from the header"
        );
    }
    for ty in [
        "perflab_server",
        "perflab_request",
        "perflab_response",
        "perflab_stats",
        "perflab_handler",
    ] {
        assert!(header.contains(ty), "type {ty} missing from the header");
    }
}
