#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memaslap over TCP against memcached and `xdpkv serve` at 1..N server threads
# (issue 19's measurement): requests per second and server CPU per request.
#
#   bench/tcpscale.sh [--threads 1,2,4,8] [--duration 10] [--servers LIST]
#                     [--server-cpus 8-15] [--client-cpus 0-7] [--conns 32]
#                     [--layout hash_map] [--perf DIR] [--json FILE] [--build-dir DIR]
#
# One veth test bed (tests/lib/testbed.sh) with as many queues as server
# CPUs; the server namespace's NAPI threads and the server on --server-cpus,
# memaslap (Debian's memcaslap) on --client-cpus with -T min(N, client CPUs)
# and -c conns*N connections: 16-byte keys, 128-byte values, 90 % gets (the
# keys carry bytes 0x10-0x1f, so xdpkv is attached with --binary-keys).
# Servers: memcached (-t N), xdpkv (serve --threads N, kernel TCP path on),
# xdpkv-nofast (serve --threads N --no-tcp-fast-path).  Server CPU per
# request = busy time of the server CPUs (/proc/stat: all but idle and
# iowait, whoever spent it) over memaslap's requests.  A run whose memaslap
# saw an error reply, a failed verification or no gets is reported and the
# script exits 1.  Defaults fit this 2-CPU VM: server on CPU 1, client on
# CPU 0, threads 1.  --perf DIR: `perf record -g` of the server CPUs for
# each run (DIR/<server>-<N>.data; `perf report -i` it).
# One JSON line per run on stdout (and appended to --json FILE).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
threads=1 duration=10 servers=memcached,xdpkv,xdpkv-nofast scpus=1 ccpus=0 conns=32
layout=hash_map perfdir= json= build=$here/../build
usage() { sed -n '3,24p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
	case $1 in
	--threads) threads=$2; shift 2 ;;
	--duration) duration=$2; shift 2 ;;
	--servers) servers=$2; shift 2 ;;
	--server-cpus) scpus=$2; shift 2 ;;
	--client-cpus) ccpus=$2; shift 2 ;;
	--conns) conns=$2; shift 2 ;;
	--layout) layout=$2; shift 2 ;;
	--perf) perfdir=$2; shift 2 ;;
	--json) json=$2; shift 2 ;;
	--build-dir) build=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "bench/tcpscale.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
done
XDPKV=${XDPKV:-$build/cli/xdpkv}
PY=${PYTHON:-python3} # the kit's on a larger machine (bench/devkit.sh)
[[ -x $XDPKV ]] || { echo "bench/tcpscale.sh: build first ($XDPKV)" >&2; exit 2; }
command -v memcaslap >/dev/null || { echo "bench/tcpscale.sh: memcaslap missing (apt-get install libmemcached-tools)" >&2; exit 2; }
command -v memcached >/dev/null || { echo "bench/tcpscale.sh: memcached missing (apt-get install memcached)" >&2; exit 2; }
[[ -z $perfdir ]] || command -v perf >/dev/null || { echo "bench/tcpscale.sh: --perf needs perf (linux-perf)" >&2; exit 2; }

# "8-15" or "1,3" -> one CPU a line
cpu_list() { "$PY" -c 'import sys
out = []
for part in sys.argv[1].split(","):
    a, _, b = part.partition("-")
    out += range(int(a), int(b or a) + 1)
print(" ".join(map(str, out)))' "$1"; }
read -ra SCPU <<<"$(cpu_list "$scpus")"
read -ra CCPU <<<"$(cpu_list "$ccpus")"
IFS=, read -ra NLIST <<<"$threads"
IFS=, read -ra SLIST <<<"$servers"

# shellcheck source=../tests/lib/testbed.sh
. "$here/../tests/lib/testbed.sh"
TB_SERVER_CPU=$scpus TB_CLIENT_CPU=$ccpus TB_QUEUES=${#SCPU[@]}
[[ -f $build/tests/xdp_pass.bpf.o ]] && TB_XDP_PASS_OBJ=$build/tests/xdp_pass.bpf.o
tb_up "xts$$"
PASS_OBJ=$(tb_xdp_pass_obj)
# the client's NAPI threads (the replies' receive side) on the client CPUs
tb_pin_napi_spread "$TB_CLI_NS" "$TB_CLI_DEV" "$ccpus"

cfg=$here/memaslap.cfg # 16-byte keys, 128-byte values, 90 % gets

busy() { # busy jiffies of the server CPUs
	awk -v l=" ${SCPU[*]} " '$1 ~ /^cpu[0-9]+$/ && index(l, " " substr($1, 4) " ") {
		s += $2 + $3 + $4 + $7 + $8 + $9 } END { print s }' /proc/stat
}

run() { # SERVER N
	local srv=$1 n=$2 pid ct log=$TB_TMP/memaslap.$1.$2.log perfpid= rc=0
	ct=$((n < ${#CCPU[@]} ? n : ${#CCPU[@]}))
	case $srv in
	memcached)
		# XDP_PASS on the server end: the same NAPI threads as xdpkv's runs
		tb_run ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv obj "$PASS_OBJ" sec xdp ||
			tb_die "cannot attach XDP_PASS to $TB_SRV_DEV"
		tb_ns_bg "$TB_SRV_NS" "$scpus" memcached -u nobody -t "$n" -p "$TB_PORT" -U 0 \
			-l "$TB_SRV_IP4" -m 2048 -c 4096
		pid=$TB_LAST_PID ;;
	xdpkv | xdpkv-nofast)
		local extra=()
		[[ $srv = xdpkv-nofast ]] && extra=(--no-tcp-fast-path)
		# a new key with every set: room for the run's sets at 200k/s per thread
		local entries=$((1 << 20))
		while ((entries < duration * n * 40000 + 100000)); do entries=$((entries * 2)); done
		tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --mode native --entries "$entries" \
			--key-size 16 --value-size 256 --binary-keys --port "$TB_PORT" >/dev/null
		tb_ns_bg "$TB_SRV_NS" "$scpus" "$XDPKV" serve "$TB_SRV_DEV" --threads "$n" "${extra[@]}"
		pid=$TB_LAST_PID ;;
	*) tb_die "unknown server $srv (memcached, xdpkv, xdpkv-nofast)" ;;
	esac
	tb_pin_napi_spread "$TB_SRV_NS" "$TB_SRV_DEV" "$scpus" 2>/dev/null
	tb_wait_listen "$TB_SRV_NS" "$TB_PORT" 200 "$pid" || tb_die "$srv did not listen on TCP $TB_PORT"
	# warm-up: connections made, the first keys set
	tb_run nsenter --net="/run/netns/$TB_CLI_NS" -- taskset -c "$ccpus" memcaslap -s "$TB_SRV_IP4:$TB_PORT" \
		-F "$cfg" -T "$ct" -c $((conns * n)) -t 2s >/dev/null 2>&1 || true
	if [[ -n $perfdir ]]; then
		mkdir -p "$perfdir"
		perf record -q -g -C "$scpus" -o "$perfdir/$srv-$n.data" -- sleep $((duration + 1)) \
			>/dev/null 2>&1 &
		perfpid=$!
	fi
	local b0 b1
	b0=$(busy)
	tb_run nsenter --net="/run/netns/$TB_CLI_NS" -- taskset -c "$ccpus" memcaslap -s "$TB_SRV_IP4:$TB_PORT" \
		-F "$cfg" -T "$ct" -c $((conns * n)) -t "${duration}s" --verify=0.01 >"$log" 2>&1 || rc=$?
	b1=$(busy)
	[[ -z $perfpid ]] || wait "$perfpid" || true
	local fast='{}'
	if [[ $srv != memcached ]]; then
		fast=$(tb_xdpkv status "$TB_SRV_DEV" --json | "$PY" -c 'import json,sys
c = json.load(sys.stdin)["counters"]
print(json.dumps({"tcp_fast": c["fast"].get("tcp_fast", 0), "tcp_slow": c["slow"].get("tcp_slow", 0)}))')
	fi
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	if [[ $srv = memcached ]]; then
		tb_run ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv off
	else
		tb_xdpkv detach "$TB_SRV_DEV" >/dev/null
	fi
	"$PY" - "$srv" "$n" "$ct" "$((conns * n))" "$rc" "$log" "$((b1 - b0))" "$(getconf CLK_TCK)" \
		"$fast" "$duration" "$scpus" "$ccpus" "$layout" <<'PY'
import json, re, sys
srv, n, ct, nc, rc, log, busy, hz, fast, dur, scpus, ccpus, layout = sys.argv[1:]
text = open(log, errors="replace").read()
def last(name):
    m = re.findall(r"^%s:\s*(\d+)" % name, text, re.M)
    return int(m[-1]) if m else None
tps = re.findall(r"TPS:\s*(\d+)", text)
ops = re.findall(r"Run time:.*?Ops:\s*(\d+)", text, re.S)
errors = len(re.findall(r"^<\d+ (ERROR|CLIENT_ERROR|SERVER_ERROR)", text, re.M))
row = {"server": srv, "threads": int(n), "client_threads": int(ct), "conns": int(nc), "layout": layout if srv != "memcached" else None,
       "tps": int(tps[-1]) if tps else None, "ops": int(ops[-1]) if ops else None,
       "gets": last("cmd_get"), "get_misses": last("get_misses"), "verify_failed": last("verify_failed"),
       "error_replies": errors, "memaslap_rc": int(rc), "duration_s": int(dur),
       "server_cpus": scpus, "client_cpus": ccpus, **json.loads(fast)}
if row["ops"] and row["tps"]:
    row["server_us_per_req"] = round(int(busy) / int(hz) / row["ops"] * 1e6, 2)
    row["server_cpu_s"] = round(int(busy) / int(hz), 2)
if "tcp_fast" in row:
    tot = row["tcp_fast"] + row["tcp_slow"]
    row["kernel_share"] = round(row["tcp_fast"] / tot, 3) if tot else 0.0
row["ok"] = bool(row["tps"] and row["gets"] and not errors and not row["verify_failed"] and not int(rc))
print(json.dumps(row), flush=True)
PY
}

echo "# $(date -u '+%F %T') UTC, $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); server CPUs $scpus, client CPUs $ccpus, ${duration}s per run" >&2
bad=0
for n in "${NLIST[@]}"; do
	for s in "${SLIST[@]}"; do
		line=$(run "$s" "$n")
		echo "$line"
		[[ -z $json ]] || echo "$line" >>"$json"
		[[ $line == *'"ok": true'* ]] || { echo "bench/tcpscale.sh: a bad run: $line (log $TB_TMP/memaslap.$s.$n.log)" >&2; bad=1; }
	done
done
exit $bad
