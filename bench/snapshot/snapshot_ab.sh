#!/bin/bash
# SPDX-License-Identifier: MIT
# Two (or more) builds of the CLI, alternated on one store: the before/after
# of a change to the snapshot path (docs/results.md, "Snapshots").
#
#   bench/snapshot/snapshot_ab.sh ITEMS VALUE_BYTES ROUNDS "CLI1 CLI2 ..." "CODEC:THREADS:CPUS ..."
#   e.g. bench/snapshot/snapshot_ab.sh 1000000 128 4 "/tmp/xdpkv-before build/cli/xdpkv" "lz4:1:1 lz4:2:0-1"
#
# A hash_map of ITEMS entries (16-byte keys, VALUE_BYTES-byte values, xdpkv
# load --generate) on a testbed veth, attached and loaded by the first CLI.
# Then ROUNDS rounds; in each, every CLI runs every setting once: a snapshot
# with --compress CODEC --threads THREADS under taskset -c CPUS, into SNAP_DIR
# (default /dev/shm: no disk).  One line per snapshot on stdout: round, CLI,
# setting, the command's seconds, its items and file bytes, the process's
# elapsed / user / system seconds (/usr/bin/time) and the load average.
# Needs root.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../../tests/lib/testbed.sh"
(($# == 5)) || { sed -n '3,17p' "$0" >&2; exit 2; }
n=$1 vlen=$2 rounds=$3 clis=$4 settings=$5 dir=${SNAP_DIR:-/dev/shm}
for c in $clis; do
	[[ -x $c ]] || { echo "snapshot_ab.sh: $c is not an executable" >&2; exit 2; }
done
[[ -x /usr/bin/time ]] || { echo "snapshot_ab.sh: needs /usr/bin/time (Debian: apt-get install time)" >&2; exit 2; }
XDPKV=${clis%% *}
tb_up "xsab$$"
f=$dir/xsab-$$.snap tf=$(mktemp)
trap 'rm -f "$f" "$tf"; tb_down' EXIT
tb_xdpkv attach "$TB_SRV_DEV" --entries "$n" --key-size 16 --value-size "$vlen" >/dev/null ||
	tb_die "attach failed"
tb_xdpkv load "$TB_SRV_DEV" --generate "$n" --key-size 16 --value-size "$vlen" >/dev/null ||
	tb_die "load failed"
echo "# $(date -u '+%F %T') UTC, $(nproc) CPUs, $(uname -r), $n x $vlen B, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
	for c in $clis; do
		for s in $settings; do
			IFS=: read -r codec th cpus <<<"$s"
			out=$(nsenter --net="/run/netns/$TB_SRV_NS" -- taskset -c "$cpus" \
				/usr/bin/time -o "$tf" -f "%e %U %S" "$c" snapshot "$TB_SRV_DEV" "$f" \
				--compress "$codec" --threads "$th" --json) || tb_die "$c: snapshot failed"
			echo "r$r $c $s $(python3 -c 'import json,sys; j = json.loads(sys.argv[1]); print(j["seconds"], j["items"], j["compressed_bytes"])' "$out")" \
			     "cpu(e,u,s)=$(cat "$tf") load=$(cut -d' ' -f1 /proc/loadavg)"
		done
	done
done
