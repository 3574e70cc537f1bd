#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Values above --value-size (the big map; docs/protocol.md, "Large values"):
# TCP GETs of one size against xdpkv serve and memcached, server CPU per
# request, same client, same keys, same run.
#
#   bench/bigvals/bigvals.sh [--rounds 3] [--duration 3] [--sizes 4000,10000,100000,500000]
#                            [--keys 32] [--build-dir DIR]
#
# One veth test bed (tests/lib/testbed.sh), the server end's NAPI thread and
# the servers on CPU 1, the client (bench/bigvals/bigclient.py: one connection, 4
# requests in flight, every value checked before timing and while timed) on
# CPU 0.  Servers per size: memcached 1.6 (-m 1024, one thread, on the next
# port), xdpkv hash_map (serve --threads 1) with --value-size 1024 (every
# size here is a big value: chunks), and, migrated live to --value-size
# 16384, where the size fits (inline; the same slow path answers).
# Server CPU = CPU 1's busy time (/proc/stat) over the timed run.  Rounds
# alternate the servers' order.  Prints one line per run and, with --json
# FILE, writes every run there.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rounds=3 duration=3 sizes=4000,10000,100000,500000 keys=32 build=$here/../../build json=
while (($#)); do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--duration) duration=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	--keys) keys=$2; shift 2 ;;
	--build-dir) build=$2; shift 2 ;;
	--json) json=$2; shift 2 ;;
	-h | --help) sed -n '3,18p' "$0"; exit 0 ;;
	*) echo "bench/bigvals/bigvals.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
XDPKV=$build/cli/xdpkv
[[ -x $XDPKV ]] || { echo "bench/bigvals/bigvals.sh: build first ($XDPKV)" >&2; exit 2; }
command -v memcached >/dev/null || { echo "bench/bigvals/bigvals.sh: memcached is needed" >&2; exit 2; }
# shellcheck source=../../tests/lib/testbed.sh
. "$here/../../tests/lib/testbed.sh"
tb_up "${BIGVALS_PREFIX:-xbv$$}"
# xdpkv attached throughout (the XDP program sees every frame, memcached's
# too: one receive path for both), NAPI pinned once it exists
vs=1024
tb_xdpkv attach "$TB_SRV_DEV" --entries 1024 --value-size $vs --big-memory 256 --port "$TB_PORT" >/dev/null
tb_pin_napi
tb_serve_tcp_start --threads 1
MP=$((TB_PORT + 1))
tb_srv_bg memcached -U 0 -p "$MP" -l "$TB_SRV_IP4" -m 1024 -t 1 -u nobody
# memcached is one of the testbed's processes: tb_down (armed by tb_up on
# EXIT, INT, TERM) stops it with serve and removes namespaces and pins
results=$TB_TMP/runs.jsonl
: >"$results"

busy1() { awk '$1 == "cpu1" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
measure() { # SERVER PORT SIZE: one timed run
	local b0 b1 out
	b0=$(busy1)
	out=$(tb_cli python3 "$here/bigclient.py" "$TB_SRV_IP4" "$2" "$3" "$keys" "$duration")
	b1=$(busy1)
	python3 - "$1" "$out" "$((b1 - b0))" "$(getconf CLK_TCK)" "$results" <<'PY'
import json, sys
server, out, busy, hz, path = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
n, secs = out["ops"], out["duration_s"]
if not n:
    sys.exit(f"bench/bigvals/bigvals.sh: no request served: {out}")
row = dict(out, server=server, req_per_s=n / secs, server_us_per_req=busy / hz / n * 1e6)
print(f"{server:22s} {out['size']:8d} B  {row['req_per_s'] / 1000:7.2f} kreq/s  "
      f"{row['req_per_s'] * out['size'] / 1e6:8.1f} MB/s  server {row['server_us_per_req']:7.1f} us/req")
open(path, "a").write(json.dumps(row) + "\n")
PY
}
value_size() { # V: migrate the store (serve keeps running) to --value-size V
	[[ $vs == "$1" ]] && return 0
	tb_xdpkv migrate "$TB_SRV_DEV" --value-size "$1" >/dev/null
	vs=$1
}
echo "# $(date -u '+%F %T') UTC, $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); $keys keys, ${duration}s per run"
# Memory: the kernel's 4 KiB allocations (memcg-charged: kmalloc-cg-4k in
# /proc/slabinfo) before and after 40 values of 500000 bytes (40 x 135
# chunks) are stored under new keys, with --value-size 1024: first, on the
# fresh map (freed elements are cached and reused by the kernel's allocator,
# so after the timed runs' overwrites the count would say less).
objs() { awk '$1 == "kmalloc-cg-4k" { print $2 } ' /proc/slabinfo; }
o0=$(objs)
tb_cli python3 "$here/bigclient.py" "$TB_SRV_IP4" "$TB_PORT" 500000 40 0 4 mem >/dev/null
o1=$(objs)
chunks=$((40 * ((500000 + 3711) / 3712)))
python3 - "$o0" "$o1" "$chunks" "$results" <<'PY'
import json, sys
o0, o1, chunks, path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
row = {"server": "memory", "chunks": chunks, "kmalloc_cg_4k_objects": o1 - o0,
       "bytes_per_chunk": (o1 - o0) * 4096 / chunks, "value_bytes": 40 * 500000}
print(f"memory: {chunks} chunks stored, {o1 - o0} more 4 KiB kernel objects "
      f"({row['bytes_per_chunk']:.0f} B per chunk; {(o1 - o0) * 4096 / row['value_bytes']:.3f} B per value byte)")
open(path, "a").write(json.dumps(row) + "\n")
PY
IFS=, read -ra szs <<<"$sizes"
for ((r = 1; r <= rounds; r++)); do
	order=(m b i)
	((r % 2)) || order=(i b m)
	for o in "${order[@]}"; do
		for sz in "${szs[@]}"; do
			case $o in
			m) measure memcached-tcp "$MP" "$sz" ;;
			b) value_size 1024; measure xdpkv-big "$TB_PORT" "$sz" ;;
			i) if ((sz <= 16384)); then value_size 16384; measure xdpkv-inline "$TB_PORT" "$sz"; fi ;;
			esac
		done
	done
done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
[[ -z $json ]] || cp "$results" "$json"
