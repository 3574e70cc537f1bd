#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: live migration (docs/snapshots.md, "Live migration").
#
#   tests/e2e/migrate.sh
#
# Attach hash_map, import 3000 items, start the slow path, and while a client
# in the other namespace keeps setting, getting and deleting its own keys
# (migload.py), migrate hash_map -> lru -> array_fnv.  Each time: zero failed
# requests, every acknowledged write of the client is what the store holds
# afterwards, every imported item is there with its value, flags and cas
# unique (the dumps agree) except those the report says did not fit
# (array_fnv collisions), the pins hold the new layout and the old store is
# gone, status and snapshot work on it.  Also: migrate with no slow path is
# refused and changes nothing; --pause-writes does it; the same layout and
# sizes is refused; into a small lru the evictions are reported exactly.  Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"

tb_up "${E2E_PREFIX:-xm$$}"
T=$TB_TMP
layout_of() { tb_xdpkv status "$TB_SRV_DEV" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["layout"])'; }
store_id() { bpftool map show pinned "/sys/fs/bpf/xdpkv/$TB_SRV_DEV/store" | sed -n 's/^\([0-9]*\):.*/\1/p'; }

python3 - "$T/items.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(3000):
        f.write(json.dumps({"key": "item%d" % i, "value": "value %d " % i * (1 + i % 9),
                            "flags": i, "exptime": 0}) + "\n")
PY
tb_xdpkv --variant hash_map attach "$TB_SRV_DEV" --mode native --entries 8192 --key-size 32 \
	--value-size 256 --port "$TB_PORT" >/dev/null || tb_die "attach failed"
tb_xdpkv import "$TB_SRV_DEV" "$T/items.jsonl" >/dev/null || tb_die "import failed"
tb_xdpkv dump "$TB_SRV_DEV" "$T/d0.jsonl" 2>/dev/null || tb_die "dump failed"
check "3000 items imported" test "$(wc -l <"$T/d0.jsonl")" -eq 3000

# no slow path: refused, nothing changes
id0=$(store_id)
rc=0
tb_xdpkv migrate "$TB_SRV_DEV" --layout lru >"$T/noserve.out" 2>&1 || rc=$?
cat "$T/noserve.out"
check "without serve: refused (rc $rc)" test "$rc" -eq 3
check "without serve: the error says why" grep -q "no 'xdpkv serve" "$T/noserve.out"
check "without serve: the same store pinned" test "$(store_id)" = "$id0"
check "without serve: still hash_map" test "$(layout_of)" = hash_map
rc=0
tb_xdpkv migrate "$TB_SRV_DEV" --entries 8192 >"$T/same.out" 2>&1 || rc=$?
check "the same layout and sizes: refused as usage (rc $rc)" test "$rc" -eq 2

tb_serve_start
n=0
for to in lru array_fnv; do
	n=$((n + 1))
	id_before=$(store_id)
	tb_cli_bg env MIGLOAD_SEED=$n MIGLOAD_LOSSY=$([[ $to == array_fnv ]] && echo 1 || echo 0) python3 "$here/migload.py" "$TB_SRV_IP4" "$TB_PORT" "w$n-" "$T/load$n.json"
	loadpid=$TB_LAST_PID
	sleep 1
	rc=0
	tb_xdpkv migrate "$TB_SRV_DEV" --layout "$to" --entries 16384 --threads 2 --json >"$T/mig$n.json" 2>"$T/mig$n.err" || rc=$?
	kill -TERM "$loadpid" # at once: the state it saw last is mostly from before the switch
	wait "$loadpid" || true
	cat "$T/mig$n.json" "$T/mig$n.err"
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("client: ok %d, fail %d %s" % (j["ok"], j["fail"], j["failures"][:3]))' "$T/load$n.json"
	if [[ $to == array_fnv ]]; then
		check "-> $to: exit 0 or 1 (collisions reported) (rc $rc)" test "$rc" -le 1
	else
		check "-> $to: exit 0, nothing lost (rc $rc)" test "$rc" -eq 0
	fi
	check "-> $to: the client saw zero failed requests" python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); sys.exit(0 if j["fail"] == 0 and j["ok"] > 50 else 1)' "$T/load$n.json"
	check "-> $to: the writes went through the slow path to both stores" python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); sys.exit(0 if j["writes"] == "mirrored" else 1)' "$T/mig$n.json"
	check "-> $to: the pins hold the new layout" test "$(layout_of)" = "$to"
	check "-> $to: a new store map pinned" test "$(store_id)" != "$id_before"
	check "-> $to: the old store map is freed" bash -c "! bpftool map show id $id_before >/dev/null 2>&1"
	tb_xdpkv dump "$TB_SRV_DEV" "$T/d$n.jsonl" 2>/dev/null || tb_die "dump after migrate failed"
	check "-> $to: every acknowledged write of the client is in the store" \
		python3 "$here/migcheck.py" acked "$T/load$n.json" "$T/d$n.jsonl" "$to" 16384
	check "-> $to: every item of before is there, the same (value, flags, cas), or lost to a collision" \
		python3 "$here/migcheck.py" kept "$T/d0.jsonl" "$T/d$n.jsonl" "$to" 16384 "$T/load$n.json"
	check "-> $to: what did not fit is reported" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
lost = j["too_big"] + j["bad_key"] + j["full"] + j["busy"] + j["evicted_estimated"]
sys.exit(0 if lost == 0 and (sys.argv[2] == "array_fnv") == (j["collisions"] > 0) else 1)' "$T/mig$n.json" "$to"
	check "-> $to: status works on the new store" bash -c '"$@" >/dev/null' _ nsenter --net="/run/netns/$TB_SRV_NS" "$XDPKV" status "$TB_SRV_DEV"
	check "-> $to: writes are not held any more" bash -c \
		'"$@" | python3 -c "import json,sys; j=json.load(sys.stdin); sys.exit(j[\"writes_paused\"] or j[\"migrating\"])"' \
		_ nsenter --net="/run/netns/$TB_SRV_NS" "$XDPKV" status "$TB_SRV_DEV" --json
	check "-> $to: a snapshot of the new store" bash -c '"$@" >/dev/null' _ nsenter --net="/run/netns/$TB_SRV_NS" "$XDPKV" snapshot "$TB_SRV_DEV" "$T/m$n.snap"
	after=$(tb_cli python3 "$here/rawclient.py" req --host "$TB_SRV_IP4" --port "$TB_PORT" \
		"set after-mig$n 0 0 2\r\nok\r\n" 2>&1 || true)
	check "-> $to: a set answered by XDP afterwards ($after)" test "$after" = $'STORED\r'
done

# --pause-writes without a slow path: done, the writes held meanwhile
# a TCP connection open, answered in XDP (the responder's programs and
# flows follow the migration: cli/migrate.c): done, and the same
# connection's set and get are answered on the new store, in step
rm -f "$T/held" "$T/go" "$T/held.got"
tb_cli_bg python3 -c '
import socket, sys, os, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
def ask(req, end):
    s.sendall(req)
    b = b""
    while not b.endswith(end):
        d = s.recv(4096)
        if not d:
            break
        b += d
    return b
assert ask(b"version\r\n", b"\r\n").startswith(b"VERSION")
time.sleep(0.3)
assert ask(b"get held-none\r\n", b"END\r\n") == b"END\r\n"
open(sys.argv[3], "w").close()
while not os.path.exists(sys.argv[4]):
    time.sleep(0.05)
got = ask(b"set held 0 0 1\r\nh\r\n", b"\r\n") + ask(b"get held\r\n", b"END\r\n")
open(sys.argv[5], "w").write(repr(got))' "$TB_SRV_IP4" "$TB_PORT" "$T/held" "$T/go" "$T/held.got"
heldpid=$TB_LAST_PID
for _ in $(seq 300); do [[ -e $T/held ]] && break; sleep 0.1; done
id_held=$(store_id)
rc=0
tb_xdpkv migrate "$TB_SRV_DEV" --layout hash_map --entries 8192 >"$T/held.out" 2>&1 || rc=$?
cat "$T/held.out"
check "a TCP connection open (answered in XDP): migrated (rc $rc)" test "$rc" -eq 0
check "... a new store pinned" test "$(store_id)" != "$id_held"
touch "$T/go"
wait "$heldpid" 2>/dev/null || true
after=$(cat "$T/held.got" 2>/dev/null || echo none)
check "... the same connection's set and get answered after it ($after)" \
	test "$after" = "b'STORED\\r\\nVALUE held 0 1\\r\\nh\\r\\nEND\\r\\n'"
tb_serve_stop || true
rc=0
tb_xdpkv migrate "$TB_SRV_DEV" --layout hash_map --entries 16384 --pause-writes --json >"$T/pw.json" 2>&1 || rc=$?
cat "$T/pw.json"
check "--pause-writes without serve: done (rc $rc)" test "$rc" -eq 0
check "--pause-writes: reported as paused" python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); sys.exit(0 if j["writes"] == "paused" and j["writes_held_s"] > 0 else 1)' "$T/pw.json"
check "--pause-writes: hash_map now" test "$(layout_of)" = hash_map
tb_xdpkv dump "$TB_SRV_DEV" "$T/dp.jsonl" 2>/dev/null || tb_die "dump failed"
check "--pause-writes: the items of before, the same" \
	python3 "$here/migcheck.py" kept "$T/d2.jsonl" "$T/dp.jsonl" hash_map 16384
# into an lru too small for the items: the evictions reported exactly (no writer runs)
rc=0
tb_xdpkv migrate "$TB_SRV_DEV" --layout lru --entries 2048 --pause-writes --json >"$T/small.json" 2>&1 || rc=$?
cat "$T/small.json"
tb_xdpkv dump "$TB_SRV_DEV" "$T/ds.jsonl" 2>/dev/null || tb_die "dump failed"
check "into a small lru: exit 1, items lost (rc $rc)" test "$rc" -eq 1
check "into a small lru: evicted = copied - what is there ($(wc -l <"$T/ds.jsonl") there)" python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); live = int(sys.argv[2])
sys.exit(0 if j["evicted_estimated"] > 0 and j["evicted_estimated"] == j["copied"] - live else 1)' "$T/small.json" "$(wc -l <"$T/ds.jsonl")"
exit $fail
