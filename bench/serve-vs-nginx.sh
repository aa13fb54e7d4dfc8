#!/usr/bin/env bash
# perflab serve --hello vs nginx serving the same hello-world file, on 127.0.0.1,
# same worker count, keep-alive, loaded alternately (nginx/perflab order flips each
# round) by wrk and by `perflab http`. Prints req/s per round, the medians, and the
# ratio perflab/nginx. Target (issue 5): >= 1.1x.
#
# nginx is tuned the way its users tune it: sendfile + tcp_nopush, open_file_cache,
# access_log off, keepalive_requests very high, reuseport listener, one worker
# process per core (the same number as perflab's workers).
#
# Settings (environment): ROUNDS=5 DURATION=5 CONNS=10 THREADS=2 WORKERS=$(nproc)
#                         LOADGENS="wrk perflab"
set -euo pipefail

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
CONNS=${CONNS:-10}
THREADS=${THREADS:-2}
WORKERS=${WORKERS:-$(nproc)}
LOADGENS=${LOADGENS:-"wrk perflab"}
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
say "building perflab (release)"
(cd "$ROOT" && cargo build --release -q -p perflab-cli)
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
printf 'Hello, world!\n' > "$WORK/www/hello.txt"   # the same bytes as perflab's hello page
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
    types { text/plain txt; }
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

# --- start both servers -------------------------------------------------------------
"$NGINX" -p "$WORK" -c "$WORK/nginx.conf" &
PIDS+=($!)
"$PERFLAB" serve --hello --port 0 --workers "$WORKERS" > "$WORK/perflab.out" 2> "$WORK/logs/perflab.err" &
PIDS+=($!)

wait_http() { # URL
    for _ in $(seq 1 100); do
        curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    say "no answer from $1"; exit 1
}
for _ in $(seq 1 100); do [ -s "$WORK/perflab.out" ] && break; sleep 0.1; done
PERFLAB_URL="$(head -1 "$WORK/perflab.out" | sed 's/^listening on //')hello.txt"
NGINX_URL="http://127.0.0.1:$NGINX_PORT/hello.txt"
wait_http "$PERFLAB_URL"
wait_http "$NGINX_URL"
[ "$(curl -fsS "$PERFLAB_URL")" = "$(curl -fsS "$NGINX_URL")" ] || { say "bodies differ"; exit 1; }

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

say "warm-up"
for gen in $LOADGENS; do load "$gen" "$PERFLAB_URL" 1 >/dev/null; load "$gen" "$NGINX_URL" 1 >/dev/null; done

printf '%-8s %-6s %14s %14s\n' loadgen round "perflab req/s" "nginx req/s"
for gen in $LOADGENS; do
    : > "$WORK/$gen.perflab"; : > "$WORK/$gen.nginx"
    for r in $(seq 1 "$ROUNDS"); do
        if [ $((r % 2)) -eq 1 ]; then
            p=$(load "$gen" "$PERFLAB_URL" "$DURATION"); n=$(load "$gen" "$NGINX_URL" "$DURATION")
        else
            n=$(load "$gen" "$NGINX_URL" "$DURATION"); p=$(load "$gen" "$PERFLAB_URL" "$DURATION")
        fi
        echo "$p" >> "$WORK/$gen.perflab"; echo "$n" >> "$WORK/$gen.nginx"
        printf '%-8s %-6s %14s %14s\n' "$gen" "$r" "$p" "$n"
    done
done
echo
printf '%-8s %16s %16s %10s\n' loadgen "perflab median" "nginx median" ratio
for gen in $LOADGENS; do
    pm=$(median < "$WORK/$gen.perflab"); nm=$(median < "$WORK/$gen.nginx")
    ratio=$(awk -v p="$pm" -v n="$nm" 'BEGIN { if (n > 0) printf "%.2fx", p / n; else print "nan" }')
    printf '%-8s %12.0f req/s %12.0f req/s %10s\n' "$gen" "$pm" "$nm" "$ratio"
done
echo "(workers $WORKERS, $CONNS connections, $THREADS load threads, $ROUNDS rounds x ${DURATION}s, target >= 1.10x)"
