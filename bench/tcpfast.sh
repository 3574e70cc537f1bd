#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Server CPU per TCP request with the kernel fast path (common/tcp.bpf.h) and
# without it (serve --no-tcp-fast-path): same client, same keys, same run.
#
#   bench/tcpfast.sh [--rounds 3] [--duration 5] [--write-ratio 50] [--keys 10000]
#                    [--per-conn 1] [--build-dir DIR]
#
# One veth test bed (tests/lib/testbed.sh): hash_map attached to the server
# end, its NAPI thread and `xdpkv serve --threads 1` on CPU 1; xkv-loadgen
# (mc-tcp, 16 requests in flight over 16 / --per-conn connections: with
# --per-conn 1 one request per segment, with more a pipelining client whose
# segments hold several) on CPU 0.  XDPKV overrides the CLI.  Server CPU = CPU 1's busy time (/proc/stat: everything
# but idle and iowait) over the measured run, whoever spent it (softirq,
# the psock's kworker, serve) — and whoever else shares the machine.
# Rounds alternate the order (on, off / off, on).  Prints one line per run:
# mode, requests/s, server µs per request, kernel share of TCP requests.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rounds=3 duration=5 wr=50 keys=10000 perconn=1 build=$here/../build
while (($#)); do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--duration) duration=$2; shift 2 ;;
	--write-ratio) wr=$2; shift 2 ;;
	--keys) keys=$2; shift 2 ;;
	--per-conn) perconn=$2; shift 2 ;;
	--build-dir) build=$2; shift 2 ;;
	*) echo "bench/tcpfast.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
XDPKV=${XDPKV:-$build/cli/xdpkv}
((perconn >= 1 && perconn <= 16 && 16 % perconn == 0)) || { echo "bench/tcpfast.sh: --per-conn divides 16" >&2; exit 2; }
nconn=$((16 / perconn))
LG=$build/bench/loadgen/xkv-loadgen
[[ -x $XDPKV && -x $LG ]] || { echo "bench/tcpfast.sh: build first ($XDPKV, $LG)" >&2; exit 2; }
# shellcheck source=../tests/lib/testbed.sh
. "$here/../tests/lib/testbed.sh"
tb_up "xtf$$"
tb_xdpkv attach "$TB_SRV_DEV" --entries $((keys * 2)) --port "$TB_PORT" >/dev/null
tb_pin_napi

run() { # on|off
	local extra=() hz b0 b1 k0 k1 u0 u1 out
	[[ $1 = off ]] && extra=(--no-tcp-fast-path)
	tb_serve_start --threads 1 "${extra[@]}"
	sleep 0.3
	tb_cli "$LG" --server "$TB_SRV_IP4" --port "$TB_PORT" --proto mc-tcp --conns "$nconn" --depth 16 \
		--keys "$keys" --write-ratio "$wr" --preload --duration 1 --quiet >/dev/null
	sleep 0.3
	k0=$(tb_counter fast tcp_fast) u0=$(tb_counter slow tcp_slow) b0=$(tb_busy 1)
	out=$(tb_cli "$LG" --server "$TB_SRV_IP4" --port "$TB_PORT" --proto mc-tcp --conns "$nconn" --depth 16 \
		--keys "$keys" --write-ratio "$wr" --duration "$duration" --json --quiet)
	b1=$(tb_busy 1)
	sleep 0.3
	k1=$(tb_counter fast tcp_fast) u1=$(tb_counter slow tcp_slow)
	tb_serve_stop
	hz=$(getconf CLK_TCK)
	python3 - "$1" "$out" "$((b1 - b0))" "$hz" "$((k1 - k0))" "$((u1 - u0))" <<'PY'
import json, sys
mode, out, busy, hz, k, u = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
n, secs = out["ops"], out["duration_s"]
if not n or out["errors"] or out["wrong_values"] or out["timeouts"]:
    sys.exit(f"bench/tcpfast.sh: a bad run: {out}")
print(f"{mode:3s}  {n / secs / 1000:8.1f} kreq/s  server {busy / hz / n * 1e6:6.2f} us/req  "
      f"kernel share {k / max(k + u, 1) * 100:5.1f}%  ({k} kernel, {u} userspace)")
PY
}
echo "# $(date -u '+%F %T') UTC, $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); write ratio $wr%, $keys keys, $perconn request(s) in flight per connection, ${duration}s per run"
for ((r = 1; r <= rounds; r++)); do
	if ((r % 2)); then run on; run off; else run off; run on; fi
done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
