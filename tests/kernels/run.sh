#!/bin/bash
# SPDX-License-Identifier: MIT
# The kernel-matrix tier (tests/run.sh --tier kernels): the same checks on
# Debian 12's own kernel (6.1), on its 6.12 (bookworm-security, else
# bookworm-backports) and on the host's kernel.
#
#   sudo tests/kernels/run.sh [--build DIR] [--kernels "host 6.1 6.12"] [--timeout S]
#
# The two Debian kernels come as packages (apt-get download into
# /var/cache/xdpkv-kernels, reused; unpacked under /var/lib/xdpkv-kernels,
# which the VM sees: virtme-ng hides /var/cache) and boot one after the other
# under virtme-ng (PyPI, pinned, in tests/.venv) and QEMU without KVM (TCG),
# on a copy-on-write view of this machine's root, the results folder
# shared read-write.  In each, and on the host directly, tests/kernels/guest.sh
# runs `xdpkv verify --all --json` three ways, the hash_map and lru
# BPF_PROG_TEST_RUN fixtures and a veth end-to-end (UDP and TCP).  Output:
# DIR/kernels/KERNEL/ (each step's log, the VM's console), the verifier's
# lines in DIR/kernels/verifier-KERNEL.jsonl, and a summary table
# (tests/kernels/summary.py).  Exit status 1 when a program is refused or
# over budget or a step fails (the summary says which), 2 usage, 3 setup.
# Ctrl-C or an error stops the VM.  XKV_KSTEPS picks guest.sh's steps (in
# the VMs too; default all).  XKV_KVM=1 tries KVM (here `-cpu host`
# fails on an MSR assertion, so TCG is the default).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; }
build=build
kernels="host 6.1 6.12"
vm_timeout=${XKV_KERNEL_TIMEOUT:-600}
while (($#)); do
	case $1 in
	--build) build=${2:?}; shift 2 ;;
	--kernels) kernels=${2:?}; shift 2 ;;
	--timeout) vm_timeout=${2:?}; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
[[ $(id -u) == 0 ]] || { echo "tests/kernels/run.sh: run as root" >&2; exit 3; }
[[ -x $build/cli/xdpkv && -x $build/tests/test_fixtures ]] ||
	{ echo "tests/kernels/run.sh: $build is not built (ninja -C $build)" >&2; exit 3; }
build=$(cd "$build" && pwd)
out=$build/kernels
debs=${XKV_KERNEL_DEBS:-/var/cache/xdpkv-kernels}
trees=${XKV_KERNEL_TREES:-/var/lib/xdpkv-kernels}
VNG_VERSION=1.42
venv=$repo/tests/.venv
log() { echo "[kernels] $*" >&2; }
die() { echo "[kernels] FAIL: $*" >&2; exit 3; }

# --- what virtme-ng needs: QEMU, depmod, udev (it names the VM's
# virtio-serial ports, the command's stdin/stdout and exit status)
need=()
for p in qemu-system-x86 kmod udev busybox-static; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
	log "installing ${need[*]}"
	ours=0
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then # udev's service stays off on the host
		printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
		ours=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
		{ ((ours)) && rm -f /usr/sbin/policy-rc.d; die "apt-get install ${need[*]}"; }
	((ours)) && rm -f /usr/sbin/policy-rc.d
fi
[[ -x $venv/bin/python ]] || /usr/bin/python3 -m venv --system-site-packages "$venv"
if ! "$venv/bin/python" -c 'import importlib.metadata as m, sys
sys.exit(m.version("virtme-ng") != sys.argv[1])' "$VNG_VERSION" 2>/dev/null; then
	log "installing virtme-ng $VNG_VERSION into $venv"
	"$venv/bin/pip" install --disable-pip-version-check -q "virtme-ng==$VNG_VERSION" || die "pip install virtme-ng"
fi
export PATH=$venv/bin:$PATH # vng runs virtme-run from there

# --- the kernels
# newest PATTERN: the newest package name apt knows matching the regex
newest() { apt-cache pkgnames linux-image- | grep -E "^$1\$" | sort -V | tail -n 1; }
bpo=/etc/apt/sources.list.d/xdpkv-bookworm-backports.sources
drop_bpo() { [[ ! -e $bpo ]] || rm -f "$bpo"; }
# package SERIES: the package name for 6.1 or 6.12
package() {
	local p
	case $1 in
	6.1)
		p=$(newest 'linux-image-6\.1\.0-[0-9]+-amd64-unsigned')
		[[ -n $p ]] || p=$(newest 'linux-image-6\.1\.0-[0-9]+-amd64')
		;;
	6.12)
		p=$(newest 'linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned')
		if [[ -z $p ]] && ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
			# only for this download: the file goes when the tier ends
			log "adding bookworm-backports ($bpo) for the 6.12 kernel"
			printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > "$bpo"
			apt-get update -qq -o Dir::Etc::sourcelist="$bpo" -o Dir::Etc::sourceparts=- \
				-o APT::Get::List-Cleanup=0 >/dev/null || die "apt-get update (backports)"
			p=$(newest 'linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned')
		fi
		;;
	*) die "unknown kernel series $1 (6.1, 6.12 or host)" ;;
	esac
	[[ -n $p ]] || die "no linux-image package for $1 (apt-get update?)"
	echo "$p"
}
# fetch SERIES: download and unpack its package once; prints the vmlinuz path
fetch() {
	local p v d f
	p=$(package "$1")
	v=$(apt-cache policy "$p" | awk '/Candidate:/ {print $2}')
	d=$trees/${p}_$v
	if [[ ! -e $d/.unpacked ]]; then
		mkdir -p "$debs"
		f=$(ls "$debs/${p}_"*.deb 2>/dev/null | head -n 1 || true)
		if [[ -z $f ]]; then
			log "downloading $p $v"
			(cd "$debs" && apt-get download -qq -o APT::Sandbox::User=root "$p") >&2 || die "apt-get download $p"
			f=$(ls "$debs/${p}_"*.deb | head -n 1)
		fi
		rm -rf "$d" && mkdir -p "$d"
		dpkg-deb -x "$f" "$d" || die "dpkg-deb -x $f"
		touch "$d/.unpacked"
	fi
	drop_bpo
	ls "$d"/boot/vmlinuz-* | head -n 1
}

# --- one kernel after the other
vm_pid=
stop_vm() {
	# timeout leads the VM's process group (vng, virtme-run, qemu)
	[[ -n $vm_pid ]] && kill -TERM -- "-$vm_pid" 2>/dev/null || true
	vm_pid=
}
trap 'stop_vm; drop_bpo' EXIT
trap 'exit 130' INT TERM
rm -rf "$out" && mkdir -p "$out"
labels=()
start=$(date +%s)
for k in $kernels; do
	s=$(date +%s)
	if [[ $k == host ]]; then
		label=host-$(uname -r)
		log "$label: on the host"
		mkdir -p "$out/$label"
		tests/kernels/guest.sh "$out/$label" "$build" || true
	else
		img=$(fetch "$k")
		label=${img##*/vmlinuz-}
		log "$label: booting $img (TCG, at most $vm_timeout s)"
		mkdir -p "$out/$label"
		kvm=(--disable-kvm)
		[[ ${XKV_KVM:-0} == 1 ]] && kvm=()
		timeout -k 10 "$vm_timeout" vng --run "$img" "${kvm[@]}" -m 2G -p 2 --rwdir "$out/$label" \
			-- "XKV_KSTEPS='${XKV_KSTEPS:-verify fixtures e2e}' tests/kernels/guest.sh $out/$label $build" \
			< /dev/null > >(tee "$out/$label.console.log" >&2) 2>&1 &
		vm_pid=$!
		wait "$vm_pid" || log "$label: the VM ended with status $? (124: past $vm_timeout s)"
		vm_pid=
	fi
	labels+=("$label")
	[[ ! -e $out/$label/verifier.jsonl ]] || cp "$out/$label/verifier.jsonl" "$out/verifier-$label.jsonl"
	log "$label: $(($(date +%s) - s)) s"
done
log "all kernels: $(($(date +%s) - start)) s"
python3 tests/kernels/summary.py "$out" "${labels[@]}" | tee "$out/summary.txt"
exit "${PIPESTATUS[0]}"
