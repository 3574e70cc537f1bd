#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: TCP answered in the driver hook (common/tcpx_xdp.bpf.h, the
# TC egress translation in common/tcpx_tc.bpf.h) on the veth testbed.
#
#   tests/e2e/tcpxdp.sh [LAYOUT...]   (default: hash_map array_fnv lru percpu set_assoc)
#
# Per layout: the reply bytes of tcpfastclient.py's request streams (single
# gets, multi-gets, pipelines mixing gets with commands only userspace
# serves, sent whole, a request per write, split at every byte) recorded
# with serve alone (attach --no-xdp-tcp --no-tcp-fast-path); attached with
# the responder (the default), the same bytes, and XDP answered some of them
# (tcpx_answered moved) while the server's TCP stack saw fewer segments
# than the client sent; pymemcache, memccp/memccat, memaslap over TCP
# (--verify) against it, 0 errors and XDP answering most requests; status
# (text, JSON) shows the share.  With hash_map: an allow list cut acts on
# XDP's answers too, serve killed and restarted clears the flows, detach
# removes the TC egress program.  Attached with --binary-keys throughout:
# memaslap's keys carry bytes 0x10-0x1f.  Environment: XDPKV (CLI path), E2E_PREFIX.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

layouts=("$@")
((${#layouts[@]})) || layouts=(hash_map array_fnv lru percpu set_assoc)
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
PY=/usr/bin/python3
$PY -c 'import pymemcache' || tb_die "python3-pymemcache is needed (tests/lib/install-deps.sh)"
for t in memccp memccat memcaslap; do
	command -v $t >/dev/null || tb_die "$t missing: install libmemcached-tools (tests/lib/install-deps.sh)"
done

tb_up "${E2E_PREFIX:-xx$$}"
S4=$TB_SRV_IP4 P=$TB_PORT
client() { tb_cli $PY "$here/tcpfastclient.py" "$@"; }
serve() { tb_serve_tcp_start "$@"; }
egress_prog() { tb_srv tc filter show dev "$TB_SRV_DEV" egress 2>/dev/null | grep -c 'name xdpkv_tcpx_egre' || true; }

for layout in "${layouts[@]}"; do
	echo "== $layout"
	tb_layout_ok "$layout" || continue
	unseeded=()
	[[ $layout == array_fnv ]] && unseeded=(--fnv-unseeded)
	tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 32768 --value-size 2048 \
		--port "$P" --binary-keys --no-xdp-tcp --no-tcp-fast-path "${unseeded[@]}" >/dev/null ||
		tb_die "xdpkv attach --no-xdp-tcp ($layout) failed"
	check "$layout: --no-xdp-tcp: no TC egress program" test "$(egress_prog)" = 0
	serve
	check "$layout: reference replies from userspace alone" client record "$S4" "$P" "$TB_TMP/ref.json"
	check "$layout: ... XDP answered nothing" test "$(tb_counter fast tcpx_answered)" = 0
	tb_serve_stop
	tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach ($layout) failed"
	tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 32768 --value-size 2048 \
		--port "$P" --binary-keys "${unseeded[@]}" >/dev/null || tb_die "xdpkv attach ($layout) failed"
	check "$layout: the TC egress program is attached" test "$(egress_prog)" = 1
	serve
	before=$(tb_counter fast tcpx_answered)
	check "$layout: the same bytes with the XDP responder" client compare "$S4" "$P" "$TB_TMP/ref.json"
	mid=$(tb_counter fast tcpx_answered)
	check "$layout: ... and XDP answered some ($before -> $mid)" test "$mid" -gt "$before"
	check "$layout: ... and serve the others" test "$(tb_counter slow tcp_slow)" -gt 0
	check "$layout: ... the sk_skb verdict none" test "$(tb_counter fast tcp_fast)" = 0
	check "$layout: pymemcache" client clients "$S4" "$P"
	dir=$(mktemp -d "$TB_TMP/mc.XXXXXX")
	head -c 1500 /dev/urandom >"$dir/blob.bin"
	check "$layout: memccp stores a file" tb_cli memccp "--servers=$S4:$P" "$dir/blob.bin"
	tb_cli memccat "--servers=$S4:$P" --file="$dir/got.bin" blob.bin || true
	check "$layout: memccat returns it byte for byte" cmp -s "$dir/blob.bin" "$dir/got.bin"
	# memaslap over TCP: 16 connections, a verified 10 % of the gets, 150,000
	# requests (not a time: memaslap makes a new key with every set, and a
	# fast 2-second run set 50,000 keys, past --entries 32768, where hash_map
	# refuses a store: SERVER_ERROR; 15,000 sets stay within it)
	x0=$(tb_counter fast tcpx_answered) u0=$(tb_counter slow tcp_slow)
	si0=$(tb_tcp_segs "$TB_SRV_NS" InSegs) co0=$(tb_tcp_segs "$TB_CLI_NS" OutSegs)
	tb_cli memcaslap -s "$S4:$P" -T 1 -c 16 -x 150000 -X 128 --verify=0.1 >"$TB_TMP/memaslap.log" 2>&1 || true
	x1=$(tb_counter fast tcpx_answered) u1=$(tb_counter slow tcp_slow)
	si1=$(tb_tcp_segs "$TB_SRV_NS" InSegs) co1=$(tb_tcp_segs "$TB_CLI_NS" OutSegs)
	ops=$(grep -oP 'Run time:.*?Ops:\s*\K\d+' "$TB_TMP/memaslap.log" | tail -1 || true)
	check "$layout: memaslap over TCP ran (${ops:-no} ops)" test "${ops:-0}" -gt 1000
	check "$layout: ... no verification failure" \
		grep -Eq '^verify_failed: *0$' "$TB_TMP/memaslap.log"
	check "$layout: ... no error reply" bash -c "! grep -Eq '^<[0-9]+ (ERROR|CLIENT_ERROR|SERVER_ERROR)' '$TB_TMP/memaslap.log'"
	grep -Em3 '^<[0-9]+ (ERROR|CLIENT_ERROR|SERVER_ERROR)' "$TB_TMP/memaslap.log" || true
	dx=$((x1 - x0)) du=$((u1 - u0))
	echo "$layout: memaslap: XDP answered $dx, serve $du; client segments $((co1 - co0)), server TCP saw $((si1 - si0))"
	check "$layout: ... XDP answered at least 80 % ($dx of $((dx + du)))" test $((dx * 5)) -ge $(((dx + du) * 4))
	check "$layout: ... the server's TCP stack saw at most a third of the client's segments" \
		test $(((si1 - si0) * 3)) -le $((co1 - co0))
	st=$(tb_xdpkv status "$TB_SRV_DEV")
	check "$layout: status shows the share" \
		grep -Eq "TCP +in XDP: $x1 of [0-9]+ requests \([0-9.]+%\)" <<<"$st"
	st=$(tb_xdpkv status "$TB_SRV_DEV" --json)
	check "$layout: status --json shows it" $PY -c 'import json,sys; t=json.loads(sys.argv[1])["tcp"]
sys.exit(not (t["xdp_responder"] is True and t["xdp"] == int(sys.argv[2]) and t["xdp_share"] > 0 and "order" in t["xdp_not_answered"]))' "$st" "$x1"
	if [[ $layout == hash_map ]]; then
		# XDP answers a get on an open connection; after `acl del allow` the
		# same connection's next get must be answered by nobody
		check_aclcut "$layout" tcpx_answered client aclcut "$S4" "$P"
		# flows of a killed serve's connections are cleared by the next serve
		flows() { bpftool map dump pinned "$TB_PIN_DIR/tcpx_flows" -j | $PY -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
		# (the client says when its gets are answered: under a slow
		# emulator its start alone can take seconds)
		rm -f "$TB_TMP/held"
		tb_cli $PY -c 'import socket,sys,time
ss=[socket.create_connection((sys.argv[1], int(sys.argv[2]))) for _ in range(5)]
time.sleep(0.5)
for s in ss:
    for _ in range(3):
        s.sendall(b"get nothing\r\n"); s.recv(100)
open(sys.argv[3], "w").close()
time.sleep(12)' "$S4" "$P" "$TB_TMP/held" &
		hold=$!
		held() { local i; for i in $(seq 100); do [[ -e $TB_TMP/held ]] && return 0; sleep 0.1; done; return 1; }
		check "$layout: 5 connections answered and held open" held
		check "$layout: 5 open connections have flows" test "$(flows)" -ge 5
		kill -KILL "$TB_SERVE_PID"
		sleep 0.3
		tb_serve_stop || true
		serve
		cleared() { local i; for i in $(seq 30); do [[ $(flows) == 0 ]] && return 0; sleep 0.1; done; return 1; }
		check "$layout: the next serve clears them" cleared
		pkill -f "$TB_TMP/held" || true
		wait "$hold" || true
	fi
	tb_serve_stop || fail=1
	tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach ($layout) failed"
	check "$layout: detach removes the TC egress program" test "$(egress_prog)" = 0
done
exit $fail
