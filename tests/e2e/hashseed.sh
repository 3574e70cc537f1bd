#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: the keyed placement of array_fnv, the bucketed layouts
# (set_assoc, sieve, s3fifo) and arena (docs/layouts-buckets-arena.md,
# "Keyed placement").
#
#   tests/e2e/hashseed.sh LAYOUT        (array_fnv, set_assoc, sieve, s3fifo or arena)
#
# A plain attach draws a random seed (status: placement keyed); a re-attach
# without --hash-seed keeps the pinned seed, so every item still answers over
# UDP from XDP alone (no slow path runs: a moved seed would turn them into
# misses); another --hash-seed is refused, naming it, and changes nothing;
# a snapshot taken under one seed restores under another (restore stores by
# key); --fnv-unseeded gives BMC's placement and survives a re-attach;
# bad seeds and --hash-seed on a layout without one are refused.
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

(($# == 1)) || { echo "usage: $0 LAYOUT" >&2; exit 2; }
layout=$1
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
sc() { python3 "$here/snapcheck.py" "$@"; }

tb_up "${E2E_PREFIX:-xh$$}"
T=$TB_TMP
attach() { tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --mode native --entries 4096 --key-size 32 \
	--value-size 256 --port "$TB_PORT" "$@"; }
placement() { tb_xdpkv status "$TB_SRV_DEV" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["placement"])'; }
count() { tb_xdpkv dump "$TB_SRV_DEV" 2>/dev/null | wc -l; }
refused() { # DESCRIPTION GREP ARGS...: attach ARGS exits non-zero saying GREP
	local what=$1 want=$2 rc=0
	shift 2
	attach "$@" >"$T/r.out" 2>&1 || rc=$?
	cat "$T/r.out"
	check "$what: refused (exit $rc)" test "$rc" -ne 0
	check "$what: the message says '$want'" grep -q -- "$want" "$T/r.out"
}

python3 - "$T/items.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(300):
        f.write(json.dumps({"key": "k%d" % i, "value": "v%d" % i, "flags": i, "exptime": 0}) + "\n")
PY

# 1. the default: a random seed
attach >"$T/a1.out" || { cat "$T/a1.out"; tb_die "attach failed"; }
check "default attach: placement keyed" test "$(placement)" = keyed
tb_xdpkv import "$TB_SRV_DEV" "$T/items.jsonl" >/dev/null || tb_die "import failed"
tb_xdpkv dump "$TB_SRV_DEV" "$T/d1.jsonl" 2>/dev/null || tb_die "dump failed"
n1=$(wc -l <"$T/d1.jsonl")
check "imported ($n1 of 300 kept)" test "$n1" -gt 250
check "every item over UDP from XDP" tb_cli python3 "$here/snapcheck.py" udp "$TB_SRV_IP4" "$TB_PORT" "$T/d1.jsonl"
tb_xdpkv snapshot "$TB_SRV_DEV" "$T/a.snap" >/dev/null || tb_die "snapshot failed"

# 2. re-attach without --hash-seed keeps the seed, so the items stay where they are
attach >"$T/a2.out" 2>&1 || { cat "$T/a2.out"; tb_die "re-attach failed"; }
check "re-attach keeps the items" grep -q "kept: $n1 items" "$T/a2.out"
check "re-attach: placement still keyed" test "$(placement)" = keyed
check "re-attach: every item still over UDP from XDP (the seed survived)" \
	tb_cli python3 "$here/snapcheck.py" udp "$TB_SRV_IP4" "$TB_PORT" "$T/d1.jsonl"

# 3. another seed on re-attach: refused, nothing changed
refused "re-attach with another --hash-seed" "--hash-seed: a seed pinned, another seed now" --hash-seed 12345
refused "re-attach with --fnv-unseeded" "--hash-seed: a seed pinned, unseeded now" --fnv-unseeded
check "the refusals left the items" test "$(count)" -eq "$n1"

# 4. bad input
refused "--hash-seed abc" "not a 64-bit number" --hash-seed abc --replace
refused "--hash-seed -1" "not a 64-bit number" --hash-seed -1 --replace
refused "--fnv-unseeded with --hash-seed 5" "contradict" --fnv-unseeded --hash-seed 5 --replace
rc=0
tb_xdpkv --variant hash_map attach "$TB_SRV_DEV" --mode native --hash-seed 7 --replace >"$T/r.out" 2>&1 || rc=$?
cat "$T/r.out"
check "--hash-seed on hash_map: refused (exit $rc)" test "$rc" -ne 0
check "--hash-seed on hash_map: says why" grep -q -- "--hash-seed applies to" "$T/r.out"
check "bad input left the items" test "$(count)" -eq "$n1"

# 5. a snapshot restores under another seed (restore stores by key)
rc=0
attach --replace --hash-seed 0x9e3779b97f4a7c15 --restore "$T/a.snap" >"$T/a5.out" 2>&1 || rc=$?
cat "$T/a5.out"
check "restore under another seed: every item of the file stored by key" \
	grep -q "restored $n1 of $n1 items" "$T/a5.out"
if [[ $layout == array_fnv ]]; then # other keys collide under the new seed: restore says so
	check "restore under another seed: exit 0, or collisions reported (rc $rc)" \
		bash -c "(( $rc == 0 )) || grep -q 'array_fnv collisions' \"\$0\"" "$T/a5.out"
else
	check "restore under another seed: exit 0 (rc $rc)" test "$rc" -eq 0
fi
tb_xdpkv dump "$TB_SRV_DEV" "$T/d5.jsonl" 2>/dev/null || tb_die "dump failed"
n5=$(wc -l <"$T/d5.jsonl")
check "restored under another seed: $n5 of $n1 live" test "$n5" -gt 250
check "restored items over UDP from XDP" tb_cli python3 "$here/snapcheck.py" udp "$TB_SRV_IP4" "$TB_PORT" "$T/d5.jsonl"
attach --hash-seed 0x9e3779b97f4a7c15 >"$T/a6.out" 2>&1 || { cat "$T/a6.out"; tb_die "re-attach, same seed, failed"; }
check "re-attach with the same explicit --hash-seed: accepted, items kept" grep -q "kept: $n5 items" "$T/a6.out"

# 6. --fnv-unseeded: BMC's placement, kept by a plain re-attach
attach --replace --fnv-unseeded >"$T/a7.out" 2>&1 || { cat "$T/a7.out"; tb_die "--fnv-unseeded failed"; }
check "--fnv-unseeded: placement fnv1a-unseeded" test "$(placement)" = fnv1a-unseeded
tb_xdpkv import "$TB_SRV_DEV" "$T/items.jsonl" >/dev/null || tb_die "import failed"
tb_xdpkv dump "$TB_SRV_DEV" "$T/d7.jsonl" 2>/dev/null || tb_die "dump failed"
attach >"$T/a8.out" 2>&1 || { cat "$T/a8.out"; tb_die "re-attach failed"; }
check "re-attach of an unseeded store: still unseeded" test "$(placement)" = fnv1a-unseeded
check "re-attach of an unseeded store: every item over UDP" \
	tb_cli python3 "$here/snapcheck.py" udp "$TB_SRV_IP4" "$TB_PORT" "$T/d7.jsonl"
exit $fail
