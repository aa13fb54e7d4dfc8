//! The traversal corpus: a secret file lives next to the document root, reachable by
//! every classic trick (dot segments, percent and double encodings, overlong UTF-8,
//! backslashes, absolute paths, NUL, symlinks out of the root). None of them may
//! yield a byte of it: each answer must be an error or a file from inside the root.

mod common;

use perflab_serve::Server;
use std::io::Write;

const SECRET: &str = "TOP-SECRET-7f3a9c";

#[test]
fn no_byte_from_outside_the_root() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(base.path().join("secret.txt"), SECRET).unwrap();
    std::fs::write(root.join("ok.txt"), "inside").unwrap();
    std::os::unix::fs::symlink(base.path().join("secret.txt"), root.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(base.path(), root.join("up")).unwrap();
    std::os::unix::fs::symlink("../secret.txt", root.join("sub/rel.txt")).unwrap();
    std::os::unix::fs::symlink("../ok.txt", root.join("sub/fine.txt")).unwrap();
    let secret_abs = base.path().join("secret.txt");
    let secret_abs = secret_abs.to_str().unwrap();

    let h = Server::builder()
        .root(&root)
        .workers(1)
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let mut corpus: Vec<String> = [
        "/../secret.txt",
        "/../../secret.txt",
        "/sub/../../secret.txt",
        "/./../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E/secret.txt",
        "/.%2e/secret.txt",
        "/%2e./secret.txt",
        "/..%2fsecret.txt",
        "/..%2Fsecret.txt",
        "/%2e%2e%2fsecret.txt",
        "/sub%2f..%2f..%2fsecret.txt",
        "/%252e%252e/secret.txt",
        "/%252e%252e%252fsecret.txt",
        "/%25%32%65%25%32%65/secret.txt",
        "/%c0%ae%c0%ae/secret.txt",
        "/%c0%ae%c0%ae%c0%afsecret.txt",
        "/%e0%80%ae%e0%80%ae/secret.txt",
        "/%c1%9c..%c1%9csecret.txt",
        "/..\\secret.txt",
        "/..%5csecret.txt",
        "/..%5Csecret.txt",
        "/sub\\..\\..\\secret.txt",
        "/%00/../secret.txt",
        "/ok.txt%00/../../secret.txt",
        "/secret.txt%00.txt",
        "/link.txt",
        "/up/secret.txt",
        "/up/root/../secret.txt",
        "/sub/rel.txt",
        "//secret.txt",
        "/..;/secret.txt",
        "/.../secret.txt",
        "/sub/..%00/../secret.txt",
        "http://t/../secret.txt",
        "http://t/%2e%2e/secret.txt",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    corpus.push(secret_abs.to_string());
    corpus.push(format!("/{secret_abs}"));
    corpus.push(format!("file://{secret_abs}"));
    corpus.push(format!("/..{}", secret_abs.replace('/', "%2f")));
    assert!(corpus.len() >= 40);

    for target in &corpus {
        // Raw bytes on the wire: the client must not normalize anything.
        let mut s = common::connect(h.local_addr());
        write!(
            s,
            "GET {target} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let answer = common::read_to_end(&mut s);
        let text = String::from_utf8_lossy(&answer);
        assert!(
            !text.contains(SECRET),
            "{target} leaked the secret:\n{text}"
        );
        assert!(text.starts_with("HTTP/1.1 "), "{target}: no answer");
        let status = &text[9..12];
        assert!(
            ["400", "403", "404"].contains(&status),
            "{target} answered {status}"
        );
    }
    // A raw NUL byte in the request line is refused by the parser.
    let r = common::raw(
        h.local_addr(),
        b"GET /ok.txt\0/../../secret.txt HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    assert_eq!(r.status, 400);
    // Symlinks inside the root, and dot segments that stay inside, still work.
    assert_eq!(
        common::get(h.local_addr(), "/sub/fine.txt").text(),
        "inside"
    );
    assert_eq!(
        common::get(h.local_addr(), "/sub/%2e%2e/ok.txt").text(),
        "inside"
    );
}

#[test]
fn outside_symlinks_can_be_allowed_explicitly() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(base.path().join("shared.txt"), "shared").unwrap();
    std::os::unix::fs::symlink(base.path().join("shared.txt"), root.join("link.txt")).unwrap();
    let h = Server::builder()
        .root(&root)
        .workers(1)
        .follow_outside_symlinks(true)
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    assert_eq!(common::get(h.local_addr(), "/link.txt").text(), "shared");
    // Dot segments still can't climb out.
    assert_eq!(common::get(h.local_addr(), "/../shared.txt").status, 403);
}
