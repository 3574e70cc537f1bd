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
exec ctest --output-on-failure "$@"
