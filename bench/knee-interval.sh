#!/usr/bin/env bash
# How tight is the knee's interval here? Runs `perflab http --find-max
# --find-max-repetitions 5` against `perflab serve --hello --workers 1` pinned to CPU 0
# and held to a cgroup CPU quota (QUOTA_US of every PERIOD_US, 0.15 CPU by default; the
# same server as crates/cli/tests/http_findmax.rs), the generator one thread on CPU 1,
# RUNS times. Prints each run's max_rate, its 95 % interval and half-width, the five
# knees, the limit named and how long it took, then in how many runs the issue-33
# target held (half-width <= 10 % of the mean).
#
# The interval is honest about the machine: the knee moves with how fast the CPU is
# over the two minutes the searches take (on a shared 2-vCPU VM the same server's
# closed-loop rate moved 15-19k req/s between 2-s windows), so the target is measured
# here, run after run, not asserted in a test.
#
# Needs root (a cgroup under /sys/fs/cgroup/cpu, v1, or /sys/fs/cgroup, v2), taskset,
# two CPUs. Settings (environment): RUNS=3 QUOTA_US=1500 PERIOD_US=10000 SLO='p50<20ms'
#                                   STEPS='2s' (a list: runs alternate among the step lengths)
#                                   PRECISION=10% (add searches until the interval is within
#                                   it: --find-max-precision; unset: five searches)
#                                   PERFLAB=path (use that binary; else a release build)
set -euo pipefail

RUNS=${RUNS:-3}
QUOTA_US=${QUOTA_US:-1500}
PERIOD_US=${PERIOD_US:-10000}
SLO=${SLO:-p50<20ms}
read -r -a STEPS <<< "${STEPS:-2s}"
EXTRA=()
[ -n "${PRECISION:-}" ] && EXTRA=(--find-max-precision "$PRECISION")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/perflab.sh
. "$ROOT/bench/lib/perflab.sh"

command -v taskset >/dev/null || { say "taskset is required (apt-get install util-linux)"; exit 1; }
command -v python3 >/dev/null || { say "python3 is required"; exit 1; }
[ "$(nproc)" -ge 2 ] || { say "needs two CPUs"; exit 1; }
PL=$(perflab_binary) || exit 1

WORK=$(mktemp -d /tmp/knee-interval.XXXXXX)
if [ -e /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
    CG=/sys/fs/cgroup/cpu/knee-interval-$$
    mkdir "$CG"
    echo "$PERIOD_US" > "$CG/cpu.cfs_period_us"
    echo "$QUOTA_US" > "$CG/cpu.cfs_quota_us"
else
    CG=/sys/fs/cgroup/knee-interval-$$
    echo +cpu > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
    mkdir "$CG"
    echo "$QUOTA_US $PERIOD_US" > "$CG/cpu.max"
fi
SERVER=
cleanup() {
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$CG" 2>/dev/null && break; sleep 0.2; done
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

taskset -c 0 sh -c "echo \$\$ > '$CG/cgroup.procs' && exec '$PL' serve --hello --port 0 --workers 1" \
    > "$WORK/serve.out" 2>/dev/null &
SERVER=$!
for _ in $(seq 100); do grep -q 'http://' "$WORK/serve.out" 2>/dev/null && break; sleep 0.1; done
URL=$(grep -o 'http://[0-9.:]*' "$WORK/serve.out" | head -1)/
[ "$URL" != / ] || { say "the server did not start"; exit 1; }
say "server $URL (pid $SERVER) held to $QUOTA_US of every $PERIOD_US us of CPU 0; $RUNS runs"

declare -A held=() runs=()
for run in $(seq "$RUNS"); do
  for step in "${STEPS[@]}"; do
    start=$(date +%s)
    PERFLAB_STORE="$WORK/store.db" taskset -c 1 "$PL" http "$URL" --find-max \
        --find-max-repetitions 5 --step-duration "$step" "${EXTRA[@]}" --slo "$SLO" -t 1 --json > "$WORK/out.json"
    secs=$(( $(date +%s) - start ))
    line=$(python3 - "$WORK/out.json" "$run" "$secs" "$step" <<'PY'
import itertools, json, sys
v = json.load(open(sys.argv[1]))
m, lo, hi = v["max_rate"], v["max_rate_ci_low"], v["max_rate_ci_high"]
knees = []
for k in range(1, v["repetitions"] + 1):
    tries = sorted((s["target"], s["passed"]) for s in v["steps"] if s["repetition"] == k)
    ok = [t for t, g in itertools.groupby(tries, key=lambda x: x[0])
          for g in [list(g)] if 2 * sum(1 for x in g if x[1]) > len(g)]
    knees.append(max(ok) if ok else float("nan"))
half = 50 * (hi - lo) / m
level = round(100 * v.get("max_rate_ci_level", 0.95))
print(f"{half:.1f}\trun {sys.argv[2]}, steps of {sys.argv[4]}: max_rate {m:,.0f} req/s, {level} % CI {lo:,.0f}-{hi:,.0f} "
      f"(half-width {half:.1f} %), knees {', '.join(f'{k:,.0f}' for k in knees)}, "
      f"limit {v['limit']['resource']}, {sys.argv[3]} s\n    {v['limit']['evidence']}")
PY
)
    half=${line%%$'\t'*}
    printf '%s\n' "${line#*$'\t'}"
    runs[$step]=$(( ${runs[$step]:-0} + 1 ))
    python3 -c "import sys; sys.exit(0 if float('$half') <= 10 else 1)" \
        && held[$step]=$(( ${held[$step]:-0} + 1 ))
  done
done
for step in "${STEPS[@]}"; do
    printf 'steps of %s: half-width <= 10 %% of the mean in %d of %d runs\n' \
        "$step" "${held[$step]:-0}" "${runs[$step]}"
done
