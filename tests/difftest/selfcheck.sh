#!/bin/bash
# SPDX-License-Identifier: MIT
# The tester checked against memcached itself: two memcached 1.6.18 on
# loopback, one of them with a past of its own (other batches first), must
# answer every edge form alike (tcp-edge, udp-edge, bin-edge, the known
# forms included).  A form whose answer depends on memcached's history or
# on how its reads fall would differ here, and has no place in the tester.
#
#   tests/difftest/selfcheck.sh [--batches N] [--seed S]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
batches=300 seed=$RANDOM
while (($#)); do
	case $1 in
	--batches) batches=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	-h|--help) sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "selfcheck: unknown argument $1" >&2; exit 2 ;;
	esac
done
command -v memcached >/dev/null || { echo "selfcheck: memcached is needed" >&2; exit 1; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
user=(); [[ $(id -u) == 0 ]] && user=(-u nobody)
ports=()
for _ in 1 2; do
	port=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import freshmc; print(freshmc._free_port())' "$here")
	memcached -l 127.0.0.1 -p "$port" -U "$port" -t 1 -m 256 "${user[@]}" >/dev/null 2>&1 &
	pids+=($!) ports+=("$port")
	for _ in $(seq 100); do
		python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' \
			"$port" 2>/dev/null && break
		sleep 0.05
	done
done
A=127.0.0.1:${ports[0]} B=127.0.0.1:${ports[1]}
echo "selfcheck: memcached $A (with a past) against $B, $batches batches per pass, seed $seed"
# A's past: other batches of the edge passes, sent to A alone
python3 - "$here" "${ports[0]}" $((seed + 1)) <<'PY'
import random, sys
sys.path.insert(0, sys.argv[1])
import bindiff, difftest, gen
port, seed = int(sys.argv[2]), int(sys.argv[3])
for proto in ("tcp", "udp"):
    side, g = difftest.Side("A", ("127.0.0.1", port), proto, 2.0), gen.Gen(random.Random(seed), edge=True,
                                                                             known=True, udp=proto == "udp")
    for i in range(200):
        keys = gen.key_names(random.Random(seed + i), "past%d%s%d" % (seed, proto, i))
        side.run(g.batch(), keys)
        side.cleanup(keys)
side, g = bindiff.Side(("127.0.0.1", port), 2.0), bindiff.BinGen(random.Random(seed), 2000, True, True)
for i in range(200):
    keys = [k[:250] for k in gen.key_names(random.Random(seed + i), "bpast%d%d" % (seed, i))]
    side.run(g.batch(), keys)
    side.cleanup(keys)
PY
fail=0
python3 "$here/difftest.py" --mc "$A" --xkv "$B" --edge --known --batches "$batches" --seed "$seed" || fail=1
python3 "$here/difftest.py" --mc "$A" --xkv "$B" --edge --known --proto udp --value-max 1200 \
	--batches "$batches" --seed "$seed" || fail=1
python3 "$here/bindiff.py" --mc "$A" --xkv "$B" --edge --known --batches "$batches" --seed "$seed" || fail=1
exit $fail
