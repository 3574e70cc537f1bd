#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Server capacity of every layout as a ratio to a bare XDP reflector, measured
# in the same run on the same path (issue 10; bench/README.md "capacity.sh").
#
#   bench/capacity.sh [--targets reflector,null,hash_map,array_fnv,lru,percpu,lru_percpu,set_assoc,sieve,s3fifo]
#                     [--rounds 1] [--duration 0.5] [--keys 10000] [--write-ratio 0.5]
#                     [--build-dir DIR] [--prefix NAME] [--json FILE] [--no-prog-time]
#
# One veth test bed (tests/lib/testbed.sh), the server's NAPI thread pinned to
# CPU 1, xdpgen (bench/xdpgen) generating on CPU 0 and counting the replies on
# the client end.  Targets, attached in turn to the server end, native XDP:
#   reflector   bench/reflector: swaps MACs, IP addresses and UDP ports, XDP_TX
#   null        xdpkv --variant null: the same handler as the layouts, no map;
#               answers every GET with one fixed 64-byte value
#   LAYOUT      xdpkv --variant LAYOUT, loaded with --keys items
# Workload: GETs of the --keys loaded keys (16-byte keys, 64-byte values,
# uniform), --duration seconds flat out; for the layouts also a run with
# --write-ratio sets (0: none).  Round 1 visits the targets in order, round 2
# in reverse, and so on.  Before each timed run a short run is validated (every
# reply correct: echoes from the reflector, hits for loaded keys, no errors,
# the server answered every request it accepted), and the timed run is checked
# the same way; any failure fails the script.
# Program time: after each timed GET run, one more run of the same length with
# kernel.bpf_stats_enabled=1 (on only for that run, the old value restored)
# gives the XDP program's own time per packet (bpftool's run_time_ns /
# run_cnt), so the server's ns/reply splits into the program and the path
# around it (veth, NAPI, XDP_TX) end to end.  The timed runs are made with
# the statistics off (they cost two clock reads per packet).  --no-prog-time
# skips these runs.
# Output: one JSON object (stdout, and --json FILE): the machine (nproc,
# kernel, date, load average at start and end), every sample, and per target
# median / min / max of replies/s and server ns/reply with its ratio to the
# reflector's median replies/s of the same run.
# The defaults make a smoke test (~25 s); a real run (~2 min): --rounds 3 --duration 2.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

targets=reflector,null,hash_map,array_fnv,lru,percpu,lru_percpu,set_assoc rounds=1 duration=0.5 nkeys=10000
write_ratio=0.5 build=$repo/build prefix=xcap$$ json_out= prog_time=1
cmdline="bench/capacity.sh $*"
while (($#)); do
	case $1 in
	--targets) targets=${2:?--targets LIST}; shift ;;
	--rounds) rounds=${2:?--rounds N}; shift ;;
	--duration) duration=${2:?--duration S}; shift ;;
	--keys) nkeys=${2:?--keys N}; shift ;;
	--write-ratio) write_ratio=${2:?--write-ratio P}; shift ;;
	--build-dir) build=${2:?--build-dir DIR}; shift ;;
	--prefix) prefix=${2:?--prefix NAME}; shift ;;
	--json) json_out=${2:?--json FILE}; shift ;;
	--no-prog-time) prog_time=0 ;;
	-h | --help) sed -n '3,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "capacity.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
	esac
	shift
done
usage() { echo "capacity.sh: $*" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || usage "--rounds must be a positive number"
[[ $nkeys =~ ^[1-9][0-9]*$ ]] || usage "--keys must be a positive number"
[[ $duration =~ ^[0-9]*\.?[0-9]+$ ]] || usage "--duration must be a number of seconds"
[[ $write_ratio =~ ^(0(\.[0-9]+)?|1(\.0*)?)$ ]] || usage "--write-ratio must be 0..1"
IFS=, read -r -a tlist <<<"$targets"
((${#tlist[@]})) || usage "--targets is empty"
for t in "${tlist[@]}"; do
	[[ $t =~ ^(reflector|null|hash_map|array_fnv|lru|percpu|lru_percpu|set_assoc|sieve|s3fifo)$ ]] || usage "unknown target '$t'"
done

: "${XDPKV:=$build/cli/xdpkv}"
: "${XDPGEN:=$build/bench/xdpgen/xdpgen}"
: "${REFLECTOR_OBJ:=$build/bench/reflector/reflector.bpf.o}"
[[ -z ${TB_XDP_PASS_OBJ:-} && -f $build/tests/xdp_pass.bpf.o ]] && TB_XDP_PASS_OBJ=$build/tests/xdp_pass.bpf.o
export XDPKV TB_XDP_PASS_OBJ
for f in "$XDPKV" "$XDPGEN"; do
	[[ -x $f ]] || usage "$f not found: build first (ninja -C $build), or --build-dir"
done
[[ -f $REFLECTOR_OBJ ]] || usage "$REFLECTOR_OBJ not found: build first (ninja -C $build reflector)"
command -v python3 >/dev/null || usage "python3 is needed"
((prog_time == 0)) || command -v bpftool >/dev/null || usage "bpftool is needed for the program time (or --no-prog-time)"

# shellcheck source=../tests/lib/testbed.sh
. "$repo/tests/lib/testbed.sh"

entries=65536
while ((entries < 2 * nkeys)); do entries=$((entries * 2)); done
date_start=$(date -u +%FT%TZ)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
log() { echo "[capacity] $*" >&2; }

tb_up "$prefix"
stats_old=$(cat /proc/sys/kernel/bpf_stats_enabled)
stats_restore() { echo "$stats_old" >/proc/sys/kernel/bpf_stats_enabled 2>/dev/null || true; }
trap 'stats_restore; tb_down' EXIT
samples=$TB_TMP/samples.jsonl
: >"$samples"

# ---- targets ---------------------------------------------------------------

attach() { # attach TARGET; sets $live (items the store holds; -1: no store)
	local t=$1
	live=-1
	case $t in
	reflector)
		tb_run ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv obj "$REFLECTOR_OBJ" sec xdp ||
			tb_die "cannot attach the reflector to $TB_SRV_DEV"
		;;
	null)
		tb_xdpkv --variant null attach "$TB_SRV_DEV" --mode native --key-size 16 --value-size 64 \
			--port "$TB_PORT" >/dev/null || tb_die "xdpkv --variant null attach failed"
		;;
	*)
		tb_xdpkv --variant "$t" attach "$TB_SRV_DEV" --mode native --entries "$entries" \
			--key-size 16 --value-size 64 --port "$TB_PORT" >/dev/null || tb_die "$t: attach failed"
		tb_xdpkv load "$TB_SRV_DEV" --generate "$nkeys" --key-size 16 --value-size 64 >/dev/null ||
			tb_die "$t: load failed"
		tb_xdpkv status "$TB_SRV_DEV" --json >"$TB_TMP/loaded.json" || tb_die "$t: status failed"
		live=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["live"])' "$TB_TMP/loaded.json")
		((live > nkeys * 9 / 10)) || tb_die "$t holds only $live of the $nkeys keys loaded"
		;;
	esac
	tb_pin_napi
}

detach() {
	if [[ $1 == reflector ]]; then
		tb_run ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdp off || tb_die "cannot detach the reflector"
	else
		tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "$1: detach failed"
	fi
}

# run TARGET WORKLOAD ROUND DURATION [XDPGEN-ARGS...]: one xdpgen run, checked
# (python below); with ROUND 0 it is the validation run and no sample is kept.
run() {
	local t=$1 w=$2 r=$3 d=$4
	shift 4
	local st=0
	[[ $t != reflector ]] && st=1
	((st)) && { tb_xdpkv status "$TB_SRV_DEV" --json >"$TB_TMP/before.json" || tb_die "status failed"; }
	tb_cli "$XDPGEN" "$TB_CLI_DEV" --dst-ip "$TB_SRV_IP4" --key-size 16 --value-size 64 \
		--keys "$nkeys" --cpus "$TB_CLIENT_CPU" --server-cpu "$TB_SERVER_CPU" --duration "$d" \
		--json "$@" >"$TB_TMP/run.json" || tb_die "$t $w: xdpgen exited with $?"
	((st)) && { tb_xdpkv status "$TB_SRV_DEV" --json >"$TB_TMP/after.json" || tb_die "status failed"; }
	python3 - "$t" "$w" "$r" "$nkeys" "$live" "$TB_TMP/run.json" "$st" "$TB_TMP/before.json" \
		"$TB_TMP/after.json" >>"$samples" <<'PY' || tb_die "$t $w (round $r): wrong replies, see above"
import json, sys
t, w, r, nkeys, live, path, st = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \
    int(sys.argv[5]), sys.argv[6], int(sys.argv[7])
j = json.load(open(path))
bad = []
def need(ok, what):
    if not ok:
        bad.append(what)
rep = j["replies"]
need(rep > 0, "no replies")
need(j["bad"] == 0, "%d frames the generator could not build" % j["bad"])
need(j["errors"] == 0, "%d error replies" % j["errors"])
need(j["other"] == 0, "%d replies of no known kind" % j["other"])
if t == "reflector":
    need(j["echoes"] == rep, "echoes %d != replies %d" % (j["echoes"], rep))
else:
    need(j["echoes"] == 0, "%d echoed requests" % j["echoes"])
    need(j["hits"] + j["misses"] + j["stored"] == rep, "hits + misses + stored != replies")
    if w == "get":
        need(j["stored"] == 0, "STORED replies to gets")
    else:
        need(j["stored"] > 0, "no STORED replies to sets")
    if t == "null" or live == nkeys:
        need(j["misses"] == 0, "%d misses for loaded keys" % j["misses"])
    elif w == "get":
        # array_fnv loses keys to collisions: the hit share is the share of
        # keys it holds (uniform keys), within 3 points
        share, held = 100.0 * j["hits"] / max(rep, 1), 100.0 * live / nkeys
        need(abs(share - held) <= 3, "hit share %.1f%% but %.1f%% of the keys held" % (share, held))
if st:
    b, a = json.load(open(sys.argv[8]))["counters"]["fast"], json.load(open(sys.argv[9]))["counters"]["fast"]
    d = {k: a[k] - b[k] for k in ("requests", "replies", "pass_csum")}
    need(d["requests"] > 0, "the server accepted no requests")
    need(d["replies"] == d["requests"], "the server answered %d of the %d requests it accepted"
         % (d["replies"], d["requests"]))
    need(d["pass_csum"] == 0, "%d checksum failures on the server" % d["pass_csum"])
    need(d["replies"] >= rep, "the server sent %d replies, the client counted %d" % (d["replies"], rep))
if bad:
    sys.stderr.write("[capacity] %s %s: %s\n%s\n" % (t, w, "; ".join(bad), json.dumps(j)))
    sys.exit(1)
if r:
    print(json.dumps({"round": r, "target": t, "workload": w, "replies_per_s": j["reply_pps"],
                      "sent_per_s": j["sent_pps"], "server_ns_per_reply": j["server_ns_per_reply"],
                      "server_busy_pct": j["server_busy_pct"], "replies": rep, "hits": j["hits"],
                      "misses": j["misses"], "stored": j["stored"], "echoes": j["echoes"]}))
PY
	if ((r)); then log "round $r $t $w: $(tail -1 "$samples")"; fi
	return 0
}

# prog_run TARGET ROUND: the XDP program's own ns per packet over one more
# GET run with bpf_stats on (validated like the others; no rate sample kept)
prog_run() {
	local t=$1 r=$2 id
	id=$(ip -n "$TB_SRV_NS" -j link show dev "$TB_SRV_DEV" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["xdp"]["prog"]["id"])') ||
		tb_die "$t: no XDP program id on $TB_SRV_DEV"
	echo 1 >/proc/sys/kernel/bpf_stats_enabled
	bpftool prog show id "$id" --json >"$TB_TMP/prog0.json" || tb_die "bpftool prog show id $id"
	run "$t" get 0 "$duration"
	bpftool prog show id "$id" --json >"$TB_TMP/prog1.json" || tb_die "bpftool prog show id $id"
	stats_restore
	python3 - "$t" "$r" "$TB_TMP/prog0.json" "$TB_TMP/prog1.json" "$TB_TMP/run.json" >>"$samples" <<'PY' || tb_die "$t: no program time"
import json, sys
t, r, a, b = sys.argv[1], int(sys.argv[2]), json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
run = json.load(open(sys.argv[5]))  # xdpgen's report of this same run
ns = b.get("run_time_ns", 0) - a.get("run_time_ns", 0)
n = b.get("run_cnt", 0) - a.get("run_cnt", 0)
if n <= 0 or ns <= 0:
    sys.stderr.write("[capacity] %s: bpf_stats counted no runs (run_cnt %d, run_time_ns %d)\n" % (t, n, ns))
    sys.exit(1)
print(json.dumps({"round": r, "target": t, "workload": "get", "kind": "prog_time",
                  "prog_ns_per_run": ns / n, "prog_runs": n,
                  "server_ns_per_reply": run["server_ns_per_reply"]}))
PY
	log "round $r $t program time: $(tail -1 "$samples")"
}

is_layout() { [[ $1 != reflector && $1 != null ]]; }
has_sets() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)' "$write_ratio"; }

one() { # one target in one round: attach, validate, time, detach
	local t=$1 r=$2
	attach "$t"
	run "$t" get 0 0.2
	run "$t" get "$r" "$duration"
	((prog_time)) && prog_run "$t" "$r"
	if is_layout "$t" && has_sets; then
		run "$t" set 0 0.2 --write-ratio "$write_ratio"
		run "$t" set "$r" "$duration" --write-ratio "$write_ratio"
	fi
	detach "$t"
}

for ((r = 1; r <= rounds; r++)); do
	order=("${tlist[@]}")
	if ((r % 2 == 0)); then
		order=()
		for ((i = ${#tlist[@]} - 1; i >= 0; i--)); do order+=("${tlist[i]}"); done
	fi
	for t in "${order[@]}"; do one "$t" "$r"; done
done

load_end=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$samples" "$cmdline" "$date_start" "$(date -u +%FT%TZ)" "$load_start" "$load_end" \
	"$(uname -r)" "$(nproc)" "$targets" "$rounds" "$duration" "$nkeys" "$write_ratio" "$entries" \
	"$TB_SERVER_CPU" "$TB_CLIENT_CPU" <<'PY' >"$TB_TMP/result.json"
import json, statistics, sys
(path, cmd, d0, d1, l0, l1, kernel, ncpu, targets, rounds, dur, nkeys, wr, entries,
 scpu, ccpu) = sys.argv[1:]
s = [json.loads(l) for l in open(path)]
targets = targets.split(",")
out = {
    "command": cmd,
    "machine": {"nproc": int(ncpu), "kernel": kernel, "date_start": d0, "date_end": d1,
                "loadavg_start": [float(x) for x in l0.split()],
                "loadavg_end": [float(x) for x in l1.split()]},
    "params": {"targets": targets, "rounds": int(rounds), "duration_s": float(dur),
               "keys": int(nkeys), "key_size": 16, "value_size": 64, "write_ratio": float(wr),
               "entries": int(entries), "server_cpu": int(scpu), "client_cpu": int(ccpu)},
    "ceiling": "reflector",
    "ratio_of": "median replies/s of the target / median replies/s of the reflector (get)",
    "samples": s,
    "results": {},
}
def stats(v):
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}
ceil = None
for w in ("get", "set"):
    for t in targets:
        x = [e for e in s if e["target"] == t and e["workload"] == w and "kind" not in e]
        if not x:
            continue
        res = {"replies_per_s": stats([e["replies_per_s"] for e in x])}
        ns = [e["server_ns_per_reply"] for e in x if e["server_ns_per_reply"] >= 0]
        if ns:
            res["server_ns_per_reply"] = stats(ns)
        pt = [e["prog_ns_per_run"] for e in s if e["target"] == t and e["workload"] == w
              and e.get("kind") == "prog_time"]
        if pt:
            res["prog_ns_per_run"] = stats(pt)
            # the server's ns per reply in those same runs (statistics on)
            res["prog_run_server_ns_per_reply"] = stats(
                [e["server_ns_per_reply"] for e in s if e["target"] == t and e["workload"] == w
                 and e.get("kind") == "prog_time"])
        out["results"].setdefault(w, {})[t] = res
        if t == "reflector" and w == "get":
            ceil = res["replies_per_s"]["median"]
for w, per in out["results"].items():
    for t, res in per.items():
        rp = res["replies_per_s"]
        if ceil:
            res["ratio"] = {"median": rp["median"] / ceil, "min": rp["min"] / ceil,
                            "max": rp["max"] / ceil}
print(json.dumps(out, indent=1))
PY
cat "$TB_TMP/result.json"
[[ -n $json_out ]] && cp "$TB_TMP/result.json" "$json_out"
python3 - "$TB_TMP/result.json" >&2 <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print("[capacity] %-10s %-5s %12s %8s %8s %8s %10s %9s" % ("target", "load", "replies/s", "ratio", "min", "max", "ns/reply", "prog ns"))
for w, per in j["results"].items():
    for t, r in per.items():
        ra = r.get("ratio", {})
        print("[capacity] %-10s %-5s %12.0f %8.3f %8.3f %8.3f %10.0f %9.0f" % (
            t, w, r["replies_per_s"]["median"], ra.get("median", 0), ra.get("min", 0),
            ra.get("max", 0), r.get("server_ns_per_reply", {}).get("median", -1),
            r.get("prog_ns_per_run", {}).get("median", -1)))
print("[capacity] load average %s at start, %s at end" % (j["machine"]["loadavg_start"], j["machine"]["loadavg_end"]))
PY
