#!/bin/bash
# SPDX-License-Identifier: MIT
# Call one function of tests/lib/testbed.sh on the testbed that
# bench/compare/testbed-run.sh brought up (its TB_* variables are in the
# environment):
#
#   bench/compare/tb-call.sh tb_pin_napi
#   bench/compare/tb-call.sh tb_srv CMD ARGS...     (CMD in the server netns, server CPU)
#   bench/compare/tb-call.sh tb_cli CMD ARGS...     (CMD in the client netns, client CPU)
#   bench/compare/tb-call.sh pin_client_napi        (the client veth's NAPI thread on the client CPU)
#   bench/compare/tb-call.sh pin_spread SRV_CPUS CLI_CPUS
#                                       (one NAPI kthread per CPU: the server veth's
#                                        queues on SRV_CPUS, the client's on CLI_CPUS)
#
# It never brings the testbed up or down (no traps are armed here).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../tests/lib/testbed.sh
. "$here/../../tests/lib/testbed.sh"
: "${TB_SRV_NS:?run under bench/compare/testbed-run.sh}"
TB_SERVER_CPU=${TB_SERVER_CPU:-1}
TB_CLIENT_CPU=${TB_CLIENT_CPU:-0}

# The client veth's receive (the replies) runs in its NAPI, which the sender
# schedules on its own CPU, i.e. the server's.  Make it a thread on the
# client CPU so the server core only does the server's work.  The testbed's
# own helper does this for the server end; it is reused with the ends swapped.
pin_client_napi() {
	tb_pin_napi_spread "$TB_CLI_NS" "$TB_CLI_DEV" "$TB_CLIENT_CPU"
}

# The scaling experiment (compare j): server queue i's NAPI on the i-th
# server core, client queue i's (the replies' receive) on the i-th
# generator core.
pin_spread() {
	tb_pin_napi_spread "$TB_SRV_NS" "$TB_SRV_DEV" "${1:?server CPUs}"
	tb_pin_napi_spread "$TB_CLI_NS" "$TB_CLI_DEV" "${2:?client CPUs}"
}

(($#)) || { echo "usage: $0 FUNCTION [ARGS...]" >&2; exit 2; }
case $1 in
tb_pin_napi | tb_srv | tb_cli | tb_xdpkv | tb_xdpkv_allcpus | pin_client_napi | pin_spread) "$@" ;;
*) echo "tb-call: unknown function '$1'" >&2; exit 2 ;;
esac
