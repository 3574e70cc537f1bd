#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: the TCP fast path (common/tcp.bpf.h) on the veth testbed, for
# every layout.
#
#   tests/e2e/tcpfast.sh [LAYOUT...]   (default: hash_map array_fnv lru percpu)
#
# Per layout: attach --no-xdp-tcp (the verdict answers, not XDP: tcpxdp.sh
# tests that); serve --no-tcp-fast-path records the reply bytes of
# the request streams of tcpfastclient.py (single gets, multi-gets, a
# pipeline mixing gets with commands only userspace serves, sent whole, one
# request per write and split at every byte boundary); serve with the fast
# path gives the same bytes, and the kernel answered some of them
# (tcp_fast moved); pymemcache and memccp/memccat against it; segments of
# several requests, answered in the kernel as far as it can (exact counts),
# stats counted once; status shows the share.  With hash_map, then attach --no-tcp-fast-path: the same bytes,
# none from the kernel, status says so.  Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

layouts=("$@")
((${#layouts[@]})) || layouts=(hash_map array_fnv lru percpu)
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
PY=/usr/bin/python3
$PY -c 'import pymemcache' || tb_die "python3-pymemcache is needed (tests/lib/install-deps.sh)"
for t in memccp memccat; do
	command -v $t >/dev/null || tb_die "$t missing: install libmemcached-tools (tests/lib/install-deps.sh)"
done

tb_up "${E2E_PREFIX:-xf$$}"
S4=$TB_SRV_IP4 P=$TB_PORT
client() { tb_cli $PY "$here/tcpfastclient.py" "$@"; }
serve() { tb_serve_tcp_start "$@"; }

for layout in "${layouts[@]}"; do
	echo "== $layout"
	tb_layout_ok "$layout" || continue
	# array_fnv unseeded: these keys do not collide under FNV-1a % 4096
	# (checked); with a random seed two of pymemcache's 20 keys share a
	# slot in ~5 % of runs (birthday bound), the likely cause of one CI
	# failure of "20 get hits" (2026-11-27)
	unseeded=()
	[[ $layout == array_fnv ]] && unseeded=(--fnv-unseeded)
	tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 4096 --value-size 2048 \
		--port "$P" --no-xdp-tcp "${unseeded[@]}" >/dev/null || tb_die "xdpkv attach ($layout) failed"
	serve --no-tcp-fast-path
	check "$layout: reference replies from userspace alone" client record "$S4" "$P" "$TB_TMP/ref.json"
	check "$layout: --no-tcp-fast-path: the kernel answered nothing" test "$(tb_counter fast tcp_fast)" = 0
	tb_serve_stop
	serve
	before=$(tb_counter fast tcp_fast)
	check "$layout: the same bytes with the fast path" client compare "$S4" "$P" "$TB_TMP/ref.json"
	mid=$(tb_counter fast tcp_fast)
	check "$layout: ... and the kernel answered some ($before -> $mid)" test "$mid" -gt "$before"
	check "$layout: ... and userspace the others" test "$(tb_counter slow tcp_slow)" -gt 0
	check "$layout: pymemcache" client clients "$S4" "$P"
	dir=$(mktemp -d "$TB_TMP/mc.XXXXXX")
	head -c 1500 /dev/urandom >"$dir/blob.bin"
	check "$layout: memccp stores a file" tb_cli memccp "--servers=$S4:$P" "$dir/blob.bin"
	tb_cli memccat "--servers=$S4:$P" --file="$dir/got.bin" blob.bin || true
	check "$layout: memccat returns it byte for byte" cmp -s "$dir/blob.bin" "$dir/got.bin"
	after=$(tb_counter fast tcp_fast)
	check "$layout: the clients' gets were answered in the kernel ($mid -> $after)" test "$after" -gt "$mid"
	# segments of several requests (tcpfastclient.py, PIPELINE): the kernel
	# answers what it can of each, exactly; the per-CPU layouts write in
	# userspace only, so there every segment (each holds a write) goes there
	fast0=$after slow0=$(tb_counter slow tcp_slow)
	check "$layout: pipelined segments: replies and stats" client pipeline "$S4" "$P"
	fast1=$(tb_counter fast tcp_fast) slow1=$(tb_counter slow tcp_slow)
	want="6 8" # with the two stats commands around them
	[[ $layout == percpu || $layout == lru_percpu ]] && want="0 14"
	check "$layout: ... the kernel answered $want (fast, slow: $((fast1 - fast0)) $((slow1 - slow0)))" \
		test "$((fast1 - fast0)) $((slow1 - slow0))" = "$want"
	after=$fast1
	st=$(tb_xdpkv status "$TB_SRV_DEV")
	check "$layout: status shows the share" \
		grep -Eq "TCP +in XDP: 0 of [0-9]+ requests \([0-9.]+%\), in the kernel: $after \([0-9.]+%\)" <<<"$st"
	if [[ $layout == hash_map ]]; then
		# the kernel answers a get miss; after `acl del allow` the same
		# connection's next get must not be answered by anyone
		check_aclcut "$layout" tcp_fast client aclcut "$S4" "$P"
		# serve killed with connections open leaves their fast-path slots
		# (tcp_slots: cookie -> slot in tcp_conns and tcp_paid); the next
		# serve clears them
		conns() { bpftool map dump pinned "$TB_PIN_DIR/$1" -j | $PY -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
		tb_cli $PY -c 'import socket,sys,time
ss=[socket.create_connection((sys.argv[1], int(sys.argv[2]))) for _ in range(5)]
[s.sendall(b"get nothing\r\n") for s in ss]
time.sleep(4)' "$S4" "$P" &
		hold=$!
		sleep 1.5
		check "$layout: 5 open connections in tcp_slots" test "$(conns tcp_slots)" -ge 5
		kill -KILL "$TB_SERVE_PID"
		sleep 0.3
		check "$layout: serve killed: their entries left behind" test "$(conns tcp_slots)" -ge 5
		tb_serve_stop || true
		serve
		check "$layout: the next serve clears them" test "$(conns tcp_slots)" = 0
		wait "$hold" || true
	fi
	tb_serve_stop || fail=1
	tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach ($layout) failed"
done

[[ " ${layouts[*]} " == *" hash_map "* ]] || exit $fail # once (the option is the layouts' alike)
echo "== attach --no-tcp-fast-path"
tb_xdpkv attach "$TB_SRV_DEV" --entries 1024 --port "$P" --no-tcp-fast-path --no-xdp-tcp >/dev/null ||
	tb_die "xdpkv attach --no-tcp-fast-path failed"
serve
check "attach --no-tcp-fast-path: the same bytes" client compare "$S4" "$P" "$TB_TMP/ref.json"
check "... none of them answered in the kernel" test "$(tb_counter fast tcp_fast)" = 0
st=$(tb_xdpkv status "$TB_SRV_DEV" --json)
check "... status --json says the fast path is off" \
	$PY -c 'import json,sys; t=json.loads(sys.argv[1])["tcp"]; sys.exit(not (t["fast_path"] is False and t["kernel"] == 0 and t["userspace"] > 0))' "$st"
tb_serve_stop || fail=1
tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach failed"
exit $fail
