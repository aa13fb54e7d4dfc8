#!/usr/bin/env bash
# perflab's SciMark 2 kernels (C and Java) against the reference SciMark 2 (NIST's ANSI C
# "scimark2_1c" and the Java "jnt.scimark2" 2.0a) on this machine, with the same compiler,
# flags, JVM and minimum time, alternating programs round by round in one run.
#
# Each round runs, in this order: reference C, perflab C, reference Java, perflab Java.
# Prints per-kernel medians (MFLOPS), the ratio perflab / reference of the medians, the
# range of the per-round ratios (the two programs ran back to back), and flags every
# kernel whose ratio is outside ±5 % (issue 6). Also prints, per round, the 1-minute load
# average at each run's start and each program's process CPU / wall ratio; a round in
# which any program got less than MIN_CPU_WALL of a CPU (default 0.95) shared the CPU with
# other work and is left out of the medians (all rounds are used, with a warning, when
# none is clean).
#
# Clocks differ, and the script compares like with like:
#   - reference C times each kernel with clock(), i.e. process CPU time;
#   - reference Java times with System.currentTimeMillis(), wall time;
#   - perflab's programs time with the monotonic wall clock and also report the process
#     CPU time of the same run (`cpu_seconds`).
# So for C the ratio is computed twice: perflab's CPU-time MFLOPS (flops / cpu_seconds)
# against the reference (same clock; the flagged one), and perflab's reported wall MFLOPS
# against it. On a quiet machine the two agree; on a loaded one only the first is fair.
# Java is wall against wall.
#
# The reference sources are not in this repository and this script does not download
# them. Put them under $SCIMARK_REF:
#   $SCIMARK_REF/c/      the files of scimark2_1c.zip (scimark2.c, kernel.c, FFT.c, ...,
#                        Stopwatch.c, Random.c, array.c and their headers), from
#                        https://math.nist.gov/scimark2/download_c.html
#   $SCIMARK_REF/java/   the jnt/ tree of the Java source zip (scimark2src.zip), so that
#                        $SCIMARK_REF/java/jnt/scimark2/commandline.java exists, from
#                        https://math.nist.gov/scimark2/download_java.html
# docs/scimark.md ("Against the reference programs") says which copies were used.
#
# Usage: SCIMARK_REF=/path bench/scimark-vs-reference.sh [ROUNDS] [MIN_TIME]
#        (defaults: 5 rounds, 2 s minimum time per kernel, the SciMark default)
# Env:   CC (gcc), CFLAGS (-O3; used for both C programs), JAVA (java), JAVAC (javac),
#        JVM_FLAGS (none; used for both Java programs), LANGS ("c java"),
#        MIN_CPU_WALL (0.95; 0 keeps every round),
#        OUT (keep every run's raw output there; default: a temp dir, removed),
#        SAME_JVM=1 (Java only: instead of separate programs, time the reference's and
#        perflab's kernels in one JVM, kernel by kernel back to back, order swapped every
#        round, one extra warm-up round thrown away: bench/scimark-same-jvm/SameJvm.java;
#        prints per-kernel medians of the paired ratios with 95 % bootstrap intervals),
#        ANALYZE_ONLY=1 (with OUT: run nothing, summarise the ROUNDS rounds kept in OUT;
#        rounds of several runs can be pooled into one OUT as NAME.ROUND.{out,time,load})
set -euo pipefail

ROUNDS=${1:-5}
MIN_TIME=${2:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CC=${CC:-gcc}
CFLAGS=${CFLAGS:--O3}
JAVA=${JAVA:-java}
JAVAC=${JAVAC:-javac}
LANGS=${LANGS:-"c java"}
read -r -a JVM_ARGS <<<"${JVM_FLAGS:-}"
read -r -a CFLAG_ARGS <<<"$CFLAGS"

die() { echo "error: $1" >&2; exit "${2:-1}"; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, got '$ROUNDS'" 2
python3 -c "import sys; v=float(sys.argv[1]); sys.exit(0 if v > 0 else 1)" "$MIN_TIME" 2>/dev/null \
  || die "MIN_TIME must be a positive number of seconds, got '$MIN_TIME'" 2

how_to_get() {
  cat >&2 <<EOF
error: $1
  SCIMARK_REF must name a directory holding the reference SciMark 2 sources (not shipped
  with perflab, not downloaded by this script):
    \$SCIMARK_REF/c/     unpack scimark2_1c.zip from https://math.nist.gov/scimark2/download_c.html
                        (scimark2.c, kernel.c, FFT.c, SOR.c, MonteCarlo.c, SparseCompRow.c, LU.c,
                        Random.c, Stopwatch.c, array.c and the .h files)
    \$SCIMARK_REF/java/  unpack the Java sources (scimark2src.zip) from
                        https://math.nist.gov/scimark2/download_java.html so that
                        \$SCIMARK_REF/java/jnt/scimark2/commandline.java exists
  then: SCIMARK_REF=/path/to/ref bench/scimark-vs-reference.sh [ROUNDS] [MIN_TIME]
EOF
  exit 2
}
[[ -n "${SCIMARK_REF:-}" ]] || how_to_get "SCIMARK_REF is not set"
REF=$(cd "$SCIMARK_REF" 2>/dev/null && pwd) || how_to_get "SCIMARK_REF=$SCIMARK_REF is not a directory"
want_c=0 want_java=0
for l in $LANGS; do
  case $l in
    c) want_c=1 ;;
    java) want_java=1 ;;
    *) die "LANGS: unknown language '$l' (expected c and/or java)" 2 ;;
  esac
done
if ((want_c)); then
  for f in scimark2.c kernel.c FFT.c SOR.c MonteCarlo.c SparseCompRow.c LU.c Random.c Stopwatch.c array.c; do
    [[ -f "$REF/c/$f" ]] || how_to_get "missing $REF/c/$f"
  done
  command -v "$CC" >/dev/null || die "C compiler '$CC' not found (apt-get install gcc, or set CC)"
fi
if ((want_java)); then
  [[ -f "$REF/java/jnt/scimark2/commandline.java" ]] || how_to_get "missing $REF/java/jnt/scimark2/commandline.java"
  command -v "$JAVAC" >/dev/null || die "'$JAVAC' not found (apt-get install default-jdk-headless, or set JAVAC)"
  command -v "$JAVA" >/dev/null || die "'$JAVA' not found (set JAVA)"
fi
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install time)"

MIN_CPU_WALL=${MIN_CPU_WALL:-0.95}
python3 -c "import sys; float(sys.argv[1])" "$MIN_CPU_WALL" 2>/dev/null \
  || die "MIN_CPU_WALL must be a number, got '$MIN_CPU_WALL'" 2

WORK=$(mktemp -d /tmp/perflab-scimark-ref.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
RAW=${OUT:-$WORK/raw}
mkdir -p "$RAW"

# ---- build: the reference the way its Makefile does (every .c, -lm), perflab's the way
# `perflab scimark` does (crates/workloads/src/scimark.rs: CC CFLAGS -o exe scimark.c -lm;
# javac -d classes Scimark.java).
if [[ -n "${SAME_JVM:-}" ]]; then
  ((want_java)) || die "SAME_JVM=1 compares the Java kernels: LANGS must include java" 2
  echo "  java: $("$JAVA" -version 2>&1 | head -1); one JVM, $ROUNDS rounds + 1 warm-up" >&2
  mkdir -p "$WORK/sj/ref" "$WORK/sj/ours" "$WORK/sj/h"
  "$JAVAC" -nowarn -d "$WORK/sj/ref" -sourcepath "$REF/java" "$REF/java/jnt/scimark2/commandline.java"
  "$JAVAC" -d "$WORK/sj/ours" "$ROOT/kernels/scimark/java/Scimark.java"
  "$JAVAC" -d "$WORK/sj/h" -cp "$WORK/sj/ref:$WORK/sj/ours" "$ROOT/bench/scimark-same-jvm/SameJvm.java"
  "$JAVA" "${JVM_ARGS[@]}" -cp "$WORK/sj/ref:$WORK/sj/ours:$WORK/sj/h" SameJvm $((ROUNDS + 1)) "$MIN_TIME" \
    | tee "$RAW/same-jvm.out" >&2
  python3 - "$RAW/same-jvm.out" <<'PY'
import random, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
v = {(int(r), k, who): float(m) for r, k, who, m in rows}
rounds = sorted({r for r, _, _ in v if r > 1})  # round 1 is the warm-up
K = ["fft", "sor", "mc", "sparse", "lu"]
print(f"\nSciMark 2 Java, reference vs perflab kernels in one JVM: {len(rounds)} rounds "
      "(warm-up round left out), paired per round\n")
print("| kernel | reference MFLOPS | perflab MFLOPS | ratio (median of paired) | per-round range "
      "| 95 % interval | verdict (±5 %) |\n|---|---|---|---|---|---|---|")
rnd = random.Random(20261121)
for k in K:
    ref = [v[(r, k, "ref")] for r in rounds]
    ours = [v[(r, k, "ours")] for r in rounds]
    q = [o / f for o, f in zip(ours, ref)]
    med = statistics.median(q)
    boot = sorted(statistics.median(rnd.choices(q, k=len(q))) for _ in range(4000))
    lo, hi = boot[100], boot[3899]
    verdict = ("within" if lo >= 0.95 and hi <= 1.05
               else "outside" if hi < 0.95 or lo > 1.05 else "undecided")
    print(f"| {k} | {statistics.median(ref):.0f} | {statistics.median(ours):.0f} | {med:.3f} "
          f"| {min(q):.2f}–{max(q):.2f} | {lo:.3f}–{hi:.3f} | {verdict} |")
print("\nratio = median over rounds of perflab / reference measured back to back in the same "
      "JVM; interval: 95 % percentile bootstrap of that median (rounds resampled, seeded)")
PY
  exit 0
fi

CMDS=()
if [[ -n "${ANALYZE_ONLY:-}" ]]; then
  [[ -n "${OUT:-}" ]] || die "ANALYZE_ONLY=1 needs OUT (the directory of a run's raw output)" 2
  ((want_c)) && CMDS+=("ref-c" "ours-c")
  ((want_java)) && CMDS+=("ref-java" "ours-java")
  ROUNDS_RUN=0
else
  ROUNDS_RUN=$ROUNDS
fi
[[ -z "${ANALYZE_ONLY:-}" ]] &&
echo "building (CC=$CC CFLAGS='$CFLAGS', $("$CC" --version 2>/dev/null | head -1))..." >&2
if ((want_c && ROUNDS_RUN)); then
  "$CC" "${CFLAG_ARGS[@]}" -o "$WORK/ref-c" "$REF"/c/*.c -lm
  "$CC" "${CFLAG_ARGS[@]}" -o "$WORK/ours-c" "$ROOT/kernels/scimark/c/scimark.c" -lm
  CMDS+=("ref-c" "ours-c")
fi
if ((want_java && ROUNDS_RUN)); then
  echo "  java: $("$JAVA" -version 2>&1 | head -1)" >&2
  mkdir -p "$WORK/ref-java" "$WORK/ours-java"
  "$JAVAC" -nowarn -d "$WORK/ref-java" -sourcepath "$REF/java" "$REF/java/jnt/scimark2/commandline.java"
  "$JAVAC" -d "$WORK/ours-java" "$ROOT/kernels/scimark/java/Scimark.java"
  CMDS+=("ref-java" "ours-java")
fi

run_one() { # NAME ROUND: runs one program, keeps its stdout, /usr/bin/time line, load
  local name=$1 round=$2 base="$RAW/$1.$2"
  cut -d' ' -f1 /proc/loadavg >"$base.load"
  case $name in
    ref-c) /usr/bin/time -f '%e %U %S' -o "$base.time" "$WORK/ref-c" "$MIN_TIME" >"$base.out" ;;
    ours-c) /usr/bin/time -f '%e %U %S' -o "$base.time" "$WORK/ours-c" --min-time "$MIN_TIME" >"$base.out" ;;
    ref-java) /usr/bin/time -f '%e %U %S' -o "$base.time" "$JAVA" "${JVM_ARGS[@]}" -cp "$WORK/ref-java" \
                jnt.scimark2.commandline "$MIN_TIME" >"$base.out" ;;
    ours-java) /usr/bin/time -f '%e %U %S' -o "$base.time" "$JAVA" "${JVM_ARGS[@]}" -cp "$WORK/ours-java" \
                 Scimark --min-time "$MIN_TIME" >"$base.out" ;;
  esac
}

for round in $(seq "$ROUNDS_RUN"); do
  for name in "${CMDS[@]}"; do
    printf 'round %d/%d  %-9s (load %s)\n' "$round" "$ROUNDS" "$name" "$(cut -d' ' -f1-3 /proc/loadavg)" >&2
    run_one "$name" "$round" || die "$name failed in round $round (output in ${OUT:-a removed temp dir; set OUT to keep it})"
  done
done

python3 - "$RAW" "$ROUNDS" "$MIN_TIME" "$MIN_CPU_WALL" "${CMDS[@]}" <<'PY'
import json, os, re, statistics, sys

raw, rounds, min_time, thr = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
names = sys.argv[5:]
K = ["fft", "sor", "mc", "sparse", "lu", "composite"]
HEAD = ["FFT", "SOR", "MC", "Sparse", "LU", "composite"]
NUM = r"([0-9.]+(?:[Ee][-+]?[0-9]+)?)"
REF_C = {"composite": r"^Composite Score:\s+" + NUM, "fft": r"^FFT\s+Mflops:\s+" + NUM,
         "sor": r"^SOR\s+Mflops:\s+" + NUM, "mc": r"^MonteCarlo:\s+Mflops:\s+" + NUM,
         "sparse": r"^Sparse matmult\s+Mflops:\s+" + NUM, "lu": r"^LU\s+Mflops:\s+" + NUM}
REF_J = {"composite": r"^Composite Score: " + NUM, "fft": r"^FFT \(\d+\): " + NUM,
         "sor": r"^SOR \(\d+x\d+\):\s+" + NUM, "mc": r"^Monte Carlo : " + NUM,
         "sparse": r"^Sparse matmult \(N=\d+, nz=\d+\): " + NUM, "lu": r"^LU \(\d+x\d+\): " + NUM}

def parse(name, text):
    """Returns {kernel: mflops} and, for perflab, {kernel: mflops on the CPU clock}."""
    if name.startswith("ref-"):
        pats = REF_C if name == "ref-c" else REF_J
        got = {}
        for k, p in pats.items():
            m = re.search(p, text, re.M)
            if not m:
                sys.exit(f"error: {name}: no {k} figure in its output (an invalid numerical "
                         f"result?):\n{text}")
            got[k] = float(m.group(1))
        return got, None
    j = json.loads(text.strip().splitlines()[-1])
    ks = j["kernels"]
    wall = {k: ks[k]["mflops"] for k in K[:-1]}
    wall["composite"] = j["composite"]
    cpu = {k: ks[k]["mflops"] * ks[k]["seconds"] / ks[k]["cpu_seconds"] for k in K[:-1]}
    cpu["composite"] = sum(cpu[k] for k in K[:-1]) / 5
    return wall, cpu

# per round: {name: (wall mflops, cpu-clock mflops or None, cpu/wall, load at start)}
per_round = []
for r in range(1, rounds + 1):
    runs = {}
    for n in names:
        base = os.path.join(raw, f"{n}.{r}")
        wall, cpu = parse(n, open(base + ".out").read())
        e, u, s = map(float, open(base + ".time").read().split()[-3:])
        runs[n] = (wall, cpu, (u + s) / e, float(open(base + ".load").read()))
    per_round.append(runs)

print(f"SciMark 2: perflab vs the reference, {rounds} alternating rounds, min time {min_time} s")
print(f"\nper round: 1-min load average at the run's start / process CPU/wall "
      f"({os.cpu_count()} CPUs)\n")
print("| round | " + " | ".join(names) + " | used |")
print("|---" * (len(names) + 2) + "|")
clean = []
for i, runs in enumerate(per_round, 1):
    ok = all(runs[n][2] >= thr for n in names)
    if ok:
        clean.append(runs)
    print(f"| {i} | " + " | ".join(f"{runs[n][3]:.2f} / {runs[n][2]:.2f}" for n in names)
          + f" | {'yes' if ok else 'no'} |")
used = clean or per_round
loads = [runs[n][3] for runs in used for n in names]
print(f"\nmedians over {len(used)} of {rounds} rounds (MFLOPS); load average at their run "
      f"starts: min {min(loads):.2f}, median {statistics.median(loads):.2f}, max {max(loads):.2f}")
if not clean:
    print(f"WARNING: no round in which every program got >= {thr} of a CPU: the figures below "
          f"measure the machine's other work as much as the programs")
res = {n: [runs[n][0] for runs in used] for n in names}
cpu_clock = {n: [runs[n][1] for runs in used] for n in names if n.startswith("ours-")}
busy = {n: [runs[n][2] for runs in used] for n in names}

med = lambda rows, k: statistics.median(row[k] for row in rows)
def fmt(v):
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}"

flagged = []
verdicts = []  # (kernel, ratio of medians, CI low, CI high, within/outside/undecided)

def boot_ci(ours, ref, n=4000):
    """95 % percentile-bootstrap interval of median(ours) / median(ref), each side's rounds
    resampled on their own (every run is its own process: JIT and heap layout vary from
    run to run, so the runs are the unit). Seeded: the same input gives the same interval."""
    import random
    rnd = random.Random(20261121)
    qs = sorted(statistics.median(rnd.choices(ours, k=len(ours)))
                / statistics.median(rnd.choices(ref, k=len(ref))) for _ in range(n))
    return qs[int(0.025 * n)], qs[int(0.975 * n) - 1]

for lang in ("c", "java"):
    ref, ours = f"ref-{lang}", f"ours-{lang}"
    if ref not in res:
        continue
    title = "C" if lang == "c" else "Java"
    print(f"\n### {title}\n")
    print("| | " + " | ".join(HEAD) + " | CPU/wall |")
    print("|---" * (len(HEAD) + 2) + "|")
    def row(label, rows, bz):
        print(f"| {label} | " + " | ".join(fmt(med(rows, k)) for k in K)
              + f" | {statistics.median(bz):.2f} |")
    ref_clock = "CPU clock" if lang == "c" else "wall clock"
    row(f"reference ({ref_clock})", res[ref], busy[ref])
    row("perflab (wall clock)", res[ours], busy[ours])
    row("perflab (CPU clock)", cpu_clock[ours], busy[ours])
    # like for like: C on the CPU clock, Java on the wall clock
    fair = cpu_clock[ours] if lang == "c" else res[ours]
    def ratio_row(label, rows, flag):
        cells = []
        for k in K:
            q = med(rows, k) / med(res[ref], k)
            per = [a[k] / b[k] for a, b in zip(rows, res[ref])]
            out = abs(q - 1) > 0.05
            if flag:
                lo, hi = boot_ci([r[k] for r in rows], [r[k] for r in res[ref]])
                verdict = ("within" if lo >= 0.95 and hi <= 1.05
                           else "outside" if hi < 0.95 or lo > 1.05 else "undecided")
                verdicts.append((f"{title} {HEAD[K.index(k)]}", q, lo, hi, verdict))
            if flag and out:
                flagged.append(f"{title} {HEAD[K.index(k)]} {q:.3f}")
            cells.append(f"{'**' if flag and out else ''}{q:.3f}{'**' if flag and out else ''}"
                         f" ({min(per):.2f}–{max(per):.2f})")
        print(f"| {label} | " + " | ".join(cells) + " | |")
    if lang == "c":
        ratio_row("ratio, CPU clocks", fair, True)
        ratio_row("ratio, perflab wall / ref CPU", res[ours], False)
    else:
        ratio_row("ratio, wall clocks", fair, True)
        ratio_row("ratio, perflab CPU / ref wall", cpu_clock[ours], False)

print("\nratio = median(perflab) / median(reference); in brackets the range of the per-round "
      "ratios; CPU/wall = median over the rounds used of the process's (user+sys)/elapsed "
      f"(below {thr}: the run shared the CPU; JIT and GC threads can lift Java's above 1). "
      "perflab's CPU clock is its own cpu_seconds per kernel (for Java it includes JIT and GC "
      "threads); the Java row 'perflab CPU / ref wall' is fair only where the reference "
      "ran undisturbed.")
if verdicts:
    print("\n95 % bootstrap intervals of the ratio of medians (rounds resampled), against "
          "±5 %: 'within' = the whole interval in [0.95, 1.05], 'outside' = wholly outside, "
          "'undecided' = these rounds cannot tell (run more)\n")
    print("| kernel | ratio | 95 % interval | verdict |\n|---|---|---|---|")
    for name, q, lo, hi, v in verdicts:
        print(f"| {name} | {q:.3f} | {lo:.3f}–{hi:.3f} | {v} |")
if flagged:
    print("outside ±5 %: " + ", ".join(flagged))
else:
    print("every kernel within ±5 %")
PY
