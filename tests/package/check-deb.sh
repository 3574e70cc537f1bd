#!/bin/bash
# SPDX-License-Identifier: MIT
# The .deb (cli/packaging.cmake): cpack builds it in BUILD, then its control
# fields, its file list, its conffiles and an unpacked xdpkv --version are
# checked.  Nothing is installed on this machine.
#   tests/package/check-deb.sh BUILD PREFIX VERSION
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"
build=$1 prefix=$2 version=$3
for t in cpack dpkg-deb dpkg-shlibdeps; do
	command -v "$t" >/dev/null || { echo "FAIL $t is missing (apt-get install dpkg-dev cmake)"; exit 1; }
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
check "a Maintainer" test -n "$(field Maintainer)"
check "a Description with a long part" test "$(field Description | wc -l)" -ge 2
deps=$(field Depends)
echo "Depends: $deps"
for p in libc6 libbpf1 libxdp1 libcap2 libzstd1 liblz4-1 libxxhash0 libmurmurhash2 adduser; do
	check "Depends names $p" grep -Eq "(^|, )$p( |,|$)" <<<"$deps"
done
files=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in "$prefix/sbin/xdpkv" "$prefix/share/man/man8/xdpkv.8" "$prefix/lib/systemd/system/xdpkv@.service" \
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
dpkg-deb -x "$deb" "$tmp/root"
check "the unpacked xdpkv --version says $version" \
	bash -c '"$1" --version | grep -q "^xdpkv $2 "' _ "$tmp/root$prefix/sbin/xdpkv" "$version"
check "the unit runs the packaged binaries" \
	grep -q "^ExecStart=$prefix/sbin/xdpkv serve %i" "$tmp/root$prefix/lib/systemd/system/xdpkv@.service"
exit $fail
