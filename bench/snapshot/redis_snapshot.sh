#!/bin/bash
# SPDX-License-Identifier: MIT
# xdpkv snapshot/restore next to Redis's RDB save/load, same items, same
# machine, same sitting (docs/results.md, "Snapshots: against Redis").
#
#   bench/snapshot/redis_snapshot.sh [ITEMS] [VALUE_BYTES]     defaults: 1000000 1024
#
# A hash_map of ITEMS entries (16-byte keys) on a testbed veth, loaded with
# `xdpkv load --generate` (values '<key>/0/' repeated: compressible).  The very
# same items go into a redis-server (no persistence of its own, port 6399)
# through `xdpkv dump` -> RESP -> `redis-cli --pipe`; both hold the same keys
# and values, checked by count and by a sample of keys.  Then, each timed by
# wall clock around the command:
#   xdpkv snapshot --compress lz4|none --threads 1|2, xdpkv restore into a
#   fresh hash_map (both on every CPU, as Redis's processes are);  redis SAVE (foreground, rdbcompression yes = LZF: Redis's
#   default), BGSAVE (fork, until the child is done), and a restart that loads
#   the RDB (until INFO says loading:0).
# One JSON line per measurement on stdout (with the CPUs and the load average).  Needs root and redis-server.
# Environment: SNAP_THREADS (default "1 2"), SNAP_CODECS (default "lz4 none").
# Both stores must fit in memory at once: it checks MemAvailable first
# (2.5 M x 1 KB: ~3 GB for xdpkv's map, ~3.5 GB for Redis, ~3 GB more while
# BGSAVE's child copies pages).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../../tests/lib/testbed.sh"
n=${1:-1000000} vlen=${2:-1024}
command -v redis-server >/dev/null || { echo "redis_snapshot.sh: redis-server is not installed" >&2; exit 2; }
codecs=${SNAP_CODECS:-lz4 none} threads=${SNAP_THREADS:-1 2}
need_mb=$(( n * (40 + (vlen + 7) / 8 * 8 + 16 + 50) / 1000000 + n * (vlen + 90) / 1000000 * 2 ))
avail_mb=$(( $(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo) / 1024 ))
((need_mb < avail_mb)) || { echo "redis_snapshot.sh: $n x $vlen B in both stores needs ~$need_mb MB; only $avail_mb MB available" >&2; exit 2; }
dir=$(mktemp -d /var/tmp/xkv-redissnap.XXXXXX)
rport=6399
rpid=
cleanup() {
	[[ -n $rpid ]] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null || true
	rm -rf "$dir"
}
tb_up "xrsb$$"
trap 'cleanup; tb_down' EXIT
trap 'cleanup; tb_down; trap - INT; kill -INT $$' INT
trap 'cleanup; tb_down; trap - TERM; kill -TERM $$' TERM

now() { date +%s.%N; }
emit() { # system op detail seconds bytes
	python3 -c 'import json,sys
s = float(sys.argv[4]); n = int(sys.argv[6])
print(json.dumps({"system": sys.argv[1], "op": sys.argv[2], "detail": sys.argv[3], "seconds": round(s, 3),
                  "file_bytes": int(sys.argv[5]), "items": n, "items_per_s": round(n / s) if s > 0 else None,
                  "cpus": int(sys.argv[7]), "loadavg": sys.argv[8]}))' \
		"$@" "$n" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
}
attach() {
	tb_xdpkv attach "$TB_SRV_DEV" --replace --entries "$n" --key-size 16 --value-size "$vlen" >/dev/null ||
		tb_die "attach failed"
}
live() { tb_xdpkv status "$TB_SRV_DEV" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["live"])'; }

attach
tb_xdpkv load "$TB_SRV_DEV" --generate "$n" --key-size 16 --value-size "$vlen" >&2 || tb_die "load failed"
[[ $(live) -eq $n ]] || tb_die "the store holds $(live) items, not $n"

# ---- the same items into Redis ----
redis_start() {
	redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
		--dbfilename dump.rdb --daemonize no --logfile "$dir/redis.log" &
	rpid=$!
	for _ in $(seq 600); do
		if [[ $(redis-cli -p "$rport" info persistence 2>/dev/null | tr -d '\r' | sed -n 's/^loading://p') == 0 ]]; then
			return 0
		fi
		sleep 0.01
	done
	tb_die "redis-server did not come up"
}
redis_start
tb_xdpkv dump "$TB_SRV_DEV" | python3 -c '
import base64, json, sys
out = sys.stdout.buffer
for line in sys.stdin:
    j = json.loads(line)
    k = base64.b64decode(j["key_b64"]) if "key_b64" in j else j["key"].encode()
    v = base64.b64decode(j["value_b64"]) if "value_b64" in j else j["value"].encode()
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
' | redis-cli -p "$rport" --pipe >&2 || tb_die "loading redis failed"
rn=$(redis-cli -p "$rport" dbsize)
[[ $rn -eq $n ]] || tb_die "redis holds $rn keys, not $n"
# a sample of keys: the same value on both sides
for k in $(tb_xdpkv dump "$TB_SRV_DEV" | head -3 | python3 -c 'import json,sys; [print(json.loads(l)["key"]) for l in sys.stdin]'); do
	a=$(tb_xdpkv get "$TB_SRV_DEV" "$k" 2>/dev/null | tail -c 64)
	b=$(redis-cli -p "$rport" get "$k" | tail -c 64)
	[[ -n $a && $a == "$b" ]] || tb_die "key $k differs between xdpkv and redis"
done
echo "both hold the same $n items" >&2

# ---- xdpkv ----
for codec in $codecs; do
	for th in $threads; do
		rm -f "$dir/x.snap"; sync
		t0=$(now)
		tb_xdpkv_allcpus snapshot "$TB_SRV_DEV" "$dir/x.snap" --compress "$codec" --threads "$th" >/dev/null ||
			tb_die "snapshot failed"
		t1=$(now)
		emit xdpkv snapshot "$codec, $th thread(s), fsync" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$(stat -c %s "$dir/x.snap")"
	done
	[[ -e $dir/keep.snap ]] || cp "$dir/x.snap" "$dir/keep.snap" # the first codec's
done
keep_codec=${codecs%% *}
for th in $threads; do
	attach
	t0=$(now)
	tb_xdpkv_allcpus restore "$TB_SRV_DEV" "$dir/keep.snap" --threads "$th" >/dev/null || tb_die "restore failed"
	t1=$(now)
	[[ $(live) -eq $n ]] || tb_die "restore left $(live) items"
	emit xdpkv restore "$keep_codec, $th thread(s), into an empty hash_map" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
		"$(stat -c %s "$dir/keep.snap")"
done

# ---- Redis ----
t0=$(now)
redis-cli -p "$rport" save >/dev/null
t1=$(now)
emit redis "SAVE" "RDB, LZF (Redis default), foreground" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$(stat -c %s "$dir/dump.rdb")"
last=$(redis-cli -p "$rport" lastsave)
t0=$(now)
redis-cli -p "$rport" bgsave >/dev/null
while :; do
	inf=$(redis-cli -p "$rport" info persistence | tr -d '\r')
	[[ $(sed -n 's/^rdb_bgsave_in_progress://p' <<<"$inf") == 0 && $(redis-cli -p "$rport" lastsave) != "$last" ]] && break
	sleep 0.005
done
t1=$(now)
emit redis "BGSAVE" "RDB, LZF, forked child, until done" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$(stat -c %s "$dir/dump.rdb")"
redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true
wait "$rpid" 2>/dev/null || true
rpid=
sync
t0=$(now)
redis_start
t1=$(now)
rn=$(redis-cli -p "$rport" dbsize)
[[ $rn -eq $n ]] || tb_die "redis loaded $rn keys, not $n"
emit redis "load" "RDB at start, until loading:0" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$(stat -c %s "$dir/dump.rdb")"
