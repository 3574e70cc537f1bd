#!/bin/bash
# SPDX-License-Identifier: MIT
# Snapshot and restore throughput (docs/results.md, "Snapshots").
#
#   bench/snapshot.sh [ITEMS] [DATA]     defaults: 1000000 gen
#
# A hash_map of ITEMS entries (16-byte keys, 1024-byte values) on a testbed
# veth, loaded with DATA: "gen" (xdpkv load --generate: '<key>/0/' repeated,
# very compressible) or "rand" (random base64 text: 6 bits per byte).  Then
# per codec and thread count: snapshot (best of 2, the store serving no
# traffic), and restore into a freshly attached empty hash_map.  One JSON line
# per run on stdout (the commands' --json, plus what was run).  Needs root.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../tests/lib/testbed.sh"
n=${1:-1000000} data=${2:-gen}
dir=${SNAP_DIR:-/var/tmp/xdpkv-snapbench}
mkdir -p "$dir"
tb_up "xsnb$$"
# after tb_up, whose traps it extends: the snapshots (GBs) go too
trap 'rm -rf "$dir"; tb_down' EXIT
trap 'rm -rf "$dir"; tb_down; trap - INT; kill -INT $$' INT
trap 'rm -rf "$dir"; tb_down; trap - TERM; kill -TERM $$' TERM
att() {
	tb_xdpkv attach "$TB_SRV_DEV" --entries "$n" --key-size 16 --value-size 1024 >/dev/null ||
		tb_die "attach failed"
}
att
if [[ $data == gen ]]; then
	tb_xdpkv load "$TB_SRV_DEV" --generate "$n" --key-size 16 --value-size 1024 >&2
else
	python3 - "$n" >"$dir/items.txt" <<'PY'
import base64, os, sys
n = int(sys.argv[1])
out = sys.stdout
for i in range(n):
    out.write("key:%012d %s\n" % (i, base64.b64encode(os.urandom(768)).decode()))
PY
	tb_xdpkv load "$TB_SRV_DEV" "$dir/items.txt" >&2
	rm -f "$dir/items.txt"
fi
for codec in none lz4 zstd:1 zstd; do
	for t in 1 2; do
		f=$dir/s-$codec-$t.snap
		best=
		for r in 1 2; do
			out=$(tb_xdpkv snapshot "$TB_SRV_DEV" "$f" --compress "$codec" --threads "$t" --json)
			s=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["seconds"])' "$out")
			if [[ -z $best ]] || python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))' "$s" "$best"; then
				best=$s bestout=$out
			fi
		done
		echo "{\"op\":\"snapshot\",\"data\":\"$data\",\"cmd\":\"xdpkv snapshot IFACE FILE --compress $codec --threads $t --json\",\"result\":$bestout}"
	done
done
tb_xdpkv detach "$TB_SRV_DEV" >/dev/null
for codec in none lz4 zstd:1 zstd; do
	for t in 1 2; do
		att
		out=$(tb_xdpkv restore "$TB_SRV_DEV" "$dir/s-$codec-2.snap" --threads "$t" --json)
		echo "{\"op\":\"restore\",\"data\":\"$data\",\"codec\":\"$codec\",\"cmd\":\"xdpkv restore IFACE FILE --threads $t --json\",\"result\":$out}"
		tb_xdpkv detach "$TB_SRV_DEV" >/dev/null
	done
done
