#!/bin/bash
# SPDX-License-Identifier: MIT
# The .deb installed and removed for real, by dpkg and apt-get, in a
# throw-away container: systemd-nspawn on an overlay of this machine's root
# (its dpkg database and libraries, a tmpfs on top: nothing it writes stays),
# in the testbed's server network namespace, with the host's bpffs.
#   tests/package/lifecycle.sh BUILD VERSION
# 1. dpkg -i; a store attached; apt-get remove: the prerm detaches it
#    (no program, no pins) before the binary goes.
# 2. XDPKV_KEEP_ON_REMOVE=yes in /etc/xdpkv/IFACE.conf: dpkg -r leaves it
#    attached and answering; dpkg --purge then takes the program (XDP and
#    the TCP egress filter) and the pins off, and removes /var/lib/xdpkv and
#    /etc/xdpkv.
# Root (the testbed); names carry the PID.  Environment: XDPKV (the CLI, for
# the testbed's checks), E2E_PREFIX.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"
build=$1 version=$2
command -v systemd-nspawn >/dev/null ||
	tb_die "systemd-nspawn not found: apt-get install systemd-container (tests/lib/install-deps.sh)"
deb=$build/xdpkv_${version}_$(dpkg --print-architecture).deb
# nspawn refuses --volatile=overlay on /: the overlay is made here, this
# machine's root under a tmpfs, and unmounted whatever happens
ov=
ov_down() {
	[[ -n $ov ]] || return 0
	umount "$ov/bpf" 2>/dev/null || umount -l "$ov/bpf" 2>/dev/null
	umount "$ov/merged" 2>/dev/null || umount -l "$ov/merged" 2>/dev/null
	umount "$ov" 2>/dev/null || umount -l "$ov" 2>/dev/null
	rmdir "$ov" 2>/dev/null
	rm -rf "/run/systemd/nspawn/propagate/$machine" # nspawn's, left on a /run that is not tmpfs
	ov=
}
machine=xkv-pkg-$$
tb_up "${E2E_PREFIX:-xl$$}"
trap 'ov_down; tb_down' EXIT
trap 'ov_down; tb_down; trap - INT; kill -INT $$' INT
trap 'ov_down; tb_down; trap - TERM; kill -TERM $$' TERM
dev=$TB_SRV_DEV
ov=$(mktemp -d /tmp/xkv-ov.XXXXXX)
mount -t tmpfs -o size=512m tmpfs "$ov" || tb_die "tmpfs at $ov"
mkdir "$ov/upper" "$ov/work" "$ov/merged" "$ov/bpf"
# a bpffs of the container's own (each mount is an instance of its own): the
# prerm detaches every store it finds there, and the host's holds the other
# tests' stores (their interfaces in other namespaces)
mount -t bpf bpf "$ov/bpf" || tb_die "a bpffs at $ov/bpf"
src=$(findmnt -n -o TARGET --target /usr)
[[ $src == / ]] || tb_die "/usr is a mount of its own ($src): the overlay of / would not hold it"
mount -t overlay overlay -o "lowerdir=/,upperdir=$ov/upper,workdir=$ov/work" "$ov/merged" ||
	tb_die "overlayfs over / at $ov/merged"
(cd "$build" && cpack -G DEB >"$TB_TMP/cpack.log" 2>&1) || { cat "$TB_TMP/cpack.log"; tb_die "cpack -G DEB"; }
cp "$deb" "$TB_TMP/xdpkv.deb"

# in the container: the package's own steps, one shell script; its output
# says what it saw (the host checks the rest from outside)
cat >"$TB_TMP/inner.sh" <<'EOF'
set -u
dev=$1
export DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin
prog() { ip -d link show dev "$dev" | grep -q 'prog/xdp'; }
say() { echo "STATE $1 $(prog && echo prog || echo noprog) $([ -d /sys/fs/bpf/xdpkv/$dev ] && echo pins || echo nopins) $([ -x /usr/sbin/xdpkv ] && echo bin || echo nobin)"; }
dpkg -i /pkg/xdpkv.deb >/dev/null || { echo "STEP dpkg-i failed"; exit 1; }
/usr/sbin/xdpkv attach "$dev" --entries 1024 >/dev/null || { echo "STEP attach failed"; exit 1; }
say installed
apt-get remove -y xdpkv >/tmp/remove.log 2>&1 || { cat /tmp/remove.log; echo "STEP remove failed"; exit 1; }
cat /tmp/remove.log
say removed
dpkg -i /pkg/xdpkv.deb >/dev/null || { echo "STEP dpkg-i again failed"; exit 1; }
echo "XDPKV_KEEP_ON_REMOVE=yes" >"/etc/xdpkv/$dev.conf"
/usr/sbin/xdpkv attach "$dev" --entries 1024 >/dev/null || { echo "STEP attach failed"; exit 1; }
dpkg -r xdpkv 2>&1
say kept
tc filter show dev "$dev" egress | grep -q 'handle 0x786b' && echo "EGRESS kept" || echo "EGRESS none"
dpkg --purge xdpkv 2>&1
say purged
tc filter show dev "$dev" egress | grep -q 'handle 0x786b' && echo "EGRESS purged-left" || echo "EGRESS purged-none"
[ -e /var/lib/xdpkv ] && echo "STATEDIR left" || echo "STATEDIR gone"
[ -e /etc/xdpkv ] && echo "CONFDIR left" || echo "CONFDIR gone"
EOF
timeout 300 systemd-nspawn --quiet --register=no --keep-unit --machine="$machine" --directory="$ov/merged" \
	--network-namespace-path="/run/netns/$TB_SRV_NS" \
	--capability=CAP_BPF,CAP_PERFMON,CAP_NET_ADMIN --system-call-filter='bpf perf_event_open' \
	--bind="$ov/bpf:/sys/fs/bpf" --bind-ro="$TB_TMP:/pkg" --console=pipe \
	-- /bin/sh /pkg/inner.sh "$dev" </dev/null >"$TB_TMP/inner.log" 2>&1 || true
cat "$TB_TMP/inner.log"
has() { grep -qx "$1" "$TB_TMP/inner.log"; }
check "installed: the store attached" has "STATE installed prog pins bin"
check "apt-get remove: the prerm detached it, the binary gone" has "STATE removed noprog nopins nobin"
check "XDPKV_KEEP_ON_REMOVE=yes: dpkg -r keeps it attached" has "STATE kept prog pins nobin"
check "... and says so" grep -q "$dev stays attached (XDPKV_KEEP_ON_REMOVE=yes" "$TB_TMP/inner.log"
check "dpkg --purge: the program and the pins taken off" has "STATE purged noprog nopins nobin"
if has "EGRESS kept"; then
	check "... the TCP egress filter too" has "EGRESS purged-none"
fi
check "... /var/lib/xdpkv removed" has "STATEDIR gone"
check "... /etc/xdpkv removed" has "CONFDIR gone"
check "seen from outside: nothing attached to $dev" bash -c '! ip -n "$1" -d link show dev "$2" | grep -q prog/xdp' _ "$TB_SRV_NS" "$dev"
exit $fail
