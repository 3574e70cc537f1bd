#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: memcached's binary protocol with real binary-only clients from
# two ecosystems, python-binary-memcached (PyPI) and memjs (npm), on the veth
# testbed: first against memcached 1.6.18 (Debian's, in the server
# namespace: the clients' feature sets must pass there, or the test is
# wrong), then against xdpkv serve on every layout, and binary over UDP
# from a raw socket on both (the gets XDP answers byte for byte as
# memcached, but the cas); then SASL PLAIN, on memcached -S and on serve
# --sasl-pwdb, from raw sockets: refused on every path (TCP binary, TCP text,
# UDP through XDP, the kernel's TCP path), served once authenticated, and
# both clients authenticating.
#
#   tests/e2e/binproto.sh [LAYOUT...]   (default: every layout built)
#
# libmemcached's tools with --binary (memccp, memccat, memcrm, memcstat,
# memcflush) run against both as well.
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix).  The clients
# come from tests/lib/install-deps.sh (tests/.venv, tests/.node).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

layouts=("$@")
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
((${#layouts[@]})) || read -ra layouts <<<"$("$XDPKV" layouts --json |
	python3 -c 'import json,sys; print(" ".join(l["name"] for l in json.load(sys.stdin)))')"
VPY=$root/tests/.venv/bin/python
NODE_MODULES=$root/tests/.node/node_modules
$VPY -c 'import bmemcached' 2>/dev/null ||
	tb_die "python-binary-memcached missing: run tests/lib/install-deps.sh (tests/.venv)"
[[ -d $NODE_MODULES/memjs ]] || tb_die "memjs missing: run tests/lib/install-deps.sh (tests/.node)"
command -v node >/dev/null || tb_die "node missing: run tests/lib/install-deps.sh"
command -v memcached >/dev/null || tb_die "memcached missing: run tests/lib/install-deps.sh"
command -v memccp >/dev/null || tb_die "libmemcached-tools missing: run tests/lib/install-deps.sh"

tb_up "${E2E_PREFIX:-xkvbin$$}"
S4=$TB_SRV_IP4 P=$TB_PORT T=$TB_TMP
MCP=$((P + 100))
pyc() { tb_cli "$VPY" "$here/binclient.py" "$@"; }
jsc() { tb_cli env NODE_PATH="$NODE_MODULES" node "$here/binclient.js" "$@"; }
raw() { tb_cli /usr/bin/python3 "$here/binraw.py" "$@"; }
fast() { # the XDP program's counter $1
	tb_xdpkv status "$TB_SRV_DEV" --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["fast"][sys.argv[1]])' "$1"
}

# libmemcached's tools with --binary (Debian), from the client namespace:
# a 700,000-byte file and a note copied, read back, removed, stats, flush
libmc() { # LABEL PORT
	local d; d=$(mktemp -d "$T/mc.XXXXXX") s="--servers=$S4:$2"
	head -c 700000 /dev/urandom >"$d/large.bin"
	printf 'hello over binary\n' >"$d/note.txt"
	check "$1: memccp --binary" tb_cli bash -c "cd $d && memccp --binary $s large.bin note.txt"
	check "$1: memccat --binary reads both back" tb_cli bash -c \
		"cd $d && memccat --binary $s large.bin | head -c 700000 | cmp - large.bin &&
		 memccat --binary $s note.txt | grep -qx 'hello over binary'"
	check "$1: memcrm --binary, then memccat finds nothing" tb_cli bash -c \
		"cd $d && memcrm --binary $s note.txt && ! memccat --binary $s note.txt >/dev/null 2>&1"
	check "$1: memcstat --binary" tb_cli bash -c "memcstat --binary $s | grep -q 'pid:'"
	check "$1: memcflush --binary, then memccat finds nothing" tb_cli bash -c \
		"memcflush --binary $s && ! memccat --binary $s large.bin >/dev/null 2>&1"
}

# memcached 1.6.18, the oracle: both clients' feature sets pass there
tb_srv_bg memcached -u root -U "$MCP" -p "$MCP" -l "$S4" -m 64
MC_PID=$TB_LAST_PID
for _ in $(seq 300); do
	nsenter --net="/run/netns/$TB_SRV_NS" -- ss -Hltn "sport = :$MCP" | grep -q . && break
	sleep 0.1
done
check "memcached $(memcached -V | cut -d' ' -f2): python-binary-memcached" pyc features "$S4" "$MCP"
check "memcached: memjs" jsc features "$S4" "$MCP"
check "memcached: binary over UDP" raw udp "$S4" "$MCP"
raw udpget "$S4" "$MCP" >"$T/udpget.memcached" || true
check "memcached: the four binary gets over UDP (their answers kept to compare)" \
	grep -Eq '^getk-hit [0-9a-f]{16}810c' "$T/udpget.memcached"
# memcached answers a quiet miss over UDP with an empty datagram (the frame
# header alone); xdpkv, XDP and the slow path alike, with nothing
# (docs/protocol.md, "Binary protocol")
check "memcached: an empty datagram for each quiet miss" \
	test "$(grep -Ec '^getk?q-(none|exp) empty$' "$T/udpget.memcached")" = 4
sed 's/ empty$/ -/' "$T/udpget.memcached" >"$T/udpget.want"
libmc memcached "$MCP"
kill "$MC_PID" 2>/dev/null || true
wait "$MC_PID" 2>/dev/null || true

for layout in "${layouts[@]}"; do
	echo "== $layout"
	tb_layout_ok "$layout" || continue
	# array_fnv unseeded: the clients' keys do not collide under FNV-1a (a
	# random seed would make that luck; tests/e2e/raw.sh); lossy layouts
	# may still lose an item where memcached keeps it, never change one
	extra=() lossy=()
	[[ $layout == array_fnv ]] && extra=(--fnv-unseeded)
	[[ $layout == array_fnv || $layout == set_assoc ]] && lossy=(lossy)
	tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 4096 --value-size 2048 --big-memory 16 \
		--port "$P" "${extra[@]}" >/dev/null || tb_die "xdpkv attach ($layout) failed"
	tb_serve_tcp_start
	check "$layout: python-binary-memcached" pyc features "$S4" "$P" "${lossy[@]}"
	check "$layout: memjs" jsc features "$S4" "$P" "${lossy[@]}"
	check "$layout: binary over UDP" raw udp "$S4" "$P"
	# the four binary gets, each alone in a datagram: answered by XDP (its
	# counters), with memcached's bytes but the cas
	hits=$(fast get_hits) quiet=$(fast noreply)
	raw udpget "$S4" "$P" >"$T/udpget.$layout" || true
	check "$layout: binary gets over UDP answer as memcached does" \
		diff "$T/udpget.want" "$T/udpget.$layout"
	check "$layout: ... from XDP (8 hits, 4 quiet misses)" \
		test "$(($(fast get_hits) - hits)) $(($(fast noreply) - quiet))" = "8 4"
	libmc "$layout" "$P"
	tb_serve_stop || fail=1
	tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach ($layout) failed"
done
tb_xdpkv attach "$TB_SRV_DEV" --entries 1024 --value-size 2048 --port "$P" >/dev/null ||
	tb_die "xdpkv attach failed"

# SASL on memcached -S first (the oracle; Debian's memcached reads a
# cyrus sasldb, made with saslpasswd2), then on serve --sasl-pwdb
command -v saslpasswd2 >/dev/null || tb_die "saslpasswd2 missing: run tests/lib/install-deps.sh (sasl2-bin)"
mkdir -p "$T/sasl"
echo s3cret | saslpasswd2 -p -f "$T/sasl/sasldb2" -a memcached -c alice
printf 'mech_list: plain\nsasldb_path: %s\n' "$T/sasl/sasldb2" >"$T/sasl/memcached.conf"
SASL_CONF_PATH=$T/sasl tb_srv_bg memcached -u root -S -U 0 -p "$MCP" -l "$S4" -m 64
MC_PID=$TB_LAST_PID
for _ in $(seq 300); do
	nsenter --net="/run/netns/$TB_SRV_NS" -- ss -Hltn "sport = :$MCP" | grep -q . && break
	sleep 0.1
done
check "memcached -S: raw sockets refused on every path, served after PLAIN" raw sasl "$S4" "$MCP" alice s3cret
check "memcached -S: python-binary-memcached authenticates" pyc sasl "$S4" "$MCP" alice s3cret
check "memcached -S: memjs authenticates" jsc sasl "$S4" "$MCP" alice s3cret
kill "$MC_PID" 2>/dev/null || true

# serve --sasl-pwdb: a password file only root may read; serve refuses any other
pw=$T/pwdb
printf '# xdpkv test users\nalice:s3cret\n' >"$pw"
chmod 0644 "$pw"
check "serve --sasl-pwdb refuses a file others may read" \
	bash -c "! nsenter --net=/run/netns/$TB_SRV_NS -- $XDPKV serve $TB_SRV_DEV --sasl-pwdb $pw 2>$T/refused.err &&
		grep -q 'owned by root' $T/refused.err"
chmod 0600 "$pw"
tb_serve_tcp_start --sasl-pwdb "$pw"
check "sasl: raw sockets refused on every path, served after PLAIN" raw sasl "$S4" "$P" alice s3cret
check "sasl: python-binary-memcached authenticates" pyc sasl "$S4" "$P" alice s3cret
check "sasl: memjs authenticates" jsc sasl "$S4" "$P" alice s3cret
sasl_shown() { tb_xdpkv status "$TB_SRV_DEV" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["sasl_required"])'; }
sasl_text() { local out; out=$(tb_xdpkv status "$TB_SRV_DEV") && [[ $out == *'SASL required'* ]]; }
check "sasl: status says so (--json sasl_required)" test "$(sasl_shown)" = True
check "sasl: status says so (text)" sasl_text
tb_serve_stop || fail=1
# the next serve without --sasl-pwdb answers UDP in XDP again
tb_serve_tcp_start
check "no SASL again: XDP answers UDP" raw open "$S4" "$P"
check "no SASL again: status says so" test "$(sasl_shown)" = False
tb_serve_stop || fail=1
exit $fail
