#!/usr/bin/env bash
# Install the Debian 12 packages xdpkv needs to build, test and benchmark;
# only what is missing, so a second run is quick.  Needs root.
set -euo pipefail
# clang-19: the BPF objects that need BPF address spaces (variants/arena, bench/arena_probes/arena_c_probe.bpf.c)
# patchelf: bench/devkit.sh (the kit's executables find its libraries by rpath)
# libclang-rt-14-dev: libFuzzer and the sanitizer runtimes for clang 14 (tests/fuzz)
# python3-venv: bench/kvexp/setup-cachesim.sh (libCacheSim from PyPI into bench/.venv; not run
#   here), and tests/.venv below
# sasl2-bin: saslpasswd2, the sasldb for memcached -S in tests/e2e/binproto.sh
# nodejs: memjs (tests/.node below); npm too where nodejs does not bring it (Debian's does not)
# lintian: the .deb's checks (tests/package/check-deb.sh)
# nutcracker: twemproxy, the proxy in front of three servers in tests/e2e/proxy.sh
# ruby-dalli, php-cli, php-memcached: clients in tests/e2e/tcppipe.sh and bench/clients/;
# libcache-memcached-fast-perl: one more client there
# libmurmurhash-dev: stats detail orders prefixes by MurmurHash3, as memcached (engine/detail.c)
PKGS=(clang clang-19 llvm libbpf-dev libxdp-dev xdp-tools bpftool linux-libc-dev gcc-multilib
      cmake ninja-build pkg-config libelf-dev zlib1g-dev libcap-dev
      libbenchmark-dev libxxhash-dev libzstd-dev liblz4-dev libmurmurhash-dev
      libmemcached-tools memcached redis-server python3-pymemcache python3-memcache
      iproute2 procps util-linux python3 python3-matplotlib python3-venv
      dpkg-dev groff-base man-db systemd systemd-container patchelf lintian
      libclang-rt-14-dev nodejs sasl2-bin nutcracker ruby-dalli php-cli php-memcached
      libcache-memcached-fast-perl)
missing=()
command -v npm >/dev/null || PKGS+=(npm)
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	if [ "$(id -u)" != 0 ]; then
		echo "xdpkv: missing packages: ${missing[*]} (run as root to install them)" >&2
		exit 1
	fi
	echo "xdpkv: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# the memcached and redis packages start services; policy-rc.d keeps them off
	ours=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
		ours=1
	fi
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	if [ "$ours" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
fi
# bpffs for pins
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
# Binary-protocol clients for tests/e2e/binproto.sh and the difftest's bin
# pass, pinned: python-binary-memcached (PyPI) in tests/.venv, memjs (npm) in
# tests/.node (both gitignored).  Offline, this fails: it never skips.
root=$(cd "$(dirname "$0")/../.." && pwd)
BMC_VERSION=0.33.0 MEMJS_VERSION=1.3.2
if ! "$root/tests/.venv/bin/python" -c 'import bmemcached, importlib.metadata as m, sys;
sys.exit(m.version("python-binary-memcached") != sys.argv[1])' "$BMC_VERSION" 2>/dev/null; then
	[ -x "$root/tests/.venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$root/tests/.venv"
	"$root/tests/.venv/bin/pip" install --disable-pip-version-check -q "python-binary-memcached==$BMC_VERSION"
fi
if [ "$(node -p "require('$root/tests/.node/node_modules/memjs/package.json').version" 2>/dev/null)" != "$MEMJS_VERSION" ]; then
	mkdir -p "$root/tests/.node"
	(cd "$root/tests/.node" && npm install --no-audit --no-fund --silent --no-save "memjs@$MEMJS_VERSION")
fi
