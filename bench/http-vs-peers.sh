#!/usr/bin/env bash
# perflab http vs its peers (wrk, ab -k, h2load, oha when installed) on the same nginx,
# alternating tools round by round, each with 10 connections.
#
# Prints each tool's median req/s, CPU-seconds per 100k requests (user+sys of the
# tool's process, from /usr/bin/time) and requests in flight, and perflab's ratios to
# each peer. Requests in flight are Little's law on each tool's own output, req/s x mean
# latency (perflab's JSON; wrk's and h2load's mean latency; ab's "Time per request
# (mean)"): with 10 connections a closed loop should show ~10, and a tool that shows
# fewer offered the server a lighter load — compare like with like. Two caveats, both
# the peers' own: ab computes that mean as connections x time / requests, so its figure
# is 10 by construction (its sub-millisecond latencies exist only in whole ms); and
# wrk's mean latency does not agree with its own req/s (30.7k req/s at 0.78 ms mean on
# 10 connections, 2026-11-26: 24 "in flight"), so a wrk figure above 10 says its latency
# is overstated, not that it had more requests in flight.
# Target: perflab >= 1.1x the best peer's req/s and <= 0.8x the most frugal peer's CPU
# per request. Beside the ratios of the medians, "paired" gives the median over the
# rounds of each round's ratios (req/s, CPU per request): on a busy machine, where one
# tool's req/s varies 2x from round to round, it is the steadier of the two.
#
# Usage: bench/http-vs-peers.sh [ROUNDS] [SECONDS]     (defaults: 9 rounds, 5 s per run)
# Env:   CONNECTIONS (10), PERFLAB_THREADS (one perflab run per round with that -t; by
#        default perflab runs twice per round, with its defaults — what users run — and
#        with its defaults but --io epoll, the other engine), PERFLAB_IO
#        (auto|epoll|uring: the --io of the PERFLAB_THREADS run, default auto),
#        NO_INSTALL=1 (skip apt-get),
#        NO_BUILD=1 (use the perflab already built in $CARGO_TARGET_DIR/release),
#        PERFLAB_VARIANTS="epoll:1 uring:1 epoll:2 uring:2" (several perflab runs per
#        round, IO:THREADS each, alternating with the peers: an A/B in the same minutes),
#        PEERS="wrk ab" (a subset of the peers; wrk:N and h2load:N run them with N
#        threads instead of 2: PEERS="wrk wrk:1 ab h2load h2load:1" gives every
#        multi-threaded peer its one-thread setting too),
#        NGINX_WORKERS (2: nginx's worker_processes), SERVER_CPUS / CLIENT_CPUS (a CPU
#        list for taskset: nginx, and every tool, pinned there; default unpinned) — for
#        a machine with more cores: does the default still scale?
#        HTTP2=1 (the h2 row: nginx speaks h2c on the port — `listen ... http2` — and
#        perflab --http2 -t 1 runs against h2load -t 1 with the same connections and
#        STREAMS concurrent streams each (default 10), oha --http2 too when installed;
#        target: perflab >= 1.0x h2load's req/s at <= its CPU per request).
#
# nginx listens with `reuseport`: each worker has its own accept queue and the kernel
# spreads connections over them by a hash of the addresses. Without it, how nginx split
# the 10 connections over its 2 workers depended on how fast the client opened them, and
# the split set the req/s: ss at 0.6 s into 1-s runs, 8 runs each, without reuseport
# — perflab -t 1 10/0 in 6 runs, ab 10/0 in 3, wrk never (4/6 to 8/2); 3-s perflab runs
# did 71-73k req/s at 10/0 and 82-89k at 5/5 (one at 4/6 did 65k). With reuseport the
# split is chance, the same chance for every tool (2/8 to 7/3, 10 runs).
#
# Rounds still differ a lot (perflab -t 1, one run at 14:45 UTC: 91-95k req/s in two
# 5-s rounds, 70-80k in the other five), hence 9 rounds by default rather than 5.
#
# perflab's default threads are half the cores (at most one per connection: see
# perflab_load::default_threads), one here. On this 2-core machine the server's 2
# workers and the client share the cores, and one client thread keeps 10 connections
# busy at well under one core. Two threads each wait for half as many responses per
# wake-up, so they sleep and wake about twice as often per request: as many or more
# req/s (1.00-1.08x), and 1.30-1.44x the CPU per request of one thread (four runs,
# 14:02-14:17 UTC, 2026-11-21) — and the server loses the CPU they take.
set -euo pipefail

ROUNDS=${1:-9}
SECS=${2:-5}
CONNS=${CONNECTIONS:-10}
STREAMS=${STREAMS:-10}
H2=${HTTP2:-}
LISTEN_H2=""; [[ -n "$H2" ]] && LISTEN_H2=" http2"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

need() { command -v "$1" >/dev/null 2>&1; }
if [[ -z "${NO_INSTALL:-}" ]]; then
  missing=()
  need nginx || missing+=(nginx-light)
  need wrk || missing+=(wrk)
  need ab || missing+=(apache2-utils)
  need h2load || missing+=(nghttp2-client)
  [[ -x /usr/bin/time ]] || missing+=(time)
  if ((${#missing[@]})); then
    echo "installing: ${missing[*]}" >&2
    SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

if [[ -z "${NO_BUILD:-}" ]]; then
  echo "building perflab (release)..." >&2
  cargo build --release -q -p perflab-cli --manifest-path "$ROOT/Cargo.toml"
fi
PERFLAB=$CARGO_TARGET_DIR/release/perflab

WORK=$(mktemp -d /tmp/perflab-bench.XXXXXX)
NGINX_PID=""
cleanup() {
  [[ -n "$NGINX_PID" ]] && kill "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$WORK/www" "$WORK/tmp"
chmod 755 "$WORK" "$WORK/www"  # nginx workers run as an unprivileged user
printf 'hello, world\n' > "$WORK/www/index.html"
cat > "$WORK/nginx.conf" <<CONF
worker_processes ${NGINX_WORKERS:-2};
daemon off;
master_process on;
pid $WORK/nginx.pid;
error_log $WORK/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 60s;
  client_body_temp_path $WORK/tmp/body;
  proxy_temp_path $WORK/tmp/proxy;
  fastcgi_temp_path $WORK/tmp/fastcgi;
  uwsgi_temp_path $WORK/tmp/uwsgi;
  scgi_temp_path $WORK/tmp/scgi;
  server {
    listen 127.0.0.1:$PORT reuseport$LISTEN_H2;
    root $WORK/www;
    location / { index index.html; }
  }
}
CONF
SERVER_PIN=(); [[ -n "${SERVER_CPUS:-}" ]] && SERVER_PIN=(taskset -c "$SERVER_CPUS")
CLIENT_PIN=(); [[ -n "${CLIENT_CPUS:-}" ]] && CLIENT_PIN=(taskset -c "$CLIENT_CPUS")
"${SERVER_PIN[@]}" "$NGINX" -p "$WORK" -c "$WORK/nginx.conf" &
NGINX_PID=$!
URL="http://127.0.0.1:$PORT/"
for _ in $(seq 100); do
  python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$PORT),0.1)" 2>/dev/null && break
  sleep 0.05
done
if [[ -z "$H2" ]]; then
  curl_ok=$(python3 -c "import urllib.request; print(urllib.request.urlopen('$URL').status)")
  [[ "$curl_ok" == 200 ]] || { echo "nginx did not answer" >&2; exit 1; }
fi

TOOLS=()
if [[ -n "$H2" ]]; then
  TOOLS=("perflab:epoll:1" "h2load:1")
  need oha && TOOLS+=(oha)
elif [[ -n "${PERFLAB_VARIANTS:-}" ]]; then
  for v in $PERFLAB_VARIANTS; do TOOLS+=("perflab:$v"); done
else
  if [[ -n "${PERFLAB_THREADS:-}" ]]; then
    TOOLS+=("perflab:${PERFLAB_IO:-auto}:$PERFLAB_THREADS")
  else
    # The defaults (engine and threads), and the same on the other engine: each
    # judged on its own against the peers.
    TOOLS+=("perflab:auto:default" "perflab:epoll:default")
  fi
fi
if [[ -n "$H2" ]]; then
  :
elif [[ -n "${PEERS:-}" ]]; then
  for p in $PEERS; do TOOLS+=("$p"); done
else
  TOOLS+=(wrk ab h2load)
  need oha && TOOLS+=(oha)
fi

# threads_of TOOL DEFAULT -> the N of "tool:N", else DEFAULT
threads_of() { [[ $1 == *:* ]] && echo "${1#*:}" || echo "$2"; }

# run TOOL -> prints "REQUESTS CPU_SECONDS RPS IN_FLIGHT"
run_tool() {
  local tool=$1 out="$WORK/out.$1" tm="$WORK/time.$1"
  case $tool in
    perflab:*)
      local io threads args=()
      IFS=: read -r _ io threads <<<"$tool"
      [[ -n "$threads" && $threads != default ]] && args+=(-t "$threads")
      [[ -n "$H2" ]] && args+=(--http2 --streams "$STREAMS")
      /usr/bin/time -f '%U %S' -o "$tm" "${CLIENT_PIN[@]}" "$PERFLAB" http -q -c "$CONNS" "${args[@]}" --io "$io" -d "${SECS}s" --json "$URL" >"$out" ;;
    wrk | wrk:*) /usr/bin/time -f '%U %S' -o "$tm" "${CLIENT_PIN[@]}" wrk -t "$(threads_of "$tool" 2)" -c "$CONNS" -d "${SECS}s" "$URL" >"$out" ;;
    ab) /usr/bin/time -f '%U %S' -o "$tm" "${CLIENT_PIN[@]}" ab -q -k -c "$CONNS" -t "$SECS" -n 100000000 "$URL" >"$out" 2>&1 ;;
    h2load | h2load:*)
      local proto=(--h1); [[ -n "$H2" ]] && proto=(-m "$STREAMS")
      /usr/bin/time -f '%U %S' -o "$tm" "${CLIENT_PIN[@]}" h2load "${proto[@]}" -c "$CONNS" -t "$(threads_of "$tool" 2)" -D "$SECS" "$URL" >"$out" ;;
    oha)
      local proto=(); [[ -n "$H2" ]] && proto=(--http2 -p "$STREAMS")
      /usr/bin/time -f '%U %S' -o "$tm" "${CLIENT_PIN[@]}" oha --no-tui "${proto[@]}" -c "$CONNS" -z "${SECS}s" --output-format json "$URL" >"$out" ;;
  esac
  python3 - "$tool" "$out" "$tm" <<'PY'
import json, re, sys
tool, out, tm = sys.argv[1:]
text = open(out).read()
cpu = sum(map(float, open(tm).read().split()[-2:]))
UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
def secs(num, unit):
    return float(num) * UNIT[unit]
if tool.startswith("perflab"):
    j = json.loads(text); n, rps = j["requests"], j["rps"]; mean = j["latency_ms"]["mean"] / 1e3
elif tool.startswith("wrk"):
    n = int(re.search(r"(\d+) requests in", text).group(1)); rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    mean = secs(*re.search(r"Latency\s+([\d.]+)(us|ms|s)\b", text).groups())
elif tool == "ab":
    n = int(re.search(r"Complete requests:\s+(\d+)", text).group(1)); rps = float(re.search(r"Requests per second:\s+([\d.]+)", text).group(1))
    mean = float(re.search(r"Time per request:\s+([\d.]+) \[ms\] \(mean\)", text).group(1)) / 1e3
elif tool.startswith("h2load"):
    n = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", text).group(1)); rps = float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", text).group(1))
    mean = secs(*re.search(r"time for request:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)\b", text).groups())
else:
    j = json.loads(text); rps = j["summary"]["requestsPerSec"]; n = sum(j.get("statusCodeDistribution", {}).values())
    mean = j["summary"].get("average") or 0.0
print(n, cpu, rps, f"{rps * mean:.2f}")
PY
}

RESULTS="$WORK/results"
: >"$RESULTS"
for round in $(seq "$ROUNDS"); do
  # rotate the order every round so no tool always runs first or last
  k=$(( (round - 1) % ${#TOOLS[@]} ))
  order=("${TOOLS[@]:k}" "${TOOLS[@]:0:k}")
  for tool in "${order[@]}"; do
    line=$(run_tool "$tool")
    echo "$tool $line" >>"$RESULTS"
    printf 'round %d  %-16s %s\n' "$round" "$tool" "$line" >&2
  done
done

python3 - "$RESULTS" "$CONNS" "$ROUNDS" "$SECS" "$H2" "$STREAMS" "${NGINX_WORKERS:-2}" \
  "${SERVER_CPUS:-}" "${CLIENT_CPUS:-}" <<'PY'
import statistics, sys
path, conns, rounds, secs, h2, streams, workers, scpu, ccpu = sys.argv[1:]
pins = (f", nginx on CPUs {scpu}" if scpu else "") + (f", tools on CPUs {ccpu}" if ccpu else "")
rows = {}
for line in open(path):
    tool, n, cpu, rps, inflight = line.split()
    rows.setdefault(tool, []).append((int(n), float(cpu), float(rps), float(inflight)))
med = {}
for tool, rs in rows.items():
    rps = statistics.median(r[2] for r in rs)
    cpu100k = statistics.median(r[1] / r[0] * 1e5 for r in rs if r[0] > 0)
    med[tool] = (rps, cpu100k)
inflight = {t: statistics.median(r[3] for r in rs) for t, rs in rows.items()}
proto = f"h2c, {streams} streams per connection, " if h2 else ""
print(f"nginx hello page ({workers} workers{pins}), {proto}{conns} connections, {rounds} alternating rounds of {secs} s (medians)")
print(f"{'tool':<20}{'req/s':>12}{'CPU-s/100k':>12}{'in flight':>11}")
for tool, (rps, cpu) in sorted(med.items(), key=lambda kv: -kv[1][0]):
    print(f"{tool:<20}{rps:>12.0f}{cpu:>12.3f}{inflight[tool]:>11.2f}")
ours = [t for t in med if t.startswith("perflab")]
peers = {t: v for t, v in med.items() if not t.startswith("perflab")}
best = max(peers, key=lambda t: peers[t][0]) if peers else None
frugal = min(peers, key=lambda t: peers[t][1]) if peers else None
for me in ours:
    p_rps, p_cpu = med[me]
    print()
    print(f"{me + ' vs':<20}{'req/s ratio':>12}{'CPU ratio':>12}{'paired':>16}")
    for tool, (rps, cpu) in med.items():
        if tool != me:
            # the same ratios round by round (the tools of one round ran minutes apart
            # at most), median over the rounds: a noisy machine's drift cancels
            pr = [(a[2] / b[2], (a[1] / a[0]) / (b[1] / b[0]))
                  for a, b in zip(rows[me], rows[tool]) if a[0] > 0 and b[0] > 0 and b[1] > 0]
            paired = (f"{statistics.median(r for r, _ in pr):>8.2f}{statistics.median(c for _, c in pr):>8.2f}"
                      if pr else "")
            print(f"{tool:<20}{p_rps / rps:>12.2f}{p_cpu / cpu:>12.2f}{paired:>16}")
    if best and h2:
        ok = p_rps >= 1.0 * peers[best][0] and p_cpu <= 1.0 * peers[best][1]
        print(f"best peer: {best}; h2 target (>= 1.0x req/s, <= 1.0x CPU/req): {'MET' if ok else 'NOT MET'}")
    elif best:
        ok = p_rps >= 1.1 * peers[best][0] and p_cpu <= 0.8 * peers[frugal][1]
        print(f"best peer: {best}, most frugal: {frugal}; target (>= 1.1x the best's req/s, "
              f"<= 0.8x the most frugal's CPU/req): {'MET' if ok else 'NOT MET'}")
PY
