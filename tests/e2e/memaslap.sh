#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: memaslap (memcaslap, UDP) against xdpkv over the veth testbed.
#
#   tests/e2e/memaslap.sh LAYOUT MODE VALSIZE
#
# MODE native|skb.  VALSIZE 128: gets fit the frame, the XDP fast path must
# serve most of them.  VALSIZE 1024 (native): a get reply does not fit the
# ~200 bytes of headroom of a veth frame, so the slow path must serve gets.
# Fails on any memaslap packet drop, UDP timeout or verify failure, or TPS 0.
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix), E2E_OPS
# (memaslap operations, default 240000), E2E_ENTRIES (default 65536),
# E2E_PORTS ("LOW HIGH": the client's ephemeral ports; "40000 40015", one
# per connection, makes two sockets on one port all but certain without the
# shim below).
#
# memaslap never overwrites (its --overwrite mode fails its own verification,
# against memcached too): every set after the first window is a new key.  So
# the run is bounded by operations, not time, to keep the keys it creates
# (16 windows of 1k + about 10% of the operations) inside --entries whatever
# the machine's speed; a full hash_map/percpu would rightly answer
# SERVER_ERROR.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"

usage() { echo "usage: $0 LAYOUT native|skb VALSIZE" >&2; exit 2; }
(($# == 3)) || usage
layout=$1 mode=$2 valsize=$3
[[ $mode == native || $mode == skb ]] || usage
[[ $valsize =~ ^[0-9]+$ ]] && ((valsize > 0 && valsize <= 1300)) || usage
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
command -v memcaslap >/dev/null || tb_die "memcaslap not installed (libmemcached-tools)"

prefix=${E2E_PREFIX:-xm$$}
ops=${E2E_OPS:-240000}
entries=${E2E_ENTRIES:-65536}
[[ $ops =~ ^[1-9][0-9]*$ ]] || tb_die "E2E_OPS must be a positive number"
key_size=64
value_size=2048

tb_up "$prefix"

cat >"$TB_TMP/memaslap.cfg" <<EOF
key
16 16 1
value
$valsize $valsize 1
cmd
0 0.1
1 0.9
EOF

tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --mode "$mode" --entries "$entries" \
	--key-size "$key_size" --value-size "$value_size" --port "$TB_PORT" --binary-keys ||
	tb_die "xdpkv attach failed"
tb_pin_napi
tb_serve_start

status_json() { tb_xdpkv status "$TB_SRV_DEV" --json; }
status_json >"$TB_TMP/status.before.json" || tb_die "xdpkv status --json failed"

# 16 connections, each with one request in flight, a window of 1k keys each;
# set at 10%: at most 16k + ops/10 keys (x1.5 for memaslap's set/get
# balancing), which must fit --entries so that misses come from the layout only.
((16 * 1024 + ops * 15 / 100 <= entries)) ||
	((ops >= 10000000)) || # a run meant to be killed (tests/e2e/teardown.sh)
	tb_die "E2E_OPS=$ops can create more keys than --entries $entries holds"
log=$TB_TMP/memaslap.log
# memaslap sets SO_REUSEADDR on its UDP sockets and never binds them: Linux
# may then give two of them one ephemeral port (about one run in 250 with 16
# connections, against memcached too), the socket bound last reads the
# other's replies and memaslap aborts on their request id (assert in
# ms_sort_udp_packet).  The shim (tests/lib/udp_noreuse.c) drops the option
# on UDP sockets, so each gets a port of its own.
noreuse=$(dirname "$(dirname "$XDPKV")")/tests/libxkv_udp_noreuse.so
[[ -f $noreuse ]] || tb_die "$noreuse missing (built with the tests: ninja -C build)"
if [[ -n ${E2E_PORTS:-} ]]; then
	tb_cli sysctl -qw net.ipv4.ip_local_port_range="$E2E_PORTS" || tb_die "cannot set E2E_PORTS=$E2E_PORTS"
fi
rc=0
tb_cli env LD_PRELOAD="$noreuse" memcaslap -s "$TB_SRV_IP4:$TB_PORT" -U -F "$TB_TMP/memaslap.cfg" \
	-T 1 -c 16 -w 1k -x "$ops" --verify=0.1 -b >"$log" 2>&1 || rc=$?
((rc == 0)) || { cat "$log"; tb_die "memcaslap exited with $rc"; }

# the slow path pushes its counters every 100 ms and when it stops
tb_serve_stop || tb_die "xdpkv serve did not stop cleanly: $(cat "$TB_TMP/serve.log")"
status_json >"$TB_TMP/status.after.json" || tb_die "xdpkv status --json failed"

echo "---- memaslap ($layout, $mode, $valsize-byte values) ----"
cat "$log"

# The final summary: the last value printed for each field.
field() {
	local v
	v=$(sed -n "s/^$1: *\([0-9][0-9]*\).*/\1/p" "$log" | tail -n1)
	[[ -n $v ]] || tb_die "memaslap output has no '$1:' line"
	echo "$v"
}
tps=$(sed -n 's/.*TPS: *\([0-9][0-9]*\).*/\1/p' "$log" | tail -n1)
[[ -n $tps ]] || tb_die "memaslap output has no TPS"
drops=$(field packet_drop)
timeouts=$(field udp_timeout)
vfail=$(field verify_failed)
gets=$(field cmd_get)
sets=$(field cmd_set)
misses=$(field get_misses)
# memaslap prints a reply it did not expect as "<conn reply-line"
errors=$(grep -cE '^<[0-9]+ (ERROR|CLIENT_ERROR|SERVER_ERROR)' "$log" || true)

# counters: deltas over the run (the status before/after)
eval "$(python3 "$here/xkvstatus.py" delta "$TB_TMP/status.before.json" "$TB_TMP/status.after.json")"

echo "---- result ----"
printf '%-10s %-6s %5s  TPS %-8s gets %-8s sets %-8s misses %-6s drops %s timeouts %s verify_failed %s\n' \
	"$layout" "$mode" "$valsize" "$tps" "$gets" "$sets" "$misses" "$drops" "$timeouts" "$vfail"
printf 'fast path: requests %s replies %s (%s%% of requests) gets %s hits %s pass_room %s pass_cmd %s pass_busy %s\n' \
	"$fast_requests" "$fast_replies" "$fast_share" "$fast_cmd_get" "$fast_get_hits" \
	"$fast_pass_room" "$fast_pass_cmd" "$fast_pass_busy"
printf 'slow path: requests %s replies %s gets %s hits %s\n' \
	"$slow_requests" "$slow_replies" "$slow_cmd_get" "$slow_get_hits"

# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"
check "TPS > 0 ($tps)" test "$tps" -gt 0
check "no error replies ($errors; first: $(grep -m1 -E '^<[0-9]+ [A-Z_]*ERROR' "$log" || echo none))" \
	test "$errors" -eq 0
check "memaslap got to its gets (cmd_get $gets > 0)" test "$gets" -gt 0
check "every set was stored (fast+slow stores $((fast_stores + slow_stores)) >= sets-16 $((sets - 16)))" \
	test $((fast_stores + slow_stores)) -ge $((sets - 16))
check "no packet drops ($drops)" test "$drops" -eq 0
check "no UDP timeouts ($timeouts)" test "$timeouts" -eq 0
check "no verify failures ($vfail)" test "$vfail" -eq 0
# memaslap counts a command when it sends it: up to one per connection is
# still in flight when the run ends
check "the XDP program saw the traffic (fast.requests $fast_requests >= gets+sets-16 $((gets + sets - 16)))" \
	test "$fast_requests" -ge $((gets + sets - 16))
# a get is counted once, where it is answered: one the XDP program passes on
# is the slow path's alone (as memcached counts it; up to 16 in flight)
counted=$((fast_cmd_get + slow_cmd_get))
check "each get counted once (fast.cmd_get + slow.cmd_get $counted in gets-16..gets $((gets - 16))..$gets)" \
	test "$counted" -le "$gets" -a "$counted" -ge $((gets - 16))
if ((valsize <= 256)); then
	check "fast path replied to > 50% of requests ($fast_share%)" \
		test $((fast_replies * 2)) -gt "$fast_requests"
else
	check "gets did not fit the frame (fast.pass_room $fast_pass_room > 0)" test "$fast_pass_room" -gt 0
	check "the slow path served gets (slow.cmd_get $slow_cmd_get > 0)" test "$slow_cmd_get" -gt 0
	check "the slow path answered every passed get (slow.requests $slow_requests >= pass_room $fast_pass_room)" \
		test "$slow_requests" -ge "$fast_pass_room"
fi
exit $fail
