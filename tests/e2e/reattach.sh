#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: re-attach keeps the data (docs/cli.md, "attach").
#
#   tests/e2e/reattach.sh
#
# Attach hash_map, import items, and while a client in the other namespace
# gets one key as fast as it is answered, re-attach with other access options
# (no slow path runs, so only XDP can answer): every item stays, the program
# id changes, and the client must see no failed request at all (no reply in
# 2 s, a wrong reply, or the kernel's ICMP port unreachable).  The bound is
# 0 because the kernel swaps the program in one step (XDP_FLAGS_REPLACE):
# each datagram meets the old program or the new one, both on the same maps;
# a detach + attach, even a fast one, leaves a window the client falls into.
# Then: re-attach on another --port (the items answer there); another
# --entries is refused, naming it, and changes nothing; --replace gives an
# empty store; attach --restore brings the items back; SIGHUP ends
# 'attach --serve' and leaves the store, SIGTERM detaches.  Last, an upgrade
# under a real client: memaslap with --verify across two re-attaches.
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
sc() { python3 "$here/snapcheck.py" "$@"; }

tb_up "${E2E_PREFIX:-xr$$}"
T=$TB_TMP
P2=$((TB_PORT + 1))
sizes=(--entries 4096 --key-size 32 --value-size 256)
attach() { tb_xdpkv attach "$TB_SRV_DEV" --mode native "${sizes[@]}" "$@"; }
prog_id() { tb_xdpkv status "$TB_SRV_DEV" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["prog_id"])'; }
count() { tb_xdpkv dump "$TB_SRV_DEV" 2>/dev/null | wc -l; }

python3 - "$T/items.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(300):
        f.write(json.dumps({"key": "k%d" % i, "value": "value %d " % i * (1 + i % 7),
                            "flags": i, "exptime": 0}) + "\n")
PY

attach --port "$TB_PORT" >"$T/a1.out" || { cat "$T/a1.out"; tb_die "first attach failed"; }
tb_xdpkv import "$TB_SRV_DEV" "$T/items.jsonl" >/dev/null || tb_die "import failed"
tb_xdpkv dump "$TB_SRV_DEV" "$T/d1.jsonl" 2>/dev/null || tb_die "dump failed"
check "300 items imported" test "$(wc -l <"$T/d1.jsonl")" -eq 300
tb_xdpkv snapshot "$TB_SRV_DEV" "$T/a.snap" >/dev/null || tb_die "snapshot failed"
id1=$(prog_id)

# 1. re-attach with other access options while a client keeps getting a key
tb_cli_bg python3 "$here/getloop.py" "$TB_SRV_IP4" "$TB_PORT" k5 "$(python3 -c 'print("value 5 " * 6, end="")')" "$T/loop.json"
loop=$TB_LAST_PID
sleep 0.5
t0=$(date +%s.%N)
rc=0
attach --port "$TB_PORT" --max-amplification 20 --rate-limit 1000000 >"$T/a2.out" 2>&1 || rc=$?
t1=$(date +%s.%N)
cat "$T/a2.out"
sleep 0.5
kill -TERM "$loop"
wait "$loop" || true
check "re-attach with other access options: exit 0 (rc $rc)" test "$rc" -eq 0
check "re-attach says it kept the 300 items" grep -q "kept: 300 items" "$T/a2.out"
id2=$(prog_id)
check "program id changed ($id1 -> $id2)" test "$id1" != "$id2"
check "the new options are in force" grep -q "at most 20x.*rate limit 1000000" "$T/a2.out"
tb_xdpkv dump "$TB_SRV_DEV" "$T/d2.jsonl" 2>/dev/null || tb_die "dump failed"
check "every item kept, values and flags the same" sc same "$T/d1.jsonl" "$T/d2.jsonl"
python3 - "$T/loop.json" "$t0" "$t1" <<'PY' >"$T/loop.txt"
import json, sys
r = json.load(open(sys.argv[1])); t0, t1 = float(sys.argv[2]), float(sys.argv[3])
during = [t for t in r["times"] if t0 <= t <= t1]
near = [t for t in r["times"] if t0 - 0.2 <= t <= t1 + 0.2]
gap = max((b - a for a, b in zip(near, near[1:])), default=-1)
print("client: %d answers (%d after 0.25 s), %d failures, %d answers during the %.3f s re-attach, "
      "longest gap around it %.1f ms" % (r["ok"], r["late"], r["fail"], len(during), t1 - t0, gap * 1000))
for f in r["failures"]:
    print("  failure at %+.3f s (re-attach at 0..%.3f s): %s" % (f[0] - t0, t1 - t0, f[1]))
print(r["ok"], r["fail"], len(during))
PY
cat "$T/loop.txt"
read -r ok nfail during < <(tail -1 "$T/loop.txt")
check "background client answered throughout ($ok answers, $during during the re-attach)" \
	test "$ok" -gt 100 -a "$during" -gt 0
check "background client: no failed request across the re-attach ($nfail)" test "$nfail" -eq 0

# 2. another port: the items answer there
attach --port "$P2" >"$T/a3.out" 2>&1 || { cat "$T/a3.out"; tb_die "re-attach --port $P2 failed"; }
check "re-attach on port $P2: every item over memcached UDP there" \
	tb_cli python3 "$here/snapcheck.py" udp "$TB_SRV_IP4" "$P2" "$T/d1.jsonl"
id3=$(prog_id)

# 3. another size: refused, naming it, nothing changed
rc=0
tb_xdpkv attach "$TB_SRV_DEV" --mode native --entries 8192 --key-size 32 --value-size 256 --port "$P2" \
	>"$T/a4.out" 2>&1 || rc=$?
cat "$T/a4.out"
check "another --entries: refused (exit $rc)" test "$rc" -ne 0
check "the refusal names --entries, both values, and --replace / snapshot" \
	grep -q -- "--entries: 4096 pinned, 8192 now" "$T/a4.out"
check "the refusal points to --replace and snapshot" grep -q -- "--replace.*--restore" "$T/a4.out"
check "the refusal left the program ($id3)" test "$(prog_id)" = "$id3"
check "the refusal left the items" test "$(count)" -eq 300

# 4. --replace: a fresh, empty store of the new size
tb_xdpkv attach "$TB_SRV_DEV" --mode native --entries 8192 --key-size 32 --value-size 256 --replace \
	>"$T/a5.out" 2>&1 || { cat "$T/a5.out"; tb_die "--replace failed"; }
cat "$T/a5.out"
check "--replace: the old store discarded" grep -q "the old store is discarded" "$T/a5.out"
check "--replace: empty store" test "$(count)" -eq 0
check "--replace: 8192 entries" grep -q "store: 8192 entries" "$T/a5.out"

# 5. attach --restore into the store there (re-attach, same size)
rc=0
tb_xdpkv attach "$TB_SRV_DEV" --mode native --entries 8192 --key-size 32 --value-size 256 \
	--restore "$T/a.snap" >"$T/a6.out" 2>&1 || rc=$?
cat "$T/a6.out"
check "attach --restore: exit 0 (rc $rc)" test "$rc" -eq 0
check "attach --restore: reports the counts" grep -q "restored 300 of 300 items" "$T/a6.out"
tb_xdpkv dump "$TB_SRV_DEV" "$T/d3.jsonl" 2>/dev/null || tb_die "dump failed"
check "attach --restore: the items are back" sc same "$T/d1.jsonl" "$T/d3.jsonl"

# 6. attach --serve: SIGHUP leaves the store, SIGTERM detaches
serve_bg() { # start attach --serve (re-attaching), wait for the slow path's port
	tb_srv_bg "$XDPKV" attach "$TB_SRV_DEV" --mode native --entries 8192 --key-size 32 --value-size 256 \
		--serve >"$T/serve.log" 2>&1
	srv=$TB_LAST_PID
	for _ in $(seq 600); do
		nsenter --net="/run/netns/$TB_SRV_NS" -- ss -Hlun "sport = :$TB_PORT" | grep -q . && return 0
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.05
	done
	cat "$T/serve.log"
	tb_die "attach --serve did not start serving"
}
stopped() { # PID SIGNAL: send it, wait for the exit; its status
	local rc=0
	kill -"$2" "$1"
	wait "$1" || rc=$?
	return $rc
}
serve_bg
rc=0
stopped "$srv" HUP || rc=$?
cat "$T/serve.log"
check "attach --serve on SIGHUP: exit 0 (rc $rc)" test "$rc" -eq 0
check "after SIGHUP: still attached" test "$(prog_id)" != 0
check "after SIGHUP: the items are still there" test "$(count)" -eq 300
serve_bg
rc=0
stopped "$srv" TERM || rc=$?
check "attach --serve on SIGTERM: exit 0 (rc $rc)" test "$rc" -eq 0
check "after SIGTERM: detached and pins removed" test ! -e "$TB_PIN_DIR"

# 7. an upgrade under a real client: memaslap (UDP, --verify) runs while the
# store is re-attached twice (as a package upgrade or 'service start' does);
# it must see no timeout, drop, error reply or verify failure
cat >"$T/memaslap.cfg" <<CFG
key
16 16 1
value
100 100 1
cmd
0 0.1
1 0.9
CFG
a0=${EPOCHREALTIME/./}
tb_xdpkv attach "$TB_SRV_DEV" --mode native --entries 262144 --key-size 64 --value-size 256 \
	--binary-keys --port "$TB_PORT" >/dev/null || tb_die "attach for memaslap failed"
a1=${EPOCHREALTIME/./}
# memaslap must outlast the two re-attaches below, each about as long as this
# attach (the same options) and slower beside memaslap's load: 6 times this
# attach, rounded up, plus 2 s, 10 to 30 s (a fixed 20 s ended before them on a loaded
# machine; 30 s of sets at that load's rate fit the 262144 entries)
secs=$(((a1 - a0) * 6 / 1000000 + 3))
((secs >= 10)) || secs=10
((secs <= 30)) || secs=30
echo "attach took $(((a1 - a0) / 1000)) ms: memaslap runs ${secs} s"
tb_serve_start
log=$T/memaslap.log
tb_cli_bg memcaslap -s "$TB_SRV_IP4:$TB_PORT" -U -F "$T/memaslap.cfg" -T 1 -c 16 -w 1k -t "${secs}s" \
	--verify=0.1 -b >"$log" 2>&1
mpid=$TB_LAST_PID
sleep 1
ups=0
for opt in "--max-amplification 20" "--max-amplification 10"; do
	# shellcheck disable=SC2086 # two words on purpose
	tb_xdpkv attach "$TB_SRV_DEV" --mode native --entries 262144 --key-size 64 --value-size 256 \
		--binary-keys --port "$TB_PORT" $opt >"$T/up.out" 2>&1 && ups=$((ups + 1))
done
alive=0
kill -0 "$mpid" 2>/dev/null && alive=1
rc=0
wait "$mpid" || rc=$?
tb_serve_stop || true
check "upgrade under memaslap: both re-attaches done ($ups) while it still ran ($alive)" test "$ups" -eq 2 -a "$alive" -eq 1
mfield() { sed -n "s/^$1: *\([0-9][0-9]*\).*/\1/p" "$log" | tail -n1; }
echo "memaslap: rc $rc, TPS $(sed -n 's/.*TPS: *\([0-9][0-9]*\).*/\1/p' "$log" | tail -n1), drops $(mfield packet_drop), timeouts $(mfield udp_timeout), verify_failed $(mfield verify_failed)"
check "upgrade under memaslap: it finished (rc $rc) and printed its summary" test "$rc" -eq 0 -a -n "$(mfield verify_failed)"
check "upgrade under memaslap: no verify failure, drop or timeout" \
	test "$(mfield verify_failed)" = 0 -a "$(mfield packet_drop)" = 0 -a "$(mfield udp_timeout)" = 0
{ grep -E '^<[0-9]+ (ERROR|CLIENT_ERROR|SERVER_ERROR)' "$log" || true; } | sort | uniq -c | head -5
check "upgrade under memaslap: no error reply" bash -c "! grep -qE '^<[0-9]+ (ERROR|CLIENT_ERROR|SERVER_ERROR)' '$log'"
exit $fail
