#!/usr/bin/env bash
# libCacheSim for bench/kvexp/hitratio_vs_cachesim.py: PyPI `libcachesim`,
# pinned, in a virtual environment at bench/.venv (gitignored) that sees the
# system's python3-matplotlib.  Needs PyPI; offline it stops with an error
# (it never skips).  The ctest smoke test (kvexp_hitratio_smoke) does not
# need it: it checks against the Python references in cachesim_models.py.
set -euo pipefail
VERSION=${LIBCACHESIM_VERSION:-0.3.5}
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=$root/bench/.venv
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if [ ! -x "$venv/bin/python" ]; then
	"$py" -m venv --system-site-packages "$venv" || {
		echo "setup-cachesim: cannot create $venv (Debian: apt-get install python3-venv)" >&2
		exit 1
	}
fi
if ! "$venv/bin/pip" install --disable-pip-version-check -q "libcachesim==$VERSION"; then
	echo "setup-cachesim: pip could not install libcachesim==$VERSION from PyPI (offline?)." >&2
	echo "hitratio_vs_cachesim.py needs it; the smoke test does not." >&2
	exit 1
fi
"$venv/bin/python" -c 'import libcachesim, matplotlib; from importlib.metadata import version; print("libcachesim", version("libcachesim"))'
echo "run: sudo $venv/bin/python $root/bench/kvexp/hitratio_vs_cachesim.py --help"
