#!/bin/bash
# SPDX-License-Identifier: MIT
# Run a command with the xdpkv testbed up (tests/lib/testbed.sh), and take
# the testbed down when it ends, fails, or is interrupted:
#
#   bench/compare/testbed-run.sh PREFIX -- CMD [ARGS...]
#
# CMD sees TB_SRV_NS TB_CLI_NS TB_SRV_DEV TB_CLI_DEV TB_SRV_IP4 TB_CLI_IP4
# TB_SERVER_CPU TB_CLIENT_CPU TB_PORT TB_TMP TB_PIN_DIR TB_PREFIX
# TB_XDP_PASS_OBJ XDPKV in its environment, and can call the testbed's
# functions with bench/compare/tb-call.sh FUNCTION ARGS.
#
# CMD runs in the background and this shell waits for it, so a SIGTERM or
# SIGINT to this shell runs tb_down at once: tb_down stops CMD (SIGTERM,
# then SIGKILL after 2 s), kills whatever is left in the namespaces, detaches
# XDP, removes the pins and the namespaces.  kernel.bpf_stats_enabled is put
# back to the value it had at the start, in case CMD could not do it.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
(($# >= 3)) && [[ $2 == -- ]] || { echo "usage: $0 PREFIX -- CMD [ARGS...]" >&2; exit 2; }
prefix=$1
shift 2

# shellcheck source=../../tests/lib/testbed.sh
. "$here/../../tests/lib/testbed.sh"

bpf_stats_before=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo "")

cmp_down() {
	tb_down
	if [[ -n $bpf_stats_before ]] &&
		[[ $(sysctl -n kernel.bpf_stats_enabled 2>/dev/null) != "$bpf_stats_before" ]]; then
		sysctl -qw kernel.bpf_stats_enabled="$bpf_stats_before" &&
			tb_log "restored kernel.bpf_stats_enabled=$bpf_stats_before"
	fi
}

tb_up "$prefix" >&2 || exit 1
# tb_up armed tb_down; add the sysctl restore to the same traps
trap 'cmp_down' EXIT
trap 'cmp_down; trap - INT; kill -INT $$' INT
trap 'cmp_down; trap - TERM; kill -TERM $$' TERM

if [[ -z ${TB_XDP_PASS_OBJ:-} || ! -f $TB_XDP_PASS_OBJ ]]; then
	TB_XDP_PASS_OBJ=$(tb_xdp_pass_obj) || exit 1
fi
export TB_PREFIX TB_SRV_NS TB_CLI_NS TB_SRV_DEV TB_CLI_DEV TB_SRV_IP4 TB_CLI_IP4 \
	TB_SRV_IP6 TB_CLI_IP6 TB_SERVER_CPU TB_CLIENT_CPU TB_PORT TB_TMP TB_PIN_DIR \
	TB_SRV_IFINDEX TB_XDP_PASS_OBJ TB_QUEUES XDPKV

"$@" &
child=$!
TB_PIDS+=("$child")
wait "$child"
rc=$?
# wait returns early (> 128) when a trapped signal arrives; the trap has run
exit $rc
