#!/bin/bash
# SPDX-License-Identifier: MIT
# Userspace writers feed the same item counters as the XDP program:
# `xdpkv load` and `xdpkv set` into a store smaller than what they write.
#
#   tests/e2e/writers.sh LAYOUT
#
# lru, lru_percpu: store_new counts every new key, so status' eviction estimate is
# exactly new - live; array_fnv: every store is new or overwrites a live
# key, and the live items are the occupied slots; set_assoc, sieve, s3fifo:
# the same, and their buckets fill (more than 90 %) before the bucket's
# policy (CLOCK, SIEVE, S3-FIFO) evicts; arena: as set_assoc,
# its slots fill before a full 4-slot window replaces; hash_map/percpu do not
# count new items (nor does their XDP side).  Environment: XDPKV, E2E_PREFIX.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

(($# == 1)) || { echo "usage: $0 LAYOUT" >&2; exit 2; }
layout=$1
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
entries=1024 load=5000

tb_up "${E2E_PREFIX:-xw$$}"
tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --mode native --entries "$entries" \
	--key-size 32 --value-size 64 --port "$TB_PORT" >/dev/null || tb_die "xdpkv attach failed"

# hash_map and percpu refuse past capacity: load only what fits there
n=$load
[[ $layout == hash_map || $layout == percpu ]] && n=$((entries / 2))
tb_xdpkv load "$TB_SRV_DEV" --generate "$n" >/dev/null 2>&1 || tb_die "xdpkv load failed"
tb_xdpkv set "$TB_SRV_DEV" one-more-key some-value >/dev/null || tb_die "xdpkv set failed"
tb_xdpkv set "$TB_SRV_DEV" one-more-key again >/dev/null || tb_die "xdpkv set (overwrite) failed"
tb_xdpkv status "$TB_SRV_DEV" --json >"$TB_TMP/status.json" || tb_die "xdpkv status failed"

eval "$(python3 - "$TB_TMP/status.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s = j["counters"]["slow"]
print("live=%d new=%d over=%d evict=%s" % (j["live"], s["store_new"], s["overwrites"],
      j.get("evictions_estimated", "none")))
PY
)"
echo "$layout: wrote $n + 1 keys (+1 overwrite) into $entries entries: live $live, slow-slot store_new $new overwrites $over, evictions estimated $evict"
written=$((n + 1))
case $layout in
lru | lru_percpu)
	check "every new key counted (store_new $new == $written)" test "$new" -eq "$written"
	check "the store is full (live $live > $((entries / 2)))" test "$live" -gt $((entries / 2))
	check "evictions estimated exactly (new - live: $evict == $((written - live)))" \
		test "$evict" -eq $((written - live))
	;;
set_assoc | sieve | s3fifo | arena) # evicts within a bucket / a 4-slot window (oldest write)
	check "every store new or a replacement (store_new $new + overwrites $over == $written)" \
		test $((new + over)) -eq "$written"
	check "replacements counted ($over > 0)" test "$over" -gt 0
	check "live items are the ways or slots filled new (live $live == store_new $new)" test "$live" -eq "$new"
	check "the store fills up before it replaces (live $live > $((entries * 9 / 10)))" \
		test "$live" -gt $((entries * 9 / 10))
	;;
array_fnv)
	check "every store new or an overwrite (store_new $new + overwrites $over == $written)" \
		test $((new + over)) -eq "$written"
	check "overwrites counted ($over > 0)" test "$over" -gt 0
	check "live items are the slots filled new (live $live == store_new $new)" test "$live" -eq "$new"
	;;
*)
	check "everything stored (live $live == $written)" test "$live" -eq "$written"
	check "store_new not counted by $layout ($new == 0)" test "$new" -eq 0
	;;
esac
exit $fail
