#!/bin/bash
# The knee of STUDIES.md section 5 (nginx and the listen queue): nginx with one worker in
# a network namespace this script makes, net.core.somaxconn and tcp_max_syn_backlog set
# inside it only (the host's are never touched), and `perflab http --find-max
# --find-max-repetitions 5` without keep-alive (every request a new connection through
# the listen queue): the knee with its 95 % interval and what ran out there.
#
#   sudo examples/nginx-somaxconn-knee.sh 128 [OUT.json] [more perflab http flags]
#
# Needs root, iproute2 and nginx. The namespace, nginx and the scratch directory are
# removed on exit (also on Ctrl-C). docs/studies.md section 5 gives what it measured.
set -u
SOMAX=${1:-128}; PERFLAB=${PERFLAB:-perflab}; OUTF=${2:-knee-$SOMAX.json}
NS=pl-knee-$SOMAX; D=$(mktemp -d /tmp/knee.XXXX); chmod 755 $D
cleanup() { [ -n "${NGX:-}" ] && kill $NGX 2>/dev/null; sleep 0.5; ip netns del $NS 2>/dev/null; rm -rf $D; }
trap cleanup EXIT; trap "exit 130" INT TERM
ip netns add $NS && ip -n $NS link set lo up
ip netns exec $NS sysctl -q -w net.core.somaxconn=$SOMAX net.ipv4.tcp_max_syn_backlog=$SOMAX
mkdir -p $D/www $D/tmp; printf 'ok\n' > $D/www/index.html
cat > $D/nginx.conf <<NG
worker_processes 1;
pid $D/nginx.pid;
error_log stderr notice;
events { worker_connections 4096; }
http { access_log off; client_body_temp_path $D/tmp;
  server { listen 127.0.0.1:8080 backlog=65535; root $D/www; } }
NG
ip netns exec $NS nginx -p $D -c $D/nginx.conf -g 'daemon off;' 2>$D/nginx.log & NGX=$!
for i in $(seq 50); do ip netns exec $NS bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080' 2>/dev/null && break; sleep 0.1; done
shift $(( $# < 2 ? $# : 2 ))
ip netns exec $NS $PERFLAB --quiet --store $D/s.db http http://127.0.0.1:8080/ --find-max --find-max-repetitions 5 --no-keepalive --slo 'p99<20ms' "$@" --json > $OUTF
echo "rc=$?"
python3 -c "import json;r=json.load(open('$OUTF'));print({k:r.get(k) for k in ('max_rate','max_rate_ci_low','max_rate_ci_high','repetitions','limit','broke_at')}); print(len(r['steps']),'steps')"
