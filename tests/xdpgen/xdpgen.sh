#!/bin/bash
# SPDX-License-Identifier: MIT
# xdpgen (bench/xdpgen) against xdpkv over the veth testbed.
#
#   tests/xdpgen/xdpgen.sh LAYOUT
#
# Loads 10000 items (16-byte keys, 64-byte values) into LAYOUT attached in
# native mode, then: 2 s of gets over those keys (every reply a hit -- for
# array_fnv, which loses keys to collisions, the share of keys it holds --
# and the server's fast path counted at least as many replies), gets beyond the
# loaded range (misses only), sets (STORED), and the client device's XDP
# program is the testbed's again afterwards.
# Environment: XDPKV (CLI path), XDPGEN (xdpgen path), XG_PREFIX (namespace
# prefix), TB_XDP_PASS_OBJ.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"

(($# == 1)) || { echo "usage: $0 LAYOUT" >&2; exit 2; }
layout=$1
: "${XDPGEN:=$TB_REPO/build/bench/xdpgen/xdpgen}"
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
[[ -x $XDPGEN ]] || tb_die "xdpgen not found at $XDPGEN (build it, or set XDPGEN)"
command -v python3 >/dev/null || tb_die "python3 is needed to read JSON"

nkeys=10000
tb_up "${XG_PREFIX:-xg$$}"

tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --mode native --entries 65536 \
	--key-size 16 --value-size 64 --port "$TB_PORT" >/dev/null || tb_die "xdpkv attach failed"
tb_pin_napi
tb_xdpkv load "$TB_SRV_DEV" --generate "$nkeys" --key-size 16 --value-size 64 >/dev/null ||
	tb_die "xdpkv load failed"

tb_xdpkv status "$TB_SRV_DEV" --json >"$TB_TMP/loaded.json" || tb_die "xdpkv status failed"
live=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["live"])' "$TB_TMP/loaded.json")
echo "$layout holds $live of the $nkeys keys loaded"
((live > nkeys * 9 / 10)) || tb_die "$layout holds only $live of $nkeys keys"

prog_id() { ip -n "$TB_CLI_NS" -d link show "$TB_CLI_DEV" | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p'; }
pass_id=$(prog_id)
[[ -n $pass_id ]] || tb_die "the client end has no XDP program"

# jget FILE KEY: one value of a flat JSON object (a counter of `status`
# when KEY is fast.NAME)
jget() {
	python3 - "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
k = sys.argv[2]
if k.startswith("fast."):
    j, k = j["counters"]["fast"], k[5:]
if k not in j:
    sys.exit("no '%s' in %s" % (k, sys.argv[1]))
print(j[k])
PY
}

# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

# run NAME XDPGEN-ARGS...: xdpgen's JSON in $TB_TMP/NAME.json, the server's
# status before and after in NAME.before.json / NAME.after.json
run() {
	local name=$1
	shift
	tb_xdpkv status "$TB_SRV_DEV" --json >"$TB_TMP/$name.before.json" || tb_die "xdpkv status failed"
	tb_cli "$XDPGEN" "$TB_CLI_DEV" --dst-ip "$TB_SRV_IP4" --key-size 16 --value-size 64 \
		--cpus "$TB_CLIENT_CPU" --server-cpu "$TB_SERVER_CPU" --json "$@" \
		>"$TB_TMP/$name.json" || tb_die "xdpgen ($name) exited with $?"
	tb_xdpkv status "$TB_SRV_DEV" --json >"$TB_TMP/$name.after.json" || tb_die "xdpkv status failed"
	echo "---- $name: xdpgen $*"
	cat "$TB_TMP/$name.json"
}
# delta NAME COUNTER: growth of the server's fast-path counter over run NAME
delta() {
	echo $(($(jget "$TB_TMP/$1.after.json" "fast.$2") - $(jget "$TB_TMP/$1.before.json" "fast.$2")))
}

# 1. gets over the loaded keys: all hits
run hits --keys "$nkeys" --duration 2
f=$TB_TMP/hits.json
sent=$(jget "$f" sent) replies=$(jget "$f" replies) hits=$(jget "$f" hits)
misses=$(jget "$f" misses) errors=$(jget "$f" errors) bad=$(jget "$f" bad)
srv_replies=$(delta hits replies) srv_hits=$(delta hits get_hits)
srv_requests=$(delta hits requests) srv_csum=$(delta hits pass_csum)
check "frames sent ($sent > 0)" test "$sent" -gt 0
check "the server answered every request it accepted ($srv_replies of $srv_requests)" \
	test "$srv_requests" -gt 0 -a "$srv_replies" -eq "$srv_requests"
check "the generator's UDP checksums verify (pass_csum $srv_csum)" test "$srv_csum" -eq 0
check "replies ($replies > 0)" test "$replies" -gt 0
check "replies <= sent ($replies <= $sent)" test "$replies" -le "$sent"
check "every reply a hit or a miss ($hits + $misses = $replies)" test $((hits + misses)) -eq "$replies"
if ((live == nkeys)); then
	check "hits >= 99% of replies ($hits of $replies)" test $((hits * 100)) -ge $((replies * 99))
	check "no misses ($misses)" test "$misses" -eq 0
else
	# array_fnv loses keys to collisions: the hit share is the share of
	# keys it still holds (uniform keys), within 2 points
	check "hit share $((hits * 100 / replies))% = held keys $((live * 100 / nkeys))% +- 2" \
		test $((hits * 100 * nkeys)) -ge $((replies * (live * 100 - 2 * nkeys))) -a \
		$((hits * 100 * nkeys)) -le $((replies * (live * 100 + 2 * nkeys)))
fi
check "no error replies ($errors)" test "$errors" -eq 0
check "no bad frames in the generator ($bad)" test "$bad" -eq 0
check "server fast-path replies grew by >= the replies counted ($srv_replies >= $replies)" \
	test "$srv_replies" -ge "$replies"
check "server fast-path hits grew by >= the hits counted ($srv_hits >= $hits)" \
	test "$srv_hits" -ge "$hits"
check "the client's XDP program is restored (id $(prog_id) = $pass_id)" test "$(prog_id)" = "$pass_id"

# 2. keys beyond the loaded range: misses only
run misses --key-base "$nkeys" --keys "$nkeys" --duration 0.5
f=$TB_TMP/misses.json
replies=$(jget "$f" replies) hits=$(jget "$f" hits) misses=$(jget "$f" misses)
check "misses beyond the loaded keys ($misses > 0)" test "$misses" -gt 0
check "no hits beyond the loaded keys ($hits)" test "$hits" -eq 0
check "every reply a miss ($misses = $replies)" test "$misses" -eq "$replies"
check "server counted the misses ($(delta misses get_misses) >= $misses)" \
	test "$(delta misses get_misses)" -ge "$misses"

# 3. sets
run sets --keys "$nkeys" --write-ratio 1 --duration 0.5 --value-seed 7
f=$TB_TMP/sets.json
replies=$(jget "$f" replies) stored=$(jget "$f" stored)
check "sets stored ($stored > 0, = replies $replies)" test "$stored" -gt 0 -a "$stored" -eq "$replies"
check "server stores grew by >= STORED counted ($(delta sets stores) >= $stored)" \
	test "$(delta sets stores)" -ge "$stored"
check "the client's XDP program is restored (id $(prog_id) = $pass_id)" test "$(prog_id)" = "$pass_id"

exit $fail
