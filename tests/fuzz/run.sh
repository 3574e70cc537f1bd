#!/usr/bin/env bash
# The fuzz targets (README.md here): configure build-fuzz/ with clang and
# -DXKV_FUZZ=ON, build them, replay every seed and every kept crash input,
# then fuzz each target for N seconds, one after the other, on one core.
# Any crash, sanitizer report, leak or timeout fails the run (exit 1).
#   tests/fuzz/run.sh [--seconds N] [--only TARGET] [--no-build] [--timeout S]
#                     [--build-dir DIR] [--nice N]
# Needs root (the stream, meta and snapshot targets use BPF maps).  What a
# run found stays under build-fuzz/fuzz-run/<target>/: the grown corpus
# (corpus/), crash inputs (artifacts/), libFuzzer's log (fuzz-0.log) and the
# CPU time it took (cpu).  JOBS=N ninja jobs (default: all cores).
# --timeout: seconds one input may take (libFuzzer's -timeout and
# -report_slow_units: a slow unit is written only past it; default 25;
# wall clock: raise it for a long run at low priority on a busy machine).
# --build-dir: the clang build (default build-fuzz/; the ctest fuzz_short
# uses its own build dir's name with -fuzz appended, build/ -> build-fuzz/).
# --nice: the build's and the fuzzers' niceness (default 10; the ctest
# fuzz_short runs at 0, as the tests beside it: at 10 it got a tenth of a
# CPU while they ran and took 949 s for 100 s of CPU).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bdir=$root/build-fuzz
secs=20
tmo=25
only=
build=1
niceness=10
while (($#)); do
	case $1 in
	--seconds) secs=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	--timeout) tmo=$2; shift 2 ;;
	--build-dir) bdir=$(realpath -m "$2"); shift 2 ;;
	--nice) niceness=$2; shift 2 ;;
	*) echo "usage: $0 [--seconds N] [--only TARGET] [--no-build] [--timeout S] [--build-dir DIR] [--nice N]" >&2; exit 2 ;;
	esac
done
targets=(fuzz_parse fuzz_stream fuzz_meta fuzz_snapshot fuzz_jsonl)
[ -n "$only" ] && targets=("$only")
# largest input libFuzzer makes, per target
declare -A maxlen=([fuzz_parse]=8192 [fuzz_stream]=16384 [fuzz_meta]=4096 [fuzz_snapshot]=8192
		   [fuzz_jsonl]=4096)

if [ "$(id -u)" != 0 ]; then
	echo "fuzz: needs root (BPF maps)" >&2
	exit 1
fi
if ((build)); then
	if ! grep -qs '^XKV_FUZZ:BOOL=ON' "$bdir/CMakeCache.txt"; then
		cc=$(command -v clang) || { echo "fuzz: needs clang" >&2; exit 1; }
		cmake -S "$root" -B "$bdir" -G Ninja -DCMAKE_C_COMPILER="$cc" -DXKV_FUZZ=ON >/dev/null
	fi
	nice -n "$niceness" ninja -C "$bdir" -j "${JOBS:-$(nproc)}" fuzz_all >/dev/null
fi

fail=0
for t in "${targets[@]}"; do
	bin=$bdir/tests/fuzz/$t
	run=$bdir/fuzz-run/$t
	mkdir -p "$run/corpus" "$run/artifacts" "$here/corpus/$t" "$here/crashes/$t"
	# 1. every seed and every kept crash input, once each
	mapfile -t inputs < <(find "$here/corpus/$t" "$here/crashes/$t" -type f | sort)
	if ((${#inputs[@]})) && ! (cd "$run" && "$bin" "${inputs[@]}" >replay.log 2>&1); then
		echo "FAIL $t: replaying the seeds and kept crashes ($run/replay.log):"
		grep -E "ERROR|runtime error|check failed|stream:|Running:" "$run/replay.log" | tail -5
		fail=1
		continue
	fi
	# 2. fuzz; new inputs go to build-fuzz only (the seeds stay as they are)
	rm -f "$run"/artifacts/* "$run"/fuzz-0.log
	start=$(date +%s)
	(cd "$run" && /usr/bin/time -f "%U %S" -o "$run/cpu" nice -n "$niceness" "$bin" -jobs=1 -workers=1 \
		-max_total_time="$secs" -max_len="${maxlen[$t]}" -timeout="$tmo" -report_slow_units="$tmo" -rss_limit_mb=4096 \
		-artifact_prefix="$run/artifacts/" -print_final_stats=1 \
		"$run/corpus" "$here/corpus/$t" "$here/crashes/$t" >"$run/run.log" 2>&1) || true
	cpu=$(awk '{printf "%.0f", $1 + $2}' "$run/cpu")
	execs=$(grep -h 'stat::number_of_executed_units' "$run/fuzz-0.log" 2>/dev/null | awk '{print $2}' | tail -1)
	found=$(find "$run/artifacts" -type f | wc -l)
	if ((found)) || grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|check failed" "$run/fuzz-0.log" 2>/dev/null; then
		echo "FAIL $t: $(($(date +%s) - start)) s, ${cpu} CPU s, ${execs:-?} inputs; found:"
		find "$run/artifacts" -type f
		grep -E "ERROR|runtime error|check failed|stream:" "$run/fuzz-0.log" | head -5
		fail=1
	else
		echo "PASS $t: ${#inputs[@]} kept inputs replayed; fuzzed $(($(date +%s) - start)) s, ${cpu} CPU s, ${execs:-?} inputs, 0 crashes"
	fi
done
exit $fail
