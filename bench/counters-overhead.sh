#!/usr/bin/env bash
# The cost of counting: the wall time of a CPU-bound command benchmarked by
# `perflab bench` without counters and with every counter (`--counters` with all ten
# events; on a machine without a hardware PMU only the four software ones open),
# alternating (the order flips each round). Prints each round's median wall times
# and mean CPU (user + system) times, their ratios, and the median ratios as the
# overhead %. Target (issue 31): < 1 % of wall time. On a loaded machine the CPU-time
# ratio is the steadier of the two (it leaves out time spent waiting for a CPU).
#
# The command is a C spin loop compiled here (cc -O1), about SPIN iterations, so the
# run is CPU-bound and does not touch the disk.
#
# Settings (environment): ROUNDS=6 RUNS=5 SPIN=300000000
#                         PERFLAB=path (use that binary; else a release build)
set -euo pipefail

ROUNDS=${ROUNDS:-6}
RUNS=${RUNS:-5}
SPIN=${SPIN:-300000000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/perflab.sh
. "$ROOT/bench/lib/perflab.sh"

command -v cc >/dev/null 2>&1 || { say "cc is required (apt-get install gcc)"; exit 1; }
command -v python3 >/dev/null 2>&1 || { say "python3 is required"; exit 1; }
PL=$(perflab_binary) || exit 1

WORK=$(mktemp -d /tmp/counters-overhead.XXXXXX)
trap 'rm -rf "$WORK"' EXIT INT TERM
cat > "$WORK/spin.c" <<'C'
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 300000000;
    volatile unsigned long x = 0;
    for (long i = 0; i < n; i++) x += i;
    return 0;
}
C
cc -O1 -o "$WORK/spin" "$WORK/spin.c"
ALL=cycles,instructions,branches,branch-misses,cache-references,cache-misses,task-clock,context-switches,cpu-migrations,page-faults

bench() { # [--counters LIST] -> "median wall (s) mean user+system (s)" of RUNS runs
    "$PL" --quiet --store "$WORK/b.db" bench -r "$RUNS" -w 1 "$@" --export-json "$WORK/out.json" \
        "$WORK/spin $SPIN" >/dev/null 2>"$WORK/err" || { say "bench failed: $(cat "$WORK/err")"; exit 1; }
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print(r["median"], r["user"] + r["system"])' "$WORK/out.json"
}

say "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); hardware PMU: $([ -e /sys/bus/event_source/devices/cpu ] && echo yes || echo no)"
printf 'round  wall_without_s  wall_with_s  wall_ratio  cpu_without_s  cpu_with_s  cpu_ratio\n'
WALL=(); CPU=()
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then
        off=$(bench); on=$(bench --counters "$ALL")
    else
        on=$(bench --counters "$ALL"); off=$(bench)
    fi
    read -r off_w off_c <<<"$off"
    read -r on_w on_c <<<"$on"
    wr=$(python3 -c "print(f'{$on_w/$off_w:.4f}')")
    cr=$(python3 -c "print(f'{$on_c/$off_c:.4f}')")
    WALL+=("$wr"); CPU+=("$cr")
    printf '%5d  %14.4f  %11.4f  %10s  %13.4f  %10.4f  %9s\n' "$r" "$off_w" "$on_w" "$wr" "$off_c" "$on_c" "$cr"
done
python3 - "${WALL[*]}" "${CPU[*]}" <<'PY'
import statistics, sys
for label, arg in (("wall time", sys.argv[1]), ("CPU time", sys.argv[2])):
    r = [float(x) for x in arg.split()]
    m = statistics.median(r)
    print(f"{label}: median ratio {m:.4f}, overhead {100 * (m - 1):+.2f} % (target < 1 %);"
          f" rounds {min(r):.4f} .. {max(r):.4f}")
PY
say "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
