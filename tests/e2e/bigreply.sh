#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: one client cannot make xdpkv serve hold its replies.  Eight TCP
# connections each send one get of 4,000 keys of a 1,000,000-byte value (a
# 4 GB reply each) and read nothing, while a ninth sends "mn" every 5 ms for
# 5 s (tests/e2e/bigreplyclient.py).  serve's peak RSS stays under 64 MB
# above its idle size, every mn is answered within 20 ms at the 99th
# percentile, serve stops spending CPU on connections that do not read, and
# a get of 40 keys of the value read in full on a fresh connection is right
# to the byte; and a get line of 18,725 keys is answered key by key, as
# memcached answers it.  (docs/security.md, "TCP": what a connection can hold.)
#
#   tests/e2e/bigreply.sh [LAYOUT]      (default hash_map)
#
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

layout=${1:-hash_map}
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
PY=/usr/bin/python3

tb_up "${E2E_PREFIX:-xr$$}"
unseeded=()
[[ $layout == array_fnv ]] && unseeded=(--fnv-unseeded)
tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 4096 --value-size 1024 --big-memory 16 \
	--port "$TB_PORT" "${unseeded[@]}" >/dev/null || tb_die "attach failed"
tb_serve_tcp_start
tb_cli $PY "$here/bigreplyclient.py" abuse "$TB_SRV_IP4" "$TB_PORT" "$TB_SERVE_PID" --json \
	>"$TB_TMP/abuse.json" || tb_die "the client failed"
cat "$TB_TMP/abuse.json"
field() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$TB_TMP/abuse.json" "$1"; }
lt() { $PY -c 'import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)' "$1" "$2"; }
check "serve is alive after 8 x 4 GB of replies asked and not read" [ "$(field alive)" = True ]
check "serve's peak RSS $(field peak_above_idle_mb) MB above idle (< 64)" lt "$(field peak_above_idle_mb)" 64
check "a ninth connection's mn: p99 $(field mn_p99_ms) ms (< 20) over $(field mn_n)" \
	lt "$(field mn_p99_ms)" 20
check "serve's CPU in the last second $(field cpu_last_s) s/s (< 0.25: no work for who does not read)" \
	lt "$(field cpu_last_s)" 0.25
check "a get of 40 keys of the 1 MB value, read in full: every byte right" [ "$(field read_ok)" = True ]
check "a get line of 18,725 keys (187,255 bytes): every VALUE, then END, as memcached" \
	tb_cli $PY "$here/bigreplyclient.py" longline "$TB_SRV_IP4" "$TB_PORT"
tb_serve_stop || fail=1
tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach failed"
exit $fail
