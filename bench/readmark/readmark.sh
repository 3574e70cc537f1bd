#!/bin/bash
# SPDX-License-Identifier: MIT
# What marking an item's reads (mg h/l, me's la and fetch: docs/protocol.md)
# costs serve, per layout: readmark.py's three passes of
# pipelined mg over fresh items (first read: a write, second: a write, third:
# none), on the veth testbed, ROUNDS times.  One JSON line per pass and round.
#
#   bench/readmark/readmark.sh [--rounds N] [--items N] [--out FILE] [LAYOUT...]
#
# Defaults: 3 rounds, 20000 items, hash_map lru set_assoc array_fnv;
# results/readmark-<date>.jsonl.  The XDP side's cost: the microbenchmark's
# get_hit (bench/microbench), before and after (docs/layouts-measured.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rounds=3 items=20000 out=$root/results/readmark-$(date +%Y%m%d-%H%M%S).jsonl
while (($#)); do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--items) items=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h|--help) sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "bench/readmark/readmark.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
(($#)) || set -- hash_map lru set_assoc array_fnv
XDPKV=${XDPKV:-$root/build/cli/xdpkv}
# shellcheck source=../../tests/lib/testbed.sh
. "$root/tests/lib/testbed.sh"
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
mkdir -p "$(dirname "$out")"
tb_up "${E2E_PREFIX:-xkvrm$$}"
for ((r = 1; r <= rounds; r++)); do
	for layout in "$@"; do
		tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries $((items * 2)) --port "$TB_PORT" \
			>/dev/null || tb_die "attach $layout failed"
		tb_serve_tcp_start
		tb_cli /usr/bin/python3 "$here/readmark.py" "$TB_SRV_IP4" "$TB_PORT" "$layout" "$items" |
			python3 -c 'import json,sys
for l in sys.stdin:
    d = json.loads(l); d["round"] = int(sys.argv[1]); print(json.dumps(d))' "$r" | tee -a "$out"
		tb_serve_stop
		tb_xdpkv detach "$TB_SRV_DEV" >/dev/null
	done
done
echo "bench/readmark/readmark.sh: $out" >&2
