#!/usr/bin/env bash
# The test command: install what is missing, build, run the whole suite.
#   sudo tests/run.sh [ctest args…]      e.g. sudo tests/run.sh -R fixtures
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
	echo "xdpkv tests load BPF programs and create network namespaces: run as root" >&2
	exit 1
fi
tests/lib/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build
cd build
rc=0
ctest --output-on-failure "$@" || rc=$?
if ((rc != 0)); then
	# A digest last, where a truncated CI log still shows it: each failed
	# test's FAIL lines (the checks and the testbed's tb_die).
	echo "==== failed checks ===="
	awk '/^[0-9]+\/[0-9]+ Test: / { t = $3 }
	     /^(FAIL|not ok)|FAIL:|Failure|error:/ && t != "" { print t ": " $0 }' \
		Testing/Temporary/LastTest.log | tail -n 15 || true
fi
exit $rc
