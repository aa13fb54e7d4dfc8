#!/usr/bin/env bash
# perflab serve vs nginx serving the same files, on 127.0.0.1, the same worker count,
# keep-alive, loaded alternately (the order of the two servers flips every round) by
# wrk and by `perflab http`. Four files: a small page (~40 B), 4 KiB, 64 KiB (req/s)
# and 1 MiB (MB/s of body); then `perflab serve --hello` vs nginx's small page, the
# event loop's ceiling. Prints every round, the medians and the ratio perflab/nginx.
# Targets (issue 17): small >= 1.2x, 4 KiB >= 1.1x, 64 KiB >= 1.0x, 1 MiB >= 0.95x.
#
# nginx is tuned the way its users tune it: sendfile + tcp_nopush, open_file_cache,
# access_log off, keepalive_requests very high, reuseport listener, as many worker
# processes as perflab has workers. perflab serve runs with its defaults (the open-file
# cache on, files up to 16 KiB from memory).
#
# Settings (environment): ROUNDS=5 DURATION=5 CONNS=20 THREADS=1 WORKERS=2
#                         LOADGENS="wrk perflab" FILES="small 4k 64k 1m hello"
#                         NO_BUILD=1 (use the perflab already built in
#                         $CARGO_TARGET_DIR/release: an A/B of two builds, as in
#                         docs/benchmarks.md's build-time section)
set -euo pipefail

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
CONNS=${CONNS:-20}
THREADS=${THREADS:-1}
WORKERS=${WORKERS:-2}
LOADGENS=${LOADGENS:-"wrk perflab"}
FILES=${FILES:-"small 4k 64k 1m hello"}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

say() { printf '%s\n' "$*" >&2; }

# --- peers -------------------------------------------------------------------
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ] || ! command -v wrk >/dev/null 2>&1; then
    say "installing nginx and wrk (Debian packages)"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nginx wrk >/dev/null
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# --- perflab -------------------------------------------------------------------
if [ -z "${NO_BUILD:-}" ]; then
    say "building perflab (release)"
    (cd "$ROOT" && cargo build --release -q -p perflab-cli)
fi
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
PERFLAB="$TARGET_DIR/release/perflab"
[ -x "$PERFLAB" ] || { say "no binary at $PERFLAB"; exit 1; }

# --- site and nginx config ----------------------------------------------------------
WORK=$(mktemp -d /tmp/serve-vs-nginx.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
mkdir -p "$WORK/www" "$WORK/tmp" "$WORK/logs"
printf '<html><body>It works!</body></html>\n' > "$WORK/www/small.html"   # 38 bytes
printf 'Hello, world!\n' > "$WORK/www/hello.txt"   # the same bytes as perflab's hello page
head -c 4096 /dev/urandom > "$WORK/www/4k.bin"
head -c 65536 /dev/urandom > "$WORK/www/64k.bin"
head -c 1048576 /dev/urandom > "$WORK/www/1m.bin"
chmod -R a+rX "$WORK"

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
NGINX_PORT=$(free_port)

USER_LINE=""
[ "$(id -u)" -eq 0 ] && USER_LINE="user root;"
cat > "$WORK/nginx.conf" <<CONF
$USER_LINE
worker_processes $WORKERS;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/logs/error.log warn;
events {
    worker_connections 4096;
    use epoll;
}
http {
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    open_file_cache max=1000 inactive=60s;
    open_file_cache_valid 60s;
    open_file_cache_min_uses 1;
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 65s;
    server_tokens off;
    types { text/plain txt; text/html html; }
    default_type application/octet-stream;
    client_body_temp_path $WORK/tmp/body;
    proxy_temp_path $WORK/tmp/proxy;
    fastcgi_temp_path $WORK/tmp/fastcgi;
    uwsgi_temp_path $WORK/tmp/uwsgi;
    scgi_temp_path $WORK/tmp/scgi;
    server {
        listen 127.0.0.1:$NGINX_PORT reuseport;
        root $WORK/www;
        location / { }
    }
}
CONF

# --- start the servers ----------------------------------------------------------------
"$NGINX" -p "$WORK" -c "$WORK/nginx.conf" &
PIDS+=($!)
"$PERFLAB" serve "$WORK/www" --port 0 --workers "$WORKERS" > "$WORK/files.out" 2> "$WORK/logs/files.err" &
PIDS+=($!)
"$PERFLAB" serve --hello --port 0 --workers "$WORKERS" > "$WORK/hello.out" 2> "$WORK/logs/hello.err" &
PIDS+=($!)

wait_http() { # URL
    for _ in $(seq 1 100); do
        curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    say "no answer from $1"; exit 1
}
base_of() { # FILE with "listening on URL"
    for _ in $(seq 1 100); do [ -s "$1" ] && break; sleep 0.1; done
    head -1 "$1" | sed 's/^listening on //'
}
FILES_BASE=$(base_of "$WORK/files.out")
HELLO_BASE=$(base_of "$WORK/hello.out")
NGINX_BASE="http://127.0.0.1:$NGINX_PORT/"

# FILE -> "path size" (hello: perflab's --hello against nginx's small page)
file_path() { case "$1" in small) echo small.html;; 4k) echo 4k.bin;; 64k) echo 64k.bin;; 1m) echo 1m.bin;; hello) echo small.html;; esac; }
file_size() { stat -c %s "$WORK/www/$(file_path "$1")"; }
perflab_url() { if [ "$1" = hello ]; then echo "${HELLO_BASE}hello.txt"; else echo "${FILES_BASE}$(file_path "$1")"; fi; }
nginx_url() { echo "${NGINX_BASE}$(file_path "$1")"; }

for f in $FILES; do
    wait_http "$(perflab_url "$f")"; wait_http "$(nginx_url "$f")"
    if [ "$f" != hello ] && ! cmp -s <(curl -fsS "$(perflab_url "$f")") <(curl -fsS "$(nginx_url "$f")"); then
        say "the two servers send different bodies for $f"; exit 1
    fi
done

# --- load ---------------------------------------------------------------------------
load() { # LOADGEN URL SECONDS -> prints req/s
    case "$1" in
        wrk)
            wrk -t "$THREADS" -c "$CONNS" -d "${3}s" "$2" | awk '/^Requests\/sec:/ {print $2}'
            ;;
        perflab)
            "$PERFLAB" --quiet --store "$WORK/results.db" http "$2" -c "$CONNS" -t "$THREADS" -d "${3}s" --json 2>/dev/null |
                python3 -c 'import json,sys; r=json.load(sys.stdin); print(round(r.get("rps") or r["summary"]["rps"]))' 2>/dev/null || echo "nan"
            ;;
    esac
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# the figure compared: req/s, or MB/s of body (10^6 bytes) for the 1 MiB file
figure() { # FILE REQS
    if [ "$1" = 1m ]; then awk -v r="$2" -v s="$(file_size 1m)" 'BEGIN { printf "%.1f", r * s / 1e6 }'; else echo "$2"; fi
}
unit() { if [ "$1" = 1m ]; then echo "MB/s"; else echo "req/s"; fi; }

say "warm-up"
for gen in $LOADGENS; do for f in $FILES; do
    load "$gen" "$(perflab_url "$f")" 1 >/dev/null; load "$gen" "$(nginx_url "$f")" 1 >/dev/null
done; done

printf '%-8s %-6s %-6s %14s %14s %6s\n' loadgen file round perflab nginx unit
for gen in $LOADGENS; do
    for f in $FILES; do
        : > "$WORK/$gen.$f.perflab"; : > "$WORK/$gen.$f.nginx"
        pu=$(perflab_url "$f"); nu=$(nginx_url "$f")
        for r in $(seq 1 "$ROUNDS"); do
            if [ $((r % 2)) -eq 1 ]; then
                p=$(load "$gen" "$pu" "$DURATION"); n=$(load "$gen" "$nu" "$DURATION")
            else
                n=$(load "$gen" "$nu" "$DURATION"); p=$(load "$gen" "$pu" "$DURATION")
            fi
            p=$(figure "$f" "$p"); n=$(figure "$f" "$n")
            echo "$p" >> "$WORK/$gen.$f.perflab"; echo "$n" >> "$WORK/$gen.$f.nginx"
            printf '%-8s %-6s %-6s %14s %14s %6s\n' "$gen" "$f" "$r" "$p" "$n" "$(unit "$f")"
        done
    done
done
echo
target() { case "$1" in small) echo 1.20;; 4k) echo 1.10;; 64k) echo 1.00;; 1m) echo 0.95;; *) echo -;; esac; }
printf '%-8s %-6s %16s %16s %8s %7s %6s\n' loadgen file "perflab median" "nginx median" ratio target held
for gen in $LOADGENS; do
    for f in $FILES; do
        pm=$(median < "$WORK/$gen.$f.perflab"); nm=$(median < "$WORK/$gen.$f.nginx")
        ratio=$(awk -v p="$pm" -v n="$nm" 'BEGIN { if (n > 0) printf "%.2f", p / n; else print "nan" }')
        t=$(target "$f")
        held=$(paste "$WORK/$gen.$f.perflab" "$WORK/$gen.$f.nginx" |
            awk -v t="$t" 'BEGIN { if (t == "-") t = 0 } { if ($2 > 0 && $1 / $2 >= t) h++ } END { printf "%d/%d", h, NR }')
        printf '%-8s %-6s %10.1f %-5s %10.1f %-5s %7sx %7s %6s\n' "$gen" "$f" "$pm" "$(unit "$f")" "$nm" "$(unit "$f")" "$ratio" "$t" "$held"
    done
done
echo "(workers $WORKERS, $CONNS connections, $THREADS load thread(s), $ROUNDS rounds x ${DURATION}s, order flipped each round;"
echo " hello = perflab serve --hello vs nginx's small file: the event loop's ceiling; held = rounds whose own ratio met the target)"
