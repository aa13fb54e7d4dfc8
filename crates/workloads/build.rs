//! Embeds the SciMark kernel sources (kernels/scimark/<lang>/) into the library, so
//! `perflab scimark` works from any directory and on any machine with the toolchains:
//! it writes the sources into its build cache and compiles them there.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if !matches!(
                name.as_str(),
                "target" | "build" | "__pycache__" | "node_modules"
            ) {
                walk(&p, base, out);
            }
        } else if !name.ends_with(".class") && !name.starts_with('.') && name != "scimark" {
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            out.push((rel, p));
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("../../kernels/scimark")
        .canonicalize()
        .expect("kernels/scimark exists");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut code = String::from("/// (language, path relative to its folder, content)\npub const SOURCES: &[(&str, &str, &str)] = &[\n");
    for lang in ["c", "java", "rust", "go", "js", "python"] {
        let dir = root.join(lang);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files = Vec::new();
        walk(&dir, &dir, &mut files);
        for (rel, path) in files {
            println!("cargo:rerun-if-changed={}", path.display());
            writeln!(
                code,
                "    ({lang:?}, {rel:?}, include_str!({:?})),",
                path.display().to_string()
            )
            .unwrap();
        }
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("scimark_sources.rs");
    std::fs::write(out, code).unwrap();
}
