#!/bin/bash
# Pack what the scaling runs need for a machine that has the same kernel but
# no compiler, no iproute2, no bpftool and no package access (the project's
# lent 16-core machine; bench/README.md "Scaling on a larger machine").
#
#   bench/devkit.sh [--build-dir build] [--out devkit] [--no-python]
#
# DIR (default ./devkit, git-ignored) gets:
#   build/cli/xdpkv, build/bench/{xdpgen/xdpgen,microbench,loadgen/xkv-loadgen},
#   build/bench/reflector/reflector.bpf.o, build/tests/xdp_pass.bpf.o
#                       the built tools, where `xdpkv compare` looks for them
#   bin/ip bin/ss bin/bpftool bin/sysctl   this machine's copies
#   bin/memcaslap bin/memcached bin/redis-server bin/redis-benchmark bin/redis-cli
#                       ... for bench/tcpscale.sh (devkit-run.sh part t)
#   lib/                every shared library those need except glibc's own
#   bpf/xdp-dispatcher.o libxdp's dispatcher (LIBXDP_OBJECT_PATH)
#   python/             this machine's python3 and the part of its standard
#                       library compare.py imports (unless --no-python)
#   env.sh              `. DIR/env.sh` puts bin/ first in PATH, sets XDPKV and
#                       PYTHON (the packed interpreter, or the machine's)
# The executables are copies with DT_RPATH = $ORIGIN/../lib (patchelf): they
# find the packed libraries without LD_LIBRARY_PATH, so nothing else the
# runs start (the other machine's own nsenter, taskset, mount) loads them.
# glibc is not packed: the other machine's must be as new or newer (checked
# by bench/devkit-run.sh before anything runs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
build=$repo/build out=$repo/devkit python=1
usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
	case $1 in
	--build-dir) build=$(cd "$2" && pwd); shift 2 ;;
	--out) out=$2; shift 2 ;;
	--no-python) python=0; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "devkit.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
	esac
done
command -v patchelf >/dev/null || { echo "devkit.sh: needs patchelf (apt-get install patchelf)" >&2; exit 1; }
for f in cli/xdpkv bench/xdpgen/xdpgen bench/microbench bench/loadgen/xkv-loadgen \
	bench/reflector/reflector.bpf.o tests/xdp_pass.bpf.o; do
	[[ -f $build/$f ]] || { echo "devkit.sh: $build/$f is not built (ninja -C $build)" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$out"/{bin,lib,build/cli,build/bench/xdpgen,build/bench/loadgen,build/bench/reflector,build/tests}
out=$(cd "$out" && pwd)

# glibc and the loader stay the other machine's
skip_lib() { [[ $1 =~ /(libc|libm|libpthread|libdl|librt|libresolv|ld-linux-x86-64)\.so ]]; }
libs_of() { ldd "$1" | awk '/=> \//{print $3}'; }

# copy executable $1 to $2 (a directory under $out), rpath to $out/lib
pack() {
	local src=$1 dst=$2 rel lib
	cp -L "$src" "$dst/"
	strip --strip-debug "$dst/$(basename "$src")" 2>/dev/null || true
	rel=$(realpath --relative-to="$dst" "$out/lib")
	patchelf --force-rpath --set-rpath "\$ORIGIN/$rel" "$dst/$(basename "$src")"
	for lib in $(libs_of "$src"); do
		skip_lib "$lib" || cp -Ln "$lib" "$out/lib/" 2>/dev/null || true
	done
}
pack "$build/cli/xdpkv" "$out/build/cli"
pack "$build/bench/xdpgen/xdpgen" "$out/build/bench/xdpgen"
pack "$build/bench/microbench" "$out/build/bench"
pack "$build/bench/loadgen/xkv-loadgen" "$out/build/bench/loadgen"
cp "$build/bench/reflector/reflector.bpf.o" "$out/build/bench/reflector/"
cp "$build/tests/xdp_pass.bpf.o" "$out/build/tests/"
# libxdp loads its dispatcher from a file (LIBXDP_OBJECT_PATH, env.sh)
mkdir -p "$out/bpf"
cp /usr/lib/x86_64-linux-gnu/bpf/xdp-dispatcher.o "$out/bpf/"
for t in ip ss bpftool sysctl memcaslap memcached redis-server redis-benchmark redis-cli; do
	p=$(PATH=$PATH:/usr/sbin:/sbin command -v $t) || { echo "devkit.sh: $t not found here" >&2; exit 1; }
	pack "$p" "$out/bin"
done

if ((python)); then
	py=$(readlink -f /usr/bin/python3)  # Debian's: compare.c prefers it too
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	mkdir -p "$out/python/bin" "$out/python/lib"
	pack "$py" "$out/python/bin"
	ln -s "$(basename "$py")" "$out/python/bin/python3"
	# the standard library without tests, GUI, packaging and caches
	tar -C /usr/lib -cf - --exclude=__pycache__ --exclude="python$ver/test" \
		--exclude="python$ver/idlelib" --exclude="python$ver/tkinter" \
		--exclude="python$ver/turtledemo" --exclude="python$ver/ensurepip" \
		--exclude="python$ver/lib2to3" --exclude="python$ver/pydoc_data" \
		--exclude="python$ver/distutils" --exclude="python$ver/dist-packages" \
		--exclude="python$ver/site-packages" --exclude="python$ver/config-*" \
		--exclude="_tkinter*" --exclude="_dbm*" --exclude="_gdbm*" --exclude="_ssl*" \
		--exclude="_curses*" --exclude="readline*" --exclude="_sqlite3*" \
		"python$ver" | tar -C "$out/python/lib" -xf -
	for so in "$out/python/lib/python$ver/lib-dynload/"*.so; do
		for lib in $(libs_of "$so"); do
			skip_lib "$lib" || cp -Ln "$lib" "$out/lib/" 2>/dev/null || true
		done
		patchelf --force-rpath --set-rpath "\$ORIGIN/$(realpath --relative-to="$(dirname "$so")" "$out/lib")" "$so"
	done
fi

glibc=$(ldd --version | awk 'NR==1{print $NF}')
cat >"$out/env.sh" <<EOF
# . devkit/env.sh — written by bench/devkit.sh $(date -u +%FT%TZ) on $(hostname)
DEVKIT=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)
export DEVKIT DEVKIT_GLIBC=$glibc
export PATH=\$DEVKIT/bin:\$PATH:/usr/sbin:/sbin
export XDPKV=\$DEVKIT/build/cli/xdpkv LIBXDP_OBJECT_PATH=\$DEVKIT/bpf
if [[ -x \$DEVKIT/python/bin/python3 ]]; then
	export PYTHONHOME=\$DEVKIT/python PYTHONDONTWRITEBYTECODE=1
	PYTHON=\$DEVKIT/python/bin/python3
else
	PYTHON=\$(command -v python3)
fi
export PYTHON
EOF
echo "devkit.sh: $out ($(du -sh "$out" | cut -f1)), built against glibc $glibc" >&2
