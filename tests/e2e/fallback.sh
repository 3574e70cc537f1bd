#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: attach on a kernel that refuses some of xdpkv's programs
# (docs/kernels.md).  The refusals are made here with XDPKV_TEST_REFUSE
# (store/loader.c: those programs are loaded as socket filters, whose
# helpers they lack, and the verifier refuses them as an older one would).
#
#   tests/e2e/fallback.sh [LAYOUT]
#
# 1. The TCP responder refused (xdpkv_tcpx_run): attach says, in one line,
#    that it left the responder out and why (the verifier's reason), exits 0;
#    status says the responder is off; a set and a get over TCP are answered
#    (by the verdict or serve, none in XDP); a get over UDP is answered in XDP.
# 2. The TCP verdict refused (xdpkv_tcp): the same, for the verdict (none
#    answered by it).
# 3. The XDP program itself refused: attach exits 3 naming xdpkv, the layout
#    and the verifier's reason, with no MTU hint; nothing stays attached.
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

layout=${1:-hash_map}
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
tb_up "${E2E_PREFIX:-xf$$}"
dev=$TB_SRV_DEV

# attach_refusing NAMES OUT: attach with NAMES refused; its output in OUT, its exit status echoed
attach_refusing() {
	local rc=0
	export XDPKV_TEST_REFUSE=$1
	tb_xdpkv --variant "$layout" attach "$dev" --entries 1024 >"$2" 2>&1 || rc=$?
	unset XDPKV_TEST_REFUSE
	echo "$rc"
}
status_tcp() { # the status --json "tcp" field $1
	tb_xdpkv status "$dev" --json | python3 -c \
		'import json,sys; print(str(json.load(sys.stdin)["tcp"][sys.argv[1]]).lower())' "$1"
}
# a set and a get over TCP (pymemcache) and a get over UDP (the fast path's counter moves)
tcp_roundtrip() {
	tb_cli /usr/bin/python3 -c 'import sys
from pymemcache.client.base import Client
c = Client((sys.argv[1], int(sys.argv[2])), timeout=5, default_noreply=False)
assert c.set("fb-key", b"fb-value"), "set"
v = c.get("fb-key")
assert v == b"fb-value", v' "$TB_SRV_IP4" "$TB_PORT"
}
udp_get_in_xdp() {
	local before
	before=$(tb_counter fast get_hits)
	tb_cli /usr/bin/python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
s.sendto(b"\x00\x01\x00\x00\x00\x01\x00\x00get fb-key\r\n", (sys.argv[1], int(sys.argv[2])))
d = s.recv(2048)
assert b"VALUE fb-key 0 8\r\nfb-value\r\nEND\r\n" in d, d' "$TB_SRV_IP4" "$TB_PORT" || return 1
	(($(tb_counter fast get_hits) > before))
}

# 1 and 2: an optional program refused
for what in "xdpkv_tcpx_run:the TCP responder in the driver hook:xdp_responder:xdp" \
	"xdpkv_tcp:the TCP verdict on serve's connections:fast_path:kernel"; do
	IFS=: read -r prog feature field path <<<"$what"
	out=$TB_TMP/attach.$prog.log
	rc=$(attach_refusing "$prog" "$out")
	check "$prog refused: attach goes on (exit $rc)" test "$rc" = 0
	check "$prog refused: one line says $feature is left out, naming the program" \
		grep -q "attach: left out $feature: this kernel (.*) refuses $prog (" "$out"
	check "$prog refused: ... with the verifier's reason" grep -q "refuses $prog (.*[a-z].*)" "$out"
	check "$prog refused: no MTU hint" bash -c "! grep -q MTU '$out'"
	check "$prog refused: status says $field is off" test "$(status_tcp "$field")" = false
	tb_pin_napi
	tb_serve_tcp_start
	check "$prog refused: a set and a get over TCP are answered" tcp_roundtrip
	check "$prog refused: ... none of them by the program left out ($path)" test "$(status_tcp "$path")" = 0
	check "$prog refused: a get over UDP is answered in XDP" udp_get_in_xdp
	tb_serve_stop
	tb_xdpkv detach "$dev" >/dev/null
done

# 3: the XDP program itself refused
out=$TB_TMP/attach.xdpkv.log
rc=$(attach_refusing xdpkv "$out")
check "xdpkv refused: attach fails with exit 3 ($rc)" test "$rc" = 3
check "xdpkv refused: it names the program, the layout and the verifier's reason" \
	grep -q "refuses the XDP program 'xdpkv' of layout $layout (keys <= 64 B, values <= 1024 B): .*[a-z]" "$out"
check "xdpkv refused: ... and what to try" grep -q "xdpkv --layout $layout verify" "$out"
check "xdpkv refused: no MTU hint" bash -c "! grep -q MTU '$out'"
check "xdpkv refused: no pins are left" test ! -e "/sys/fs/bpf/xdpkv/$dev"
check "xdpkv refused: no XDP program is on $dev" bash -c "! nsenter --net=/run/netns/$TB_SRV_NS ip link show $dev | grep -q xdp"
((fail == 0)) || { echo "--- attach output:"; cat "$TB_TMP"/attach.*.log; }
exit $fail
