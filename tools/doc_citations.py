#!/usr/bin/env python3
"""Check that what the module docs cite exists.

Reads every `//!` line in crates/*/src/**/*.rs (with --all, `///` lines too) and every
docs/*.md, README.md and CHANGELOG.md, extracts citations and checks each (in the
Markdown files: links, paths and `perflab_*::` paths):

- a path (`crates/...`, `docs/...`, `scripts/...`, `bench/...`, `examples/...`,
  `kernels/...`, `tests/...`): the file or folder exists (a crate's `tests/` is looked
  up in that crate too);
- a bare `name.md`: it exists under docs/ or at the root; `name.md: the section` or
  `name.md, "the section"`: a heading of that file contains the words;
- a bare `name.rs`: a file of that name exists under crates/;
- a Rust path in backticks (`perflab_lab::single`, `Fleet::for_experiment`,
  `[`Kind`]`): each segment is a crate, a module file, or a name defined somewhere in
  crates/ (fn, struct, enum, trait, type, const, static, mod, macro, or an enum
  variant / field spelled `Name` at the start of a line).

Prints one line per dangling citation (file:line: what) and exits 1 if any.
Usage: python3 tools/doc_citations.py [--all] [ROOT]
"""

import os
import re
import sys

ROOT = "."
ALL = False
for a in sys.argv[1:]:
    if a == "--all":
        ALL = True
    else:
        ROOT = a

PATH_RE = re.compile(r"(?<![\w./-])((?:crates|docs|scripts|bench|examples|kernels|tests|tools|fuzz)/[\w./<>{}*-]*[\w/])")
MD_RE = re.compile(r"(?<![\w/.-])([\w-]+\.md)(?:#([\w-]+))?")
MD_SECTION_RE = re.compile(r"([\w-]+\.md)`?(?::\s+|,\s+\"|\s+\(\")\"?([a-z][\w /'-]{3,60}?)(?=[\"”).;]|$)")
RS_RE = re.compile(r"(?<![\w/.-])([\w]+\.rs)\b")
TICK_RE = re.compile(r"`([^`]+)`")
RUST_PATH_RE = re.compile(r"^(?:[A-Za-z_][\w]*)(?:::[A-Za-z_][\w]*)+(?:\(\))?$|^[A-Z][A-Za-z0-9]+$")
NAME_RE = re.compile(r"^(?:[A-Z][a-z0-9]+[A-Z]\w*|[a-z_][a-z0-9_]*\(\))$")


def walk(top, ext):
    for dp, dns, fns in os.walk(top):
        dns[:] = [d for d in dns if d not in ("target", ".git")]
        for f in fns:
            if f.endswith(ext):
                yield os.path.join(dp, f)


rs_files = sorted(walk(os.path.join(ROOT, "crates"), ".rs"))
rs_basenames = {os.path.basename(p) for p in rs_files}
module_names = set()
for p in rs_files:
    b = os.path.basename(p)[:-3]
    module_names.add(b if b not in ("mod", "lib") else os.path.basename(os.path.dirname(p)))
crate_names = set()
for d in os.listdir(os.path.join(ROOT, "crates")):
    crate_names.add("perflab_" + d)
    crate_names.add("perflab-" + d)
    module_names.add(d)

defined = set()
DEF_RE = re.compile(
    r"\b(?:fn|struct|enum|trait|type|const|static|mod|macro_rules!|union)\s+([A-Za-z_]\w*)")
VARIANT_RE = re.compile(r"^\s*(?:pub(?:\([\w ]+\))?\s+)?([A-Za-z_]\w*)\s*(?:[({,:=]|$)")
for p in rs_files:
    with open(p, encoding="utf-8", errors="replace") as f:
        for line in f:
            for m in DEF_RE.finditer(line):
                defined.add(m.group(1))
            m = VARIANT_RE.match(line)
            if m:
                defined.add(m.group(1))
# names of other crates' items that module docs mention (mio, rustls, hdrhistogram, ...)
EXTERNAL = {"ServerAliveInterval", "AsyncRead", "AsyncWrite", "Poll", "HistogramLogProcessor",
            "IntervalLogIterator", "V2DeflateSerializer", "TryFrom", "Deserialize", "Serialize",
            "ClientConfig", "ClientConnection", "ServerConnection", "ServerConfig", "writer",
            "MAX", "StdRng", "u64", "u32", "usize", "i64", "f64"}
STD = EXTERNAL | {"std", "core", "alloc", "serde", "serde_json", "toml", "anyhow", "thiserror", "clap",
       "libc", "mio", "rusqlite", "hdrhistogram", "procfs", "nix", "io", "fs", "env",
       "Self", "self", "super", "crate", "Ok", "Err", "Some", "None", "Box", "Vec", "String",
       "Option", "Result", "Arc", "Duration", "Instant", "HashMap", "BTreeMap", "Path",
       "PathBuf", "Command", "Child", "ExitCode", "ExitStatus", "Value", "Table"}


def md_headings(path):
    hs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                hs.append(line.lstrip("#").strip().lower().replace("`", ""))
    return hs


def anchor(h):
    a = re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-")
    return a


def find_md(name):
    for c in (os.path.join(ROOT, "docs", name), os.path.join(ROOT, name)):
        if os.path.exists(c):
            return c
    return None


def path_exists(p, src):
    p = p.rstrip("/.")
    # placeholders (`examples/NAME.toml`), build outputs, and folders of other repositories
    if re.search(r"/[A-Z]+\.|/target/", p) or p in OTHER_REPOS:
        return True
    if p.startswith("tests/") and any(
            os.path.exists(os.path.join(ROOT, "crates", c, p)) for c in os.listdir(os.path.join(ROOT, "crates"))):
        return True
    if any(ch in p for ch in "<>{}*"):
        head = re.split(r"[<>{}*]", p)[0].rstrip("/")
        return os.path.exists(os.path.join(ROOT, head))
    if os.path.exists(os.path.join(ROOT, p)):
        return True
    # a crate-relative path (`tests/x.rs` cited from crates/x/src/...)
    parts = src.split(os.sep)
    if "crates" in parts:
        i = parts.index("crates")
        crate = os.path.join(ROOT, *parts[i:i + 2]) if ROOT == "." else os.path.join(*parts[:i + 2])
        if os.path.exists(os.path.join(crate, p)):
            return True
    return False


def defined_in(paths, name):
    pat = re.compile(r"\b(?:fn|struct|enum|trait|type|const|static|mod|macro_rules!)\s+" + name + r"\b"
                     r"|^\s*" + name + r"\s*[({,]|\buse\b[^;]*\b" + name + r"\b", re.M)
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            if pat.search(f.read()):
                return True
    return False


def check_crate_path(segs):
    """`perflab_x::a::b::c`: follow module files, then the names must be defined there."""
    src = os.path.join(ROOT, "crates", segs[0][len("perflab_"):], "src")
    cur = [os.path.join(src, "lib.rs")]
    here = src
    for i, s in enumerate(segs[1:], 1):
        for cand in (os.path.join(here, s + ".rs"), os.path.join(here, s, "mod.rs")):
            if os.path.exists(cand):
                cur = [cand]
                here = os.path.join(here, s)
                break
        else:
            # an item: defined in the module reached (or in its folder's files), or its
            # impl block's items (the rest of the path) somewhere in the crate
            pool = cur + (list(walk(here, ".rs")) if os.path.isdir(here) else [])
            if not defined_in(pool, s):
                return [f"{s} (not in {os.path.relpath(cur[0], ROOT)})"]
            rest = segs[i + 1:]
            if rest and not defined_in(list(walk(src, ".rs")), rest[0]):
                return [rest[0]]
            return []
    return []


def check_rust_path(text):
    text = text.strip().rstrip("()")
    text = re.sub(r"<.*>$", "", text)
    segs = [s for s in text.split("::") if s]
    if segs and segs[0].startswith("perflab_") and os.path.isdir(
            os.path.join(ROOT, "crates", segs[0][len("perflab_"):])):
        return check_crate_path(segs)
    bad = []
    for s in segs:
        if s in STD or s in crate_names or s in module_names or s in defined:
            continue
        bad.append(s)
    return bad


# paths cited from other projects (docs/scimark.md: the reference sources)
OTHER_REPOS = {"bench/scimark2src/jnt/scimark2"}

problems = []


def report(src, n, what):
    problems.append(f"{src}:{n}: {what}")


def check_text(src, n, line, rust):
    for m in PATH_RE.finditer(line):
        p = m.group(1)
        if p.endswith(".") or "..." in p:
            continue
        if not path_exists(p, src):
            report(src, n, f"no such path `{p}`")
    for m in MD_RE.finditer(line):
        name, frag = m.group(1), m.group(2)
        if re.search(r"[/\w]" + re.escape(name), line[max(0, m.start() - 1):m.end()]) and m.start() > 0 and line[m.start() - 1] == "/":
            continue
        found = find_md(name)
        if not found:
            if name not in ("DESIGN.md", "CONVENTIONS.md", "STUDIES.md") or rust:
                report(src, n, f"no such document `{name}`")
            continue
        if frag and "{" not in frag:
            if frag not in [anchor(h) for h in md_headings(found)]:
                report(src, n, f"no heading #{frag} in {name}")
    for m in MD_SECTION_RE.finditer(line):
        name, sec = m.group(1), m.group(2).strip().lower()
        found = find_md(name)
        if found:
            hs = md_headings(found)
            words = sec.split()
            if not any(sec in h or h in sec for h in hs):
                # report for a human to judge: prose after a colon is not always a section
                report(src, n, f"section? `{name}`: \"{sec}\" (no heading matches)")
    if rust:
        for m in RS_RE.finditer(line):
            if m.group(1) not in rs_basenames and m.group(1) not in ("build.rs",):
                report(src, n, f"no file `{m.group(1)}` under crates/")
        for m in TICK_RE.finditer(line):
            t = m.group(1).strip()
            if (RUST_PATH_RE.match(t) and ("::" in t or line[max(0, m.start() - 1)] == "[")) or NAME_RE.match(t):
                bad = check_rust_path(t)
                if bad:
                    report(src, n, f"`{t}`: {', '.join(bad)} not found")


for p in rs_files:
    if "/src/" not in p:
        continue
    with open(p, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if s.startswith("//!") or (ALL and s.startswith("///")):
                check_text(os.path.relpath(p, ROOT), n, s[3:], True)

md_files = sorted(walk(os.path.join(ROOT, "docs"), ".md"))
md_files += [os.path.join(ROOT, f) for f in ("README.md", "CHANGELOG.md") if os.path.exists(os.path.join(ROOT, f))]
LINK_RE = re.compile(r"\]\(([^)#\s]*)(?:#([\w-]+))?\)")
for p in md_files:
    base = os.path.dirname(p)
    with open(p, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            for m in LINK_RE.finditer(line):
                target, frag = m.group(1), m.group(2)
                if re.match(r"^[a-z]+:", target):
                    continue
                full = os.path.normpath(os.path.join(base, target)) if target else p
                if not os.path.exists(full):
                    report(os.path.relpath(p, ROOT), n, f"link to missing `{target}`")
                elif frag and full.endswith(".md") and frag not in [anchor(h) for h in md_headings(full)]:
                    report(os.path.relpath(p, ROOT), n, f"link to missing heading `{target}#{frag}`")
            for m in TICK_RE.finditer(line):
                t = m.group(1).strip()
                # the changelog names removed items on purpose
                if re.match(r"^perflab_\w+(::\w+)+(\(\))?$", t) and not p.endswith("CHANGELOG.md"):
                    bad = check_rust_path(t)
                    if bad:
                        report(os.path.relpath(p, ROOT), n, f"`{t}`: {', '.join(bad)} not found")
            if not p.endswith("CHANGELOG.md"):
                for m in PATH_RE.finditer(line):
                    q = m.group(1)
                    if "..." in q or q.endswith("."):
                        continue
                    if not path_exists(q, p):
                        report(os.path.relpath(p, ROOT), n, f"no such path `{q}`")

for pr in problems:
    print(pr)
sys.exit(1 if problems else 0)
