#!/bin/bash
# SPDX-License-Identifier: MIT
# xdpkv in one command, on a fresh Debian 12 machine (as root):
#
#   bench/quickstart.sh [--json] [--time SECONDS] [--items N] [--no-install]
#                       [--build-dir DIR] [--prefix NAME]
#
# 1. installs what is missing (apt-get; a package is skipped when dpkg knows it;
#    libCacheSim from PyPI into bench/.venv for xdpkv compare's hit ratios),
# 2. configures and builds (cmake -G Ninja, build dir ./build or --build-dir),
# 3. brings up the veth testbed (tests/lib/testbed.sh: two namespaces),
# 4. for each layout: attach (native XDP), start the slow path, preload N
#    items (xdpkv load --generate), drive memaslap over UDP (128-byte values,
#    90% get) and read the store's status,
# 5. prints one row per layout, and removes everything (also on Ctrl-C).
#
# Columns: TPS as memaslap reports it; fast-path share = datagrams the XDP
# program answered / all datagrams answered during the run (xdpkv status);
# live items / capacity; the store map's memory as the kernel accounts it and
# that memory per entry of capacity.  memaslap makes a new key with every set
# (~10% of ~200k requests/s here), so the capacity is sized to the run: a full
# hash_map or percpu answers SERVER_ERROR, as it should, and fails the run.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

json=0 runtime=3 items=10000 install=1 build=build prefix=xkvqs$$
while (($#)); do
	case $1 in
	--json) json=1 ;;
	--time) runtime=${2:?--time SECONDS}; shift ;;
	--items) items=${2:?--items N}; shift ;;
	--no-install) install=0 ;;
	--build-dir) build=${2:?--build-dir DIR}; shift ;;
	--prefix) prefix=${2:?--prefix NAME (testbed namespaces NAME-srv, NAME-cli)}; shift ;;
	-h | --help) sed -n '3,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "quickstart: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done
[[ $runtime =~ ^[1-9][0-9]*$ ]] || { echo "quickstart: --time takes whole seconds" >&2; exit 2; }
[[ $items =~ ^[0-9]+$ ]] || { echo "quickstart: --items takes a number" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "quickstart: run as root (XDP, BPF maps and network namespaces)" >&2; exit 1; }

say() { echo "[quickstart] $*" >&2; }

# ---- 1. packages (the same list the test command installs) ---------------------
# and libCacheSim (PyPI, pinned) in bench/.venv, which xdpkv compare's
# hit-ratio experiment (m) replays its request sequences in
if ((install)); then
	tests/lib/install-deps.sh
	if ! bench/.venv/bin/python -c 'import libcachesim' 2>/dev/null; then
		say "installing libCacheSim into bench/.venv (bench/kvexp/setup-cachesim.sh)"
		bench/kvexp/setup-cachesim.sh >&2 ||
			say "libCacheSim could not be installed (PyPI unreachable?): xdpkv compare's (m) will check against its own models only, and say so"
	fi
fi


# ---- 2. build ---------------------------------------------------------------------
build=$(realpath -m "$build")
say "building in $build"
# an existing build dir keeps its generator and build type
[[ -f $build/CMakeCache.txt ]] || cmake -S . -B "$build" -G Ninja >/dev/null
cmake --build "$build" >&2
XDPKV=$build/cli/xdpkv
[[ -x $XDPKV ]] || { say "the build did not produce $XDPKV"; exit 1; }
export XDPKV

# ---- 3. testbed ---------------------------------------------------------------------
# shellcheck source=../tests/lib/testbed.sh
. "$repo/tests/lib/testbed.sh"
[[ -f $build/tests/xdp_pass.bpf.o ]] && TB_XDP_PASS_OBJ=$build/tests/xdp_pass.bpf.o
tb_up "$prefix" >&2

# preload + memaslap's 16 windows of 1k keys + a new key per set at up to
# 60k sets/s (600k requests/s at 10% set), rounded up to a power of two
entries=65536
while ((entries < items + 16384 + runtime * 60000)); do entries=$((entries * 2)); done
((entries <= 1 << 26)) || { say "--time $runtime with --items $items needs more than 2^26 entries"; exit 2; }
say "store capacity $entries entries (memaslap makes a new key with every set)"

# the layouts this kernel can hold; the others are skipped with the kernel's reason
layouts=$("$XDPKV" layouts --json | python3 -c 'import json,sys; print(" ".join(l["name"] for l in json.load(sys.stdin) if l.get("available") is not False))')
skipped=$("$XDPKV" layouts --json | python3 -c 'import json,sys
for l in json.load(sys.stdin):
    if l.get("available") is False:
        print("%s: %s" % (l["name"], l.get("unavailable_reason", "?")))')
[[ -n $layouts ]] || { say "xdpkv layouts listed nothing this kernel can hold"; exit 1; }
[[ -z $skipped ]] || while read -r line; do say "skipped (not available on this kernel): $line"; done <<<"$skipped"

# memaslap's mix (bench/memaslap.cfg): 16-byte keys, 128-byte values, 90 % gets
cfg=$repo/bench/memaslap.cfg

# ---- 4. one layout ------------------------------------------------------------------
rows=()
bad=()
run_layout() {
	local l=$1 log=$TB_TMP/memaslap.$1.log variant=$1 extra=()
	# lru_no_common_lru: lru with --no-common-lru (one LRU list per CPU)
	[[ $l == lru_no_common_lru ]] && variant=lru extra=(--no-common-lru)
	say "---- $l ----"
	tb_xdpkv --variant "$variant" attach "$TB_SRV_DEV" --mode native --entries "$entries" \
		--key-size 16 --value-size 256 --binary-keys "${extra[@]}" >&2
	tb_pin_napi
	tb_serve_start
	tb_xdpkv load "$TB_SRV_DEV" --generate "$items" >&2
	# memaslap sets SO_REUSEADDR on its UDP sockets and never binds them:
	# Linux may then give two of them one ephemeral port (about one run in
	# 250), and memaslap aborts on the other socket's request ids (assert in
	# ms_sort_udp_packet).  The shim drops the option on UDP sockets
	# (tests/lib/udp_noreuse.c), so each gets a port of its own.
	local rc=0
	tb_xdpkv status "$TB_SRV_DEV" --json >"$TB_TMP/before.json"
	tb_cli env LD_PRELOAD="$build/tests/libxkv_udp_noreuse.so" memcaslap -s "$TB_SRV_IP4:$TB_PORT" \
		-U -F "$cfg" -T 1 -c 16 -w 1k -t "${runtime}s" --verify=0.1 >"$log" 2>&1 || rc=$?
	((rc == 0)) || { cat "$log" >&2; tb_die "memcaslap failed (exit status $rc)"; }
	tb_xdpkv status "$TB_SRV_DEV" --json >"$TB_TMP/after.json"
	tb_serve_stop
	tb_xdpkv detach "$TB_SRV_DEV" >&2

	local tps drops timeouts vfail
	tps=$(sed -n 's/.*TPS: *\([0-9][0-9]*\).*/\1/p' "$log" | tail -n1)
	drops=$(sed -n 's/^packet_drop: *\([0-9]*\).*/\1/p' "$log" | tail -n1)
	timeouts=$(sed -n 's/^udp_timeout: *\([0-9]*\).*/\1/p' "$log" | tail -n1)
	vfail=$(sed -n 's/^verify_failed: *\([0-9]*\).*/\1/p' "$log" | tail -n1)
	[[ -n $tps ]] || { cat "$log" >&2; tb_die "no TPS in memaslap's output"; }
	# replies memaslap did not expect ("<conn ERROR..."), and a run without gets, make
	# the TPS meaningless: say so and fail at the end
	local errors gets
	errors=$(grep -cE '^<[0-9]+ (ERROR|CLIENT_ERROR|SERVER_ERROR)' "$log" || true)
	gets=$(sed -n 's/^cmd_get: *\([0-9]*\).*/\1/p' "$log" | tail -n1)
	if ((errors > 0 || ${gets:-0} == 0)); then
		say "$l: memaslap got $errors error replies and ${gets:-0} gets, e.g.: $(grep -m1 -E '^<[0-9]+ [A-Z_]*ERROR' "$log")"
		bad+=("$l")
	fi
	local fast_share live entries map_memory bytes_per_item bytes_per_entry served_share
	eval "$(python3 tests/e2e/xkvstatus.py delta "$TB_TMP/before.json" "$TB_TMP/after.json" |
		grep -E '^served_')"
	eval "$(python3 tests/e2e/xkvstatus.py show "$TB_TMP/after.json")"
	rows+=("$l $tps $served_share $live $entries $map_memory $bytes_per_entry ${drops:-?} ${timeouts:-?} ${vfail:-?}")
}

for l in $layouts; do
	run_layout "$l"
	if [[ $l == lru ]]; then
		run_layout lru_no_common_lru
	fi
done

# ---- 5. the table -------------------------------------------------------------------
if ((json)); then
	printf '%s\n' "${rows[@]}" | python3 -c '
import json, sys
def num(s):
    try:
        return float(s) if "." in s else int(s)
    except ValueError:
        return None
out = []
for line in sys.stdin:
    l, tps, share, live, cap, mem, bpe, drops, tmo, vf = line.split()
    out.append({"layout": l, "tps": num(tps), "fast_path_share_pct": num(share),
                "live_items": num(live), "capacity": num(cap), "map_memory_bytes": num(mem),
                "bytes_per_entry": num(bpe), "packet_drop": num(drops),
                "udp_timeout": num(tmo), "verify_failed": num(vf)})
skipped = [dict(zip(("layout", "reason"), s.split(": ", 1))) for s in sys.argv[1].splitlines() if s]
print(json.dumps({"value_bytes": 128, "get_ratio": 0.9, "seconds": '"$runtime"',
                  "preloaded": '"$items"', "layouts": out, "skipped": skipped}, indent=2))' "$skipped"
else
	printf '\n%-10s %10s %10s %10s %10s %14s %12s  %s\n' layout TPS fast-path "live items" \
		capacity "map memory B" "bytes/entry" "drops/timeouts/verify_failed"
	for r in "${rows[@]}"; do
		read -r l tps share live cap mem bpe drops tmo vf <<<"$r"
		printf '%-10s %10s %9s%% %10s %10s %14s %12s  %s/%s/%s\n' "$l" "$tps" "$share" "$live" \
			"$cap" "$mem" "$bpe" "$drops" "$tmo" "$vf"
	done
	echo
	echo "memaslap: ${runtime}s, 1 thread on CPU 0, 16 connections, 16-byte keys, 128-byte values, 90% get;"
	echo "xdpkv native XDP on veth, NAPI and slow path on CPU 1, $items items preloaded."
	[[ -z $skipped ]] || { echo "not run, this kernel ($(uname -r)) cannot hold them:"; sed 's/^/  /' <<<"$skipped"; }
fi
if ((${#bad[@]})); then
	say "FAILED: memaslap's workload was not served correctly for: ${bad[*]} (see above)"
	exit 1
fi
