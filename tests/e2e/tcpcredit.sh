#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: the TCP fast path's credit ceiling (common/tcp.bpf.h,
# TCP_CREDIT_MAX, 2^30).  One connection sends 1.25 GB of sets of 1390-byte
# values one at a time (tcpfastclient.py credit), each 1401 bytes longer
# than its STORED: the kernel answers them until its credit reaches the
# ceiling, then userspace does, and gets on the connection are answered
# after.  Without a ceiling all of them go through the kernel, and past 2^31
# bytes (~1.5 million of these sets) the socket stops calling the verdict:
# the connection stalls.  ~40 s.
#
#   tests/e2e/tcpcredit.sh [LAYOUT]   (default hash_map)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

layout=${1:-hash_map}
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
PY=/usr/bin/python3
tb_up "${E2E_PREFIX:-xc$$}"
S4=$TB_SRV_IP4 P=$TB_PORT

tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 4096 --value-size 2048 --port "$P" --no-xdp-tcp >/dev/null ||
	tb_die "xdpkv attach ($layout) failed"
tb_serve_tcp_start
k0=$(tb_counter fast tcp_fast) u0=$(tb_counter slow tcp_slow)
check "$layout: 1.25 GB of sets on one connection, all answered" \
	tb_cli $PY "$here/tcpfastclient.py" credit "$S4" "$P" 1.25e9
k1=$(tb_counter fast tcp_fast) u1=$(tb_counter slow tcp_slow)
k=$((k1 - k0))
check "$layout: the kernel stopped at its credit ceiling ($k sets: $((k * 1401)) bytes of credit)" \
	test $((k * 1401)) -le $((1 << 30)) -a $((k * 1401)) -gt $(((1 << 30) - 4096))
check "$layout: userspace answered the rest ($((u1 - u0)))" test $((u1 - u0)) -gt 0
tb_serve_stop || fail=1
tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach failed"
exit $fail
