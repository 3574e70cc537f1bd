#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The client matrix: real memcached clients and their patterns (rows, listed
# in bench/clients/clients.py) against xdpkv (the default attach, `serve --threads
# 1`) and memcached (-t 1) in the same sitting.  For each row and server:
# requests/s, server CPU per request (CPU 1's busy time from /proc/stat over
# the run, whoever spent it, over the requests; "own": the CPU time of the
# server process and its NAPI thread alone), for xdpkv the share of its
# TCP requests answered in XDP (tcpx_answered over tcp_fast + tcpx_answered
# + tcp_slow, from `xdpkv status --json`), and for both the share of the
# client's TCP segments that never reached the server's TCP stack (1 - the
# server namespace's TcpInSegs / the client namespace's TcpOutSegs less its
# loopback packets, over the run: as bench/tcpscale.sh).
#
#   bench/clients/clients.sh [--duration 5] [--rows LIST] [--layout NAME]
#                    [--build-dir DIR] [--json FILE]
#
# One veth test bed (tests/lib/testbed.sh): the server, its NAPI thread on
# CPU 1; the client, its veth end's NAPI thread and (nutcracker rows) the
# proxy, nutcracker, in the client namespace on 127.0.0.1, on CPU 0.  memcached's end gets an XDP_PASS program,
# so both servers take the same NAPI path.  Each (row, server) starts a fresh
# server, preloads the keys the row reads, then runs the row's client for
# --duration seconds; every reply is checked (bench/clients/clients.py).  memaslap
# rows attach xdpkv with 1,048,576 entries (its keys carry bytes 0x10-0x1f,
# which the default key rule takes, as memcached), the others with 262,144.
# --layout: xdpkv's layout (default: attach's own).  One JSON line per (row,
# server) on stdout (and appended to --json FILE), then a table on stderr:
# req/s, µs of server CPU per request, xdp share, unseen share, xdpkv's
# req/s and CPU/req over memcached's; "noisy" where others (neither the
# server nor its NAPI thread) used over 20 % of CPU 1 during the run.  A row whose client is not installed
# is reported skipped with the reason; a run with a wrong reply or an error
# is ok false and the script exits 1.  XDPKV overrides the CLI;
# XKV_CLIENTS_KEEP=DIR keeps each run's files (client result and log, xdpkv
# status before and after) in DIR/ROW.SERVER/.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
duration=5 rows='' layout='' json='' build=$here/../../build
usage() { awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; }
while (($#)); do
	case $1 in
	--duration) duration=$2; shift 2 ;;
	--rows) rows=$2; shift 2 ;;
	--layout) layout=$2; shift 2 ;;
	--build-dir) build=$2; shift 2 ;;
	--json) json=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "bench/clients/clients.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
done
XDPKV=${XDPKV:-$build/cli/xdpkv}
PY=/usr/bin/python3
CPY=$here/clients.py
[[ -x $XDPKV ]] || { echo "bench/clients/clients.sh: build first ($XDPKV)" >&2; exit 2; }
command -v memcached >/dev/null || { echo "bench/clients/clients.sh: memcached missing (apt-get install memcached)" >&2; exit 2; }
[[ $duration =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "bench/clients/clients.sh: --duration '$duration': seconds" >&2; exit 2; }

# the rows: NAME WHY ('-': runnable; else why it is skipped, _ for spaces)
declare -A WHY=()
ALL=()
while read -r name why; do
	ALL+=("$name")
	WHY[$name]=${why//_/ }
done < <("$PY" "$CPY" rows)
if [[ -n $rows ]]; then
	IFS=, read -ra RLIST <<<"$rows"
	for r in "${RLIST[@]}"; do
		[[ -n ${WHY[$r]+x} ]] || { echo "bench/clients/clients.sh: unknown row $r (one of: ${ALL[*]})" >&2; exit 2; }
	done
else
	RLIST=("${ALL[@]}")
fi
lopt=()
[[ -z $layout ]] || lopt=(--layout "$layout")

# shellcheck source=../../tests/lib/testbed.sh
. "$here/../../tests/lib/testbed.sh"
# shellcheck disable=SC2034 # read by testbed.sh
[[ -f $build/tests/xdp_pass.bpf.o ]] && TB_XDP_PASS_OBJ=$build/tests/xdp_pass.bpf.o
tb_up "xcm$$"
[[ -z $layout ]] || tb_need_layout "$layout"
PASS_OBJ=$(tb_xdp_pass_obj)
# the replies' receive side (the client's NAPI thread) on the client CPU
tb_pin_napi_spread "$TB_CLI_NS" "$TB_CLI_DEV" "$TB_CLIENT_CPU"
OUT=$TB_TMP/rows.jsonl
: >"$OUT"

# SERVER-side start for one run; the server's PID in pid
start() { # ROW SERVER
	local extra
	if [[ $2 == memcached ]]; then
		tb_run ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv obj "$PASS_OBJ" sec xdp ||
			tb_die "cannot attach XDP_PASS to $TB_SRV_DEV"
		tb_srv_bg memcached -u nobody -t 1 -p "$TB_PORT" -U 0 -l "$TB_SRV_IP4" -m 1024 -c 4096
	else
		read -ra extra <<<"$("$PY" "$CPY" attach "$1")"
		tb_xdpkv "${lopt[@]}" attach "$TB_SRV_DEV" "${extra[@]}" >/dev/null
		tb_srv_bg "$XDPKV" serve "$TB_SRV_DEV" --threads 1
	fi
	pid=$TB_LAST_PID
	tb_pin_napi 2>/dev/null
	tb_wait_listen "$TB_SRV_NS" "$TB_PORT" 300 "$pid" || tb_die "$2 did not listen on TCP $TB_PORT"
}
stop() { # SERVER
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	if [[ $1 == memcached ]]; then
		tb_run ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv off
	else
		tb_xdpkv detach "$TB_SRV_DEV" >/dev/null
	fi
}
# the run's packet counters: server TcpInSegs, client TcpOutSegs, client lo tx
segs() {
	echo "$(tb_tcp_segs "$TB_SRV_NS" InSegs) $(tb_tcp_segs "$TB_CLI_NS" OutSegs)" \
		"$(ip netns exec "$TB_CLI_NS" cat /sys/class/net/lo/statistics/tx_packets)"
}
# CPU time (jiffies) of these processes so far, all their threads: the
# server and its NAPI kthread, robust to other load on CPU 1
ptime() {
	local p f s=0 a
	for p; do
		f=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		read -ra a <<<"${f##*) }"
		s=$((s + a[11] + a[12]))
	done
	echo "$s"
}
status() { # FILE: xdpkv's counters after the slow path's next push (0.3 s)
	sleep 0.3
	tb_xdpkv status "$TB_SRV_DEV" --json >"$1" 2>/dev/null || echo '{}' >"$1"
}

run() { # ROW SERVER: one JSON line
	local row=$1 srv=$2 d=$TB_TMP/$1.$2 s0 s1 b0 b1 o0 o1 t0 t1 pid
	mkdir -p "$d"
	start "$row" "$srv"
	if ! tb_cli "$PY" "$CPY" preload "$row" "$TB_SRV_IP4" "$TB_PORT" >"$d/preload.log" 2>&1; then
		echo "{\"error\": \"preload failed: $(tail -c 300 "$d/preload.log" | tr -d '"\\\n')\"}" >"$d/result"
	else
		[[ $srv == memcached ]] || status "$d/st0"
		local own
		mapfile -t own < <(echo "$pid"; tb_napi_pids)
		s0=$(segs) b0=$(tb_busy "$TB_SERVER_CPU") o0=$(ptime "${own[@]}") t0=$EPOCHREALTIME
		tb_cli "$PY" "$CPY" run "$row" "$TB_SRV_IP4" "$TB_PORT" "$duration" >"$d/result" 2>"$d/client.log" || true
		b1=$(tb_busy "$TB_SERVER_CPU") o1=$(ptime "${own[@]}") t1=$EPOCHREALTIME s1=$(segs)
		[[ $srv == memcached ]] || status "$d/st1"
	fi
	stop "$srv"
	[[ -z ${XKV_CLIENTS_KEEP:-} ]] || cp -r "$d" "$XKV_CLIENTS_KEEP/"
	"$PY" "$CPY" report "$row" "$srv" "$d/result" "$((${b1:-0} - ${b0:-0})) $((${o1:-0} - ${o0:-0}))" "$(getconf CLK_TCK)" \
		"${s0:-0 0 0} ${s1:-0 0 0}" "$d/st0" "$d/st1" "$duration" "${layout:-default}" \
		"$(awk -v a="${t0:-0}" -v b="${t1:-0}" 'BEGIN { print b - a }')"
}

echo "# $(date -u '+%F %T') UTC, $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg);" \
	"server CPU $TB_SERVER_CPU, client CPU $TB_CLIENT_CPU, ${duration}s per run, $(memcached -V)" >&2
bad=0
for r in "${RLIST[@]}"; do
	for s in memcached xdpkv; do
		if [[ ${WHY[$r]} != - ]]; then
			line=$("$PY" -c 'import json, sys; print(json.dumps({"row": sys.argv[1], "server": sys.argv[2],
"skipped": sys.argv[3], "ok": None}))' "$r" "$s" "${WHY[$r]}")
		else
			# a run that died (tb_die in its subshell): reported, its server removed
			line=$(run "$r" "$s") || {
				line="{\"row\": \"$r\", \"server\": \"$s\", \"error\": \"the run died (server start?)\", \"ok\": false}"
				tb_kill_ns_pids
				tb_xdpkv detach "$TB_SRV_DEV" >/dev/null 2>&1 || true
				ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv off 2>/dev/null || true
			}
		fi
		echo "$line"
		echo "$line" >>"$OUT"
		[[ -z $json ]] || echo "$line" >>"$json"
		if [[ $line == *'"ok": false'* ]]; then
			echo "bench/clients/clients.sh: a bad run: $line (XKV_CLIENTS_KEEP=DIR keeps its files)" >&2
			bad=1
		fi
	done
done
"$PY" "$CPY" table "$OUT" >&2
exit $bad
