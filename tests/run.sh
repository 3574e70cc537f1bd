#!/usr/bin/env bash
# The test command: install what is missing, build, run the suite, tests
# side by side (ctest -j).
#   sudo tests/run.sh                   the whole suite
#   sudo tests/run.sh --quick           a cross-section, under 2 minutes
#   sudo tests/run.sh --tier unit|bpf|e2e
#   sudo tests/run.sh --tier kernels    the kernel matrix (tests/kernels/run.sh)
#   sudo tests/run.sh [options] [ctest args…]   e.g. tests/run.sh -R fixtures
# XKV_TEST_JOBS: tests at a time (default: 3 per core; most wait on the
# network, clients or a verifier rather than a CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }
sel=()
kernels=0
while (($#)); do
	case $1 in
	--quick) sel=(-L '^quick$'); shift ;;
	--tier)
		[[ ${2:-} =~ ^(unit|bpf|e2e|kernels)$ ]] || { echo "tests/run.sh: --tier takes unit, bpf, e2e or kernels" >&2; exit 2; }
		if [[ $2 == kernels ]]; then kernels=1; else sel=(-L "^$2\$"); fi
		shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) break ;;
	esac
done
if [ "$(id -u)" != 0 ]; then
	echo "xdpkv tests load BPF programs and create network namespaces: run as root" >&2
	exit 1
fi
tests/lib/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build
# not a ctest label: Debian's kernels in VMs and the host's (tests/kernels/run.sh)
((kernels == 0)) || exec tests/kernels/run.sh --build build "$@"
cd build
jobs=${XKV_TEST_JOBS:-$((3 * $(nproc)))}
rc=0
start=$(date +%s)
ctest --output-on-failure -j "$jobs" "${sel[@]}" "$@" || rc=$?
echo "tests/run.sh: $(($(date +%s) - start)) s with $jobs tests at a time"
# What this kernel lacks, never counted as passed: each SKIP line (a whole
# test, or one layout inside a test) with its reason, and how many said it.
if grep -q '^SKIP' Testing/Temporary/LastTest.log 2>/dev/null; then
	echo "==== skipped on this kernel ($(uname -r)): count, what, why ===="
	grep -h '^SKIP' Testing/Temporary/LastTest.log | sed 's/^SKIP:\{0,1\} *//' | sort | uniq -c | sort -rn
fi
if ((rc != 0)); then
	# A digest last, where a truncated CI log still shows it: each failed
	# test's FAIL lines (the checks and the testbed's tb_die).
	echo "==== failed checks ===="
	awk '/^[0-9]+\/[0-9]+ Test: / { t = $3 }
	     /^(FAIL|not ok)|FAIL:|Failure|error:/ && t != "" { print t ": " $0 }' \
		Testing/Temporary/LastTest.log | tail -n 15 || true
fi
exit $rc
