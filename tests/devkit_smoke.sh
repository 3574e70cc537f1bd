#!/bin/bash
# ctest devkit_smoke: bench/devkit.sh packs the build, and bench/devkit-run.sh
# runs compare (l) and (j) and bench/tcpscale.sh (t: memaslap, and redis-benchmark against
# Redis) from the kit alone, as on a machine without compiler or iproute2 (bench/README.md,
# "On a larger machine").
#
#   tests/devkit_smoke.sh BUILD_DIR
#
# Fails when the kit misses a library (ldd "not found" for any packed
# executable or Python extension), when a packed executable still takes a
# library from outside the kit other than glibc's, when a run from a minimal
# environment (PATH=/usr/bin:/bin, nothing else) does not write both parts'
# results with every point, or when the tarball is missing.
set -euo pipefail
build=$(cd "${1:?usage: devkit_smoke.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/xkv-devkit.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "devkit_smoke: FAIL: $*" >&2; exit 1; }

bash "$src/bench/devkit.sh" --build-dir "$build" --out "$tmp/devkit"
kit=$tmp/devkit
for f in "$kit"/build/cli/xdpkv "$kit"/build/bench/xdpgen/xdpgen "$kit"/build/bench/microbench \
	"$kit"/bin/* "$kit"/python/bin/python3 "$kit"/python/lib/python3*/lib-dynload/*.so; do
	out=$(ldd "$f") || fail "ldd $f"
	grep -q "not found" <<<"$out" && fail "$f: $(grep 'not found' <<<"$out" | head -3)"
	# every resolved library is the kit's, or glibc's own
	while read -r lib; do
		[[ $lib == "$kit"/* ]] && continue
		[[ $lib =~ /(libc|libm|libpthread|libdl|librt|libresolv|ld-linux-x86-64)\.so ]] && continue
		fail "$f takes $lib from outside the kit"
	done < <(awk '/=> \//{print $3}' <<<"$out")
done
echo "devkit_smoke: every packed executable resolves its libraries in the kit"

env -i PATH=/usr/bin:/bin HOME=/root bash "$src/bench/devkit-run.sh" "$tmp/out" --kit "$kit" \
	--setting smoke --budget 150 --l-share 40 --layouts hash_map --j-duration 0.3 --l-repeat 1 \
	--parts t,l,j --t-threads 1 --t-duration 1 ||
	fail "devkit-run.sh exited $?"
[[ -s $tmp/out.tar.gz ]] || fail "no $tmp/out.tar.gz"
grep -q "^nproc: $(nproc)" "$tmp/out/machine.txt" || fail "machine.txt has no nproc line"
# the kit's python has no matplotlib: the plots are drawn back here, as documented
/usr/bin/python3 "$src/bench/compare/compare.py" --render "$tmp/out/j" || fail "render (j)"
/usr/bin/python3 "$src/bench/compare/check.py" "$tmp/out/j" --layouts hash_map --baselines '' \
	--experiments j || fail "check.py (j)"
/usr/bin/python3 - "$tmp/out/l/results.json" <<'EOF' || fail "(l) rows"
import json, sys
r = json.load(open(sys.argv[1]))
rows = [x for x in r["rows"] if x.get("experiment") == "l"]
systems = sorted({x["system"] for x in rows})
print("(l) status %s, %d rows, systems %s" % (r["status"], len(rows), systems))
ok = r["status"] == "complete" and systems == ["xdpkv/hash_map", "xdpkv/null"] and \
    all(x["ns_per_op"] > 0 and x["validated_replies"] > 0 for x in rows)
sys.exit(0 if ok else 1)
EOF
/usr/bin/python3 - "$tmp/out/t.jsonl" <<'EOF' || fail "(t) rows"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
servers = sorted(r["server"] for r in rows)
print("(t) %d rows, servers %s" % (len(rows), servers))
ok = servers == ["memcached", "redis", "xdpkv", "xdpkv-nofast", "xdpkv-verdict"] and \
    all(r["ok"] and r["tps"] > 0 and r["server_us_per_req"] > 0 for r in rows)
sys.exit(0 if ok else 1)
EOF
echo "devkit_smoke: ok"
