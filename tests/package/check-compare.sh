#!/bin/bash
# SPDX-License-Identifier: MIT
# xdpkv compare from the installed package (cli/packaging.cmake): cpack
# builds the .deb in BUILD, dpkg -x unpacks it into a throw-away root, and
# that root's xdpkv runs `compare --smoke` with its own scripts, testbed and
# tools (nothing from the build or source tree), checked by the packaged
# check.py.  The modes of the scripts compare executes are checked in the
# package itself.  Root (the testbed); the temporary root is removed, also
# on failure.
#   tests/package/check-compare.sh BUILD PREFIX VERSION
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"
build=$1 prefix=$2 version=$3
for t in cpack dpkg-deb; do
	command -v "$t" >/dev/null || { echo "FAIL $t is missing (apt-get install dpkg-dev cmake)"; exit 1; }
done
deb=$build/xdpkv_${version}_$(dpkg --print-architecture).deb
tmp=$(mktemp -d /tmp/xkv-pkgcmp.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
(cd "$build" && cpack -G DEB >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; echo "FAIL cpack -G DEB"; exit 1; }
check "cpack wrote $deb" test -f "$deb"

# modes in the package: what compare executes is 0755, what it reads 0644
list=$(dpkg-deb -c "$deb")
mode() { awk -v f=".$1" '$6 == f { print $1 }' <<<"$list"; }
share=$prefix/share/xdpkv libexec=$prefix/libexec/xdpkv
for f in bench/compare/tb-call.sh bench/compare/testbed-run.sh bench/tcpscale.sh bench/kvexp/setup-cachesim.sh; do
	check "$f is -rwxr-xr-x in the package" test "$(mode "$share/$f")" = -rwxr-xr-x
done
for f in bench/compare/compare.py bench/compare/runner.py bench/kvexp/hitratio_vs_cachesim.py tests/lib/testbed.sh; do
	check "$f is -rw-r--r-- in the package" test "$(mode "$share/$f")" = -rw-r--r--
done
for f in xkv-loadgen xdpgen xkv-kvexp; do
	check "$f is -rwxr-xr-x in the package" test "$(mode "$libexec/$f")" = -rwxr-xr-x
done
check "the reflector is in the package" test -n "$(mode "$libexec/reflector.bpf.o")"
if [[ -x $build/bench/microbench ]]; then
	check "the microbenchmark is in the package (built here)" \
		test "$(mode "$libexec/microbench")" = -rwxr-xr-x
fi

dpkg-deb -x "$deb" "$tmp/root"
root=$tmp/root$prefix
out=$tmp/out
# XDPKV and the tools' variables unset: compare must find the package's own
env -u XDPKV -u XKV_LOADGEN -u XKV_XDPGEN -u XKV_KVEXP -u XKV_MICROBENCH -u XKV_REFLECTOR_OBJ \
	-u TB_XDP_PASS_OBJ "$root/sbin/xdpkv" compare --smoke --prefix xpk$$ --layouts hash_map,set_assoc \
	--baselines memcached-udp,redis --out "$out" >"$tmp/compare.log" 2>&1
rc=$?
tail -n 25 "$tmp/compare.log"
check "compare --smoke from the unpacked package exits 0" test $rc = 0
check "no PermissionError or missing tool" bash -c '! grep -Eq "PermissionError|not found|not built" "$1"' _ "$tmp/compare.log"
check "the packaged check.py passes the output" /usr/bin/python3 "$root/share/xdpkv/bench/compare/check.py" \
	"$out" --layouts hash_map,set_assoc --baselines memcached-udp,redis
check "every tool compare ran is the package's" /usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1] + "/results.json"))
t = {k: v for k, v in r["tools"].items() if k != "microbench" or v}
print(t)
sys.exit(0 if t and all(v and v.startswith(sys.argv[2]) for v in t.values()) else 1)' "$out" "$root/"
exit $fail
