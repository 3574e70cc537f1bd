#!/bin/bash
# SPDX-License-Identifier: MIT
# One kernel's checks, run inside a virtme-ng VM (tests/kernels/run.sh) or on
# the host itself:
#
#   tests/kernels/guest.sh OUTDIR BUILDDIR
#
# 1. `xdpkv verify --all --json` four times (keys 250 / values 16384, and the
#    default sizes, each with the default key rule and --strict-keys): every program of every layout
#    loaded alone, the verifier's processed instructions as JSON lines, all
#    appended to OUTDIR/verifier.jsonl (each line names its sizes);
# 2. the BPF_PROG_TEST_RUN fixtures of hash_map and lru (test_fixtures), and
#    the TCP responder's of hash_map (test_tcpx: its conformance rows);
# 3. a veth end-to-end: tests/e2e/raw.sh hash_map (UDP get/set/delete through
#    XDP and serve) and tests/e2e/tcpxdp.sh hash_map (TCP in the driver hook).
#
# Each step's output goes to OUTDIR/STEP.log and its outcome to
# OUTDIR/steps.tsv: "STEP<TAB>ok|fail rc N|timeout<TAB>SECONDS".  The exit
# status is 0 when every step passed.  XKV_KSTEPS (default "verify fixtures
# e2e") picks the steps; XKV_KSTEP_TIMEOUT (default 300 s) bounds each.
set -uo pipefail
(($# == 2)) || { echo "usage: $0 OUTDIR BUILDDIR" >&2; exit 2; }
out=$1 build=$2
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo" || exit 3
build=$(cd "$build" && pwd) || exit 3
mkdir -p "$out" || exit 3
: > "$out/steps.tsv"
: > "$out/verifier.jsonl"
xdpkv=$build/cli/xdpkv
step_timeout=${XKV_KSTEP_TIMEOUT:-300}
rc=0

echo "kernel $(uname -r)" > "$out/kernel.txt"
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
# tc's clsact and cls_bpf, the veth pair: modules in distribution kernels
# (the VM sees the package's modules; on the host they are usually there)
for m in veth sch_ingress cls_bpf; do modprobe -q "$m" 2>/dev/null || true; done

# step NAME CMD...: run CMD with a time limit, its output to NAME.log
step() {
	local name=$1 s r status
	shift
	s=$(date +%s)
	echo "== $name: $*" >&2
	timeout -k 10 "$step_timeout" "$@" > "$out/$name.log" 2>&1
	r=$?
	case $r in
	0) status=ok ;;
	124|137) status=timeout ;;
	*) status="fail rc $r" ;;
	esac
	((r == 0)) || rc=1
	printf '%s\t%s\t%s\n' "$name" "$status" "$(($(date +%s) - s))" >> "$out/steps.tsv"
	echo "== $name: $status ($(($(date +%s) - s)) s)" >&2
	((r == 0)) || tail -n 5 "$out/$name.log" | sed "s/^/   $name| /" >&2
}

# verify_pass NAME ARGS...: one `verify --all --json` pass, appended to the record
verify_pass() {
	local name=$1
	shift
	step "$name" "$xdpkv" verify --all --json "$@"
	grep '^{' "$out/$name.log" >> "$out/verifier.jsonl"
}

for s in ${XKV_KSTEPS:-verify fixtures e2e}; do
	case $s in
	verify)
		verify_pass verify_k250_s16384_bin -k 250 -s 16384
		verify_pass verify_k250_s16384 -k 250 -s 16384 --strict-keys
		verify_pass verify_defaults
		verify_pass verify_defaults_strict --strict-keys
		;;
	fixtures)
		for l in hash_map lru; do
			step "fixtures_$l" "$build/tests/test_fixtures" --layout "$l"
		done
		# the TCP responder's rows on this kernel's sockets (repair mode)
		step tcpx_hash_map "$build/tests/test_tcpx" hash_map
		;;
	e2e)
		export XDPKV=$xdpkv TB_XDP_PASS_OBJ=$build/tests/xdp_pass.bpf.o TB_CTL_ANYCPU=1
		E2E_PREFIX=xk1 step e2e_raw_hash_map tests/e2e/raw.sh hash_map native
		E2E_PREFIX=xk2 step e2e_tcpxdp_hash_map tests/e2e/tcpxdp.sh hash_map
		;;
	*) echo "guest.sh: unknown step $s" >&2; rc=2 ;;
	esac
done
# the last line: a VM stopped before it (its time limit) left steps unrun
echo "$rc" > "$out/done"
exit $rc
