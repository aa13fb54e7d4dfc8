//! `perflab --help` gives every subcommand a real one-line description (not clap's
//! fallback from an argument struct's doc, "Arguments of `perflab serve`").

use assert_cmd::Command;

#[test]
fn every_subcommand_has_a_description() {
    let out = Command::cargo_bin("perflab")
        .unwrap()
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let commands: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A long description wraps onto lines indented past the names.
        .filter(|l| !l.starts_with("   "))
        .collect();
    assert!(commands.len() >= 15, "{text}");
    for line in commands {
        let mut parts = line.split_whitespace();
        let name = parts.next().unwrap();
        let about: Vec<&str> = parts.collect();
        assert!(
            about.len() >= 3,
            "`perflab {name}` has no real description: {line:?}"
        );
        assert!(
            !line.contains("Arguments of"),
            "`perflab {name}` is described by its argument struct: {line:?}"
        );
    }
}
