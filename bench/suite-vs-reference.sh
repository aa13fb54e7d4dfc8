#!/usr/bin/env bash
# perflab's machine-suite workloads (mem, net, compress, crypto) against the reference
# program for each on this machine, alternating perflab and the reference round by
# round (odd rounds perflab first, even rounds the reference first):
#
#   mem       write, copy, write-nt, copy-nt at 4K, 1M, 256M, one thread, GB/s (10^9 B)
#             vs a plain C loop compiled here with `cc -O2`: memset / memcpy (the same
#             glibc calls perflab's write and copy make) and a 16-byte _mm_stream_si128
#             loop + sfence per pass for the -nt ops. Same shape as perflab's:
#             page-aligned buffers filled before the clock, the fill byte changes every
#             pass, copies alternate direction, the clock is read once per 64 KiB moved (at
#             least once a pass), the last pass is checked after the clock stops.
#   net       loopback TCP stream, one connection, vs iperf3 (-c 127.0.0.1 -J): MB/s
#             (10^6 B) and CPU seconds per GB of the sender and of the receiver (iperf3:
#             cpu_utilization_percent host_total / remote_total × seconds / GB; perflab:
#             sender_cpu_s_per_gb / receiver_cpu_s_per_gb), and the two summed: on
#             loopback the receive path's softirq work is charged to whichever side's
#             thread the CPU was running, so the split moves with scheduling.
#   compress  perflab compress --data text vs the gzip -6, zstd -3 and lz4 -1 command
#             lines on the same bytes: this script writes perflab's "text" data to a
#             file (a copy of compress.rs's generator; perflab's own zstd output size is
#             checked against the zstd tool's, within 1 %). MB/s of input (compression)
#             and of output (decompression), one thread; with every CPU, perflab
#             --threads all vs pigz -6 -p N and zstd -3 -T0. The tools' figure is wall
#             time of the whole process (start, read the page-cached file, write to
#             /dev/null); perflab's is the in-memory call. zstd runs with --no-check and
#             lz4 with --no-frame-crc: perflab's codecs write no content checksum.
#   crypto    perflab crypto vs `openssl speed` (rsa2048, rsa4096, ecdsap256, ed25519
#             sign/s and verify/s; -evp sha256 and -evp aes-256-gcm MB/s at 16 KiB),
#             one thread, and `-multi N` vs perflab --threads all (N = nproc).
#
# Prints per row: perflab's median, the reference's median, perflab / reference, the
# rounds used (n; see MAX_OTHER), each side's range over them, and "!" on every ratio
# outside ±10 % (docs/benchmarks.md, "suite vs reference", explains each); then how much
# CPU other processes used while each workload ran, by round. For CPU s/GB lower is
# better; for the rest higher.
#
# Usage: bench/suite-vs-reference.sh [ROUNDS]          (default 3 rounds: ~4 min on 2 cores)
# Env:   ROUNDS (3; the argument wins), ONLY="mem net compress crypto" (a subset),
#        MEM_TIME (0.2 s of passes per mem case, both sides), NET_SECS (2, integer:
#        iperf3 -t), SIZE (64M: compress input, powers of 1024), CRYPTO_SECS (1,
#        integer: openssl speed -seconds; perflab --min-time the same),
#        NO_INSTALL=1 (skip apt-get), NO_BUILD=1 (use the perflab already built in
#        $CARGO_TARGET_DIR/release), PERFLAB (a perflab binary to use instead),
#        MAX_OTHER (0.2: rounds in which other processes used more CPUs than this, on
#        average while either side of a workload ran, are left out of its medians;
#        the busy time of /proc/stat less this script's own),
#        OUT (keep every raw output there; default: a temp dir, removed).
# perflab records into a store in the temp dir, not into .perflab/results.db.
set -euo pipefail

ROUNDS=${1:-${ROUNDS:-3}}
ONLY=${ONLY:-"mem net compress crypto"}
MEM_TIME=${MEM_TIME:-0.2}
NET_SECS=${NET_SECS:-2}
SIZE=${SIZE:-64M}
CRYPTO_SECS=${CRYPTO_SECS:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

die() { echo "error: $1" >&2; exit "${2:-1}"; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, got '$ROUNDS'" 2
[[ "$NET_SECS" =~ ^[1-9][0-9]*$ ]] || die "NET_SECS must be a positive integer, got '$NET_SECS'" 2
[[ "$CRYPTO_SECS" =~ ^[1-9][0-9]*$ ]] || die "CRYPTO_SECS must be a positive integer, got '$CRYPTO_SECS'" 2
[[ "$MEM_TIME" =~ ^[0-9]*\.?[0-9]+$ ]] && awk -v t="$MEM_TIME" 'BEGIN { exit !(t > 0 && t <= 600) }' \
  || die "MEM_TIME must be seconds, more than 0 and at most 600, got '$MEM_TIME'" 2
[[ "${MAX_OTHER:-0.2}" =~ ^[0-9]*\.?[0-9]+$ ]] || die "MAX_OTHER must be a number of CPUs, got '$MAX_OTHER'" 2
[[ "$SIZE" =~ ^[1-9][0-9]*[KMG]?$ ]] || die "SIZE must be like 64M (powers of 1024), got '$SIZE'" 2
for g in $ONLY; do
  [[ " mem net compress crypto " == *" $g "* ]] || die "ONLY: unknown workload '$g' (mem net compress crypto)" 2
done
wants() { [[ " $ONLY " == *" $1 "* ]]; }

need() { command -v "$1" >/dev/null 2>&1; }
if [[ -z "${NO_INSTALL:-}" ]]; then
  missing=()
  need cc || missing+=(gcc)
  need iperf3 || missing+=(iperf3)
  need gzip || missing+=(gzip)
  need pigz || missing+=(pigz)
  need zstd || missing+=(zstd)
  need lz4 || missing+=(lz4)
  need openssl || missing+=(openssl)
  need ss || missing+=(iproute2)
  if ((${#missing[@]})); then
    echo "installing: ${missing[*]}" >&2
    SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi
need python3 || die "python3 is required"
wants mem && { need cc || die "cc is required for the mem reference (apt-get install gcc)"; }
wants net && { need iperf3 || die "iperf3 is required (apt-get install iperf3)"; }
wants net && { need ss || die "ss is required (apt-get install iproute2)"; }
if wants compress; then
  for t in gzip pigz zstd lz4; do need $t || die "$t is required (apt-get install $t)"; done
fi
wants crypto && { need openssl || die "openssl is required (apt-get install openssl)"; }

if [[ -n "${PERFLAB:-}" ]]; then
  PL=$PERFLAB
else
  if [[ -z "${NO_BUILD:-}" ]]; then
    echo "building perflab (release)..." >&2
    cargo build --release -q -p perflab-cli --manifest-path "$ROOT/Cargo.toml"
  fi
  PL=$CARGO_TARGET_DIR/release/perflab
fi
[[ -x $PL ]] || die "no perflab binary at $PL"

NCPU=$(nproc)
WORK=$(mktemp -d /tmp/perflab-suite.XXXXXX)
RAW=${OUT:-$WORK/raw}
mkdir -p "$RAW"
IPERF_PID=""
cleanup() {
  if [[ -n $IPERF_PID ]]; then kill "$IPERF_PID" 2>/dev/null || true; wait "$IPERF_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
STORE=$WORK/perflab.db

# ---- parsers: each prints "ROW<TAB>UNIT<TAB>BETTER<TAB>REFERENCE<TAB>VALUE" lines ----
cat >"$WORK/parse.py" <<'PY'
import json, re, sys

def out(row, unit, value, better="higher", ref=""):
    print(f"{row}\t{unit}\t{better}\t{ref}\t{value:.6g}")

def medians(path):
    """perflab --json (the show --json contract): {params: {metric: median}}."""
    j = json.load(open(path))
    if j["run"]["trials_failed"]:
        sys.exit(f"{path}: {j['run']['trials_failed']} perflab trial(s) failed")
    return [(c["params"], {m["name"]: m["median"] for m in c["metrics"]}) for c in j["configs"]]

def perflab_mem(path):
    for p, m in medians(path):
        out(f"mem {p['op']} {p['block'].upper()}", "GB/s", m["gb_s"])

def perflab_net(path):
    (_, m), = medians(path)
    out("net stream", "MB/s", m["mb_s"])
    out("net sender CPU", "s/GB", m["sender_cpu_s_per_gb"], "lower")
    out("net receiver CPU", "s/GB", m["receiver_cpu_s_per_gb"], "lower")
    out("net both sides' CPU", "s/GB", m["sender_cpu_s_per_gb"] + m["receiver_cpu_s_per_gb"], "lower")

def perflab_compress(path, threads):
    for p, m in medians(path):
        a = p["algorithm"]
        out(f"compress {a} {threads}", "MB/s in", m["compress_mb_s"])
        if threads == "1t":
            out(f"decompress {a} {threads}", "MB/s out", m["decompress_mb_s"])

def perflab_crypto(path, threads):
    for p, m in medians(path):
        a = p["algorithm"]
        if "mb_s" in m:
            out(f"crypto {a} 16K {threads}", "MB/s", m["mb_s"])
        else:
            alg, op = a.rsplit("-", 1)
            out(f"crypto {alg} {op} {threads}", f"{op}/s", m["ops_s"])

def iperf3(path):
    e = json.load(open(path))["end"]
    sent, recv, cpu = e["sum_sent"], e["sum_received"], e["cpu_utilization_percent"]
    ref = "iperf3 -c 127.0.0.1"
    out("net stream", "MB/s", recv["bytes"] / recv["seconds"] / 1e6, ref=ref)
    # cpu_utilization_percent: the process's (user + system) / wall over the test.
    out("net sender CPU", "s/GB", cpu["host_total"] / 100 * sent["seconds"] / (sent["bytes"] / 1e9), "lower", ref)
    rx = cpu["remote_total"] / 100 * recv["seconds"] / (recv["bytes"] / 1e9)
    out("net receiver CPU", "s/GB", rx, "lower", ref)
    tx = cpu["host_total"] / 100 * sent["seconds"] / (sent["bytes"] / 1e9)
    out("net both sides' CPU", "s/GB", tx + rx, "lower", ref)

def openssl(path, threads, multi):
    text = open(path).read()
    ref = "openssl speed" + (f" -multi {multi}" if multi else "")
    pats = {
        "rsa2048": r"^rsa 2048 bits\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)",
        "rsa4096": r"^rsa 4096 bits\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)",
        "ecdsap256": r"^\s*256 bits ecdsa \(nistp256\)\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)",
        "ed25519": r"^\s*253 bits EdDSA \(Ed25519\)\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)",
    }
    for alg, pat in pats.items():
        m = re.search(pat, text, re.M)
        if m:
            out(f"crypto {alg} sign {threads}", "sign/s", float(m.group(1)), ref=ref)
            out(f"crypto {alg} verify {threads}", "verify/s", float(m.group(2)), ref=ref)
    for name, alg in (("sha256", "sha256"), ("AES-256-GCM", "aes-256-gcm")):
        m = re.search(rf"^{name}\s+([\d.]+)k\s*$", text, re.M)  # 1000s of bytes/s
        if m:
            out(f"crypto {alg} 16K {threads}", "MB/s", float(m.group(1)) / 1000, ref=f"{ref} -evp")

globals()[sys.argv[1].replace("-", "_")](*sys.argv[2:])
PY
parse() { python3 "$WORK/parse.py" "$@"; }

# ---- mem: the C reference ----
cat >"$WORK/memref.c" <<'C'
/* memref OP BYTES MIN_TIME: one thread's passes over malloc'd buffers, as perflab mem.
 * OP: write (memset), copy (memcpy, alternating direction), write-nt, copy-nt (16-byte
 * streaming stores, sfence after each pass). Prints GB/s (10^9 bytes). */
#include <emmintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static void nt_fill(uint64_t *d, size_t words, uint8_t byte) {
  __m128i v = _mm_set1_epi8((char)byte);
  uint64_t w;
  memset(&w, byte, 8);
  size_t i = 0;
  for (; i < words && ((uintptr_t)(d + i) & 15); i++) d[i] = w;
  for (; i + 2 <= words; i += 2) _mm_stream_si128((__m128i *)(d + i), v);
  for (; i < words; i++) d[i] = w;
  _mm_sfence();
}
static void nt_copy(uint64_t *d, const uint64_t *s, size_t words) {
  size_t i = 0;
  for (; i < words && ((uintptr_t)(d + i) & 15); i++) d[i] = s[i];
  for (; i + 2 <= words; i += 2)
    _mm_stream_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));
  for (; i < words; i++) d[i] = s[i];
  _mm_sfence();
}
int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: memref write|copy|write-nt|copy-nt BYTES MIN_TIME\n"); return 2; }
  const char *op = argv[1];
  size_t words = strtoull(argv[2], 0, 10) / 8, n = words * 8;
  double min_time = atof(argv[3]);
  int copy = !strcmp(op, "copy") || !strcmp(op, "copy-nt"), nt = strstr(op, "-nt") != 0;
  /* Page-aligned, as perflab's (crates/workloads/src/mem.rs says why). */
  uint64_t *a = 0, *b = 0;
  if (posix_memalign((void **)&a, 4096, n) || (copy && posix_memalign((void **)&b, 4096, n))) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < words; i++) a[i] = copy ? i : 1;
  if (copy) memset(b, 0xff, n); /* touch every page */
  /* The clock is read once per 64 KiB moved (at least once a pass), as perflab does. */
  uint64_t pass = 0, moved = 0, per_check = n >= 65536 ? 1 : 65536 / n;
  double t0 = now(), el;
  for (;;) {
    pass++;
    if (!copy) {
      if (nt) nt_fill(a, words, (uint8_t)pass); else memset(a, (uint8_t)pass, n);
    } else {
      uint64_t *src = pass & 1 ? a : b, *dst = pass & 1 ? b : a;
      if (nt) nt_copy(dst, src, words); else memcpy(dst, src, n);
    }
    __asm__ volatile("" ::: "memory");
    moved += n;
    if (pass % per_check == 0 && (el = now() - t0) >= min_time) break;
  }
  uint64_t w;
  memset(&w, (uint8_t)pass, 8);
  for (size_t i = 0; i < words; i++)
    if (copy ? (a[i] != i || b[i] != i) : a[i] != w) { fprintf(stderr, "%s: check failed\n", op); return 1; }
  printf("%.6f\n", moved / el / 1e9);
  return 0;
}
C
MEM_OPS="write copy write-nt copy-nt"
MEM_BLOCKS="4K 1M 256M"
if wants mem; then
  cc -O2 -o "$WORK/memref" "$WORK/memref.c"
fi

bytes_of() {
  local n=${1%[KMG]}
  case $1 in *K) echo $((n << 10));; *M) echo $((n << 20));; *G) echo $((n << 30));; *) echo "$1";; esac
}
# secs CMD...: runs CMD (stdout to /dev/null), prints its wall time in seconds
secs() {
  local s e
  s=$(date +%s%N)
  "$@" >/dev/null
  e=$(date +%s%N)
  awk -v s="$s" -v e="$e" 'BEGIN { printf "%.6f\n", (e - s) / 1e9 }'
}

# ---- compress: perflab's "text" bytes in a file (compress.rs `generate`, kind text) ----
DATA=$WORK/text.bin
if wants compress; then
  echo "writing $SIZE of perflab's text data..." >&2
  python3 - "$DATA" "$(bytes_of "$SIZE")" <<'PY'
import sys
# A copy of crates/workloads/src/compress.rs `generate("text", size)`: xorshift64
# (13, 7, 17) from 0x9e3779b97f4a7c15, one access-log-like line per draw, cut at size.
size = int(sys.argv[2])
M = (1 << 64) - 1
W = ["GET", "POST", "/index.html", "/api/v1/users", "/api/v1/orders", "/static/app.js",
     "/static/style.css", "/images/logo.png", "/login", "/search?q=perf", "HTTP/1.1", "Mozilla/5.0"]
rng, parts, n, i = 0x9E3779B97F4A7C15, [], 0, 0
while n < size:
    rng ^= (rng << 13) & M; rng ^= rng >> 7; rng ^= (rng << 17) & M; r = rng
    line = "%d 10.0.%d.%d %s %s %d %d %s\n" % (
        1_700_000_000 + i, r % 4, (r >> 8) % 250, W[(r >> 16) % 2], W[2 + (r >> 20) % 8],
        404 if (r >> 28) % 20 == 0 else 200, (r >> 32) % 50_000, W[11])
    parts.append(line); n += len(line); i += 1
open(sys.argv[1], "wb").write("".join(parts).encode()[:size])
PY
  gzip -6 -c "$DATA" >"$DATA.gz"
  zstd -q -3 -T1 --no-check -c "$DATA" >"$DATA.zst"
  lz4 -q -1 --no-frame-crc -c "$DATA" >"$DATA.lz4"
  "$PL" compress -q --store "$STORE" -a zstd --size "$SIZE" --runs 1 --json >"$RAW/compress-check.json"
  python3 - "$RAW/compress-check.json" "$(stat -c %s "$DATA.zst")" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ours = next(m["median"] for m in j["configs"][0]["metrics"] if m["name"] == "compressed_bytes")
tool = int(sys.argv[2])
if abs(ours / tool - 1) > 0.01:
    sys.exit(f"the text file is not perflab's data: zstd -3 made {tool} bytes of it, perflab {ours:.0f}")
print(f"same data: zstd -3 output {tool} bytes (tool) vs {ours:.0f} (perflab)", file=sys.stderr)
PY
fi

# ---- net: one iperf3 server for the whole run ----
if wants net; then
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  iperf3 -s -B 127.0.0.1 -p "$PORT" >"$RAW/iperf3-server.log" 2>&1 &
  IPERF_PID=$!
  for _ in $(seq 200); do
    [[ -n $(ss -Hltn "sport = :$PORT") ]] && break
    kill -0 "$IPERF_PID" 2>/dev/null || die "iperf3 -s exited: $(cat "$RAW/iperf3-server.log")"
    sleep 0.02
  done
  [[ -n $(ss -Hltn "sport = :$PORT") ]] || die "iperf3 -s is not listening on 127.0.0.1:$PORT after 4 s"
fi

CRYPTO_ALGS=rsa2048-sign,rsa2048-verify,rsa4096-sign,rsa4096-verify,ecdsap256-sign,ecdsap256-verify,ed25519-sign,ed25519-verify,sha256,aes-256-gcm

# ---- one side of one workload: prints result lines ----
run_side() {
  local group=$1 side=$2 r=$3 f
  case $group:$side in
    mem:perflab)
      f=$RAW/mem.perflab.$r.json
      "$PL" mem -q --store "$STORE" --op "${MEM_OPS// /,}" -b "${MEM_BLOCKS// /,}" \
        --min-time "$MEM_TIME" --runs 1 --json >"$f"
      parse perflab-mem "$f" ;;
    mem:reference)
      local op b label
      for op in $MEM_OPS; do
        case $op in write) label="C memset loop";; copy) label="C memcpy loop";; *) label="C _mm_stream_si128 loop";; esac
        for b in $MEM_BLOCKS; do
          printf 'mem %s %s\tGB/s\thigher\t%s\t%s\n' "$op" "$b" "$label" \
            "$("$WORK/memref" "$op" "$(bytes_of "$b")" "$MEM_TIME")"
        done
      done ;;
    net:perflab)
      f=$RAW/net.perflab.$r.json
      "$PL" net -q --store "$STORE" -d "$NET_SECS" --runs 1 --json >"$f"
      parse perflab-net "$f" ;;
    net:reference)
      f=$RAW/net.iperf3.$r.json
      iperf3 -c 127.0.0.1 -p "$PORT" -t "$NET_SECS" -J >"$f"
      parse iperf3 "$f" ;;
    compress:perflab)
      f=$RAW/compress.perflab.$r.json
      "$PL" compress -q --store "$STORE" --data text --size "$SIZE" --runs 1 --json >"$f"
      parse perflab-compress "$f" 1t
      f=$RAW/compress.perflab-all.$r.json
      "$PL" compress -q --store "$STORE" -a gzip,zstd --data text --size "$SIZE" --threads all --runs 1 --json >"$f"
      parse perflab-compress "$f" "${NCPU}t" ;;
    compress:reference)
      local mb t
      mb=$(awk -v b="$(stat -c %s "$DATA")" 'BEGIN { print b / 1e6 }')
      rate() { awk -v mb="$mb" -v t="$1" 'BEGIN { printf "%.6f\n", mb / t }'; }
      t=$(secs gzip -6 -c "$DATA");                  printf 'compress gzip 1t\tMB/s in\thigher\tgzip -6\t%s\n' "$(rate "$t")"
      t=$(secs gzip -dc "$DATA.gz");                 printf 'decompress gzip 1t\tMB/s out\thigher\tgzip -d\t%s\n' "$(rate "$t")"
      t=$(secs zstd -q -3 -T1 --no-check -c "$DATA"); printf 'compress zstd 1t\tMB/s in\thigher\tzstd -3 -T1\t%s\n' "$(rate "$t")"
      t=$(secs zstd -q -dc "$DATA.zst");             printf 'decompress zstd 1t\tMB/s out\thigher\tzstd -d\t%s\n' "$(rate "$t")"
      t=$(secs lz4 -q -1 --no-frame-crc -c "$DATA"); printf 'compress lz4 1t\tMB/s in\thigher\tlz4 -1\t%s\n' "$(rate "$t")"
      t=$(secs lz4 -q -dc "$DATA.lz4");              printf 'decompress lz4 1t\tMB/s out\thigher\tlz4 -d\t%s\n' "$(rate "$t")"
      t=$(secs pigz -6 -p "$NCPU" -c "$DATA");       printf 'compress gzip %st\tMB/s in\thigher\tpigz -6 -p %s\t%s\n' "$NCPU" "$NCPU" "$(rate "$t")"
      t=$(secs zstd -q -3 -T0 --no-check -c "$DATA"); printf 'compress zstd %st\tMB/s in\thigher\tzstd -3 -T0\t%s\n' "$NCPU" "$(rate "$t")" ;;
    crypto:perflab)
      f=$RAW/crypto.perflab.$r.json
      "$PL" crypto -q --store "$STORE" -a "$CRYPTO_ALGS" --min-time "$CRYPTO_SECS" --runs 1 --json >"$f"
      parse perflab-crypto "$f" 1t
      f=$RAW/crypto.perflab-all.$r.json
      "$PL" crypto -q --store "$STORE" -a "$CRYPTO_ALGS" --min-time "$CRYPTO_SECS" --threads all --runs 1 --json >"$f"
      parse perflab-crypto "$f" "${NCPU}t" ;;
    crypto:reference)
      local multi
      for multi in "" "$NCPU"; do
        f=$RAW/crypto.openssl${multi:+-multi$multi}.$r.txt
        local m=(); [[ -n $multi ]] && m=(-multi "$multi")
        {
          openssl speed "${m[@]}" -seconds "$CRYPTO_SECS" rsa2048 rsa4096 ecdsap256 ed25519
          openssl speed "${m[@]}" -seconds "$CRYPTO_SECS" -bytes 16384 -evp sha256
          openssl speed "${m[@]}" -seconds "$CRYPTO_SECS" -bytes 16384 -evp aes-256-gcm
        } >"$f" 2>&1
        parse openssl "$f" "${multi:-1}t" "$multi"
      done ;;
  esac
}

# Other work on the machine while a side ran, in CPUs: every CPU's busy time (user,
# nice, system, irq, softirq in /proc/stat) less this script's own (its finished
# children, from the shell's `times`, and the iperf3 server's), over the wall time.
TICK=$(getconf CLK_TCK)
cpu_now() {
  times >"$WORK/times" # in this shell: a subshell's `times` starts from zero
  local srv=0
  [[ -n $IPERF_PID && -r /proc/$IPERF_PID/stat ]] && srv=$(awk -v t="$TICK" '{ print ($14 + $15) / t }' "/proc/$IPERF_PID/stat")
  awk -v t="$TICK" -v srv="$srv" -v now="$(date +%s.%N)" '
    function sec(x, p) { split(x, p, "m"); sub("s", "", p[2]); return p[1] * 60 + p[2] }
    FNR == NR && /^cpu / { busy = ($2 + $3 + $4 + $7 + $8) / t }
    FNR != NR && FNR == 2 { ours = sec($1) + sec($2) + srv }
    END { printf "%s %.3f %.3f\n", now, busy, ours }' /proc/stat "$WORK/times"
}

RESULTS=$RAW/results.tsv
: >"$RESULTS"
start=$(date +%s)
for round in $(seq "$ROUNDS"); do
  for group in $ONLY; do
    sides=(perflab reference)
    ((round % 2 == 0)) && sides=(reference perflab)
    for side in "${sides[@]}"; do
      echo "round $round/$ROUNDS  $group  $side" >&2
      cpu_now >"$WORK/cpu0" # not in $(...): `times` must run in this shell
      run_side "$group" "$side" "$round" | sed "s/^/$round\t$side\t/" >>"$RESULTS"
      cpu_now >"$WORK/cpu1"
      awk -v r="$round" -v s="$side" -v g="$group" '
        FNR == NR { w = $1; b = $2; o = $3; next }
        { x = (($2 - b) - ($3 - o)) / ($1 - w); printf "%s\t%s\t@other %s\t\t\t\t%.3f\n", r, s, g, x < 0 ? 0 : x }
      ' "$WORK/cpu0" "$WORK/cpu1" >>"$RESULTS"
    done
  done
done

python3 - "$RESULTS" "$ROUNDS" "$(( $(date +%s) - start ))" "$NCPU" "${MAX_OTHER:-0.2}" <<'PY'
import statistics, sys
path, rounds, secs, ncpu, max_other = sys.argv[1:]
max_other = float(max_other)
rows, refs, other = {}, {}, {}
for line in open(path):
    rnd, side, row, unit, better, ref, value = line.rstrip("\n").split("\t")
    if row.startswith("@other "):
        key = (row.split()[1], rnd)
        other[key] = max(other.get(key, 0.0), float(value))
        continue
    r = rows.setdefault(row, {"unit": unit, "perflab": {}, "reference": {}})
    r[side][rnd] = float(value)
    if ref:
        refs[row] = ref
model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"perflab vs reference, {rounds} alternating rounds, {secs} s; {ncpu} CPUs ({model})")
print(f"medians over the rounds in which other work used at most {max_other} CPU (n); "
      f"~ = no such round, all used")
print(f"ratio = perflab / reference; ! = outside ±10 %; {ncpu}t = every CPU")

def fmt(x):
    for lim, d in ((1000, 0), (100, 1), (10, 2), (1, 3)):
        if abs(x) >= lim:
            return f"{x:.{d}f}"
    return f"{x:.4f}"

def group(row):
    g = row.split()[0]
    return "compress" if g == "decompress" else g

table = [("row", "unit", "perflab", "reference", "ratio", "n", "perflab range", "reference range", "reference")]
for row, r in rows.items():
    both = sorted(set(r["perflab"]) & set(r["reference"]), key=int)
    clean = [k for k in both if other.get((group(row), k), 0.0) <= max_other]
    use, mark = (clean, "") if clean else (both, "~")
    if not use:
        table.append((row, r["unit"], "-", "-", "missing", "0", "", "", refs.get(row, "")))
        continue
    p = [r["perflab"][k] for k in use]
    q = [r["reference"][k] for k in use]
    mp, mq = statistics.median(p), statistics.median(q)
    ratio = mp / mq if mq else float("inf")
    flag = "!" if abs(ratio - 1) > 0.10 else " "
    table.append((row, r["unit"], fmt(mp), fmt(mq), f"{ratio:.2f}{flag}", f"{len(use)}{mark}",
                  f"{fmt(min(p))}–{fmt(max(p))}", f"{fmt(min(q))}–{fmt(max(q))}", refs.get(row, "")))
widths = [max(len(t[i]) for t in table) for i in range(len(table[0]))]
right = {2, 3, 4, 5}
for t in table:
    cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(t, widths))]
    print("  ".join(cells).rstrip())
print("other work while each group ran (CPUs, the larger of its two sides), by round:")
for g in dict.fromkeys(k[0] for k in other):
    print(f"  {g:<9}" + "  ".join(f"{other[(g, k)]:.2f}" for k in sorted({k[1] for k in other if k[0] == g}, key=int)))
PY
[[ -n "${OUT:-}" ]] && echo "raw outputs kept in $OUT" >&2
exit 0
