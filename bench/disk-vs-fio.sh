#!/usr/bin/env bash
# perflab disk vs fio and dd: the same sequential write and read, bs 16k and 1M, with
# O_DIRECT and buffered + fdatasync, alternating the tools round by round in one run.
#
# Prints each tool's median MB/s (10^6 bytes/s) per case, perflab's ratio to fio's
# median, and the median of the per-round ratios (perflab and fio back to back).
# Target: perflab/fio within ±5 % in every case. On a shared or host-cached virtual
# disk run-to-run noise can exceed that: use more ROUNDS and a larger SIZE there.
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
#        IDLE_POLL=0 (leave the CPUs' idle states alone; see below)
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
# Buffered runs on a VM whose host takes its free memory back (virtio-balloon free page
# reporting, DAMON pageout; the summary names what it finds) cannot be judged to ±5 %:
# a page the kernel allocates for the page cache may have to be backed by the host
# again on first touch. `perf record -a` of a slow 1 GiB buffered read (dd, 1.3 GB/s
# against 7.1 in the same minute) had the loop worker in memcpy into the new page-cache
# pages for 81 % of the samples. Which run pays is chance, for every tool: the column
# "fio ×" shows fio's fastest round over its slowest, and a ratio means little when that
# is far above 1.1.
set -euo pipefail

DIR=${1:-/var/tmp}
SIZE=${2:-256M}
ROUNDS=${3:-3}
BSS=${CASES:-"16k 1M"}
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

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.1f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

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
case_bs() { echo "${1%%:*}"; }
case_size() { [[ $1 == *:* ]] && echo "${1#*:}" || echo "$SIZE"; }
echo "disk-vs-fio: $(for c in $BSS; do printf '%s per %s run, ' "$(case_size "$c")" "$(case_bs "$c")"; done)in $DIR ($(df -T "$DIR" | awk 'NR == 2 { print $2 " on " $1 }')), $ROUNDS rounds, tools alternating, $IDLE${RECLAIM:+; the host reclaims free memory of this VM ($RECLAIM)}" >&2
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
printf '%-5s %-5s %-18s %10s %10s %10s %12s %11s %8s\n' bs op variant "fio MB/s" "dd MB/s" "perflab" "perflab/fio" "paired" "fio ×"
worst=0
for c in $BSS; do
  bs=$(case_bs "$c")
  for op in write read; do
    for var in direct buffered; do
      declare -A med=()
      for t in "${TOOLS[@]}"; do
        med[$t]=$(awk -v b="$bs" -v o="$op" -v w="$var" -v t="$t" '$1 == b && $2 == o && $3 == w && $4 == t { print $5 }' "$WORK/results" | median)
      done
      ratio=$(awk -v p="${med[perflab]}" -v f="${med[fio]}" 'BEGIN { printf "%.3f", p / f }')
      # Median over rounds of perflab/fio measured back to back in the same round:
      # robust to the device's drift between rounds.
      paired=$(awk -v b="$bs" -v o="$op" -v w="$var" '$1 == b && $2 == o && $3 == w { v[$6 " " $4] = $5; r[$6] = 1 }
        END { for (k in r) if (v[k " fio"] > 0) printf "%.3f\n", v[k " perflab"] / v[k " fio"] }' "$WORK/results" | median)
      # fio's own spread, fastest round over slowest: a ratio cannot be judged to ±5 %
      # when fio does not repeat itself to within much more than that.
      spread=$(awk -v b="$bs" -v o="$op" -v w="$var" '$1 == b && $2 == o && $3 == w && $4 == "fio" && $5 > 0 {
        if (!n++ || $5 < lo) lo = $5; if ($5 > hi) hi = $5 } END { if (n) printf "%.2f", hi / lo }' "$WORK/results")
      verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.95 && r <= 1.05) ? "ok" : "OFF" }')
      [[ $verdict == OFF ]] && worst=1
      label=$var; [[ $var == buffered && $op == write ]] && label="buffered+fdatasync"
      printf '%-5s %-5s %-18s %10s %10s %10s %12s %11s %8s  %s\n' "$bs" "$op" "$label" "${med[fio]}" "${med[dd]}" "${med[perflab]}" "$ratio" "$paired" "$spread" "$verdict"
    done
  done
done
echo "(medians of $ROUNDS rounds; paired = median of the per-round perflab/fio ratios; fio × = fio's fastest round over its slowest; target: perflab/fio within ±5 %; $IDLE)"
if [[ -n $RECLAIM ]]; then
  echo "note: this VM gives free memory back to its host ($RECLAIM): a run whose pages the host must back again is several times slower, at random, for every tool — see fio ×"
fi
exit $worst
