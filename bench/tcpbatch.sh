#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A client that pipelines in batches, against xdpkv with the TCP kernel path
# on and off, and against memcached (-t 1) in the same run:
# pymemcache (Debian's python3-pymemcache) on 8 connections, each round a
# set_many of --batch keys (noreply, pymemcache's default: one segment of
# noreply sets), then a get_many of the same keys (one multi-key get), every
# value checked.  How much of it the kernel answers, and the server CPU per
# request (CPU 1's busy time over the requests, whoever spent it).
#
#   bench/tcpbatch.sh [--rounds 3] [--duration 5] [--batch 8] [--value-size 100]
#                     [--layout hash_map] [--build-dir DIR]
#
# One veth test bed (tests/lib/testbed.sh): the layout attached to the server
# end (memcached: XDP_PASS, the same NAPI path), its NAPI thread and `xdpkv
# serve --threads 1` (or memcached) on CPU 1, the client on CPU 0.  Rounds
# alternate the order.  One JSON line per run: mode (on, off, memcached),
# requests/s (a set_many of B keys is B requests), server µs per request,
# kernel share of TCP requests.  XDPKV overrides the CLI.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rounds=3 duration=5 batch=8 vsize=100 layout=hash_map build=$here/../build
usage() { sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--duration) duration=$2; shift 2 ;;
	--batch) batch=$2; shift 2 ;;
	--value-size) vsize=$2; shift 2 ;;
	--layout) layout=$2; shift 2 ;;
	--build-dir) build=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "bench/tcpbatch.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
done
XDPKV=${XDPKV:-$build/cli/xdpkv}
PY=/usr/bin/python3
[[ -x $XDPKV ]] || { echo "bench/tcpbatch.sh: build first ($XDPKV)" >&2; exit 2; }
$PY -c 'import pymemcache' 2>/dev/null || { echo "bench/tcpbatch.sh: python3-pymemcache missing" >&2; exit 2; }
# shellcheck source=../tests/lib/testbed.sh
. "$here/../tests/lib/testbed.sh"
tb_up "xtb$$"
command -v memcached >/dev/null || { echo "bench/tcpbatch.sh: memcached missing" >&2; exit 2; }
PASS_OBJ=$(tb_xdp_pass_obj)

# the client: 8 connections served round robin from one thread (pymemcache
# blocks on each reply), for SECONDS; prints requests and wrong values
client() { # SECONDS
	tb_cli $PY - "$TB_SRV_IP4" "$TB_PORT" "$1" "$batch" "$vsize" <<'PY'
import json, sys, time
from pymemcache.client.base import Client
host, port, secs, batch, vsize = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
cs = [Client((host, port), connect_timeout=5, timeout=5, no_delay=True) for _ in range(8)]
reqs = wrong = rounds = 0
end = time.time() + secs
while time.time() < end:
    for i, c in enumerate(cs):
        keys = ["b%d-%d-%d" % (i, rounds % 64, k) for k in range(batch)]
        vals = {k: (k.encode() * (vsize // len(k) + 1))[:vsize] for k in keys}
        c.set_many(vals, noreply=True)
        got = c.get_many(keys)
        wrong += sum(got.get(k) != v for k, v in vals.items())
        reqs += batch + 1
    rounds += 1
print(json.dumps({"requests": reqs, "wrong": wrong}))
PY
}
run() { # on|off|memcached
	local extra=() b0 b1 k0=0 k1=0 u0=0 u1=0 out pid
	if [[ $1 = memcached ]]; then
		tb_run ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv obj "$PASS_OBJ" sec xdp ||
			tb_die "cannot attach XDP_PASS"
		tb_pin_napi
		tb_srv_bg memcached -u nobody -t 1 -p "$TB_PORT" -U 0 -l "$TB_SRV_IP4" -m 1024
		pid=$TB_LAST_PID
		tb_wait_listen "$TB_SRV_NS" "$TB_PORT" 200 "$pid" || tb_die "memcached did not listen"
	else
		[[ $1 = off ]] && extra=(--no-tcp-fast-path)
		# entries sized to the values (a hash_map update copies the whole entry)
		tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 65536 \
			--value-size $((vsize > 256 ? vsize : 256)) \
			--port "$TB_PORT" >/dev/null
		tb_pin_napi
		tb_serve_start --threads 1 "${extra[@]}"
	fi
	sleep 0.3
	client 1 >/dev/null # warm-up: connections, keys
	sleep 0.3
	[[ $1 = memcached ]] || { k0=$(tb_counter fast tcp_fast) u0=$(tb_counter slow tcp_slow); }
	b0=$(tb_busy 1)
	out=$(client "$duration")
	b1=$(tb_busy 1)
	sleep 0.3
	if [[ $1 = memcached ]]; then
		kill -TERM "$pid"
		wait "$pid" 2>/dev/null || true
		tb_run ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv off
	else
		k1=$(tb_counter fast tcp_fast) u1=$(tb_counter slow tcp_slow)
		tb_serve_stop
		tb_xdpkv detach "$TB_SRV_DEV" >/dev/null
	fi
	$PY - "$1" "$out" "$((b1 - b0))" "$(getconf CLK_TCK)" "$((k1 - k0))" "$((u1 - u0))" "$duration" \
		"$batch" "$vsize" "$layout" <<'PY'
import json, sys
mode, out, busy, hz, k, u, secs, batch, vsize, layout = sys.argv[1:]
out = json.loads(out)
n, secs = out["requests"], float(secs)
row = {"mode": mode, "layout": layout if mode != "memcached" else None, "batch": int(batch), "value_size": int(vsize),
       "requests": n, "req_per_s": round(n / secs), "wrong_values": out["wrong"],
       "server_us_per_req": round(int(busy) / int(hz) / n * 1e6, 2) if n else None,
       "tcp_kernel": int(k), "tcp_userspace": int(u),
       "kernel_share": round(int(k) / max(int(k) + int(u), 1), 3) if mode != "memcached" else None}
row["ok"] = bool(n and not out["wrong"])
print(json.dumps(row), flush=True)
sys.exit(0 if row["ok"] else 1)
PY
}
echo "# $(date -u '+%F %T') UTC, $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); $layout, batch $batch, values $vsize B, ${duration}s per run" >&2
for ((r = 1; r <= rounds; r++)); do
	if ((r % 2)); then run on; run off; run memcached; else run memcached; run off; run on; fi
done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)" >&2
