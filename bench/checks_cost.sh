#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the access checks cost end to end: server capacity (replies/s and server
# CPU per reply, xdpgen driving one pinned server core over the veth test bed)
# of two builds of xdpkv, alternated on the same test bed in the same run —
# typically the build before the checks existed and the current one.
#
#   bench/checks_cost.sh --old-cli OLD/cli/xdpkv [--new-cli build/cli/xdpkv]
#                        [--layout hash_map] [--rounds 5] [--duration 2] [--json FILE]
#
# The generator (the current build's xdpgen) sends GETs of 10 000 loaded keys,
# 16-byte keys, 64-byte values, with real UDP checksums (as a Linux client
# does), so the new build pays for verifying them.  Each round runs old then new
# (then new then old in the next round, so drift does not favour one).  Output:
# one JSON object with every sample and, per build, median / min / max.
# Building the old one:  git worktree add /tmp/xkv-old ea12519 &&
#   cmake -S /tmp/xkv-old -B /tmp/build-old -G Ninja && ninja -C /tmp/build-old xdpkv
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../tests/lib/testbed.sh"

old_cli= new_cli=$TB_REPO/build/cli/xdpkv layout=hash_map rounds=5 duration=2 json_out=
xdpgen=$TB_REPO/build/bench/xdpgen/xdpgen
while (($#)); do
	case $1 in
	--old-cli) old_cli=$2; shift 2 ;;
	--new-cli) new_cli=$2; shift 2 ;;
	--xdpgen) xdpgen=$2; shift 2 ;;
	--layout) layout=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--duration) duration=$2; shift 2 ;;
	--json) json_out=$2; shift 2 ;;
	-h|--help) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "checks_cost.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
	esac
done
[[ -x $old_cli ]] || { echo "checks_cost.sh: --old-cli PATH to the older build's xdpkv is required" >&2; exit 2; }
[[ -x $new_cli && -x $xdpgen ]] || { echo "checks_cost.sh: build first (ninja -C build)" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "checks_cost.sh: --rounds must be a positive number" >&2; exit 2; }

nkeys=10000
tb_up "xcc$$"
samples=$TB_TMP/samples.jsonl
: >"$samples"

one() { # one measurement with the CLI $2, labelled $1
	local label=$1 cli=$2
	tb_srv "$cli" --variant "$layout" attach "$TB_SRV_DEV" --mode native --entries 65536 \
		--key-size 16 --value-size 64 >/dev/null || tb_die "$label: attach failed"
	tb_pin_napi
	tb_srv "$cli" load "$TB_SRV_DEV" --generate "$nkeys" --key-size 16 --value-size 64 >/dev/null ||
		tb_die "$label: load failed"
	tb_cli "$xdpgen" "$TB_CLI_DEV" --dst-ip "$TB_SRV_IP4" --key-size 16 --value-size 64 \
		--keys "$nkeys" --cpus "$TB_CLIENT_CPU" --server-cpu "$TB_SERVER_CPU" \
		--duration "$duration" --json >"$TB_TMP/run.json" || tb_die "$label: xdpgen failed"
	tb_srv "$cli" detach "$TB_SRV_DEV" >/dev/null || tb_die "$label: detach failed"
	python3 - "$label" "$TB_TMP/run.json" >>"$samples" <<'PY'
import json, sys
label, j = sys.argv[1], json.load(open(sys.argv[2]))
if j["errors"] or j["bad"] or j["misses"]:
    sys.exit("%s: the server answered wrongly: %s" % (label, j))
print(json.dumps({"build": label, "replies_per_s": j["reply_pps"],
                  "server_ns_per_reply": j.get("server_ns_per_reply"), "sent_per_s": j["sent_pps"]}))
PY
	echo "[checks_cost] $label: $(tail -1 "$samples")" >&2
}

for ((r = 1; r <= rounds; r++)); do
	if ((r % 2)); then one old "$old_cli"; one new "$new_cli"; else one new "$new_cli"; one old "$old_cli"; fi
done

python3 - "$samples" "$layout" "$duration" "$(date -u +%FT%TZ)" "$(uname -r)" "$(nproc)" <<'PY' | tee "${json_out:-/dev/null}"
import json, statistics, sys
path, layout, dur, date, kernel, ncpu = sys.argv[1:]
s = [json.loads(l) for l in open(path)]
out = {"layout": layout, "duration_s": float(dur), "date": date, "kernel": kernel, "cpus": int(ncpu),
       "samples": s, "summary": {}}
for b in ("old", "new"):
    for k in ("replies_per_s", "server_ns_per_reply"):
        v = [x[k] for x in s if x["build"] == b and x[k] is not None]
        if v:
            out["summary"].setdefault(b, {})[k] = {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}
o, n = out["summary"].get("old", {}), out["summary"].get("new", {})
if "server_ns_per_reply" in o and "server_ns_per_reply" in n:
    out["summary"]["added_ns_per_reply_median"] = n["server_ns_per_reply"]["median"] - o["server_ns_per_reply"]["median"]
    out["summary"]["capacity_ratio_new_over_old"] = n["replies_per_s"]["median"] / o["replies_per_s"]["median"]
print(json.dumps(out, indent=1))
PY
