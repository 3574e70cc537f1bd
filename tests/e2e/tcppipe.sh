#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: segments of several requests answered in the driver hook
# (common/tcpx_pipe.bpf.h) on the veth testbed, with memcached as the
# oracle and real clients.
#
#   tests/e2e/tcppipe.sh [LAYOUT]   (default lru, attach's default)
#
# 1. tcppipeclient.py oracle: fixed pipelined batches (text, binary, meta; each
#    on a new connection and then all on one) to memcached 1.6 and to xdpkv
#    from the same state: the same reply bytes (binary, meta: but the cas); XDP
#    answered segments of several requests (tcpx_pipelined) and a
#    connection's first request (the batches on new connections).
# 2. tcppipeclient.py clients: pymemcache set_many (noreply) / get_many /
#    delete_many, python-memcache set_multi / get_multi / delete_multi,
#    every value checked; XDP answered most of their requests.  Then Ruby
#    Dalli (binary: setq multi-sets, getkq multi-gets), php-memcached binary
#    and text (setMulti, getMulti, set, get, delete): every value checked,
#    XDP answering some of each; the meta commands in Dalli's forms
#    (bench/clients/clients.py's meta_dalli) and pymemcache's noreply sets
#    and deletes (pymemcache_setdel): every value checked, XDP answering at
#    least 80 %.  tcppipeclient.py stream: noreply writes in 8 KB writes, cut
#    by TCP inside requests: every value right, cut requests held, XDP
#    answering at least 80 %.
# 3. nutcracker (twemproxy) in front, 8 client threads of single sets and
#    gets for 4 s: every value right, and XDP answered segments nutcracker
#    batched (tcpx_pipelined moved).
# Environment: XDPKV (CLI path), E2E_PREFIX.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

layout=${1:-lru}
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
PY=/usr/bin/python3
$PY -c 'import pymemcache, memcache' || tb_die "python3-pymemcache and python3-memcache are needed (tests/lib/install-deps.sh)"
ruby -e 'require "dalli"' || tb_die "ruby-dalli is needed (tests/lib/install-deps.sh)"
php -r 'exit(class_exists("Memcached") ? 0 : 1);' || tb_die "php-memcached is needed (tests/lib/install-deps.sh)"
command -v memcached >/dev/null || tb_die "memcached missing (tests/lib/install-deps.sh)"
NUTCRACKER=$(command -v nutcracker || echo /usr/sbin/nutcracker)
[[ -x $NUTCRACKER ]] || tb_die "nutcracker missing: install it (tests/lib/install-deps.sh)"

tb_up "${E2E_PREFIX:-xq$$}"
tb_need_layout "$layout"
S4=$TB_SRV_IP4 P=$TB_PORT MCP=$((TB_PORT + 1))
client() { tb_cli $PY "$here/tcppipeclient.py" "$@"; }
tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 16384 --port "$P" >/dev/null ||
	tb_die "xdpkv attach ($layout) failed"
tb_serve_tcp_start
tb_srv_bg memcached -u root -U 0 -p "$MCP" -l "$S4" -m 64 -t 1
tb_wait_listen "$TB_SRV_NS" "$MCP" 200 || tb_die "memcached did not listen on $MCP"

p0=$(tb_counter fast tcpx_pipelined) x0=$(tb_counter fast tcpx_answered)
check "$layout: pipelined batches: memcached's reply bytes" client oracle "$S4" "$P" "$S4" "$MCP"
p1=$(tb_counter fast tcpx_pipelined) x1=$(tb_counter fast tcpx_answered)
echo "$layout: oracle batches: XDP answered $((x1 - x0)) requests in $((p1 - p0)) segments of several"
check "$layout: ... XDP answered segments of several requests ($((p1 - p0)))" test $((p1 - p0)) -ge 8

u0=$(tb_counter slow tcp_slow)
check "$layout: pymemcache and python-memcache multi-key calls" client clients "$S4" "$P" --rounds 5
p2=$(tb_counter fast tcpx_pipelined) x2=$(tb_counter fast tcpx_answered) u2=$(tb_counter slow tcp_slow)
dx=$((x2 - x1)) du=$((u2 - u0))
echo "$layout: clients: XDP answered $dx requests ($((p2 - p1)) segments of several), serve $du"
check "$layout: ... XDP answered at least 80 % of them ($dx of $((dx + du)))" test $((dx * 5)) -ge $(((dx + du) * 4))
other() { # NAME CMD...: a client's run, its values checked, and how much XDP answered
	local name=$1 a0 b0 a1 b1
	shift
	a0=$(tb_counter fast tcpx_answered) b0=$(tb_counter slow tcp_slow)
	check "$layout: $name" tb_cli "$@"
	a1=$(tb_counter fast tcpx_answered) b1=$(tb_counter slow tcp_slow)
	echo "$layout: $name: XDP answered $((a1 - a0)), serve $((b1 - b0))"
	check "$layout: ... XDP answered some of it" test $((a1 - a0)) -gt 0
}
other "Ruby Dalli (binary)" ruby "$here/dalliclient.rb" "$S4:$P" 5
other "php-memcached binary" php "$here/phpclient.php" "$S4" "$P" binary 5
other "php-memcached text" php "$here/phpclient.php" "$S4" "$P" text 5
# the meta commands in Dalli's forms (bench/clients/clients.py's row: mg v f,
# quiet multi-gets ending in mn, ms c F0 T0 MS), every value checked
CPY=$here/../../bench/clients/clients.py
row_ok() { # ROW SECONDS: its JSON line: no error, nothing wrong, requests made
	tb_cli $PY "$CPY" preload "$1" "$S4" "$P" &&
		tb_cli $PY "$CPY" run "$1" "$S4" "$P" "$2" | tee "$TB_TMP/$1.json" &&
		$PY -c 'import json,sys; r = json.load(open(sys.argv[1])); sys.exit(0 if not r.get("error") and r["wrong"] == 0 and r["requests"] > 100 else 1)' "$TB_TMP/$1.json"
}
row_xdp() { # ROW SECONDS WHAT: the row run, every value checked, XDP answering at least 80 %
	local m0 n0 m1 n1 dm dn
	m0=$(tb_counter fast tcpx_answered) n0=$(tb_counter slow tcp_slow)
	check "$layout: $3" row_ok "$1" "$2"
	m1=$(tb_counter fast tcpx_answered) n1=$(tb_counter slow tcp_slow)
	dm=$((m1 - m0)) dn=$((n1 - n0))
	echo "$layout: $1: XDP answered $dm requests, serve $dn"
	check "$layout: ... XDP answered at least 80 % of them ($dm of $((dm + dn)))" test $((dm * 5)) -ge $(((dm + dn) * 4))
}
row_xdp meta_dalli 2 "meta commands in Dalli's forms"
row_xdp pymemcache_setdel 1 "pymemcache's noreply sets and deletes, one a write"
# noreply writes in 8 KB writes: TCP cuts requests at its segments' ends,
# which the responder holds for the next segment
h0=$(tb_counter fast tcpx_held) m0=$(tb_counter fast tcpx_answered) n0=$(tb_counter slow tcp_slow)
check "$layout: noreply writes cut at segment ends: every value right" client stream "$S4" "$P" --rounds 30
h1=$(tb_counter fast tcpx_held) m1=$(tb_counter fast tcpx_answered) n1=$(tb_counter slow tcp_slow)
dm=$((m1 - m0)) dn=$((n1 - n0))
echo "$layout: stream: XDP answered $dm requests, serve $dn, cut requests held $((h1 - h0))"
check "$layout: ... cut requests held ($((h1 - h0)))" test $((h1 - h0)) -gt 30
check "$layout: ... XDP answered at least 80 % of them ($dm of $((dm + dn)))" test $((dm * 5)) -ge $(((dm + dn) * 4))
# the room for them was checked when holding (the same device): none sent
# alone, no segment dropped
ha=$(tb_counter fast tcpx_held_alone) hd=$(tb_counter fast tcpx_held_dropped)
check "$layout: ... every next segment had room for them (sent alone $ha, dropped $hd)" test "$ha" -eq 0 -a "$hd" -eq 0
x2=$(tb_counter fast tcpx_answered) u2=$(tb_counter slow tcp_slow) p2=$(tb_counter fast tcpx_pipelined)

PROXY=127.0.0.1:22121
conf=$TB_TMP/nutcracker.yml
printf '%s\n' "xdpkv:" "  listen: $PROXY" "  hash: fnv1a_64" "  distribution: ketama" "  timeout: 10000" \
	"  server_connections: 1" "  auto_eject_hosts: false" "  servers:" "   - $S4:$P:1 xkv" >"$conf"
tb_cli_bg "$NUTCRACKER" -c "$conf" -s 22222 -a 127.0.0.1 -o "$TB_TMP/nutcracker.log"
tb_wait_listen "$TB_CLI_NS" 22121 200 "$TB_LAST_PID" ||
	{ cat "$TB_TMP/nutcracker.log" >&2; tb_die "nutcracker did not listen on $PROXY"; }
check "$layout: 8 clients through nutcracker: every value right" client fanin 127.0.0.1 22121 --clients 8 --seconds 4
p3=$(tb_counter fast tcpx_pipelined) x3=$(tb_counter fast tcpx_answered) u3=$(tb_counter slow tcp_slow)
echo "$layout: nutcracker: XDP answered $((x3 - x2)) requests ($((p3 - p2)) segments of several), serve $((u3 - u2))"
check "$layout: ... XDP answered segments nutcracker batched ($((p3 - p2)))" test $((p3 - p2)) -gt 0
exit $fail
