#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: the TCP responder in the driver hook takes only what the
# kernel's TCP would take, keeps no state for outsiders, and serves the
# paths real clients take (docs/security.md, "The TCP responder against
# the kernel's TCP").  Each case runs twice, against the same attach with
# the responder (the default) and with --no-xdp-tcp (the kernel alone),
# and must end the same way; tcpstrict.py crafts the segments on the client
# end (AF_PACKET), from the numbers the live connection shows:
#   - spoofed RST (far, in the window) and SYN: the connection lives;
#   - handshake-less segments from swept ports and to another address:
#     no flow in tcpx_flows, a new connection still answered in XDP;
#   - "set" injected with a wrong TCP or IP checksum, a stale timestamp
#     (PAWS), a sequence number outside the window: not stored; with
#     everything right (the control): stored;
#   - 1- and 0-byte keepalive probes at SND.NXT-1: acknowledged;
#   - noreply sets and deletes (raw, and pymemcache's defaults): applied
#     once, read back, a share answered in XDP;
#   - a client at MTU 1300 reading replies across its MSS, each after a
#     command serve answers (the reply rides the kernel's ACK): no stall;
#   - serve --idle-timeout 2 and a get every 0.3 s: the connection stays;
#   - flows die with their connections: 8 clients that go silent and never
#     close, serve closes them (--idle-timeout), no flow left a few seconds
#     later (serve's sweep; TIME-WAIT's linger shortened to 0.5 s here by
#     XDPKV_TEST_FLOW_LINGER_MS).
#
#   tests/e2e/tcpstrict.sh [LAYOUT]   (default hash_map)
# Environment: XDPKV (CLI path), E2E_PREFIX.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

layout=${1:-hash_map}
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
PY=/usr/bin/python3
tb_up "${E2E_PREFIX:-xs$$}"
tb_need_layout "$layout"
S4=$TB_SRV_IP4 P=$TB_PORT
strict() { tb_cli $PY "$here/tcpstrict.py" "$@"; }
flows() { bpftool map dump pinned "$TB_PIN_DIR/tcpx_flows" -j 2>/dev/null |
	$PY -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
stored() { tb_xdpkv get "$TB_SRV_DEV" "$1" >/dev/null 2>&1; }
absent() { ! stored "$1"; }

for mode in xdp kernel; do
	extra=()
	[[ $mode == kernel ]] && extra=(--no-xdp-tcp)
	echo "== $layout, $mode"
	tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 4096 --value-size 2048 --port "$P" \
		"${extra[@]}" >/dev/null || tb_die "xdpkv attach ($mode) failed"
	tb_serve_tcp_start --idle-timeout 2
	a0=$(tb_counter fast tcpx_answered)
	check "$mode: spoofed RST and SYN: the connection lives" strict spoof "$S4" "$P" "$TB_CLI_DEV"
	check "$mode: handshake-less segments" strict flood "$S4" "$P" "$TB_CLI_DEV" 2000
	if [[ $mode == xdp ]]; then
		a1=$(tb_counter fast tcpx_answered)
		check "$mode: ... XDP answered the live connection's gets ($a0 -> $a1)" test "$a1" -gt "$a0"
		n=$(flows)
		check "$mode: ... no flow for them ($n in tcpx_flows, at most the live one's)" test "$n" -le 2
	fi
	for kind in badsum badip paws window good; do
		strict inject "$S4" "$P" "$TB_CLI_DEV" "$kind" "inj-$kind-$mode" >/dev/null ||
			{ check "$mode: inject $kind ran" false; continue; }
		if [[ $kind == good ]]; then
			check "$mode: a set injected with everything right is stored (the control)" stored "inj-$kind-$mode"
		else
			check "$mode: a set injected with $kind is not stored" absent "inj-$kind-$mode"
		fi
	done
	check "$mode: keepalive probes" strict keepalive "$S4" "$P" "$TB_CLI_DEV"
	n0=$(tb_counter fast tcpx_answered)
	check "$mode: noreply writes" strict noreply "$S4" "$P" 60
	if [[ $mode == xdp ]]; then
		n1=$(tb_counter fast tcpx_answered)
		check "$mode: ... XDP answered a share of them ($((n1 - n0)) of 210)" test $((n1 - n0)) -ge 40
	fi
	check "$mode: --idle-timeout 2 counts the gets" strict idle "$S4" "$P" 4
	tb_serve_stop
	if [[ $mode == xdp ]]; then
		XDPKV_TEST_FLOW_LINGER_MS=500 tb_serve_tcp_start --idle-timeout 2
		strict hold "$S4" "$P" 8 7 >"$TB_TMP/hold.out" &
		hpid=$!
		for _ in $(seq 200); do grep -q ready "$TB_TMP/hold.out" 2>/dev/null && break; sleep 0.1; done
		n=$(flows)
		check "$mode: 8 silent connections have flows ($n)" test "$n" -ge 8
		drained() { local i; for i in $(seq 50); do [[ $(flows) == 0 ]] && return 0; sleep 0.1; done; return 1; }
		sleep 2.5
		check "$mode: ... serve closed them for --idle-timeout; their flows gone while the clients hold on" drained
		wait "$hpid" || true
		tb_serve_stop
	fi
	ip -n "$TB_CLI_NS" link set dev "$TB_CLI_DEV" mtu 1300
	tb_serve_tcp_start
	m0=$(tb_counter fast tcpx_on_ack)
	check "$mode: a client at MTU 1300" strict mtu "$S4" "$P" 80
	if [[ $mode == xdp ]]; then
		m1=$(tb_counter fast tcpx_on_ack)
		check "$mode: ... replies rode the kernel's ACK ($m0 -> $m1)" test "$m1" -gt "$m0"
	fi
	ip -n "$TB_CLI_NS" link set dev "$TB_CLI_DEV" mtu 1500
	tb_serve_stop
	tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach ($mode) failed"
done
exit $fail
