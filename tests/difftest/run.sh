#!/bin/bash
# SPDX-License-Identifier: MIT
# The differential tester on the veth testbed: xdpkv (XDP attached, `serve`
# for TCP and the UDP slow path) and Debian's memcached (one thread, so its
# UDP replies keep their order) side by side in the server namespace, the
# tester in the client namespace.
#
#   tests/difftest/run.sh [--batches N] [--seed S] [--passes LIST] [--known] LAYOUT...
#
# Per layout, the passes (default tcp,tcp-malformed,tcp-edge,udp,udp-edge,
# regress,bin,bin-edge):
#   tcp            valid pipelined text + meta streams over TCP
#   tcp-malformed  the same with requests that are wrong on purpose
#   tcp-edge       the same with the command forms of forms.py (memcached's
#                  parser: word counts, number limits, HTTP-like and odd lines,
#                  stats, slabs, every meta flag) and forms_conn.py (long lines
#                  and multi-gets, keys at 250 bytes, what a connection starts
#                  with: binary, cut short, HTTP), counts per category
#   udp            one request per datagram: the XDP fast path and the slow path
#   udp-edge       the same with the forms that exist over UDP (forms_conn.UDP)
#   regress        issue 17's bugs over TCP (regress.py stream), and with hash_map, on
#                  a store with --value-size 8, regress.py smallval
#   bin            random binary-protocol streams over TCP (bindiff.py)
#   bin-edge       the same with binforms.py's frames (lengths, extras, opcodes,
#                  STAT keys, bad magic), counts per category
# --known: the edge passes also send the forms xdpkv is known to answer
# otherwise (forms.KNOWN, binforms.KNOWN): what is left for the engine to fix.
# hash_map and lru are compared exactly; array_fnv, set_assoc, sieve, s3fifo
# and arena (lossy) may answer a miss where memcached hits; percpu and lru_percpu are
# not run (a set on one CPU is invisible to a get on another).
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix),
# DIFFTEST_JSON (a file: one JSON summary line per pass is appended).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"

batches=300 seed=$RANDOM passes=tcp,tcp-malformed,tcp-edge,udp,udp-edge,regress,bin,bin-edge known=()
while (($#)); do
	case $1 in
	--batches) batches=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--passes) passes=$2; shift 2 ;;
	--known) known=(--known); shift ;;
	-h|--help) sed -n '3,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "difftest: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
layouts=("$@")
((${#layouts[@]})) || layouts=(hash_map)
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
command -v memcached >/dev/null || tb_die "memcached is needed (tests/lib/install-deps.sh)"

tb_up "${E2E_PREFIX:-xd$$}"
P=$TB_PORT MP=$((TB_PORT + 1)) S4=$TB_SRV_IP4
# memcached is a testbed process: tb_down stops it.  A differing batch is
# re-checked against a memcached started for it (--mc-recheck, freshmc.py).
tb_srv_bg memcached -U "$MP" -p "$MP" -l "$S4" -m 256 -t 1 -u nobody
for _ in $(seq 100); do
	nsenter --net="/run/netns/$TB_SRV_NS" -- ss -Hltn "sport = :$MP" | grep -q . && break
	sleep 0.05
done

fail=0
for layout in "${layouts[@]}"; do
	case $layout in
	hash_map|lru) rule=exact ;;
	array_fnv|set_assoc|sieve|s3fifo|arena) rule=lossy ;;
	*) tb_die "difftest: layout $layout is not compared (see the header)" ;;
	esac
	# keys up to memcached's 250 bytes; values above 1024 go to the big map
	tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --entries 65536 --key-size 250 \
		--value-size 1024 --port "$P" >/dev/null || tb_die "xdpkv attach ($layout) failed"
	tb_serve_tcp_start
	IFS=, read -r -a plist <<<"$passes"
	for pass in "${plist[@]}"; do
		if [[ $pass == bin || $pass == bin-edge ]]; then
			echo "== $layout $pass ($batches batches, seed $seed)"
			bargs=()
			[[ $pass == bin-edge ]] && bargs=(--edge "${known[@]}")
			out=$(tb_cli /usr/bin/python3 "$here/bindiff.py" --mc "$S4:$MP" --mc-recheck --xkv "$S4:$P" \
				--batches "$batches" --seed "$seed" --rule "$rule" --json "${bargs[@]}") || fail=1
			printf '%s\n' "$out" | grep -v '^{'
			if [[ -n ${DIFFTEST_JSON:-} ]]; then
				printf '%s\n' "$out" | grep '^{' | sed "s/^{/{\"layout\": \"$layout\", /" >>"$DIFFTEST_JSON"
			fi
			continue
		fi
		if [[ $pass == regress ]]; then
			echo "== $layout regress"
			tb_cli /usr/bin/python3 "$here/regress.py" stream "$S4" "$P" || fail=1
			continue
		fi
		args=(--mc "$S4:$MP" --mc-recheck --xkv "$S4:$P" --batches "$batches" --seed "$seed" --rule "$rule"
		      --json --progress 30)
		case $pass in
		tcp) ;;
		tcp-malformed) args+=(--malformed) ;;
		tcp-edge) args+=(--edge "${known[@]}") ;;
		udp) args+=(--proto udp --value-max 1200) ;;
		udp-edge) args+=(--proto udp --value-max 1200 --edge "${known[@]}") ;;
		*) tb_die "difftest: unknown pass $pass" ;;
		esac
		echo "== $layout $pass ($batches batches, seed $seed)"
		out=$(tb_cli /usr/bin/python3 "$here/difftest.py" "${args[@]}") || fail=1
		printf '%s\n' "$out" | grep -v '^{'
		if [[ -n ${DIFFTEST_JSON:-} ]]; then
			printf '%s\n' "$out" | grep '^{' | sed "s/^{/{\"layout\": \"$layout\", /" >>"$DIFFTEST_JSON"
		fi
	done
	tb_serve_stop || fail=1
	tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach ($layout) failed"
done
if [[ ,$passes, == *,regress,* && " ${layouts[*]} " == *" hash_map "* ]]; then
	echo "== hash_map --value-size 8: incr/decr/ma results longer than the value size"
	tb_xdpkv attach "$TB_SRV_DEV" --entries 1024 --value-size 8 --port "$P" >/dev/null ||
		tb_die "xdpkv attach (--value-size 8) failed"
	tb_serve_tcp_start
	tb_cli /usr/bin/python3 "$here/regress.py" smallval "$S4" "$P" || fail=1
	tb_serve_stop || fail=1
	tb_xdpkv detach "$TB_SRV_DEV" >/dev/null || tb_die "detach failed"
fi
exit $fail
