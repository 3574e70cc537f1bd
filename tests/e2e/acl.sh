#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: the access lists at run time (`xdpkv acl`) and the host's view
# following the interface while `xdpkv serve` runs (docs/security.md).
#
#   tests/e2e/acl.sh [LAYOUT]
#
# 1. A fresh attach: the three lists hold the connected subnets and follow them.
# 2. An address added to the server's interface (a new subnet, and the client
#    on it): within a few seconds the XDP program serves requests sent to it,
#    from the new subnet, without any command; removed again, they pass to the
#    kernel (pass_not_local) and the new subnet leaves the lists.
# 3. `acl del allow connected` refuses the client (drop_acl, no reply);
#    `acl add allow connected` serves it again; `acl del write connected`
#    refuses its writes only (drop_write_acl) and `acl add write CIDR` lets
#    them in.
# 4. The CLI's errors: a bad CIDR (exit 2), an unknown list (2), deleting an
#    absent entry (1), `--json` that parses.
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

layout=${1:-hash_map}
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
tb_up "${E2E_PREFIX:-xa$$}"
tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" >/dev/null || tb_die "xdpkv attach failed"
tb_pin_napi
tb_serve_start

dev=$TB_SRV_DEV
x=${TB_SRV_IP4#10.77.}; x=${x%%.*}
NEW_SRV=10.79.$x.1 NEW_CLI=10.79.$x.2

acl_json() { tb_xdpkv acl "$dev" --json; }
counter() { # fast-path counter $1
	tb_xdpkv status "$dev" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["fast"][sys.argv[1]])' "$1"
}
# one request from the client namespace; prints the reply text or nothing
req() { # HOST TEXT
	tb_cli python3 "$here/rawclient.py" req --host "$1" "$2" 2>/dev/null || true
}
in_list() { # LIST CIDR: is CIDR in LIST?
	acl_json | python3 -c '
import json, sys
j = json.load(sys.stdin)
sys.exit(0 if any(e["cidr"] == sys.argv[2] for e in j[sys.argv[1]]["entries"]) else 1)' "$1" "$2"
}
# wait up to 5 s for a condition (the serve loop syncs every second)
within5() { local i; for i in $(seq 50); do "$@" && return 0; sleep 0.1; done; return 1; }
served_at() { [[ $(req "$1" 'get nokey\r\n') == END* ]]; }
not_served_at() { [[ -z $(req "$1" 'get nokey\r\n') ]]; }

# ---- 1. defaults ----
net4=${TB_SRV_IP4%.*}.0/24
check "allow holds the connected subnet $net4" in_list allow "$net4"
check "write holds $net4" in_list write "$net4"
check "trust holds $net4" in_list trust "$net4"
check "allow holds fd77::/64" in_list allow "fd77::/64"
follows() {
	acl_json | python3 -c '
import json, sys
j = json.load(sys.stdin)
sys.exit(0 if all(j[l]["connected_subnets"] for l in ("allow", "write", "trust"))
         and j["host"]["check_mac"] and j["host"]["check_ip"] else 1)'
}
check "the lists follow the connected subnets; MAC and IP are checked" follows
check "a client on the subnet is served" served_at "$TB_SRV_IP4"

# ---- 2. the interface changes under a running server ----
ip -n "$TB_SRV_NS" addr add "$NEW_SRV/24" dev "$dev"
ip -n "$TB_CLI_NS" addr add "$NEW_CLI/24" dev "$TB_CLI_DEV"
before=$(counter replies)
check "a new address is served within 5 s ($NEW_SRV, from $NEW_CLI)" within5 served_at "$NEW_SRV"
check "... by the fast path (replies grew)" test "$(counter replies)" -gt "$before"
check "its subnet joined the allow list" in_list allow "10.79.$x.0/24"
ip -n "$TB_SRV_NS" addr del "$NEW_SRV/24" dev "$dev"
nl=$(counter pass_not_local)
addr_gone() {
	acl_json | python3 -c 'import json,sys; sys.exit(sys.argv[1] in json.load(sys.stdin)["host"]["local_addrs"])' "$1"
}
check "a removed address leaves the host's addresses within 5 s" within5 addr_gone "$NEW_SRV"
req "$NEW_SRV" 'get nokey\r\n' >/dev/null
check "... it passes to the kernel (pass_not_local grew)" test "$(counter pass_not_local)" -gt "$nl"
not_in_list() { ! in_list "$@"; }
check "its subnet left the allow list" not_in_list allow "10.79.$x.0/24"
ip -n "$TB_CLI_NS" addr del "$NEW_CLI/24" dev "$TB_CLI_DEV"

# ---- 3. changing the lists by hand ----
tb_xdpkv acl "$dev" del allow connected >/dev/null
d=$(counter drop_acl)
check "after 'del allow connected' the client gets no reply" not_served_at "$TB_SRV_IP4"
check "... counted in drop_acl" test "$(counter drop_acl)" -gt "$d"
tb_xdpkv acl "$dev" add allow connected >/dev/null
check "after 'add allow connected' it is served again" served_at "$TB_SRV_IP4"
tb_xdpkv acl "$dev" del write connected >/dev/null
w=$(counter drop_write_acl)
check "after 'del write connected' a set gets no reply" test -z "$(req "$TB_SRV_IP4" 'set k 0 0 1\r\nx\r\n')"
check "... counted in drop_write_acl" test "$(counter drop_write_acl)" -gt "$w"
check "... and reads are still served" served_at "$TB_SRV_IP4"
tb_xdpkv acl "$dev" add write "$TB_CLI_IP4" >/dev/null
check "after 'add write $TB_CLI_IP4' the set is stored" test "$(req "$TB_SRV_IP4" 'set k 0 0 1\r\nx\r\n')" = $'STORED\r'
check "'acl' lists it as $TB_CLI_IP4/32" in_list write "$TB_CLI_IP4/32"

# ---- 4. errors ----
rc=0; tb_xdpkv acl "$dev" add allow 10.0.0.0/33 2>/dev/null || rc=$?
check "a bad prefix length is a usage error (exit $rc)" test "$rc" = 2
rc=0; tb_xdpkv acl "$dev" add readers 10.0.0.0/8 2>/dev/null || rc=$?
check "an unknown list is a usage error (exit $rc)" test "$rc" = 2
rc=0; tb_xdpkv acl "$dev" del allow 198.51.100.0/24 2>/dev/null || rc=$?
check "deleting an absent entry exits 1 (exit $rc)" test "$rc" = 1
# attaching again with the same store re-attaches (docs/cli.md, "Re-attach"): the
# lists keep what 'acl add' put there
rc=0; tb_xdpkv attach "$dev" >/dev/null 2>&1 || rc=$?
check "attach on an interface it is already on re-attaches (exit $rc)" test "$rc" = 0
check "... and keeps the run-time entry $TB_CLI_IP4/32 in the write list" in_list write "$TB_CLI_IP4/32"
check "... the client is still served" served_at "$TB_SRV_IP4"

exit $fail
