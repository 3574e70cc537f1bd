#!/bin/bash
# SPDX-License-Identifier: MIT
# Snapshot and restore throughput (docs/results.md, "Snapshots").
#
#   bench/snapshot/snapshot.sh [ITEMS] [DATA] [VALUE_BYTES]     defaults: 1000000 gen 1024
#
# A hash_map of ITEMS entries (16-byte keys, VALUE_BYTES-byte values) on a
# testbed veth, loaded with DATA: "gen" (xdpkv load --generate: '<key>/0/'
# repeated, very compressible) or "rand" (random base64 text: 6 bits per
# byte).  Then per codec and thread count: snapshot (best of SNAP_RUNS, each
# run's seconds kept for the spread, the store serving no traffic), and
# restore into a freshly attached empty hash_map.  Snapshot and restore run on
# every CPU (the threads need them; the testbed pins its other commands to one).
# One JSON line per run on stdout (the commands' --json, plus what was run, the
# CPUs and the load average).  Needs root.
# Environment: SNAP_CODECS (default "none lz4 zstd:1 zstd"), SNAP_THREADS
# (default "1 2"), SNAP_RUNS (default 2), SNAP_DIR (default
# /var/tmp/xdpkv-snapbench).  The store and the files must fit: it checks
# MemAvailable and the free space of SNAP_DIR first (2.5 M x 1 KB needs about
# 3 GB of memory and, with codec none, 2.7 GB per file).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../../tests/lib/testbed.sh"
n=${1:-1000000} data=${2:-gen} vlen=${3:-1024}
codecs=${SNAP_CODECS:-none lz4 zstd:1 zstd} threads=${SNAP_THREADS:-1 2} runs=${SNAP_RUNS:-2}
dir=${SNAP_DIR:-/var/tmp/xdpkv-snapbench}
mkdir -p "$dir"
# the map: entry header 40 B + value rounded to 8 + key 16 + the kernel's ~50 B per element
need_mb=$(( n * (40 + (vlen + 7) / 8 * 8 + 16 + 50) / 1000000 ))
file_mb=$(( n * (24 + 8 + 16 + vlen) / 1000000 ))
avail_mb=$(( $(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo) / 1024 ))
disk_mb=$(( $(df -Pk "$dir" | awk 'NR == 2 { print $4 }') / 1024 ))
((need_mb * 2 < avail_mb)) || tb_die "a store of $n x $vlen B needs ~$need_mb MB; only $avail_mb MB available"
nfiles=$(wc -w <<<"$codecs")
((file_mb * nfiles < disk_mb)) || tb_die "the snapshots need up to $((file_mb * nfiles)) MB in $dir; $disk_mb MB free"
tb_up "xsnb$$"
# after tb_up, whose traps it extends: the snapshots (GBs) go too
trap 'rm -rf "$dir"; tb_down' EXIT
trap 'rm -rf "$dir"; tb_down; trap - INT; kill -INT $$' INT
trap 'rm -rf "$dir"; tb_down; trap - TERM; kill -TERM $$' TERM
att() {
	tb_xdpkv attach "$TB_SRV_DEV" --entries "$n" --key-size 16 --value-size "$vlen" >/dev/null ||
		tb_die "attach failed"
}
att
if [[ $data == gen ]]; then
	tb_xdpkv load "$TB_SRV_DEV" --generate "$n" --key-size 16 --value-size "$vlen" >&2
else
	python3 - "$n" "$vlen" >"$dir/items.txt" <<'PY'
import base64, os, sys
n, vlen = int(sys.argv[1]), int(sys.argv[2])
out = sys.stdout
for i in range(n):
    out.write("key:%012d %s\n" % (i, base64.b64encode(os.urandom(vlen * 3 // 4 + 3)).decode()[:vlen]))
PY
	tb_xdpkv load "$TB_SRV_DEV" "$dir/items.txt" >&2
	rm -f "$dir/items.txt"
fi
for codec in $codecs; do
	for t in $threads; do
		f=$dir/s-$codec-$t.snap
		best= all=
		for ((r = 1; r <= runs; r++)); do
			out=$(tb_xdpkv_allcpus snapshot "$TB_SRV_DEV" "$f" --compress "$codec" --threads "$t" --json)
			s=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["seconds"])' "$out")
			all=${all:+$all,}$s
			if [[ -z $best ]] || python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))' "$s" "$best"; then
				best=$s bestout=$out
			fi
		done
		echo "{\"op\":\"snapshot\",\"data\":\"$data\",\"cpus\":$(nproc),\"loadavg\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"value_bytes\":$vlen,\"cmd\":\"xdpkv snapshot IFACE FILE --compress $codec --threads $t --json\",\"runs_s\":[$all],\"result\":$bestout}"
	done
done
tb_xdpkv detach "$TB_SRV_DEV" >/dev/null
last_t=${threads##* }
for codec in $codecs; do
	for t in $threads; do
		att
		out=$(tb_xdpkv_allcpus restore "$TB_SRV_DEV" "$dir/s-$codec-$last_t.snap" --threads "$t" --json)
		echo "{\"op\":\"restore\",\"data\":\"$data\",\"cpus\":$(nproc),\"loadavg\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"value_bytes\":$vlen,\"codec\":\"$codec\",\"cmd\":\"xdpkv restore IFACE FILE --threads $t --json\",\"result\":$out}"
		tb_xdpkv detach "$TB_SRV_DEV" >/dev/null
	done
done
