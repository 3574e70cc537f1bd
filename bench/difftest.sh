#!/bin/bash
# SPDX-License-Identifier: MIT
# The differential tester's long run (tests/difftest/run.sh): N batches per
# pass and layout against Debian's memcached, one JSON line per pass.
#
#   bench/difftest.sh [--batches N] [--seed S] [--passes LIST] [--known] [--out FILE] [LAYOUT...]
#
# Defaults: 10000 batches, a random seed (printed), hash_map and lru, the
# passes tcp,tcp-malformed,udp,regress, results/difftest-<date>.jsonl.
# The edge passes (tcp-edge, udp-edge, bin-edge) and --known: run.sh --help.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
batches=10000 seed=$RANDOM passes=tcp,tcp-malformed,udp,regress known=()
out=$here/../results/difftest-$(date +%Y%m%d-%H%M%S).jsonl
while (($#)); do
	case $1 in
	--batches) batches=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--passes) passes=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--known) known=(--known); shift ;;
	-h|--help) sed -n '3,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "bench/difftest.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
(($#)) || set -- hash_map lru
mkdir -p "$(dirname "$out")"
echo "difftest: $batches batches per pass, seed $seed, layouts $*; JSON to $out" >&2
DIFFTEST_JSON=$out exec "$here/../tests/difftest/run.sh" --batches "$batches" --seed "$seed" \
	--passes "$passes" "${known[@]}" "$@"
