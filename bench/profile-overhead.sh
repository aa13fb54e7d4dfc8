#!/usr/bin/env bash
# The cost of profiling: HTTP throughput of `perflab serve --hello` loaded by
# `perflab http`, with and without a system-wide profile at 999 Hz running alongside,
# alternating (the order flips each round). Prints req/s per round, the medians and
# the overhead %. Target (issue 8): < 5 % (the Iprobe paper's figure for its heaviest mode).
#
# The profiler is `perflab profile -a -F 999 -d ...` (perf record -a -g, then the
# reduction, which runs after the load has ended), or the bare
# `perf record -a -F 999 -g` with PROFILER=perf.
#
# Settings (environment): ROUNDS=3 DURATION=5 CONNS=10 THREADS=1 WORKERS=1
#                         PROFILER=perflab|perf EVENT=auto|cycles|cpu-clock
#                         PERFLAB=path (use that binary; else a release build)
#                         PERFLAB_PROFILE=path (the binary that runs `profile`; default $PERFLAB)
set -euo pipefail

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
CONNS=${CONNS:-10}
THREADS=${THREADS:-1}
WORKERS=${WORKERS:-1}
PROFILER=${PROFILER:-perflab}
EVENT=${EVENT:-auto}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/perflab.sh
. "$ROOT/bench/lib/perflab.sh"

command -v perf >/dev/null 2>&1 || { say "perf is required (apt-get install linux-perf)"; exit 1; }
PL=$(perflab_binary) || exit 1
PLP=${PERFLAB_PROFILE:-$PL}

WORK=$(mktemp -d /tmp/profile-overhead.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

"$PL" serve --hello --port 0 --workers "$WORKERS" > "$WORK/serve.out" 2> "$WORK/serve.err" &
PIDS+=($!)
for _ in $(seq 1 100); do [ -s "$WORK/serve.out" ] && break; sleep 0.1; done
URL=$(head -1 "$WORK/serve.out" | sed 's/^listening on //')
[ -n "$URL" ] || { say "perflab serve did not start: $(cat "$WORK/serve.err")"; exit 1; }

load() { # SECONDS -> req/s
    "$PL" --quiet --store "$WORK/load.db" http "$URL" -c "$CONNS" -t "$THREADS" -d "${1}s" --json 2>/dev/null |
        python3 -c 'import json,sys; print(round(json.load(sys.stdin)["rps"]))' 2>/dev/null || echo nan
}

# A profile covering the whole load: started 1 s before it, ends 1 s after it.
PROF_PID=""
start_profile() {
    local secs=$((DURATION + 2))
    case $PROFILER in
        perf)
            local ev=$EVENT
            [ "$ev" = auto ] && { perf stat -x, -e cycles true 2>&1 | grep -q '<not' && ev=cpu-clock || ev=cycles; }
            perf record -q -a -g -F 999 -e "$ev" -o "$WORK/perf.data" -- sleep "$secs" 2> "$WORK/prof.err" &
            ;;
        *)
            "$PLP" --quiet --store "$WORK/profile.db" profile -a -F 999 --event "$EVENT" -d "${secs}s" \
                --output "$WORK/rec" --json > "$WORK/profile.json" 2> "$WORK/prof.err" &
            ;;
    esac
    PROF_PID=$!
    sleep 1
}
stop_profile() {
    wait "$PROF_PID" || { say "the profiler failed: $(tail -3 "$WORK/prof.err")"; exit 1; }
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

say "warm-up"
load 1 >/dev/null
: > "$WORK/base"; : > "$WORK/prof"
printf '%-6s %14s %14s\n' round "plain req/s" "profiled req/s"
# The plain run gets the same pauses around it as the profiled one (the profiler's
# 1 s head start and its tail), so the two differ only by the profiler.
plain() { sleep 1; b=$(load "$DURATION"); sleep 1; }
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then
        plain
        start_profile; p=$(load "$DURATION"); stop_profile
    else
        start_profile; p=$(load "$DURATION"); stop_profile
        plain
    fi
    echo "$b" >> "$WORK/base"; echo "$p" >> "$WORK/prof"
    printf '%-6s %14s %14s\n' "$r" "$b" "$p"
done
bm=$(median < "$WORK/base"); pm=$(median < "$WORK/prof")
event=$( [ "$PROFILER" = perf ] && perf evlist -i "$WORK/perf.data" 2>/dev/null | head -1 ||
         python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["event"])' "$WORK/profile.json" 2>/dev/null || echo "?")
echo
printf 'median: plain %.0f req/s, profiled %.0f req/s, overhead %s\n' "$bm" "$pm" \
    "$(awk -v b="$bm" -v p="$pm" 'BEGIN { if (b > 0) printf "%.1f %%", 100 * (b - p) / b; else print "nan" }')"
echo "(profiler: $PROFILER -a -g -F 999, event $event; $WORKERS worker(s), $CONNS connections, $THREADS load thread(s), $ROUNDS rounds x ${DURATION}s; target < 5 %)"
