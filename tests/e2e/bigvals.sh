#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: values above --value-size (the big map; docs/protocol.md, "Large
# values") through every path that meets them, on the veth testbed.
#
#   tests/e2e/bigvals.sh [LAYOUT]      (default hash_map)
#
# attach --value-size 512, serve (the TCP fast path attached); from the
# client namespace: TCP sets and gets of 5000, 200000 and 1 MiB bytes; a UDP
# get through the XDP program (passed on, answered in datagrams); a UDP delete
# the XDP program answers itself, whose chunks serve's collector frees.  Then
# the CLI's get, dump, snapshot and restore into a store with --value-size
# 128, and a live migration to --value-size 16384 (a 200000-byte value stays
# in chunks): every value reads back the same.
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

layout=${1:-hash_map}
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
PY=/usr/bin/python3
$PY -c 'import pymemcache' || tb_die "python3-pymemcache is needed (tests/lib/install-deps.sh)"

tb_up "${E2E_PREFIX:-xb$$}"
S4=$TB_SRV_IP4 P=$TB_PORT T=$TB_TMP
mkdir -p "$T/vals"
client() { tb_cli $PY "$here/bigclient.py" "$@"; }
serve() { tb_serve_tcp_start; }
unseeded=()
[[ $layout == array_fnv ]] && unseeded=(--fnv-unseeded)

tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 4096 --value-size 512 --big-memory 16 \
	--port "$P" "${unseeded[@]}" >/dev/null || tb_die "attach failed"
serve
check "$layout: TCP and UDP paths" client paths "$S4" "$P" "$T/vals"
tb_xdpkv status "$TB_SRV_DEV" --json >"$T/status.json" || tb_die "status --json failed"
check "status --json counts the live values' chunks (16 MiB: 4096 chunks)" $PY - "$T/status.json" "$T/vals" <<'PY'
import json, os, sys
big = json.load(open(sys.argv[1]))["big"]
sizes = [os.path.getsize(os.path.join(sys.argv[2], k)) for k in os.listdir(sys.argv[2])]
need = sum(-(-n // big["chunk_bytes"]) for n in sizes if n > 512)
print("status big: %s; the live values need %d chunks" % (big, need))
# a deleted value's chunks stay until serve's collector runs: at least, not exactly
sys.exit(0 if big["chunks_max"] == 4096 and need <= big["chunks"] <= big["chunks_max"] else 1)
PY

tb_xdpkv get "$TB_SRV_DEV" b1 --raw >"$T/cli-b1" || true
check "xdpkv get of the 200000-byte value" cmp -s "$T/vals/b1" "$T/cli-b1"
tb_xdpkv dump "$TB_SRV_DEV" "$T/dump.jsonl" 2>/dev/null || tb_die "dump failed"
check "xdpkv dump writes every value whole" $PY - "$T/dump.jsonl" "$T/vals" <<'PY'
import base64, json, os, sys
items = {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    v = base64.b64decode(o["value_b64"]) if "value_b64" in o else o["value"].encode()
    items[o["key"]] = v
want = {k: open(os.path.join(sys.argv[2], k), "rb").read() for k in os.listdir(sys.argv[2])}
bad = [k for k in want if items.get(k) != want[k]]
print("dump: %d items, lengths %s" % (len(items), {k: len(v) for k, v in items.items()}))
sys.exit(1 if bad else 0)
PY

tb_xdpkv snapshot "$TB_SRV_DEV" "$T/snap.xkv" >/dev/null || tb_die "snapshot failed"
tb_serve_stop
tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach failed"
tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 4096 --value-size 128 --port "$P" \
	"${unseeded[@]}" --restore "$T/snap.xkv" >"$T/restore.out" || tb_die "attach --restore failed"
cat "$T/restore.out"
serve
check "after snapshot and restore into --value-size 128: every value" client check "$S4" "$P" "$T/vals"

tb_xdpkv migrate "$TB_SRV_DEV" --value-size 16384 >"$T/migrate.out" 2>&1 || { cat "$T/migrate.out"; fail=1; }
cat "$T/migrate.out"
check "after a live migration to --value-size 16384: every value" client check "$S4" "$P" "$T/vals"
tb_serve_stop
tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach failed"
exit $fail
