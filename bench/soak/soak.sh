#!/bin/bash
# SPDX-License-Identifier: MIT
# A soak with faults: mixed TCP + UDP writes and reads from several clients
# while `xdpkv serve` is killed with -9 and started again, the program is
# re-attached, snapshots are taken during the writes and the access lists
# change; then every acknowledged write is read back (ackcheck.py).
#
#   bench/soak/soak.sh [--minutes M] [--layout L] [--clients N] [--out FILE]
#
# Defaults: 5 minutes, hash_map, 4 clients (2 TCP, 2 UDP), one JSON line to
# results/soak-<date>.json and stdout.  Exit status 1 if an acknowledged
# write was lost (or a client failed).  lru: keep its keys below capacity
# (the store has 65536 entries, the clients 4 x 500 keys).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../tests/lib/testbed.sh
. "$here/../../tests/lib/testbed.sh"

minutes=5 layout=hash_map clients=4
out=$here/../../results/soak-$(date +%Y%m%d-%H%M%S).json
while (($#)); do
	case $1 in
	--minutes) minutes=$2; shift 2 ;;
	--layout) layout=$2; shift 2 ;;
	--clients) clients=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h|--help) sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "soak: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
mkdir -p "$(dirname "$out")"
secs=$((minutes * 60))

tb_up "${E2E_PREFIX:-sk$$}"
P=$TB_PORT S4=$TB_SRV_IP4
tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 65536 --value-size 1024 --port "$P" >/dev/null ||
	tb_die "attach failed"
tb_serve_tcp_start

pids=()
for ((i = 0; i < clients; i++)); do
	proto=tcp; ((i % 2)) && proto=udp
	tb_cli_bg /usr/bin/python3 "$here/ackcheck.py" load "$S4" "$P" --id "$i" --proto "$proto" \
		--seconds "$secs" --keys 500 --out "$TB_TMP/ack.$i.json"
	pids+=("$TB_LAST_PID")
done

faults=0 kills=0 snaps=0 acls=0 reattach=0
t0=$SECONDS
while ((SECONDS - t0 < secs)); do
	sleep 7
	case $((faults % 4)) in
	0)  kill -KILL "$TB_SERVE_PID" 2>/dev/null || true
	    wait "$TB_SERVE_PID" 2>/dev/null || true
	    TB_SERVE_PID=
	    tb_serve_tcp_start; kills=$((kills + 1)) ;;
	1)  tb_xdpkv_allcpus snapshot "$TB_SRV_DEV" "$TB_TMP/soak.snap" >/dev/null 2>&1 &&
		snaps=$((snaps + 1)) ;;
	2)  tb_xdpkv acl "$TB_SRV_DEV" add allow 192.0.2.0/24 >/dev/null &&
		tb_xdpkv acl "$TB_SRV_DEV" del allow 192.0.2.0/24 >/dev/null && acls=$((acls + 1)) ;;
	3)  tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 65536 --value-size 1024 \
		--port "$P" >/dev/null && reattach=$((reattach + 1)) ;;
	esac
	faults=$((faults + 1))
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
# the last word: every acknowledged write read back over TCP
kill -0 "$TB_SERVE_PID" 2>/dev/null || tb_serve_tcp_start
res=$(tb_cli /usr/bin/python3 "$here/ackcheck.py" check "$S4" "$P" "$TB_TMP"/ack.*.json) || rc=1
line=$(printf '{"layout": "%s", "minutes": %s, "clients": %s, "serve_kill9": %s, "snapshots": %s, "acl_changes": %s, "reattach": %s, "result": %s}' \
	"$layout" "$minutes" "$clients" "$kills" "$snaps" "$acls" "$reattach" "$res")
echo "$line" | tee "$out"
exit $rc
