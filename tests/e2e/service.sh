#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: what xdpkv@IFACE.service runs, without systemd (issue 8).
#   tests/e2e/service.sh [LAYOUT]
# 1. xdpkv-service start (attach) and 'xdpkv serve' under the unit's own
#    CapabilityBoundingSet (setpriv), serve with a fake NOTIFY_SOCKET that
#    must receive READY=1 once serving, then STOPPING=1 on SIGTERM, which also
#    writes the snapshot.
# 2. status --prometheus after UDP traffic, read by a strict parser
#    (promcheck.py): HELP/TYPE per family, labels, numbers, and the counts;
#    memcached_exporter's families; docs/cli.md's metric table against the
#    output (promdoc.py); an unattached interface prints nothing, exit 1.
# 3. xdpkv-service stop keeps the store (XDPKV_PURGE=no); start again keeps
#    it ("still attached"); with XDPKV_PURGE=yes stop detaches; start then
#    restores the snapshot.
# Environment: XDPKV (CLI), XKV_SERVICE (the configured xdpkv-service),
# XKV_UNIT (the configured xdpkv@.service), E2E_PREFIX.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"
layout=${1:-lru}
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV"
tb_up "${E2E_PREFIX:-xv$$}"
dev=$TB_SRV_DEV
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$XKV_UNIT" | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ /,/g')
echo "the unit's bounding set: $caps"
as_unit() { tb_srv setpriv --bounding-set=-all,"$caps" --inh-caps=-all -- "$@"; }
export XDPKV XDPKV_LAYOUT=$layout XDPKV_ATTACH_ARGS="--entries 4096" XDPKV_PURGE=no
snapdir=$TB_TMP/state; install -d -o nobody -m 0750 "$snapdir"
export XDPKV_SNAPSHOT=$snapdir/$dev.snap
check "start: attach under the unit's capabilities" as_unit "$XKV_SERVICE" start "$dev"
# the fake systemd: a unix datagram socket collecting what serve sends
chmod 0711 "$TB_TMP" # serve sends READY=1 as nobody (systemd's socket is world-writable)
sock=$TB_TMP/notify.sock
python3 -c 'import socket,sys
s=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM); s.bind(sys.argv[1])
import os; os.chmod(sys.argv[1],0o777)
s.settimeout(30)
with open(sys.argv[2],"w") as f:
    while True:
        try: m=s.recv(4096).decode()
        except socket.timeout: break
        f.write(m.replace("\n"," ")+"\n"); f.flush()
        if "STOPPING=1" in m: break' "$sock" "$TB_TMP/notify.log" &
rx=$!
for _ in $(seq 300); do [[ -S $sock ]] && break; sleep 0.1; done
# not through as_unit: a function run with & would put a subshell between $! and serve
NOTIFY_SOCKET=$sock nsenter --net="/run/netns/$TB_SRV_NS" -- taskset -c "$TB_SERVER_CPU" \
	setpriv --bounding-set=-all,"$caps" --inh-caps=-all -- "$XDPKV" serve "$dev" --user nobody \
	--snapshot-file "$XDPKV_SNAPSHOT" --snapshot-every 60 2>"$TB_TMP/serve.log" &
srv=$!
for _ in $(seq 300); do grep -q READY=1 "$TB_TMP/notify.log" 2>/dev/null && break; sleep 0.1; done
check "serve sent READY=1 to NOTIFY_SOCKET" grep -q READY=1 "$TB_TMP/notify.log"
# UDP traffic: sets and gets through the fast path, 'stats' through the slow path
tb_cli python3 - "$TB_SRV_IP4" "$TB_PORT" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
def ask(i, req):
    s.sendto(struct.pack("!HHHH", i, 0, 1, 0) + req, (sys.argv[1], int(sys.argv[2])))
    return s.recv(65536)[8:]
for i in range(5):
    assert ask(i, b"set k%d 0 0 2\r\nv%d\r\n" % (i, i)) == b"STORED\r\n"
for i in range(7):
    ask(100 + i, b"get k%d\r\n" % i)
assert b"STAT" in ask(200, b"stats\r\n")
PY
check "UDP traffic answered" test $? -eq 0
tb_xdpkv status "$dev" --prometheus >"$TB_TMP/metrics.prom"
check "status --prometheus passes the strict reader" \
	bash -c 'python3 "$1" "$2" >"$3"' _ "$here/promcheck.py" "$TB_TMP/metrics.prom" "$TB_TMP/samples"
val() { grep -F "$1=" "$TB_TMP/samples" | head -1 | cut -d= -f2-; }
val2() { grep -F "$1}=" "$TB_TMP/samples" | head -1 | sed 's/.*}=//'; }
check "xdpkv_curr_items 5" test "$(val 'xdpkv_curr_items{}')" = 5
check "memcached_current_items = xdpkv_curr_items" test "$(val 'memcached_current_items{}')" = 5
check "xdpkv_get_hits_total 5" test "$(val 'xdpkv_get_hits_total{}')" = 5
check "xdpkv_get_misses_total 2" test "$(val 'xdpkv_get_misses_total{}')" = 2
not() { ! "$@"; }
check "memcached_commands_total get hit 5" test "$(val2 'memcached_commands_total{command=get,status=hit')" = 5
check "fast path served >= 12" test "$(val2 'xdpkv_requests_total{path=fast')" -ge 12
check "slow path served >= 1 (stats)" test "$(val2 'xdpkv_requests_total{path=slow')" -ge 1
check "xdpkv_info carries the layout" grep -q "layout=\"$layout\"" "$TB_TMP/metrics.prom"
# memcached_exporter's names, and docs/cli.md's table against the output
esize=$(tb_xdpkv status "$dev" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["entry_size"])')
check "memcached_up 1" test "$(val 'memcached_up{}')" = 1
check "memcached_limit_bytes = 4096 entries x $esize B" test "$(val 'memcached_limit_bytes{}')" = $((4096 * esize))
check "memcached_current_bytes = 5 items x $esize B" test "$(val 'memcached_current_bytes{}')" = $((5 * esize))
check "memcached_items_evicted_total 0" test "$(val 'memcached_items_evicted_total{}')" = 0
check "memcached_current_connections 0 (no TCP client)" test "$(val 'memcached_current_connections{}')" = 0
check "one family per meaning: no xdpkv_counter_total" not grep -q '^xdpkv_counter_total' "$TB_TMP/metrics.prom"
check "docs/cli.md's metric table is the output's families, types and labels" \
	python3 "$here/promdoc.py" "$here/../../docs/cli.md" "$TB_TMP/metrics.prom"
# a TCP client connected: memcached_current_connections 1
tb_cli python3 -c 'import socket,sys,time
s=socket.create_connection((sys.argv[1],int(sys.argv[2]))); open(sys.argv[3],"w").close(); time.sleep(20)' \
	"$TB_SRV_IP4" "$TB_PORT" "$TB_TMP/connected" &
tcpc=$!
for _ in $(seq 100); do [[ -e $TB_TMP/connected ]] && break; sleep 0.1; done
conns() { tb_xdpkv status "$dev" --prometheus | sed -n 's/^memcached_current_connections{.*} //p'; }
check "memcached_current_connections 1 with a TCP client" test "$(conns)" = 1
kill "$tcpc" 2>/dev/null; wait "$tcpc" 2>/dev/null || true
# an interface that is not attached: nothing on stdout, exit 1
rc=0; tb_xdpkv status lo --prometheus >"$TB_TMP/lo.prom" 2>/dev/null || rc=$?
check "status lo --prometheus (not attached): exit 1 ($rc), nothing on stdout" test "$rc/$(wc -c <"$TB_TMP/lo.prom")" = 1/0
check "status --prometheus --json: usage error" bash -c '"$@"; test $? -eq 2' _ \
	nsenter --net="/run/netns/$TB_SRV_NS" "$XDPKV" status "$dev" --prometheus --json
kill -TERM "$srv"; rc=0; wait "$srv" || rc=$?
check "serve stops on SIGTERM with 0" test "$rc" -eq 0
wait "$rx" || true
check "serve sent STOPPING=1" grep -q STOPPING=1 "$TB_TMP/notify.log"
check "serve wrote the snapshot as nobody" test "$(stat -c %U "$XDPKV_SNAPSHOT" 2>/dev/null)" = nobody
check "stop with XDPKV_PURGE=no keeps the program" bash -c \
	'"$@" >/dev/null; nsenter --net=/run/netns/'"$TB_SRV_NS"' "$XDPKV" status '"$dev"' --prometheus | grep -q "^xdpkv_attached{.*} 1$"' \
	_ setpriv --bounding-set=-all,"$caps" -- "$XKV_SERVICE" stop "$dev"
check "start again keeps the attached store" bash -c 'as_out=$("$@"); grep -q "still attached" <<<"$as_out"' \
	_ nsenter --net="/run/netns/$TB_SRV_NS" setpriv --bounding-set=-all,"$caps" -- "$XKV_SERVICE" start "$dev"
check "stop with XDPKV_PURGE=yes detaches" env XDPKV_PURGE=yes nsenter --net="/run/netns/$TB_SRV_NS" \
	setpriv --bounding-set=-all,"$caps" -- "$XKV_SERVICE" stop "$dev"
check "start restores the snapshot under the unit's capabilities" as_unit "$XKV_SERVICE" start "$dev"
check "5 items back after restore" bash -c \
	'nsenter --net=/run/netns/'"$TB_SRV_NS"' "$XDPKV" status '"$dev"' --prometheus | grep -q "^xdpkv_curr_items{.*} 5$"'
exit $fail
