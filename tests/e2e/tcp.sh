#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: `xdpkv serve` over TCP with real third-party clients, on the
# veth testbed, for every layout.
#
#   tests/e2e/tcp.sh [LAYOUT...]      (default: hash_map array_fnv lru percpu set_assoc)
#
# Per layout: attach, serve (TCP on the UDP port, 2 threads), then from the
# client namespace
#   - pymemcache (IPv4 and IPv6) and python-memcache: set/get/get_many/delete/
#     incr/decr/add/replace/append/prepend/gets/cas/touch, binary values,
#     stats, with checked values (tcpclient.py clients);
#   - exact replies: pipelining, quit, errors, gets/cas/touch/gat/gats/verbosity, mg/mn,
#     one byte per write (raw);
#   - libmemcached-tools: memccp, memccat (a 700000-byte file too), memcrm, memcstat, memcflush;
#   values above --value-size (the big map) up to 1 MiB with every client.
# Once (with hash_map in the list): 200 connections at once; a client that never reads
# its replies while another one is served and the server's memory stays
# bounded; a client that leaves mid-value; a source outside --allow (a third
# namespace) closed with no data and counted; --max-conns; --max-buffer-mib;
# --idle-timeout; --no-tcp.
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

layouts=("$@")
((${#layouts[@]})) || layouts=(hash_map array_fnv lru percpu set_assoc)
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
# Debian's python3 carries python3-pymemcache and python3-memcache (a python3
# earlier on PATH, e.g. pyenv's, would not)
PY=/usr/bin/python3
$PY -c 'import pymemcache, memcache' ||
	tb_die "python3-pymemcache and python3-memcache are needed (tests/lib/install-deps.sh)"
for t in memccp memccat memcrm memcstat memcflush memccapable; do
	command -v $t >/dev/null || tb_die "$t missing: install libmemcached-tools (tests/lib/install-deps.sh)"
done
VALCAP=2048

tb_up "${E2E_PREFIX:-xt$$}"
tb_evil_up
S4=$TB_SRV_IP4 S6=$TB_SRV_IP6 P=$TB_PORT
client() { tb_cli $PY "$here/tcpclient.py" "$@"; }

serve() { tb_serve_tcp_start "$@"; }
slow_counter() { # counter $1 of the slow-path slot
	tb_xdpkv status "$TB_SRV_DEV" --json |
		$PY -c 'import json,sys; print(json.load(sys.stdin)["counters"]["slow"][sys.argv[1]])' "$1"
}

libmemcached() { # the libmemcached tools, from the client namespace
	local dir; dir=$(mktemp -d "$TB_TMP/mc.XXXXXX")
	local s="--servers=$S4:$P"
	head -c 1500 /dev/urandom >"$dir/blob.bin"
	head -c 700000 /dev/urandom >"$dir/large.bin"
	printf 'hello from memccp\n' >"$dir/note.txt"
	check "memccp stores three files" tb_cli memccp "$s" "$dir/blob.bin" "$dir/note.txt" "$dir/large.bin"
	tb_cli memccat "$s" --file="$dir/got.bin" blob.bin || true
	check "memccat returns the binary file byte for byte" cmp -s "$dir/blob.bin" "$dir/got.bin"
	tb_cli memccat "$s" --file="$dir/got-large.bin" large.bin || true
	check "memccat returns the 700000-byte file (above --value-size: the big map)" \
		cmp -s "$dir/large.bin" "$dir/got-large.bin"
	check "memccat returns the text file" test "$(tb_cli memccat "$s" note.txt)" = "hello from memccp"
	check "memcrm removes it" tb_cli memcrm "$s" note.txt
	check "memccat of the removed key fails" \
		bash -c "! nsenter --net=/run/netns/$TB_CLI_NS -- memccat $s note.txt >/dev/null 2>&1"
	local st; st=$(tb_cli memcstat "$s" 2>&1 || true)
	check "memcstat reports the server (layout $1, curr_connections)" \
		bash -c "grep -q 'layout: $1' <<<\"\$0\" && grep -q 'curr_connections:' <<<\"\$0\"" "$st"
	check "memcflush" tb_cli memcflush "$s"
	sleep 0.3 # the flush walk runs in the background
	check "memccat after memcflush finds nothing" \
		bash -c "! nsenter --net=/run/netns/$TB_CLI_NS -- memccat $s blob.bin >/dev/null 2>&1"
	# libmemcached's conformance cases, as memcached 1.6.18 passes them (27 of 27)
	check "memccapable -a: every ASCII case passes" \
		bash -c "nsenter --net=/run/netns/$TB_CLI_NS -- timeout 60 memccapable -h $S4 -p $P -a | grep -q '^All tests passed'"
}

memcached_tool() { # EVICTIONS PORT: memcached's own monitoring script (Debian's memcached package)
	local tool=/usr/share/memcached/scripts/memcached-tool out
	[[ -r $tool ]] || { check "memcached-tool is installed ($tool)" false; return; }
	mctool() { tb_cli perl "$tool" "$S4:$P" "$1" 2>&1 | tr -d '\r' || true; } # it keeps the CRs
	out=$(mctool settings)
	check "memcached-tool settings: evictions $1, tcpport $2, item_size_max" \
		bash -c 'grep -Eq "^ *evictions +$1\$" <<<"$0" && grep -Eq "^ *tcpport +$2\$" <<<"$0" &&
			grep -Eq "^ *item_size_max +[0-9]+\$" <<<"$0"' "$out" "$1" "$2"
	out=$(mctool display)
	# "  #  Item_Size  Max_age   Pages   Count   Full?  Evicted Evict_Time OOM"
	check "memcached-tool display: the store as class 1, one page" \
		bash -c 'grep -Eq "^ +1 +[0-9.]+[BK] +[0-9]+s +1 +[0-9]+ +(yes| no) +[0-9]+ +[0-9]+ +[0-9]+\$" <<<"$0"' "$out"
	out=$(mctool stats)
	check "memcached-tool stats: the counters" bash -c 'grep -Eq "^ *cmd_get +[0-9]+\$" <<<"$0"' "$out"
	out=$(mctool sizes)
	check "memcached-tool sizes" bash -c 'grep -Eq "sizes_status +disabled" <<<"$0"' "$out"
	# dump: lru_crawler metadump, then a get of each key, printed as add commands
	tb_cli python3 "$here/rawclient.py" req --host "$S4" --port "$P" 'set mt%1 7 0 5\r\nhello\r\n' >/dev/null
	out=$(mctool dump)
	check "memcached-tool dump: the item as an add command (its key, flags, value)" \
		bash -c 'grep -A1 -x "add mt%1 7 0 5" <<<"$0" | grep -qx hello' "$out"
}

for layout in "${layouts[@]}"; do
	echo "== $layout"
	tb_layout_ok "$layout" || continue
	# array_fnv unseeded: the clients' keys do not collide under FNV-1a (a
	# random seed would make that luck; tests/e2e/raw.sh)
	unseeded=()
	[[ $layout == array_fnv ]] && unseeded=(--fnv-unseeded)
	tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 4096 --value-size $VALCAP \
		--port "$P" "${unseeded[@]}" >/dev/null || tb_die "xdpkv attach ($layout) failed"
	serve
	check "$layout: pymemcache and python-memcache" client clients "$S4" "$P" $VALCAP "$S6"
	check "$layout: exact replies" client raw "$S4" "$P"
	libmemcached "$layout"
	if [[ $layout == hash_map || $layout == lru ]]; then
		memcached_tool "$([[ $layout == lru ]] && echo on || echo off)" "$P"
	fi
	if [[ $layout == hash_map ]]; then
		check "200 connections at once" client many "$S4" "$P" 200
		check "a client that never reads" client slow "$S4" "$P" "$TB_SERVE_PID"
		check "a client that leaves mid-value" client half "$S4" "$P"
		before=$(slow_counter drop_acl)
		check "a source outside --allow ($TB_EVL_IP4)" \
			tb_evl $PY "$here/tcpclient.py" refused "$S4" "$P"
		sleep 0.3 # counters are pushed every 100 ms
		check "... counted in drop_acl" test "$(slow_counter drop_acl)" -gt "$before"
		check "500 connections x 3: a get, then a get with the FIN in its segment (or quit): both answered before the close" \
			client halfclose "$S4" "$P" 500 xdp
		check "50 connections closed by the segment with their last request (no reply): each done" \
			client lastword "$S4" "$P" 50
		fails_before=$fail
		check "every test connection closed: curr_connections back to 1 (the asker)" \
			client conns "$S4" "$P" 1
		# which one, in what state (CLOSE-WAIT: the server missed the end)
		((fail == fails_before)) || tb_srv ss -tnoie state all "sport = :$P" || true
		tb_serve_stop
		serve --max-conns 20
		check "--max-conns 20: 30 connections, 20 served" client limit "$S4" "$P" 30 20
		check "--max-conns: one log line" \
			test "$(grep -c 'TCP connections open (--max-conns)' "$TB_TMP/serve.log")" = 1
		tb_serve_stop
		serve --max-buffer-mib 1 --idle-timeout 2
		check "--max-buffer-mib 1: a set that does not fit is refused, in step" \
			client bufmem "$S4" "$P"
		check "--idle-timeout 2: silent connections closed, busy ones not" client idle "$S4" "$P" 2
		tb_serve_stop
		tb_serve_start --no-tcp
		check "--no-tcp: no TCP listener" bash -c "! nsenter --net=/run/netns/$TB_SRV_NS -- ss -Hltn 'sport = :$P' | grep -q ."
	fi
	tb_serve_stop || fail=1
	tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach ($layout) failed"
done

[[ " ${layouts[*]} " == *" hash_map "* ]] || exit $fail
echo "== a TCP connection makes its source trusted over UDP (hash_map; the third namespace allowed, not trusted)"
tb_xdpkv attach "$TB_SRV_DEV" --entries 1024 --value-size $VALCAP --port "$P" >/dev/null ||
	tb_die "xdpkv attach failed"
tb_xdpkv acl "$TB_SRV_DEV" add allow "$TB_EVL_NET4" >/dev/null &&
	tb_xdpkv acl "$TB_SRV_DEV" add write "$TB_EVL_NET4" >/dev/null || tb_die "xdpkv acl add failed"
serve
check "UDP replies capped, then not while a TCP connection is open, then capped again" \
	tb_evl $PY "$here/tcpclient.py" udptrust "$S4" "$P"
tb_serve_stop || fail=1
tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach (trust) failed"
exit $fail
