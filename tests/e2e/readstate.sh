#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: what memcached keeps of an item's reads (mg h and l, me's la
# and fetch), stats detail's per-prefix counts and stats sizes' histogram
# (sizes_enable, sizes_disable), against memcached 1.6.18
# itself: readstate.py sends both the same requests at the same moments,
# over TCP and over UDP, where xdpkv's XDP program answers the gets and must
# mark the items as serve does (and, while stats detail is on, hand every
# request to serve, which counts it).
#
#   tests/e2e/readstate.sh [LAYOUT...]   (default: hash_map lru set_assoc)
#
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

layouts=("$@")
((${#layouts[@]})) || layouts=(hash_map lru set_assoc)
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
command -v memcached >/dev/null || tb_die "memcached missing: run tests/lib/install-deps.sh"

tb_up "${E2E_PREFIX:-xkvrs$$}"
S4=$TB_SRV_IP4 P=$TB_PORT
MCP=$((P + 100))
tb_srv_bg memcached -u root -U "$MCP" -p "$MCP" -l "$S4" -m 64 -t 1
tb_wait_listen "$TB_SRV_NS" "$MCP" 300 || tb_die "memcached did not listen"
for layout in "${layouts[@]}"; do
	echo "== $layout"
	tb_layout_ok "$layout" || continue
	tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 4096 --port "$P" >/dev/null ||
		tb_die "xdpkv attach ($layout) failed"
	tb_serve_tcp_start
	check "$layout: the reads' state and stats detail as memcached's" \
		tb_cli /usr/bin/python3 "$here/readstate.py" "$S4" "$MCP" "$P"
	tb_serve_stop || fail=1
	tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach ($layout) failed"
done
exit $fail
