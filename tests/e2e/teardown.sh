#!/bin/bash
# SPDX-License-Identifier: MIT
# A run stopped midway leaves nothing behind.
#
#   tests/e2e/teardown.sh
#
# Starts memaslap.sh (hash_map, native) in its own process group, waits until
# the store is attached, the slow path runs and memaslap is sending, then
# sends the group SIGINT (what Ctrl-C does) -- and a second time SIGTERM --
# and checks that no namespace, veth, pin, libxdp pin, temp dir or process of
# the run is left.
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix base).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${XDPKV:=$(cd "$here/../.." && pwd)/build/cli/xdpkv}"
export XDPKV
# for tb_hash only (tb_up is not called here)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
base=${E2E_PREFIX:-xt$$}
fail=0
child=

say() { echo "[teardown] $*"; }
# if this script itself is interrupted, take the child's group down with it
trap '[[ -n $child ]] && kill -TERM -- -"$child" 2>/dev/null; exit 1' INT TERM

# leftovers PREFIX: print what a run with PREFIX left behind (nothing = clean)
leftovers() {
	local p=$1
	ip netns list | grep -E "^$p-(srv|cli)( |$)" | sed 's/^/netns /'
	ip -br link 2>/dev/null | grep -E "^$p-[sc](@| )" | sed 's/^/link /'
	[[ -e /sys/fs/bpf/xdpkv/$p-s ]] && echo "pins /sys/fs/bpf/xdpkv/$p-s"
	ls -d /tmp/xdpkv-tb-"$p".* 2>/dev/null | sed 's/^/tmpdir /'
	local x=$(($(tb_hash "$p") % 200 + 20)) # the testbed's subnet for p
	pgrep -af -- "(memcaslap -s 10\.77\.$x\.1:|xdpkv serve $p-s)" | sed 's/^/process /'
	return 0
}

# run_and_stop PREFIX SIGNAL: start a run, stop it midway with SIGNAL
run_and_stop() {
	local p=$1 sig=$2 log
	log=$(mktemp)
	say "run $p, to be stopped with SIG$sig"
	E2E_PREFIX=$p E2E_OPS=100000000 setsid "$here/memaslap.sh" hash_map native 128 >"$log" 2>&1 &
	child=$!
	# midway: memaslap is running in the client namespace
	local i up=0
	for i in $(seq 200); do
		if ! kill -0 "$child" 2>/dev/null; then
			break
		fi
		if [[ -e /run/netns/$p-cli ]] && ip netns pids "$p-cli" 2>/dev/null | grep -q . &&
			[[ -e /sys/fs/bpf/xdpkv/$p-s ]]; then
			up=1
			break
		fi
		sleep 0.1
	done
	if ((!up)); then
		say "FAIL: the run never got to memaslap"
		cat "$log"
		fail=1
	fi
	sleep 1
	kill -"$sig" -- -"$child" 2>/dev/null
	local rc=0
	for i in $(seq 100); do
		kill -0 "$child" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$child" 2>/dev/null; then
		say "FAIL: the run did not end within 10 s of SIG$sig"
		kill -KILL -- -"$child" 2>/dev/null
		fail=1
	fi
	wait "$child"
	rc=$?
	child=
	say "run ended with status $rc"
	((rc != 0)) || { say "FAIL: a stopped run must not exit 0"; fail=1; }
	local left
	left=$(leftovers "$p")
	if [[ -n $left ]]; then
		say "FAIL: SIG$sig left behind:"
		echo "$left"
		echo "---- run log ----"
		cat "$log"
		fail=1
	else
		say "PASS: nothing left after SIG$sig"
	fi
	rm -f "$log"
}

[[ -x $XDPKV ]] || { say "FAIL: xdpkv CLI not found at $XDPKV"; exit 1; }
run_and_stop "${base:0:10}i" INT
run_and_stop "${base:0:10}t" TERM
exit $fail
