#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# How much memory can one client make the server hold, and what do the other
# clients see meanwhile?  xdpkv serve and memcached in the same run, on one
# veth test bed (tests/lib/testbed.sh), the server on CPU 1, the client on 0.
#
#   bench/bigreply.sh [--conns 8] [--keys 4000] [--value 1000000] [--seconds 5]
#                     [--mget-keys 100] [--mget-seconds 3] [--build-dir DIR]
#                     [--baseline-cli PATH]
#
# abuse: a value of --value bytes stored, then --conns connections each send
# one get of --keys keys of it and read nothing, while one more sends "mn"
# every 5 ms (tests/e2e/bigreplyclient.py): the server's RSS before, its
# peak (VmHWM), the mn latencies, its CPU in the last second.  Both servers
# with 2 worker threads (memcached -t 2).
# mget: the cost of streaming for ordinary multi-gets: 8 connections, each
# round a get_many of --mget-keys keys of 100 bytes (pymemcache), every value
# checked; keys/s and the server process's CPU µs per key (its own
# utime + stime: the machine may be shared), for this build, for
# --baseline-cli (an xdpkv built before replies streamed, if given: mget
# only) and for memcached.  One JSON line per run.  XDPKV overrides the CLI.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
conns=8 keys=4000 value=1000000 seconds=5 mkeys=100 msecs=3 build=$here/../build baseline=
usage() { sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
	case $1 in
	--conns) conns=$2; shift 2 ;;
	--keys) keys=$2; shift 2 ;;
	--value) value=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--mget-keys) mkeys=$2; shift 2 ;;
	--mget-seconds) msecs=$2; shift 2 ;;
	--build-dir) build=$2; shift 2 ;;
	--baseline-cli) baseline=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "bench/bigreply.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
done
XDPKV=${XDPKV:-$build/cli/xdpkv}
PY=/usr/bin/python3
[[ -x $XDPKV ]] || { echo "bench/bigreply.sh: build first ($XDPKV)" >&2; exit 2; }
command -v memcached >/dev/null || { echo "bench/bigreply.sh: memcached missing" >&2; exit 2; }
$PY -c 'import pymemcache' 2>/dev/null || { echo "bench/bigreply.sh: python3-pymemcache missing" >&2; exit 2; }
# shellcheck source=../tests/lib/testbed.sh
. "$here/../tests/lib/testbed.sh"
tb_up "xbr$$"
PASS_OBJ=$(tb_xdp_pass_obj)
CLIENT=$here/../tests/e2e/bigreplyclient.py

# start SERVER (xdpkv CLI path, or "memcached"); its PID in pid
pid=
start() {
	if [[ $1 = memcached ]]; then
		tb_run ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv obj "$PASS_OBJ" sec xdp ||
			tb_die "cannot attach XDP_PASS"
		tb_pin_napi
		tb_srv_bg memcached -u nobody -t 2 -p "$TB_PORT" -U 0 -l "$TB_SRV_IP4" -m 1024
		pid=$TB_LAST_PID
		tb_wait_listen "$TB_SRV_NS" "$TB_PORT" 200 "$pid" || tb_die "memcached did not listen"
	else
		tb_srv "$1" attach "$TB_SRV_DEV" --entries 65536 --value-size 256 --big-memory 16 \
			--port "$TB_PORT" >/dev/null || tb_die "attach failed"
		tb_pin_napi
		XDPKV=$1 tb_serve_tcp_start
		pid=$TB_SERVE_PID
	fi
	sleep 0.3
}
stop() {
	if [[ $1 = memcached ]]; then
		kill -TERM "$pid"
		wait "$pid" 2>/dev/null || true
		tb_run ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv off
	else
		tb_serve_stop
		tb_srv "$1" detach "$TB_SRV_DEV" >/dev/null
	fi
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
label() { [[ $1 = memcached ]] && echo memcached || { [[ $1 = "$XDPKV" ]] && echo xdpkv || echo xdpkv-baseline; }; }

abuse() { # SERVER
	start "$1"
	local out
	out=$(tb_cli $PY "$CLIENT" abuse "$TB_SRV_IP4" "$TB_PORT" "$pid" --conns "$conns" \
		--keys "$keys" --value "$value" --seconds "$seconds" --json) || { stop "$1"; return 1; }
	stop "$1"
	$PY -c 'import json,sys; r=json.loads(sys.argv[2]); print(json.dumps({"bench": "abuse", "server": sys.argv[1], **r}))' \
		"$(label "$1")" "$out"
}

mget() { # SERVER
	start "$1"
	local b0 b1 out
	b0=$(cpu_ticks "$pid")
	out=$(tb_cli $PY - "$TB_SRV_IP4" "$TB_PORT" "$msecs" "$mkeys" <<'PY'
import json, sys, time
from pymemcache.client.base import Client
host, port, secs, nkeys = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
cs = [Client((host, port), connect_timeout=5, timeout=5, no_delay=True) for _ in range(8)]
keys = ["m%d" % k for k in range(nkeys)]
vals = {k: (k.encode() * 100)[:100] for k in keys}
cs[0].set_many(vals)
n = wrong = 0
end = time.time() + secs
while time.time() < end:
    for c in cs:
        got = c.get_many(keys)
        wrong += sum(got.get(k) != v for k, v in vals.items())
        n += nkeys
print(json.dumps({"keys": n, "wrong": wrong}))
PY
	)
	b1=$(cpu_ticks "$pid")
	stop "$1"
	$PY - "$(label "$1")" "$out" "$((b1 - b0))" "$(getconf CLK_TCK)" "$msecs" "$mkeys" <<'PY'
import json, sys
server, out, busy, hz, secs, nkeys = sys.argv[1:]
o = json.loads(out)
n = o["keys"]
print(json.dumps({"bench": "mget", "server": server, "keys_per_get": int(nkeys), "keys": n,
                  "keys_per_s": round(n / float(secs)), "wrong": o["wrong"],
                  "server_us_per_key": round(int(busy) / int(hz) / n * 1e6, 3) if n else None}))
PY
}

echo "# $(date -u '+%F %T') UTC, $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); abuse: $conns conns x get of $keys keys of $value B, ${seconds}s; mget: $mkeys keys of 100 B, ${msecs}s" >&2
servers=("$XDPKV" memcached)
[[ -n $baseline ]] && servers+=("$baseline")
# not the baseline: before replies streamed, this abuse held gigabytes
abuse "$XDPKV"
abuse memcached
for ((r = 1; r <= 3; r++)); do for s in "${servers[@]}"; do mget "$s"; done; done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)" >&2
