#!/bin/bash
# SPDX-License-Identifier: MIT
# Where (b)'s latency goes: the bare reflector (the testbed's floor), xdpkv
# hash_map and memcached-udp at one offered rate, with the default (epoll) and
# the busy-polling (--spin) client, REPEAT runs each, on a testbed of its own
# with xdpkv compare's placement (both veth ends' NAPI threaded: the server's on
# the server CPU, the client's on the client CPU).  Prints one line per run and
# which CPU each NAPI kthread and memcached thread last ran on, and the NET_RX
# softirqs per CPU (threaded NAPI: they should not grow).
#
#   sudo bench/compare/latency-floor.sh [--build-dir build] [--rate 20000]
#        [--duration 1] [--repeat 3] [--prefix xlf]
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$repo/build rate=20000 dur=1 repeat=3 prefix=xlf$$
while (($#)); do
	case $1 in
	--build-dir) build=$(cd "$2" && pwd); shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--duration) dur=$2; shift 2 ;;
	--repeat) repeat=$2; shift 2 ;;
	--prefix) prefix=$2; shift 2 ;;
	*) echo "usage: $0 [--build-dir B] [--rate R] [--duration S] [--repeat N] [--prefix P]" >&2; exit 2 ;;
	esac
done
export XDPKV=$build/cli/xdpkv
lg=$build/bench/loadgen/xkv-loadgen
refl=$build/bench/reflector/reflector.bpf.o
for f in "$XDPKV" "$lg" "$refl"; do [[ -e $f ]] || { echo "$f is not built" >&2; exit 1; }; done
# shellcheck source=../../tests/lib/testbed.sh
. "$repo/tests/lib/testbed.sh"
tb_up "$prefix" >&2 || exit 1
tb_pin_napi_spread "$TB_CLI_NS" "$TB_CLI_DEV" "$TB_CLIENT_CPU"

run() { # NAME ARGS...: one loadgen run, one line
	local name=$1; shift
	tb_cli "$lg" --server "$TB_SRV_IP4" --port "$TB_PORT" --threads 1 --cpus "$TB_CLIENT_CPU" \
		--keys 10000 --duration "$dur" --warmup 0.2 --json --quiet --rate "$rate" "$@" |
		tail -1 | python3 -c 'import json, sys
j = json.load(sys.stdin); l = j["latency_us"]
print("%-14s %-6s p50 %7.1f us  p99 %8.1f us  %6.0f ops/s  timeouts %d" % (sys.argv[1], sys.argv[2],
      l["p50"], l["p99"], j["throughput_ops"], j["timeouts"]))' "$name" "${mode:-epoll}"
}
modes() { # NAME ARGS...
	local name=$1 i; shift
	for mode in "" spin; do
		for ((i = 0; i < repeat; i++)); do run "$name" "$@" ${mode:+--$mode}; done
	done
	mode=
}
where() {
	awk '/NET_RX/ {printf "NET_RX softirqs: cpu0 %s cpu1 %s\n", $2, $3}' /proc/softirqs
	local p
	for p in $(pgrep "^napi/$prefix"); do
		echo "  $(cat "/proc/$p/comm") last ran on CPU $(awk '{print $39}' "/proc/$p/stat")"
	done
}

ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv obj "$refl" sec xdp
tb_pin_napi
modes reflector --echo
where
ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdp off

tb_xdpkv --variant hash_map attach "$TB_SRV_DEV" --mode native --entries 20000 --key-size 16 \
	--value-size 128 --port "$TB_PORT" >/dev/null
tb_pin_napi
tb_serve_start
tb_cli "$lg" --server "$TB_SRV_IP4" --port "$TB_PORT" --keys 10000 --preload --duration 0.1 --json --quiet >/dev/null
modes hash_map
where
tb_serve_stop
tb_xdpkv detach "$TB_SRV_DEV" >/dev/null

ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv obj "$(tb_xdp_pass_obj)" sec xdp
tb_pin_napi
tb_srv_bg memcached -U "$TB_PORT" -p "$TB_PORT" -l "$TB_SRV_IP4" -t 1 -m 64 -c 4096 -u root
mc=$TB_LAST_PID
tb_wait_listen "$TB_SRV_NS" "$TB_PORT" 100 "$mc"
tb_cli "$lg" --server "$TB_SRV_IP4" --port "$TB_PORT" --keys 10000 --preload --duration 0.1 --json --quiet >/dev/null
modes memcached-udp
where
for t in /proc/"$mc"/task/*; do
	echo "  memcached thread $(cat "$t/comm") last ran on CPU $(awk '{print $39}' "$t/stat")"
done
