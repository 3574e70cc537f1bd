#!/bin/bash
# SPDX-License-Identifier: MIT
# The fault test of TCP answered in XDP: while many connections do verified
# mixed traffic (tcpfault.py: sets, gets of one and two keys, deletes, every
# reply checked byte for byte), a BPF program on the client's veth end
# (tests/lib/tcpfault.bpf.c) drops and duplicates a share of the TCP
# segments in both directions.  Passes with 0 wrong replies, no connection
# stalled (a reply later than 20 s) or reset, XDP answering requests and
# sending some replies again (their first copy lost), and serve's counters
# agreeing with the client's.
#
#   tests/e2e/tcpfault.sh [--layout L] [--duration S] [--conns N] [--clamped N] [--slow N]
#                         [--pipelined N] [--drop PM] [--dup PM] [--json FILE]
#
# Defaults: hash_map, 20 s, 32 connections plus 2 with an MSS clamped to
# 1260 (replies across it), 2 slow readers (a window near closed, a delete
# that must run once) and 8 pipelining (batches of 2-9 requests in one
# write, some writes noreply), 1 % dropped and 1 % duplicated each way (per
# mille: 10 and 10).  bench/tcpfault.sh runs it for longer.
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

layout=hash_map duration=20 conns=32 clamped=2 slow=2 pipelined=8 drop=10 dup=10 json=''
while (($#)); do
	case $1 in
	--layout) layout=$2; shift 2 ;;
	--duration) duration=$2; shift 2 ;;
	--conns) conns=$2; shift 2 ;;
	--clamped) clamped=$2; shift 2 ;;
	--slow) slow=$2; shift 2 ;;
	--pipelined) pipelined=$2; shift 2 ;;
	--drop) drop=$2; shift 2 ;;
	--dup) dup=$2; shift 2 ;;
	--json) json=$2; shift 2 ;;
	-h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "tcpfault.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
done
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
command -v clang >/dev/null || tb_die "clang is needed to build tests/lib/tcpfault.bpf.c"
PY=/usr/bin/python3

tb_up "${E2E_PREFIX:-xq$$}"
S4=$TB_SRV_IP4 P=$TB_PORT
obj=$TB_TMP/tcpfault.bpf.o
clang -O2 -g -target bpf -I"/usr/include/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)" \
	-DDROP_PM="$drop" -DDUP_PM="$dup" -DPORT="$P" -c "$here/../lib/tcpfault.bpf.c" -o "$obj" ||
	tb_die "cannot compile tcpfault.bpf.c"

tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 4096 --value-size 4096 --port "$P" >/dev/null ||
	tb_die "xdpkv attach ($layout) failed"
tb_pin_napi
tb_serve_tcp_start
# the faults on the client's end: XDP (in place of XDP_PASS) and TC both ways
ip -n "$TB_CLI_NS" link set dev "$TB_CLI_DEV" xdpdrv off
ip -n "$TB_CLI_NS" link set dev "$TB_CLI_DEV" xdpdrv obj "$obj" sec xdp || tb_die "cannot attach the XDP fault program"
tc -n "$TB_CLI_NS" qdisc add dev "$TB_CLI_DEV" clsact || tb_die "cannot add clsact on the client end"
for dir in ingress egress; do
	tc -n "$TB_CLI_NS" filter add dev "$TB_CLI_DEV" "$dir" bpf da obj "$obj" sec tc ||
		tb_die "cannot attach the TC fault program ($dir)"
done

if [[ -n ${TCPFAULT_PCAP:-} ]]; then
	ip netns exec "$TB_CLI_NS" tcpdump -i "$TB_CLI_DEV" -s 200 -w "$TCPFAULT_PCAP" tcp port "$P" >/dev/null 2>&1 &
	TB_PIDS+=($!)
	sleep 1
fi
x0=$(tb_counter fast tcpx_answered) r0=$(tb_counter fast tcpx_replayed) p0=$(tb_counter fast tcpx_pipelined)
out=$(tb_cli $PY "$here/tcpfault.py" "$S4" "$P" --conns "$conns" --duration "$duration" \
	--clamped "$clamped" --slow "$slow" --pipelined "$pipelined" 2>"$TB_TMP/client.err") || {
	cat "$TB_TMP/client.err" >&2
	# what the sockets say, for a stall
	ports=$(grep -oP 'port \K[0-9]+(?=\): no reply)' "$TB_TMP/client.err" | tr '\n' ' ' || true)
	echo "== the XDP responder's flows of the stalled connections ($ports)" >&2
	bpftool map dump pinned "$TB_PIN_DIR/tcpx_flows" -j 2>/dev/null | $PY -c 'import json, socket, sys
ports = {socket.htons(int(p)) for p in sys.argv[1:]}
for r in json.load(sys.stdin):
    f = r.get("formatted", r)
    if f["key"]["pport"] in ports:
        v = dict(f["value"])
        v.pop("r", None)
        print(socket.ntohs(f["key"]["pport"]), json.dumps(v))' $ports >&2 || true
	for ns in "$TB_CLI_NS" "$TB_SRV_NS"; do
		echo "== sockets in $ns (of the connections still open)" >&2
		ip netns exec "$ns" ss -tnio >&2 || true
	done
}
x1=$(tb_counter fast tcpx_answered) r1=$(tb_counter fast tcpx_replayed) p1=$(tb_counter fast tcpx_pipelined)
# the fault counters of this end's programs (each load has its own maps)
ids=$({ ip -d -n "$TB_CLI_NS" link show dev "$TB_CLI_DEV"; tc -n "$TB_CLI_NS" filter show dev "$TB_CLI_DEV" ingress
	tc -n "$TB_CLI_NS" filter show dev "$TB_CLI_DEV" egress; } | grep -oP '(prog/xdp id|\bid) \K[0-9]+' | sort -u | tr '\n' ' ')
faults=$($PY - $ids <<'PY' || echo '{}'
import json, subprocess, sys
progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True).stdout)
t = [0] * 4
for p in progs:
    if str(p.get("id")) in sys.argv[1:] and p.get("name") in ("xdp_fault", "tc_fault"):
        for m in p.get("map_ids", []):
            rows = json.loads(subprocess.run(["bpftool", "map", "dump", "id", str(m), "-j"],
                                             capture_output=True, text=True).stdout or "[]")
            for r in rows:
                r = r.get("formatted", r)
                for v in r.get("values", []):
                    t[int(r["key"])] += int(v["value"])
print(json.dumps({"server_dropped": t[0], "client_dropped": t[1], "server_duplicated": t[2],
                  "client_duplicated": t[3]}))
PY
)
row=$($PY -c 'import json,sys
r = json.loads(sys.argv[1] or "{}")
r.update(json.loads(sys.argv[2]))
r.update({"layout": sys.argv[3], "drop_pm": int(sys.argv[4]), "dup_pm": int(sys.argv[5]),
          "xdp_answered": int(sys.argv[6]), "xdp_sent_again": int(sys.argv[7]),
          "xdp_pipelined_segments": int(sys.argv[8])})
print(json.dumps(r))' "$out" "$faults" "$layout" "$drop" "$dup" $((x1 - x0)) $((r1 - r0)) $((p1 - p0)))
echo "$row"
[[ -z $json ]] || echo "$row" >>"$json"
tb_xdpkv status "$TB_SRV_DEV" | grep -E "^ +TCP" || true
field() { $PY -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2], -1))' "$row" "$1"; }
check "$layout: verified traffic under faults: some requests done ($(field ops))" test "$(field ops)" -gt 100
check "$layout: ... 0 wrong replies" test "$(field wrong)" = 0
check "$layout: ... 0 connections stalled" test "$(field stalls)" = 0
check "$layout: ... 0 connections reset" test "$(field resets)" = 0
check "$layout: ... XDP answered requests ($((x1 - x0)))" test $((x1 - x0)) -gt 0
((pipelined == 0)) || check "$layout: ... XDP answered segments of several requests ($((p1 - p0)))" \
	test $((p1 - p0)) -gt 0
if ((drop > 0)); then
	check "$layout: ... segments were dropped both ways" \
		test "$(field server_dropped)" -gt 0 -a "$(field client_dropped)" -gt 0
	check "$layout: ... XDP sent replies again ($((r1 - r0)))" test $((r1 - r0)) -gt 0
fi
((dup == 0)) || check "$layout: ... segments were duplicated both ways" \
	test "$(field server_duplicated)" -gt 0 -a "$(field client_duplicated)" -gt 0
exit $fail
