//! The detector on binaries gcc builds here with and without frame pointers, on the
//! system's own (a shell script's interpreter, libc), on files that are not ELF or are
//! cut short; and the bounds of a DWARF stack copy.

use super::*;

#[path = "../../../../tests/require.rs"]
mod require;

/// A C file of a few functions that gcc will not inline, calling each other.
const CALLERS: &str = "#include <stdio.h>\n\
     __attribute__((noinline)) long f1(long x) { long a[8]; for (int i = 0; i < 8; i++) a[i] = x * i; return a[x & 7]; }\n\
     __attribute__((noinline)) long f2(long x) { return f1(x) * 3 + f1(x + 1); }\n\
     __attribute__((noinline)) long f3(long x) { return f2(x) ^ f2(x >> 1); }\n\
     __attribute__((noinline)) long f4(long x) { return f3(x) + f2(x) + f1(x); }\n\
     int main(int argc, char **argv) { printf(\"%ld\\n\", f4(argc)); return 0; }\n";

/// main and two leaf functions (whose frames gcc omits even with frame pointers on).
const LEAVES: &str = "#include <stdio.h>\n\
     __attribute__((noinline)) double f(double x) { for (int i = 0; i < 9; i++) x = x * 1.5 + 1; return x; }\n\
     __attribute__((noinline)) double g(double x) { for (int i = 0; i < 7; i++) x = x * 0.5 + 2; return x; }\n\
     int main(void) { printf(\"%f\\n\", g(f(1.0))); return 0; }\n";

/// `source` compiled with `flags` into `dir/name`.
fn build(dir: &Path, name: &str, source: &str, flags: &[&str]) -> Option<PathBuf> {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let out = dir.join(name);
    let ok = std::process::Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .ok()?
        .success();
    ok.then_some(out)
}

#[test]
fn a_binary_built_with_frame_pointers_is_told_from_one_without() {
    if require::program("gcc").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let with = build(
        dir.path(),
        "with",
        CALLERS,
        &["-O2", "-fno-omit-frame-pointer"],
    )
    .unwrap();
    let without = build(
        dir.path(),
        "without",
        CALLERS,
        &["-O2", "-fomit-frame-pointer"],
    )
    .unwrap();
    let kept = inspect(&with);
    assert!(
        matches!(kept, FramePointers::Kept { with, checked } if checked >= 5 && with >= checked - 1),
        "{kept:?}"
    );
    let omitted = inspect(&without);
    assert!(
        matches!(omitted, FramePointers::Omitted { with: 0, checked } if checked >= 5),
        "{omitted:?}"
    );
    // Leaf functions without a frame do not make a binary one without frame pointers.
    let leafy = build(
        dir.path(),
        "leafy",
        LEAVES,
        &["-O1", "-fno-omit-frame-pointer"],
    )
    .unwrap();
    let leaves = inspect(&leafy);
    assert!(matches!(leaves, FramePointers::Kept { .. }), "{leaves:?}");
    let leafy = build(
        dir.path(),
        "leafless",
        LEAVES,
        &["-O1", "-fomit-frame-pointer"],
    )
    .unwrap();
    let leaves = inspect(&leafy);
    assert!(
        matches!(leaves, FramePointers::Omitted { with: 0, .. }),
        "{leaves:?}"
    );
    // auto on the command: the binary without them picks dwarf and names itself.
    let c = choose(
        CallGraphMode::Auto,
        None,
        &Target::Command(vec![without.display().to_string()]),
    );
    assert_eq!(c.mode, CallGraphMode::Dwarf);
    assert_eq!(c.dwarf_stack_bytes, Some(DEFAULT_DWARF_STACK_BYTES));
    let note = c.note.clone().unwrap();
    assert!(
        note.contains(&format!("{} has no frame pointers", without.display())),
        "{note}"
    );
    assert_eq!(
        c.perf_args(),
        [
            "--call-graph",
            &format!("dwarf,{DEFAULT_DWARF_STACK_BYTES}")
        ]
    );
}

#[test]
fn a_binary_with_frame_pointers_is_judged_by_its_libraries_too() {
    if require::program("gcc").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let with = build(
        dir.path(),
        "with",
        CALLERS,
        &["-O2", "-fno-omit-frame-pointer"],
    )
    .unwrap();
    let c = choose(
        CallGraphMode::Auto,
        Some(16384),
        &Target::Command(vec![with.display().to_string()]),
    );
    // Debian's libc is built without frame pointers: it decides; elsewhere fp.
    let libc = inspect(&library("libc.so.6").unwrap());
    let note = c.note.clone().unwrap();
    match libc {
        FramePointers::Omitted { .. } => {
            assert_eq!(c.mode, CallGraphMode::Dwarf, "{note}");
            assert!(note.contains("libc.so.6 has no frame pointers"), "{note}");
            assert_eq!(c.dwarf_stack_bytes, Some(16384));
        }
        _ => assert_eq!(c.mode, CallGraphMode::Fp, "{note}"),
    }
}

#[test]
fn a_script_is_judged_by_its_interpreter_and_a_non_elf_file_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.sh");
    std::fs::write(&script, "#!/usr/bin/env sh\necho hi\n").unwrap();
    let bin = command_binary(&script.display().to_string()).unwrap();
    assert_eq!(
        bin.file_name().unwrap(),
        perf::which("sh").unwrap().file_name().unwrap()
    );
    std::fs::write(&script, "#!/no/such/interpreter\n").unwrap();
    let c = choose(
        CallGraphMode::Auto,
        None,
        &Target::Command(vec![script.display().to_string()]),
    );
    assert_eq!(c.mode, CallGraphMode::Dwarf);
    assert!(
        c.note.unwrap().contains("interpreter is not found"),
        "the note says why"
    );
    let text = dir.path().join("t.txt");
    std::fs::write(&text, "not a program").unwrap();
    assert_eq!(
        inspect(&text),
        FramePointers::Unknown("not an ELF file".into())
    );
    assert!(matches!(
        inspect(&dir.path().join("missing")),
        FramePointers::Unknown(_)
    ));
}

#[test]
fn a_cut_or_lying_elf_is_unknown_not_a_panic() {
    let sh = std::fs::read(perf::which("sh").unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut");
    for len in [4, 63, 64, 4096, sh.len() / 2] {
        std::fs::write(&cut, &sh[..len]).unwrap();
        assert!(
            matches!(inspect(&cut), FramePointers::Unknown(_)),
            "{len} bytes"
        );
    }
    // A section table that claims sizes far past the end of the file.
    let mut lying = sh[..64].to_vec();
    lying[40..48].copy_from_slice(&64u64.to_le_bytes()); // shoff
    lying[60..62].copy_from_slice(&2u16.to_le_bytes()); // shnum
    let mut sect = [0u8; 64];
    sect[4..8].copy_from_slice(&2u32.to_le_bytes()); // SHT_SYMTAB
    sect[24..32].copy_from_slice(&u64::MAX.to_le_bytes()); // offset
    sect[32..40].copy_from_slice(&u64::MAX.to_le_bytes()); // size
    lying.extend_from_slice(&sect);
    lying.extend_from_slice(&sect);
    std::fs::write(&cut, &lying).unwrap();
    assert!(matches!(inspect(&cut), FramePointers::Unknown(_)));
}

#[test]
fn the_prologue_is_recognised_with_and_without_endbr64() {
    let at = |bytes: &[u8]| {
        let mut code = [0x90u8; PROLOGUE_WINDOW];
        code[..bytes.len()].copy_from_slice(bytes);
        has_prologue(&code)
    };
    assert!(at(&[0x55, 0x48, 0x89, 0xe5]));
    assert!(at(&[0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5]));
    assert!(at(&[0x55, 0x48, 0x8b, 0xec]));
    // gcc -O2 schedules a move in between.
    assert!(at(&[0x55, 0x48, 0x89, 0xfe, 0x48, 0x89, 0xe5]));
    // push %rbp alone is a callee-saved register, not a frame.
    assert!(!at(&[0x55, 0x53, 0x48, 0x83, 0xec, 8]));
    assert!(!at(&[
        0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57, 0x55, 0x48, 0x89, 0xe5
    ]));
    assert!(!at(&[0x48, 0x89, 0xe5]));
}

#[test]
fn modes_and_stack_sizes_parse_and_out_of_range_sizes_are_refused() {
    use CallGraphMode::*;
    assert_eq!(parse_call_graph("fp").unwrap(), (Fp, None));
    assert_eq!(parse_call_graph("dwarf").unwrap(), (Dwarf, None));
    assert_eq!(
        parse_call_graph("dwarf,16384").unwrap(),
        (Dwarf, Some(16384))
    );
    assert_eq!(parse_call_graph("auto,4096").unwrap(), (Auto, Some(4096)));
    for bad in [
        "dwarf,65536",
        "dwarf,0",
        "dwarf,100",
        "dwarf,8191",
        "dwarf,x",
        "fp,8192",
        "lbr",
    ] {
        let e = parse_call_graph(bad).unwrap_err();
        assert!(e.is_bad_input(), "{bad}: {e}");
    }
    let e = parse_call_graph("dwarf,65536").unwrap_err().to_string();
    assert!(e.contains("65528"), "{e}");
    let fixed = choose(Dwarf, None, &Target::System);
    assert_eq!(fixed.note, None);
    assert_eq!(fixed.describe(), "dwarf (8192-byte stack copies)");
    assert_eq!(choose(Fp, Some(16384), &Target::System).perf_args(), ["-g"]);
    assert!(choose(Off, None, &Target::System).perf_args().is_empty());
}
