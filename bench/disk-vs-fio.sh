#!/usr/bin/env bash
# perflab disk vs fio and dd: the same sequential write and read, bs 16k and 1M, with
# O_DIRECT and buffered + fdatasync, alternating the tools round by round in one run.
#
# Prints each tool's median MB/s (10^6 bytes/s) per case, perflab's ratio to fio's
# median with its 90 % bootstrap interval, the median of the per-round ratios (perflab
# and fio back to back), and fio's own spread. Target: perflab/fio within ±5 % in every
# case. Each case's verdict is "ok" (the whole interval inside 0.95-1.05), "OFF" (none
# of it inside) or "noise" (the run cannot tell: more ROUNDS, a larger SIZE or a quieter
# machine); exit 0 when every case is ok, 1 when one is OFF, 3 otherwise.
# dd writes zeros (if=/dev/zero); fio and perflab write incompressible data.
#
# What each tool runs (one file of SIZE in DIR, removed after each run):
#   write, direct     fio --rw=write --direct=1          dd oflag=direct        perflab --direct
#   write, buffered   fio --rw=write --end_fsync=1       dd conv=fdatasync      perflab --fdatasync-end
#   read,  direct     fio --rw=read --direct=1           dd iflag=direct        perflab --mode read --direct
#   read,  buffered   fio --rw=read (invalidate=1)       dd (cache dropped)     perflab --mode read
# fio uses ioengine=psync, iodepth 1, fallocate=none (dd and perflab do not preallocate);
# read files are laid out and dropped from the page cache before each timed read.
#
# Every timed run starts after a `sync`, so no run pays for the previous one's writeback.
#
# Before the measured rounds, one warm-up round runs every case with every tool and is
# thrown away (WARMUP=0 skips it): on a VM the first writes into freshly allocated
# memory (page cache, a RAM disk's pages) pay for the host backing them, which made the
# first rounds here up to 10x slower than the rest.
#
# Usage: bench/disk-vs-fio.sh [DIR] [SIZE] [ROUNDS]     (defaults: /var/tmp 256M 3)
# Env:   NO_INSTALL=1 (skip apt-get), NO_BUILD=1 (use the perflab already built in
#        $CARGO_TARGET_DIR/release), PERFLAB=path (use that binary),
#        CASES="16k 1M" (block sizes; BS:SIZE gives a case its own file size, e.g.
#        CASES="16k:512M 1M:2G": a run should last well over 100 ms, or scheduling
#        noise dominates), WARMUP=0, CPU=N (run every tool under `taskset -c N`: on a
#        2-vCPU VM an unpinned synchronous I/O loop migrates on most wake-ups, and the
#        tools lose different amounts to it),
#        RAMDISK=1 (root only: run on an ext4 made on a loop device backed by /dev/shm,
#        ignoring DIR — the tools' own cost without a shared disk's noise; the block
#        layer, O_DIRECT and the page cache are still real),
#        IDLE_POLL=0 (leave the CPUs' idle states alone; see below),
#        PREFAULT=0 (do not back the free memory before each run; see below),
#        HOLD_REPORTING=0 (leave the VM's free page reporting running; see below)
#
# Idle CPUs poll while the benchmark runs: it holds /dev/cpu_dma_latency at 0 (the PM
# QoS request tuned's latency-performance profile makes), so cpuidle picks its polling
# state instead of halting. Why: a synchronous I/O loop hands every I/O to another
# thread (a loop device's worker, a virtio completion) and sleeps; on a VM a halted
# vCPU takes tens of µs to wake, and which CPU the kernel wakes that thread on decides
# whether a tool pays it. That, not the tools, set the direct-read ratios here: on a
# RAM-backed loop device with every tool on CPU 1, 16k direct reads ran at fio 534–641,
# dd 402–533, perflab 433–504 MB/s with halting, and at fio 1370–1413, dd 1400, perflab
# 1370–1463 MB/s with polling (three rounds each). Needs root; skipped (and said) when
# the file cannot be written.
#
# On a VM whose host takes its free memory back (virtio-balloon free page reporting,
# DAMON pageout; the header names what it finds), a page the kernel allocates for the
# page cache may have to be backed by the host again on first touch. `perf record -a`
# of a slow 1 GiB buffered read (dd, 1.3 GB/s against 7.1 in the same minute) had the
# loop worker in memcpy into the new page-cache pages for 81 % of the samples. Free
# page reporting hands freed pages back within a fraction of a second (here 128 MiB of
# a freed 1 GiB within 0.3 s), so whether a run paid depended on how long ago the
# memory it was given had been freed: chance, for every tool. Touching 1 GiB of
# anonymous memory here took 1.97 s when the host had to back it and 0.70-1.13 s when
# it did not. So, as root, the bench holds reporting off while it runs
# (page_reporting_order set to 10, the largest block; restored on exit;
# HOLD_REPORTING=0 leaves it), and before every timed run, for every tool, touches and
# frees 2 x the run's size + 256 MiB of anonymous memory (PREFAULT=0 skips it): the
# run's page cache comes from pages the host backs. Measured by hand on a RAM-disk
# ext4 (1 GiB files, dd bs=1M, 3 s after each layout, 6 pairs alternating, reporting
# running): buffered reads 716-1842 MB/s without the touch, 4937-6796 with; on the
# virtual disk, 1 GiB dd conv=fdatasync writes 254-891 MB/s without, 935-1343 with.
# The column "fio ×" shows fio's fastest round over its slowest: a ratio means little
# when that is far above 1.1.
set -euo pipefail

DIR=${1:-/var/tmp}
SIZE=${2:-256M}
ROUNDS=${3:-3}
BSS=${CASES:-"16k 1M"}
PREFAULT=${PREFAULT:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

need() { command -v "$1" >/dev/null 2>&1; }
if [[ -z "${NO_INSTALL:-}" ]]; then
  missing=()
  need fio || missing+=(fio)
  need jq || missing+=(jq)
  if ((${#missing[@]})); then
    echo "installing: ${missing[*]}" >&2
    SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi
need fio || { echo "fio is required (apt-get install fio)" >&2; exit 1; }
need jq || { echo "jq is required (apt-get install jq)" >&2; exit 1; }

if [[ -n "${PERFLAB:-}" ]]; then
  PL=$PERFLAB
else
  if [[ -z "${NO_BUILD:-}" ]]; then
    echo "building perflab (release)..." >&2
    cargo build --release -q -p perflab-cli --manifest-path "$ROOT/Cargo.toml"
  fi
  PL=$CARGO_TARGET_DIR/release/perflab
fi
[[ -x $PL ]] || { echo "no perflab binary at $PL" >&2; exit 1; }

# Bytes in SIZE (powers of 1024, as perflab reads it).
bytes_of() {
  local n=${1%[kKmMgG]} s=${1: -1}
  case $s in k|K) echo $((n << 10));; m|M) echo $((n << 20));; g|G) echo $((n << 30));; *) echo "$1";; esac
}

WORK=$(mktemp -d)
LOOPDEV=""
cleanup() {
  rm -f "${F:-}"
  [[ -n ${REPORTING_WAS:-} ]] && echo "$REPORTING_WAS" >"$REPORTING"
  if [[ -n $LOOPDEV ]]; then
    umount "$WORK/mnt" 2>/dev/null || true
    losetup -d "$LOOPDEV" 2>/dev/null || true
    rm -f "/dev/shm/disk-vs-fio.$$.img"
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

if [[ -n "${RAMDISK:-}" ]]; then
  [[ $(id -u) -eq 0 ]] || { echo "RAMDISK=1 needs root (losetup, mount)" >&2; exit 2; }
  img=/dev/shm/disk-vs-fio.$$.img
  biggest=$(bytes_of "$SIZE")
  for c in $BSS; do [[ $c == *:* ]] && { b=$(bytes_of "${c#*:}"); ((b > biggest)) && biggest=$b; }; done
  # The image is written whole before mkfs, and mkfs neither discards it nor leaves
  # inode tables and journal to be initialised later. With the image only fallocated
  # (tmpfs does not touch the pages; mkfs's discard punches them out again) fdatasync
  # of 256 MiB took up to 93-771 ms (the slowest of the first four runs on each of 9
  # new file systems) and 25-52 ms in the runs after; made this way, 26-66 ms from the
  # first run (6 file systems, 76 runs).
  img_mib=$(((biggest * 3 / 2 + (256 << 20)) >> 20))
  dd if=/dev/zero of="$img" bs=1M count="$img_mib" status=none
  LOOPDEV=$(losetup --find --show "$img")
  mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$LOOPDEV"
  mkdir -p "$WORK/mnt"
  mount "$LOOPDEV" "$WORK/mnt"
  DIR=$WORK/mnt
fi
[[ -d $DIR ]] || { echo "no directory $DIR" >&2; exit 2; }

TOTAL=$(bytes_of "$SIZE")
F="$DIR/disk-vs-fio.$$.dat"
export PERFLAB_STORE=$WORK/bench.db

drop() { dd if="$F" iflag=nocache count=0 status=none; }
# A file of TOTAL incompressible bytes, on disk, out of the page cache, written the way
# perflab lays out its own (1 MiB buffered writes as fast as the page cache takes them,
# then fdatasync). How it is written matters on a VM: laid out with `head -c N
# /dev/urandom` (~0.5 GB/s), the next buffered read of 1 GiB here ran at 0.66-1.8 GB/s,
# laid out this way at 6.5-10.5 GB/s (dd, four pairs, alternating) — the reader paid
# for the host backing the page cache again, and the tools did not start equal.
layout() {
  rm -f "$F"
  python3 - "$F" "$TOTAL" <<'PY'
import os, sys
path, total = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
block = bytearray(os.urandom(1 << 20))
view = memoryview(block)  # slices of it are written without a copy
done = 0
while done < total:
    block[:8] = done.to_bytes(8, "little")  # no two blocks alike
    done += os.write(fd, view[: min(len(block), total - done)])
os.fdatasync(fd)
os.close(fd)
PY
  drop
}
dd_rate() { # dd's stderr → MB/s from its byte count and seconds
  awk '/bytes/ && /copied/ { for (i = 1; i <= NF; i++) if ($i ~ /^s,?$/) s = $(i-1); printf "%.1f\n", $1 / s / 1e6 }'
}

# run TOOL OP VARIANT BS → prints MB/s
run() {
  local tool=$1 op=$2 var=$3 bs=$4 count
  TOTAL=$(bytes_of "$5")
  count=$((TOTAL / $(bytes_of "$bs")))
  if [[ $op == read && $tool != perflab ]]; then layout; else rm -f "$F"; fi
  sync
  prefault "$((2 * TOTAL + (256 << 20)))"
  case $tool in
    fio)
      local args=(--name=j --filename="$F" --bs="$bs" --size="$TOTAL" --ioengine=psync --iodepth=1
                  --fallocate=none --output-format=json --randrepeat=0)
      [[ $var == direct ]] && args+=(--direct=1)
      if [[ $op == write ]]; then
        args+=(--rw=write)
        [[ $var == buffered ]] && args+=(--end_fsync=1)
      else
        args+=(--rw=read --invalidate=1)
      fi
      "${PIN[@]}" fio "${args[@]}" | jq -r ".jobs[0].$op.bw_bytes / 1e6 | . * 10 | round / 10"
      ;;
    dd)
      if [[ $op == write ]]; then
        local fl=conv=fdatasync; [[ $var == direct ]] && fl=oflag=direct
        "${PIN[@]}" dd if=/dev/zero of="$F" bs="$bs" count="$count" $fl 2>&1 | dd_rate
      else
        local fl=; [[ $var == direct ]] && fl=iflag=direct
        "${PIN[@]}" dd if="$F" of=/dev/null bs="$bs" count="$count" $fl 2>&1 | dd_rate
      fi
      ;;
    perflab)
      local args=(disk "$F" --bs "$bs" --size "$5" --json -q)
      [[ $var == direct ]] && args+=(--direct)
      [[ $op == write && $var == buffered ]] && args+=(--fdatasync-end)
      [[ $op == read ]] && args+=(--mode read)
      "${PIN[@]}" "$PL" "${args[@]}" 2>/dev/null | jq -r '.mb_s * 10 | round / 10'
      ;;
  esac
  rm -f "$F"
}

# Touch BYTES of anonymous memory (at most half of what is available) and free it, so
# the pages the next run allocates are backed by the host (see the header).
prefault() {
  [[ $PREFAULT == 0 ]] && return 0
  python3 - "$1" <<'PY'
import mmap, sys
want = int(sys.argv[1])
avail = next(int(l.split()[1]) << 10 for l in open("/proc/meminfo") if l.startswith("MemAvailable:"))
n = min(want, avail // 2) & ~((1 << 20) - 1)
m = mmap.mmap(-1, n)
chunk = b"\1" * (1 << 20)
for off in range(0, n, len(chunk)):
    m[off:off + len(chunk)] = chunk
m.close()
PY
}

PIN=(env)
[[ -n "${CPU:-}" ]] && PIN=(taskset -c "$CPU")
TOOLS=(fio dd perflab)
IDLE="CPU idle states as configured"
if [[ ${IDLE_POLL:-1} != 0 ]]; then
  # The request lasts while the descriptor is open: for the rest of this script.
  if { exec 9>/dev/cpu_dma_latency && printf 0 >&9; } 2>/dev/null; then
    IDLE="idle CPUs polling (cpu_dma_latency 0)"
  else
    IDLE="CPU idle states as configured (cannot write /dev/cpu_dma_latency: run as root, or IDLE_POLL=0)"
  fi
fi
# What of the host's memory reclaim this VM shows (see the header), for the summary.
host_reclaim() {
  local why=() d f
  for d in /sys/bus/virtio/devices/*; do
    # virtio-balloon (device 5) with VIRTIO_BALLOON_F_REPORTING (feature bit 5)
    [[ $(cat "$d/device" 2>/dev/null) == 0x0005 ]] || continue
    f=$(cat "$d/features" 2>/dev/null)
    [[ ${f:5:1} == 1 ]] && why+=("virtio-balloon free page reporting")
  done
  for d in /sys/kernel/mm/damon/admin/kdamonds/*/; do
    [[ $(cat "$d/state" 2>/dev/null) == on ]] || continue
    grep -qsx pageout "$d"contexts/*/schemes/*/action && why+=("DAMON pageout")
  done
  ((${#why[@]})) && printf '%s, ' "${why[@]}" | sed 's/, $//'
  return 0
}
RECLAIM=$(host_reclaim)
HOLD=""
REPORTING=/sys/module/page_reporting/parameters/page_reporting_order
if [[ ${HOLD_REPORTING:-1} != 0 && $RECLAIM == *reporting* && -w $REPORTING ]]; then
  REPORTING_WAS=$(cat "$REPORTING")
  if echo 10 >"$REPORTING" 2>/dev/null; then
    HOLD="free page reporting held off (page_reporting_order $REPORTING_WAS -> 10 while the bench runs)"
  fi
fi
case_bs() { echo "${1%%:*}"; }
case_size() { [[ $1 == *:* ]] && echo "${1#*:}" || echo "$SIZE"; }
PF="free memory backed before each run"; [[ $PREFAULT == 0 ]] && PF="free memory not backed before runs (PREFAULT=0)"
echo "disk-vs-fio: $(for c in $BSS; do printf '%s per %s run, ' "$(case_size "$c")" "$(case_bs "$c")"; done)in $DIR ($(df -T "$DIR" | awk 'NR == 2 { print $2 " on " $1 }')), $ROUNDS rounds, tools alternating, $IDLE, $PF${RECLAIM:+; the host reclaims free memory of this VM ($RECLAIM)}${HOLD:+; $HOLD}" >&2
first=1; [[ ${WARMUP:-1} == 0 ]] && first=0
for r in $(seq $((1 - first)) "$ROUNDS"); do
  for c in $BSS; do
    bs=$(case_bs "$c") size=$(case_size "$c")
    for op in write read; do
      for var in direct buffered; do
        for i in 0 1 2; do
          t=${TOOLS[$(((i + r) % 3))]}
          v=$(run "$t" "$op" "$var" "$bs" "$size")
          if ((r == 0)); then
            echo "  warm-up: $bs $op $var $t $v MB/s (not counted)" >&2
          else
            echo "$bs $op $var $t $v $r" >>"$WORK/results"
            echo "  round $r: $bs $op $var $t $v MB/s" >&2
          fi
        done
      done
    done
  done
done

echo
# The verdict is an equivalence test (as TOST does it): the 90 % bootstrap interval of
# perflab/fio (ratio of medians; rounds resampled whole, so each perflab run stays with
# the fio run of its round) must lie inside 0.95-1.05 for "ok", wholly outside it for
# "OFF"; otherwise the run could not tell ("noise": more ROUNDS, or a quieter machine).
set +e
python3 - "$WORK/results" "$BSS" "$ROUNDS" <<'PY'
import random, statistics, sys
path, cases, rounds = sys.argv[1], sys.argv[2].split(), sys.argv[3]
runs = {}  # (bs, op, variant) -> round -> tool -> MB/s
for line in open(path):
    parts = line.split()
    if len(parts) != 6 or parts[4] == "null":  # a run that printed no rate
        continue
    bs, op, var, tool, v, r = parts
    runs.setdefault((bs, op, var), {}).setdefault(r, {})[tool] = float(v)

def med(xs):
    return statistics.median(xs) if xs else float("nan")

rng = random.Random(1)  # the same data gives the same interval
print(f"{'bs':<5} {'op':<5} {'variant':<18} {'fio MB/s':>9} {'dd MB/s':>9} {'perflab':>9} "
      f"{'perflab/fio':>11} {'90% interval':>14} {'paired':>7} {'fio ×':>6}  verdict")
verdicts = set()
for c in cases:
    bs = c.split(":")[0]
    for op in ("write", "read"):
        for var in ("direct", "buffered"):
            by_round = runs.get((bs, op, var), {})
            both = [t for t in by_round.values() if "fio" in t and "perflab" in t]
            col = {tool: med([t[tool] for t in by_round.values() if tool in t]) for tool in ("fio", "dd", "perflab")}
            ratio = col["perflab"] / col["fio"] if both else float("nan")
            paired = med([t["perflab"] / t["fio"] for t in both if t["fio"] > 0])
            fios = [t["fio"] for t in by_round.values() if t.get("fio", 0) > 0]
            spread = max(fios) / min(fios) if fios else float("nan")
            boots = []
            for _ in range(2000 if len(both) > 1 else 0):
                pick = [rng.choice(both) for _ in both]
                boots.append(med([t["perflab"] for t in pick]) / med([t["fio"] for t in pick]))
            boots.sort()
            if boots:
                lo, hi = boots[int(0.05 * len(boots))], boots[int(0.95 * len(boots)) - 1]
                verdict = "ok" if lo >= 0.95 and hi <= 1.05 else "OFF" if hi < 0.95 or lo > 1.05 else "noise"
                interval = f"{lo:.3f}-{hi:.3f}"
            else:
                verdict, interval = "noise", "-"
            verdicts.add(verdict)
            label = "buffered+fdatasync" if var == "buffered" and op == "write" else var
            print(f"{bs:<5} {op:<5} {label:<18} {col['fio']:>9.1f} {col['dd']:>9.1f} {col['perflab']:>9.1f} "
                  f"{ratio:>11.3f} {interval:>14} {paired:>7.3f} {spread:>6.2f}  {verdict}")
sys.exit(1 if "OFF" in verdicts else 3 if "noise" in verdicts else 0)
PY
worst=$?
set -e
echo "(medians of $ROUNDS rounds; 90% interval: bootstrap of perflab/fio over rounds; paired = median of the per-round perflab/fio ratios; fio × = fio's fastest round over its slowest; target: perflab/fio within ±5 %: ok when the whole interval is, OFF when none of it is, noise when the run cannot tell; $IDLE; $PF${HOLD:+; $HOLD})"
if [[ -n $RECLAIM ]]; then
  echo "note: this VM gives free memory back to its host ($RECLAIM): a run whose pages the host must back again is several times slower, for every tool — see fio ×${HOLD:+ (reporting was held off, DAMON pageout was not)}"
fi
# 0: every case within ±5 %; 1: some case outside; 3: none outside, some undecided.
exit $worst
