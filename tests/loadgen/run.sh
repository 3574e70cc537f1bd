#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# xkv-loadgen against real servers on loopback (tests/loadgen.cmake).
#
#   run.sh LOADGEN CASE      CASE: mc-udp mc-tcp redis open-loop zipf corrupt workload
#
# Each case starts its own server on a free port of 127.0.0.1 and kills it
# on exit, whatever happens.  Exit 0 pass, 1 fail, 77 skip (no server binary).
set -u
LG=${1:?usage: run.sh LOADGEN CASE}
CASE=${2:?usage: run.sh LOADGEN CASE}
SRV_PID=
OUT=$(mktemp /tmp/xkv-lgtest.XXXXXX)

cleanup() {
	if [[ -n $SRV_PID ]]; then
		kill -TERM "$SRV_PID" 2>/dev/null
		for _ in $(seq 5); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.05; done
		kill -KILL "$SRV_PID" 2>/dev/null
		wait "$SRV_PID" 2>/dev/null
	fi
	rm -f "$OUT"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() { echo "FAIL [$CASE]: $*" >&2; [[ -s $OUT ]] && cat "$OUT" >&2; exit 1; }
need() { command -v "$1" >/dev/null || { echo "SKIP: $1 not installed"; exit 77; }; }

# A port free for both TCP and UDP on 127.0.0.1 (the kernel picks it).
free_port() {
	python3 - <<'PY'
import socket
while True:
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.bind(("127.0.0.1", 0))
    p = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", p))
    except OSError:
        continue
    u.close(); t.close(); print(p); break
PY
}

# wait_port tcp|udp PORT: until something listens there (5 s).
wait_port() {
	local flag=-tln
	[[ $1 == udp ]] && flag=-uln
	for _ in $(seq 100); do
		kill -0 "$SRV_PID" 2>/dev/null || fail "server exited at start"
		ss -H $flag "sport = :$2" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	fail "server did not listen on $1 port $2"
}

start_memcached() { # udp|tcp PORT
	need memcached
	if [[ $1 == udp ]]; then
		memcached -U "$2" -p 0 -t 1 -l 127.0.0.1 -u root &
	else
		memcached -p "$2" -U 0 -t 1 -l 127.0.0.1 -u root &
	fi
	SRV_PID=$!
	wait_port "$1" "$2"
}

start_redis() { # PORT
	need redis-server
	redis-server --port "$1" --save '' --appendonly no --bind 127.0.0.1 --daemonize no \
		>/dev/null &
	SRV_PID=$!
	wait_port tcp "$1"
}

# Run the generator; its JSON lands in $OUT.  Exit status 3 (wrong values)
# is left for the checks to judge.
run_lg() {
	"$LG" --json --quiet "$@" >"$OUT"
	local rc=$?
	[[ $rc == 0 || $rc == 3 ]] || fail "xkv-loadgen $* exited with $rc"
	return 0
}

# check 'PYTHON EXPRESSION over d' 'what it means'
check() {
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); l=d.get('latency_us',{}); sys.exit(0 if ($1) else 1)" "$OUT" ||
		fail "$2"
}

check_clean_run() {
	check "d['ops'] > 0 and d['throughput_ops'] > 0" "no throughput"
	check "d['wrong_values'] == 0" "wrong values read"
	check "d['timeouts'] == 0" "timeouts"
	check "d['errors'] == 0" "server errors"
	check "d['misses'] == 0" "misses after --preload"
	check "d['sets'] > 0 and d['gets'] > 0" "the mix has no sets or no gets"
	check "0.05 < d['sets'] / d['ops'] < 0.15" "set share far from 10 %"
	check "0 < l['p50'] <= l['p90'] <= l['p99'] <= l['p999'] <= l['max']" "latency percentiles out of order"
	check "d['hits'] >= d['gets']" "fewer hits than gets"
}

PORT=$(free_port) || fail "no free port"
COMMON=(--server 127.0.0.1 --port "$PORT" --keys 20000 --write-ratio 10)

case $CASE in
mc-udp)
	start_memcached udp "$PORT"
	run_lg --proto mc-udp "${COMMON[@]}" --preload --duration 2 --depth 8
	check_clean_run
	;;
mc-tcp)
	start_memcached tcp "$PORT"
	run_lg --proto mc-tcp "${COMMON[@]}" --preload --duration 2 --depth 16 --conns 4 \
		--scan-ratio 2 --scan-len 100
	check_clean_run
	check "d['scans'] > 0 and d['hits'] >= d['gets'] + 100 * d['scans']" "scans did not read 100 keys each"
	;;
redis)
	start_redis "$PORT"
	run_lg --proto redis "${COMMON[@]}" --preload --duration 2 --depth 16 --threads 2 \
		--scan-ratio 2 --scan-len 100 --value-dist mixed:32,128,512,1024
	check_clean_run
	check "d['scans'] > 0" "no scans"
	;;
open-loop)
	start_memcached udp "$PORT"
	run_lg --proto mc-udp "${COMMON[@]}" --preload --rate 2000 --duration 2
	check "d['offered_rate'] == 2000" "offered rate not echoed"
	check "abs(d['throughput_ops'] - 2000) <= 200" "achieved rate not within 10 % of 2000/s"
	check "d['wrong_values'] == 0 and d['timeouts'] == 0" "wrong values or timeouts"
	check "0 < l['p50'] <= l['p99'] <= l['max']" "latency percentiles out of order"
	;;
zipf)
	# no server: the generator's own key histogram
	"$LG" --keys 100000 --dist zipf:0.99 --dump-key-histogram 1000000 >"$OUT" ||
		fail "--dump-key-histogram failed"
	check "d['top1_share'] > 1000 * d['uniform_share']" "hottest key not far above uniform"
	check "d['hottest_key'] != 0" "hot keys not scrambled"
	"$LG" --keys 100000 --dump-key-histogram 1000000 >"$OUT" || fail "--dump-key-histogram failed"
	check "d['top1_share'] < 5 * d['uniform_share']" "uniform has a hot key"
	;;
corrupt)
	start_memcached tcp "$PORT"
	run_lg --proto mc-tcp "${COMMON[@]}" --keys 1000 --preload --verify-only
	check "d['hits'] == 1000 and d['wrong_values'] == 0" "clean preload does not verify"
	# one bad checksum, one value of another key, one valid `xdpkv load --generate` value
	python3 - "$PORT" <<'PY' || fail "cannot set the corrupted values"
import socket, sys
k = lambda i: "key:%012d" % i
items = [(k(42), "deadbeef/7/" + (k(42) + "/7/") * 3),
         (k(43), ((k(44) + "/0/") * 4)[:50]),
         (k(45), ((k(45) + "/9/") * 4)[:50])]
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
for key, v in items:
    s.sendall(("set %s 0 0 %d\r\n%s\r\n" % (key, len(v), v)).encode())
    r = s.recv(100)
    assert r == b"STORED\r\n", r
PY
	"$LG" --json --quiet --proto mc-tcp --port "$PORT" --keys 1000 --verify-only >"$OUT"
	rc=$?
	[[ $rc == 3 ]] || fail "exit status $rc, expected 3 (wrong values)"
	check "d['wrong_values'] == 2" "expected exactly 2 wrong values"
	check "d['hits'] == 1000 and d['misses'] == 0" "verify-only did not read every key"
	;;
workload)
	# production key/value sizes: every key read back whole after a preload
	# (a get that asked for another size than its set would miss, a value cut
	# or padded would be wrong), over UDP (etc) and Redis (twitter)
	start_memcached udp "$PORT"
	run_lg --proto mc-udp "${COMMON[@]}" --workload etc --preload --duration 2 --depth 8
	check_clean_run
	check "d['config']['workload'] == 'etc' and 'SIGMETRICS' in d['config']['workload_source']" \
		"workload not echoed with its source"
	kill -TERM "$SRV_PID"; wait "$SRV_PID" 2>/dev/null; SRV_PID=
	start_redis "$PORT"
	run_lg --proto redis "${COMMON[@]}" --workload twitter --preload --duration 2 --depth 16
	check_clean_run
	check "d['config']['workload'] == 'twitter'" "workload not echoed"
	"$LG" --workload etc --key-size 32 --keys 10 --dump-key-histogram 10 >/dev/null 2>&1 &&
		fail "--workload etc with --key-size was accepted"
	;;
*)
	fail "unknown case"
	;;
esac
echo "PASS [$CASE]"
