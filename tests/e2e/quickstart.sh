#!/bin/bash
# SPDX-License-Identifier: MIT
# The README's main command, short: bench/quickstart.sh --time 1 --json on the
# already-built tree, then a check of what it printed: every layout the CLI
# lists that this kernel can hold, the others listed as skipped with the
# reason `xdpkv layouts` gives, a throughput, most requests on the fast path, memaslap's drops,
# timeouts and verify failures all 0, live items within capacity and the
# kernel's memory figure.  Environment: XDPKV (the CLI; its build dir is the
# one quickstart uses), E2E_PREFIX (testbed prefix).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
[[ -x ${XDPKV:-} ]] || { echo "quickstart test: XDPKV must name the built CLI" >&2; exit 1; }
build=$(cd "$(dirname "$XDPKV")/.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT

"$repo/bench/quickstart.sh" --no-install --build-dir "$build" --prefix "${E2E_PREFIX:-xqs$$}" \
	--time 1 --items 2000 --json >"$out"
cat "$out"
"$XDPKV" layouts --json | python3 -c '
import json, sys
listed = json.load(sys.stdin)
want = [l["name"] for l in listed if l.get("available") is not False]
gone = {l["name"]: l["unavailable_reason"] for l in listed if l.get("available") is False}
if "lru" in want:
    want.append("lru_no_common_lru")  # lru again, with --no-common-lru
got = json.load(open(sys.argv[1]))
rows = {r["layout"]: r for r in got["layouts"]}
bad = []
def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        bad.append(what)
check(sorted(rows) == sorted(want), "a row for every layout this kernel holds (%s)" % ", ".join(sorted(rows)))
skipped = {s["layout"]: s["reason"] for s in got.get("skipped", [])}
check(skipped == gone, "the others skipped, with the reason of xdpkv layouts (%s)" % skipped)
for l, r in sorted(rows.items()):
    check((r["tps"] or 0) > 0, "%s: TPS %s > 0" % (l, r["tps"]))
    check((r["fast_path_share_pct"] or 0) > 50, "%s: fast path served %s%% > 50%%" % (l, r["fast_path_share_pct"]))
    for k in ("packet_drop", "udp_timeout", "verify_failed"):
        check(r[k] == 0, "%s: %s %s == 0" % (l, k, r[k]))
    check(0 < (r["live_items"] or 0) <= r["capacity"], "%s: 0 < live %s <= capacity %s" % (l, r["live_items"], r["capacity"]))
    check((r["map_memory_bytes"] or 0) > 0 and (r["bytes_per_entry"] or 0) > 0,
          "%s: map memory %s B, %s B per entry" % (l, r["map_memory_bytes"], r["bytes_per_entry"]))
sys.exit(1 if bad else 0)
' "$out"
