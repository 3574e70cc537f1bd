#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: README's "Quick start on a real interface" runs as written.
#   tests/e2e/readme.sh
# The block's lines, taken from README.md, run in the testbed's server
# namespace with two substitutions: eth0 is the testbed's interface and
# build/cli/xdpkv the CLI under test; the build line is left out (the build
# is there).  Every line must succeed (the get finds the key the load made),
# and the get's reply is checked.  Environment: XDPKV (CLI), E2E_PREFIX.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV"
readme=$here/../../README.md
tb_up "${E2E_PREFIX:-xr$$}"
dev=$TB_SRV_DEV

# the block after "## Quick start on a real interface", between ```sh and ```
awk '/^## Quick start on a real interface/ { s = 1; next }
	s == 1 && /^```sh/ { s = 2; next }
	s == 2 && /^```/ { exit }
	s == 2' "$readme" >"$TB_TMP/block"
check "README has the quick-start block ($(wc -l <"$TB_TMP/block") lines)" test -s "$TB_TMP/block"
check "... with a get of a generated key" grep -q '^build/cli/xdpkv get eth0 key:' "$TB_TMP/block"
{
	echo 'set -e'
	echo 'trap '\''kill $(jobs -p) 2>/dev/null; wait'\'' EXIT' # serve &, when a line fails
	grep -v '^cmake ' "$TB_TMP/block" |
		sed -e "s|build/cli/xdpkv|$XDPKV|g" -e "s|\\beth0\\b|$dev|g" \
			-e "s|^\\($XDPKV get [^#]*\\)|\\1 >$TB_TMP/get.out |"
} >"$TB_TMP/quickstart.sh"
cat "$TB_TMP/quickstart.sh"
check "the block runs, every line with exit 0" \
	nsenter --net="/run/netns/$TB_SRV_NS" -- bash "$TB_TMP/quickstart.sh"
cat "$TB_TMP/get.out" 2>/dev/null || true
key=$(sed -n 's/^build\/cli\/xdpkv get eth0 \(key:[0-9]*\).*/\1/p' "$TB_TMP/block")
# load --generate's value: '<key>/<seed>/' repeated to 128 bytes (docs/cli.md)
check "the get found $key (its generated value)" grep -q "^$key/0/$key/0/" "$TB_TMP/get.out"
check "... and detach left nothing pinned" test ! -e "/sys/fs/bpf/xdpkv/$dev"
exit $fail
