#!/usr/bin/env bash
# Builds the six SciMark programs into a temporary directory and runs each once,
# one after the other, printing a Markdown table of MFLOPS (the table in
# docs/scimark.md comes from this script).
#
#   kernels/scimark/run-all.sh [--min-time S] [--large] [--langs c,java,rust,go,js,python]
#
# Each run's JSON is kept in $OUT (default: a temp dir, printed at the end).
# `cpu/wall` is the lowest ratio of process CPU time to wall time over the five
# kernels: well below 1.0 means the machine was busy and the run is not clean.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
min_time=2
size_flag=""
langs="c,java,rust,go,js,python"
while [ $# -gt 0 ]; do
  case "$1" in
    --min-time) min_time=$2; shift 2 ;;
    --large) size_flag=--large; shift ;;
    --langs) langs=$2; shift 2 ;;
    *) echo "usage: $0 [--min-time S] [--large] [--langs c,java,...]" >&2; exit 2 ;;
  esac
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"

cmd_for() {
  case "$1" in
    c)
      gcc -O3 -ffp-contract=off -o "$work/scimark_c" "$here/c/scimark.c" -lm
      echo "$work/scimark_c" ;;
    java)
      javac -d "$work/java" "$here/java/Scimark.java"
      echo "java -cp $work/java Scimark" ;;
    rust)
      CARGO_TARGET_DIR="$work/rust-target" cargo build --release --quiet \
        --manifest-path "$here/rust/Cargo.toml"
      echo "$work/rust-target/release/scimark" ;;
    go)
      (cd "$here/go" && go build -o "$work/scimark_go" .)
      echo "$work/scimark_go" ;;
    js) echo "node $here/js/scimark.js" ;;
    python) echo "python3 $here/python/scimark.py" ;;
    *) echo "unknown language $1" >&2; exit 2 ;;
  esac
}

IFS=, read -r -a list <<<"$langs"
for lang in "${list[@]}"; do
  cmd=$(cmd_for "$lang")
  echo "running $lang (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  # shellcheck disable=SC2086 # cmd is a command line
  $cmd --min-time "$min_time" $size_flag >"$OUT/$lang.json"
done

python3 - "$OUT" "${list[@]}" <<'EOF'
import json, sys
out, langs = sys.argv[1], sys.argv[2:]
kernels = ["fft", "sor", "mc", "sparse", "lu"]
names = {"fft": "FFT", "sor": "SOR", "mc": "MC", "sparse": "Sparse", "lu": "LU"}
print("| language | runtime | " + " | ".join(names[k] for k in kernels)
      + " | composite | cpu/wall |")
print("|---" * (len(kernels) + 4) + "|")
for lang in langs:
    d = json.load(open(f"{out}/{lang}.json"))
    ks = d["kernels"]
    ratio = min(ks[k]["cpu_seconds"] / ks[k]["seconds"] for k in ks)
    cells = [f"{ks[k]['mflops']:.0f}" if ks[k]["mflops"] >= 100 else f"{ks[k]['mflops']:.1f}"
             for k in kernels]
    comp = d["composite"]
    comp = f"{comp:.0f}" if comp >= 100 else f"{comp:.1f}"
    print(f"| {lang} | {d['runtime']} | " + " | ".join(cells) + f" | {comp} | {ratio:.2f} |")
EOF
echo "JSON in $OUT" >&2
