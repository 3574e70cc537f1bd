#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: three xdpkv servers behind a real proxy, Debian's nutcracker
# (twemproxy), as docs/deploy.md describes.
#
#   tests/e2e/proxy.sh [LAYOUT]   (default: hash_map)
#
# Three server namespaces, each with its own veth to the client namespace
# (tb_xsrv_up), each attached and served; nutcracker in the client namespace
# with distribution ketama, hash fnv1a_64, the memcache protocol, listening on
# 127.0.0.1.  Through the proxy with pymemcache (proxyclient.py) and
# memccp/memccat: ~1000 keys set, each server's direct gets and `stats`
# show every key on exactly one server and each server with >= 15 % of them;
# every key read back singly and in multi-gets of 100, 300, 500 and all of
# them in one `get`; deletes.  The servers' counters say which path answered
# the proxy (kernel TCP fast path: tcp_fast, userspace: tcp_slow) and whose
# address the servers saw (the proxy's).  Last, one server's allow list loses
# the proxy's subnet: nutcracker gets its connection closed and answers an
# error for that server's keys, the other servers' keys still answer.
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix), PROXY_KEYS (1000).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

layout=${1:-hash_map}
N=${PROXY_KEYS:-1000}
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
PY=/usr/bin/python3
NUTCRACKER=$(command -v nutcracker || echo /usr/sbin/nutcracker)
[[ -x $NUTCRACKER ]] || tb_die "nutcracker missing: install it (tests/lib/install-deps.sh)"
$PY -c 'import pymemcache' || tb_die "python3-pymemcache is needed (tests/lib/install-deps.sh)"
for t in memccp memccat; do
	command -v $t >/dev/null || tb_die "$t missing: install libmemcached-tools (tests/lib/install-deps.sh)"
done

tb_up "${E2E_PREFIX:-xp$$}"
SLOTS=(1 2 3)
servers=()
for s in "${SLOTS[@]}"; do
	tb_xsrv_up "$s"
	tb_xsrv "$s" "$XDPKV" --variant "$layout" attach "${TB_XSRV_DEV[s]}" --entries 8192 >/dev/null ||
		tb_die "xdpkv attach (server $s) failed"
	tb_xsrv_serve_start "$s"
	servers+=("${TB_XSRV_IP4[s]}:$TB_PORT")
done

# ---- nutcracker in the client namespace ----
PROXY=127.0.0.1:22121
conf=$TB_TMP/nutcracker.yml
{
	echo "xdpkv:"
	echo "  listen: $PROXY"
	echo "  hash: fnv1a_64"
	echo "  distribution: ketama"
	echo "  timeout: 10000"
	echo "  server_connections: 1"
	echo "  auto_eject_hosts: false"
	echo "  servers:"
	for s in "${SLOTS[@]}"; do echo "   - ${TB_XSRV_IP4[s]}:$TB_PORT:1 xkv$s"; done
} >"$conf"
tb_cli "$NUTCRACKER" -t -c "$conf" >/dev/null 2>&1 || { cat "$conf" >&2; tb_die "nutcracker -t rejects $conf"; }
# its stats port is bound in the client namespace only
tb_cli_bg "$NUTCRACKER" -c "$conf" -s 22222 -a 127.0.0.1 -o "$TB_TMP/nutcracker.log" -v 5
nut_pid=$TB_LAST_PID
tb_wait_listen "$TB_CLI_NS" 22121 600 "$nut_pid" ||
	{ cat "$TB_TMP/nutcracker.log" >&2; tb_die "nutcracker exited, or did not listen on $PROXY within 10 s"; }
tb_log "nutcracker (pid $nut_pid) on $PROXY: ${servers[*]}"

client() { tb_cli $PY "$here/proxyclient.py" "$@"; }
status_json() { tb_xsrv "$1" "$XDPKV" status "${TB_XSRV_DEV[$1]}" --json; }
counter() { # SLOT PATH NAME
	status_json "$1" | $PY -c 'import json,sys; print(json.load(sys.stdin)["counters"][sys.argv[1]][sys.argv[2]])' "$2" "$3"
}
answered() { # SLOT: "tcp_fast tcp_slow"
	sleep 0.3 # the slow path pushes its counters every 100 ms
	echo "$(counter "$1" fast tcp_fast) $(counter "$1" slow tcp_slow)"
}

declare -A before
for s in "${SLOTS[@]}"; do before[$s]=$(answered "$s"); done

t0=$(date +%s.%N)
check "$N keys set through the proxy, read back singly and in multi-gets of hundreds" client load "$PROXY" "$N"
t1=$(date +%s.%N)

# ---- which path answered the proxied load, whom the servers saw ----
# (before any direct connection to a server: only the proxy's traffic counted)
peer_is_proxy() { # SLOT: the server's TCP peers are the proxy's address on its veth
	local peers
	peers=$(nsenter --net="/run/netns/${TB_XSRV_NS[$1]}" -- ss -Htn state established "sport = :$TB_PORT" |
		awk '{print $4}' | sed -E 's/:[0-9]+$//; s/^\[(::ffff:)?//; s/\]$//' | sort -u)
	echo "server $1 sees TCP peers: ${peers:-none}"
	[[ -n $peers && $peers == "${TB_XSRV_CIP4[$1]}" ]]
}
total_fast=0 total_slow=0
for s in "${SLOTS[@]}"; do
	read -r f0 s0 <<<"${before[$s]}"
	read -r f1 s1 <<<"$(answered "$s")"
	df=$((f1 - f0)) ds=$((s1 - s0))
	total_fast=$((total_fast + df)) total_slow=$((total_slow + ds))
	echo "server $s (${TB_XSRV_IP4[s]}): kernel TCP fast path answered $df requests, userspace $ds"
	check "server $s answered the proxy" test $((df + ds)) -gt 0
	check "server $s: its only client is the proxy (${TB_XSRV_CIP4[s]})" peer_is_proxy "$s"
done
echo "all servers: kernel TCP fast path $total_fast, userspace $total_slow; the proxied load took $(echo "$t1 - $t0" | bc) s"

# ---- where the keys are; memccp/memccat; deletes ----
check "every key on exactly one server, each server >= 15 % (direct gets, stats curr_items)" \
	client spread "$PROXY" "$N" "${servers[@]}"

# memccp/memccat (libmemcached) through the proxy
dir=$(mktemp -d "$TB_TMP/mc.XXXXXX")
for i in 1 2 3 4 5 6; do head -c $((100 * i + 7)) /dev/urandom >"$dir/file$i.bin"; done
check "memccp stores six files through the proxy" tb_cli memccp "--servers=$PROXY" "$dir"/file*.bin
mc_same() {
	local f
	for f in "$dir"/file*.bin; do
		rm -f "$dir/got.bin"
		tb_cli memccat "--servers=$PROXY" --file="$dir/got.bin" "$(basename "$f")" || return 1
		cmp -s "$f" "$dir/got.bin" || return 1
	done
}
check "memccat reads them back through the proxy, byte for byte" mc_same

check "deletes through the proxy: gone through the proxy and on every server" \
	client delete "$PROXY" "$N" "${servers[@]}"

# ---- an allow list without the proxy ----
r=3
tb_xsrv "$r" "$XDPKV" acl "${TB_XSRV_DEV[r]}" del allow connected >/dev/null ||
	tb_die "xdpkv acl del allow connected (server $r) failed"
drops=$(counter "$r" slow drop_acl)
check "server $r without the proxy in its allow list: its keys fail through the proxy, the others' answer" \
	client refused "$PROXY" "$N" "${servers[@]}"
sleep 0.3 # the slow path pushes its counters every 100 ms
check "... server $r refused the proxy's connections (drop_acl $drops -> $(counter "$r" slow drop_acl))" \
	test "$(counter "$r" slow drop_acl)" -gt "$drops"
check "nutcracker is still running" kill -0 "$nut_pid"
grep -m3 -iE "close|reset|eof" "$TB_TMP/nutcracker.log" | sed 's/^/nutcracker.log: /' || true

exit $fail
