#!/bin/bash
# The scaling runs on a larger machine, from a kit packed by bench/devkit.sh:
#
#   bench/devkit-run.sh OUTDIR [--budget SECONDS] [--l-share PCT] [--layouts L,...] [--l-layouts L,...]
#                              [--j-repeat N] [--j-duration S] [--l-repeat N]
#                              [--setting quick|smoke] [--kit DIR] [--parts l,j,t]
#                              [--t-threads 1,2,4,8] [--t-duration S]
#
# Runs as root, with the kit in ./devkit of the repository (or --kit DIR).  Checks the
# kit first (glibc, every packed tool runs, bpffs mounted or mountable), writes
# the machine's description to OUTDIR/machine.txt, then
#   (l) xdpkv compare --quick --experiments l  (microbenchmark, 1..nproc threads)
#   (j) xdpkv compare --quick --experiments j  (server capacity at 1, 2, 4 ...
#   (--setting smoke: compare's --smoke sizes instead, for ctest devkit_smoke)
#       server cores per layout, against the reflector and the null store)
#   (t) bench/tcpscale.sh: memaslap over TCP against memcached and xdpkv serve
#       (kernel TCP path on and off), redis-benchmark against Redis
#       (--io-threads N), at --t-threads server threads, server on the upper
#       half of the CPUs, the clients on the lower half (issue 19);
#       OUTDIR/t.jsonl.  Only with --parts naming it (default: l,j).
# each with its share of --budget (default 480 s; (l) gets --l-share, default
# 20 %).  A part that runs out of time is stopped with SIGINT: compare writes
# what it measured (status "interrupted") and takes its testbed down.  The
# results are OUTDIR/l and OUTDIR/j (results.json, report.md, results.csv;
# plots only where matplotlib exists: render them afterwards with
# `xdpkv compare --render OUTDIR/j`).  Exit status: 0 when every part run
# succeeded (l and j: wrote a results.json; t: every row valid), 1 otherwise.
set -uo pipefail
(($# >= 1)) || { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $1 == -h || $1 == --help ]] && { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
out=$1
shift
budget=480 lshare=20 layouts=hash_map,array_fnv,lru,lru_no_common_lru,percpu,set_assoc,sieve,s3fifo,lru_percpu,arena
jrep=1 jdur=1 lrep=3 llayouts= setting=quick kit= parts=l,j tthreads=1,2,4,8 tdur=10
while (($#)); do
	case $1 in
	--budget) budget=$2; shift 2 ;;
	--l-share) lshare=$2; shift 2 ;;
	--layouts) layouts=$2; shift 2 ;;
	--l-layouts) llayouts=$2; shift 2 ;;
	--j-repeat) jrep=$2; shift 2 ;;
	--j-duration) jdur=$2; shift 2 ;;
	--l-repeat) lrep=$2; shift 2 ;;
	--setting) setting=$2; shift 2 ;;
	--kit) kit=$(cd "$2" && pwd) || exit 2; shift 2 ;;
	--parts) parts=$2; shift 2 ;;
	--t-threads) tthreads=$2; shift 2 ;;
	--t-duration) tdur=$2; shift 2 ;;
	*) echo "devkit-run.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
mkdir -p "$out"
out=$(cd "$out" && pwd)
[[ $setting == quick || $setting == smoke ]] || { echo "devkit-run.sh: --setting quick or smoke" >&2; exit 2; }
kit=${kit:-$repo/devkit}
[[ -f $kit/env.sh ]] || { echo "devkit-run.sh: no kit in $kit (bench/devkit.sh packs it)" >&2; exit 1; }
# shellcheck source=/dev/null
. "$kit/env.sh"
t0=$(date +%s)
log() { echo "[devkit-run +$(($(date +%s) - t0))s] $*" | tee -a "$out/run.log" >&2; }

have=$(ldd --version 2>/dev/null | awk 'NR==1{print $NF}')
if [[ -z $have ]] || [[ $(printf '%s\n%s\n' "$DEVKIT_GLIBC" "$have" | sort -V | head -1) != "$DEVKIT_GLIBC" ]]; then
	log "glibc here is '$have', the kit needs $DEVKIT_GLIBC or newer"
	exit 1
fi
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || { log "cannot mount bpffs"; exit 1; }
bad=0
for c in "ip -V" "ss -V" "bpftool version" "sysctl -n kernel.ostype" "$XDPKV --version" \
	"$PYTHON -c 'import json, subprocess, argparse, csv, platform, statistics'" \
	"$DEVKIT/build/bench/xdpgen/xdpgen --help" "$DEVKIT/build/bench/microbench --benchmark_list_tests=true" \
	"nsenter --version" "taskset --version" "timeout --version" \
	"redis-server --version" "redis-benchmark --version" "redis-cli --version"; do
	if ! eval "$c" >/dev/null 2>>"$out/run.log"; then
		log "does not run here: $c"
		bad=1
	fi
done
((bad)) && exit 1
{
	echo "date: $(date -u +%FT%TZ)"
	echo "uname: $(uname -a)"
	echo "nproc: $(nproc)"
	grep -m1 "model name" /proc/cpuinfo
	grep -E "MemTotal" /proc/meminfo
	cat /etc/os-release 2>/dev/null | grep -E "^PRETTY_NAME"
	echo "python: $($PYTHON --version 2>&1) ($PYTHON)"
	echo "xdpkv: $($XDPKV --version 2>&1)"
	echo "kit: $(head -1 "$DEVKIT/env.sh")"
	command -v lscpu >/dev/null && lscpu
} >"$out/machine.txt" 2>&1
log "machine: $(nproc) CPUs, $(uname -r); budget ${budget}s"

rc=0
part() { # NAME SECONDS ARGS...
	local name=$1 secs=$2
	shift 2
	if ((secs < 10)); then
		log "($name) skipped: ${secs}s of the budget left"
		rc=1
		return
	fi
	log "($name) start, at most ${secs}s: compare $*"
	timeout -s INT -k 30 "$secs" "$PYTHON" bench/compare/compare.py "$@" --out "$out/$name" \
		>"$out/$name.stdout" 2>"$out/$name.stderr"
	local r=$?
	log "($name) exit $r$( ((r == 124)) && echo ' (time budget reached: interrupted)')"
	[[ -f $out/$name/results.json ]] || { log "($name) wrote no results.json"; rc=1; }
	tail -5 "$out/$name.stderr" | sed 's/^/    /' >&2
}
has() { [[ ,$parts, == *,$1,* ]]; }
if has t; then
	n=$(nproc) half=$(($(nproc) / 2))
	log "(t) start: bench/tcpscale.sh --threads $tthreads, server CPUs $half-$((n - 1)), client CPUs 0-$((half - 1))"
	timeout -s INT -k 30 "$budget" bench/tcpscale.sh --threads "$tthreads" --duration "$tdur" \
		--server-cpus "$half-$((n - 1))" --client-cpus "0-$((half - 1))" --build-dir "$DEVKIT/build" \
		--json "$out/t.jsonl" >"$out/t.stdout" 2>"$out/t.stderr"
	r=$?
	log "(t) exit $r"
	((r == 0)) || rc=1
	tail -5 "$out/t.stderr" | sed 's/^/    /' >&2
fi
if has l; then
	lsecs=$((budget * lshare / 100))
	part l "$lsecs" --$setting --experiments l --baselines none --repeat "$lrep" --layouts "${llayouts:-$layouts}"
fi
if has j; then
	left=$((budget - ($(date +%s) - t0)))
	part j "$left" --$setting --experiments j --baselines none --repeat "$jrep" --duration "$jdur" --layouts "$layouts"
fi
# one file back: the device tool returns a limited number of files
tar -C "$out" -czf "$out.tar.gz" . && log "packed $out.tar.gz"
log "done, exit $rc"
exit $rc
