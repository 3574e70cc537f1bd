#!/bin/bash
# SPDX-License-Identifier: MIT
# The .deb (cli/packaging.cmake): cpack builds it in BUILD, then its control
# fields (a real Maintainer and Homepage), its file list, its conffiles and
# maintainer scripts, lintian's verdict (no error, no warning) and an
# unpacked xdpkv --version are checked.  Nothing is installed on this machine
# (tests/package/lifecycle.sh installs and removes it in a container).
#   tests/package/check-deb.sh BUILD PREFIX VERSION
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"
build=$1 prefix=$2 version=$3
for t in cpack dpkg-deb dpkg-shlibdeps lintian; do
	command -v "$t" >/dev/null ||
		{ echo "FAIL $t is missing (apt-get install dpkg-dev cmake lintian: tests/lib/install-deps.sh)"; exit 1; }
done
arch=$(dpkg --print-architecture)
deb=$build/xdpkv_${version}_${arch}.deb
rm -f "$deb"
(cd "$build" && cpack -G DEB >cpack.log 2>&1) || { cat "$build/cpack.log"; echo "FAIL cpack -G DEB"; exit 1; }
check "cpack wrote $deb" test -f "$deb"
field() { dpkg-deb -f "$deb" "$1"; }
check "Package: xdpkv" test "$(field Package)" = xdpkv
check "Version: $version (project(VERSION))" test "$(field Version)" = "$version"
check "Architecture: $arch" test "$(field Architecture)" = "$arch"
check "a Maintainer with an address ($(field Maintainer))" grep -Eq '^[^<]+ <[^@ ]+@[^@ ]+\.[a-z]+>$' <<<"$(field Maintainer)"
check "no localhost Maintainer" bash -c '! grep -q "@localhost" <<<"$1"' _ "$(field Maintainer)"
check "an https Homepage ($(field Homepage))" grep -Eq '^https://[a-z0-9.-]+\.[a-z]+/' <<<"$(field Homepage)"
check "a Description with a long part" test "$(field Description | wc -l)" -ge 2
deps=$(field Depends)
echo "Depends: $deps"
for p in libc6 libbpf1 libxdp1 libcap2 libzstd1 liblz4-1 libxxhash0 libmurmurhash2 adduser; do
	check "Depends names $p" grep -Eq "(^|, )$p( |,|$)" <<<"$deps"
done
files=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in "$prefix/sbin/xdpkv" "$prefix/share/man/man8/xdpkv.8.gz" "$prefix/lib/systemd/system/xdpkv@.service" \
	"$prefix/libexec/xdpkv/xdpkv-service" /etc/xdpkv/example.conf "$prefix/share/doc/xdpkv/cli.md" \
	"$prefix/share/doc/xdpkv/install.md" "$prefix/share/xdpkv/bench/compare/compare.py" \
	"$prefix/share/xdpkv/tests/lib/testbed.sh" "$prefix/libexec/xdpkv/xkv-loadgen"; do
	check "the package holds $f" grep -qx "\.$f" <<<"$files"
done
check "no build-tree paths in the package" bash -c '! grep -Eq "/work/|CMake|\.ninja" <<<"$1"' _ "$files"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -e "$deb" "$tmp/control"
check "conffiles: /etc/xdpkv/example.conf" grep -qx /etc/xdpkv/example.conf "$tmp/control/conffiles"
check "postinst creates the xdpkv user" grep -q 'adduser --system' "$tmp/control/postinst"
check "prerm detaches on removal" grep -q 'detach "$ifc"' "$tmp/control/prerm"
check "prerm calls the packaged xdpkv" grep -qx "XDPKV=$prefix/sbin/xdpkv" "$tmp/control/prerm"
check "postrm purges the snapshots and settings" grep -q 'rm -rf /var/lib/xdpkv /etc/xdpkv' "$tmp/control/postrm"
# lintian: no error and no warning (info and pedantic tags are not judged)
lintian "$deb" >"$tmp/lintian.out" 2>&1
grep -v 'running with root privileges' "$tmp/lintian.out"
check "lintian: no error or warning" bash -c '! grep -Eq "^[EW]: " "$1"' _ "$tmp/lintian.out"
dpkg-deb -x "$deb" "$tmp/root"
check "the unpacked xdpkv --version says $version" \
	bash -c '"$1" --version | grep -q "^xdpkv $2 "' _ "$tmp/root$prefix/sbin/xdpkv" "$version"
layouts=$("$tmp/root$prefix/sbin/xdpkv" layouts --json | python3 -c 'import json,sys; print(" ".join(l["name"] for l in json.load(sys.stdin)))')
conf_layouts() { # the layout names example.conf's comment lists, in its order
	sed -n '/^# Storage layout/,/^#XDPKV_LAYOUT/p' "$tmp/root/etc/xdpkv/example.conf" |
		grep -v '^#XDPKV_LAYOUT' | sed 's/^#//' | tr -s ' \n' ' ' | sed 's/.*): //; s/[,.]//g; s/ *$//'
}
check "example.conf lists every layout ($layouts)" test "$(conf_layouts)" = "$layouts"
check "the unit runs the packaged binaries" \
	grep -q "^ExecStart=$prefix/sbin/xdpkv serve %i" "$tmp/root$prefix/lib/systemd/system/xdpkv@.service"
exit $fail
