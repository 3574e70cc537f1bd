#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fault test of TCP answered in XDP, for longer (tests/e2e/tcpfault.sh):
# verified mixed traffic over many connections while a BPF program on the
# client's veth drops and duplicates a share of the TCP segments both ways.
#
#   bench/tcpfault.sh [--layouts hash_map,lru] [--duration 600] [--conns 32]
#                     [--clamped 2] [--slow 2] [--pipelined 8] [--drop 10] [--dup 10] [--json FILE]
#                     [--build-dir DIR]
#
# --clamped: connections more with an MSS of 1260; --slow: slow readers more;
# --pipelined: connections more sending batches of requests (tests/e2e/tcpfault.py).  --drop/--dup are per mille of the segments, each way.  One JSON line per
# layout (ops, wrong replies, stalls, resets, the slowest reply, the faults
# injected, requests answered in XDP and replies sent again); exits 1 when a
# run had a wrong reply, a stall or a reset.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
layouts=hash_map,lru duration=600 conns=32 clamped=2 slow=2 pipelined=8 drop=10 dup=10 json='' build=$here/../build
usage() { awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; }
while (($#)); do
	case $1 in
	--layouts) layouts=$2; shift 2 ;;
	--duration) duration=$2; shift 2 ;;
	--conns) conns=$2; shift 2 ;;
	--clamped) clamped=$2; shift 2 ;;
	--slow) slow=$2; shift 2 ;;
	--pipelined) pipelined=$2; shift 2 ;;
	--drop) drop=$2; shift 2 ;;
	--dup) dup=$2; shift 2 ;;
	--json) json=$2; shift 2 ;;
	--build-dir) build=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "bench/tcpfault.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
done
export XDPKV=${XDPKV:-$build/cli/xdpkv}
[[ -x $XDPKV ]] || { echo "bench/tcpfault.sh: build first ($XDPKV)" >&2; exit 2; }
echo "# $(date -u '+%F %T') UTC, $(nproc) CPUs, $(uname -r); ${duration}s per layout, $conns connections (+$clamped clamped, +$slow slow readers, +$pipelined pipelining), drop ${drop}, dup ${dup} per mille each way" >&2
bad=0
IFS=, read -ra LS <<<"$layouts"
for l in "${LS[@]}"; do
	out=$(E2E_PREFIX=bf$$ "$here/../tests/e2e/tcpfault.sh" --layout "$l" --duration "$duration" \
		--conns "$conns" --clamped "$clamped" --slow "$slow" --pipelined "$pipelined" --drop "$drop" --dup "$dup" 2>&1) || bad=1
	line=$(grep -m1 '^{' <<<"$out" || echo "{\"layout\": \"$l\", \"ok\": false}")
	echo "$line"
	[[ -z $json ]] || echo "$line" >>"$json"
	grep -E '^(FAIL|conn )' <<<"$out" >&2 || true
done
exit $bad
