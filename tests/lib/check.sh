# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Assertions for the shell tests: `check DESCRIPTION COMMAND...` runs the
# command, prints PASS or FAIL with the description, and sets fail=1 on FAIL;
# the test ends with `exit $fail`.
fail=0
check() {
	local what=$1
	shift
	if "$@"; then
		echo "PASS $what"
	else
		echo "FAIL $what"
		fail=1
	fi
}

# check_aclcut LABEL COUNTER CLIENT...: a connection's gets answered in the
# kernel (COUNTER, a fast-path counter, moves), then `acl del allow
# connected`: the same connection's next get is answered by nobody and
# the connection ends (CLIENT... DIR: tcpfastclient.py's aclcut, which
# writes DIR/ready and waits for DIR/go); the list is put back.  Needs
# the testbed (tb_counter, tb_xdpkv).
check_aclcut() {
	local label=$1 counter=$2 d before mid cpid
	shift 2
	d=$(mktemp -d "$TB_TMP/acl.XXXXXX")
	before=$(tb_counter fast "$counter")
	"$@" "$d" &
	cpid=$!
	for _ in $(seq 300); do [[ -e $d/ready ]] && break; sleep 0.1; done
	mid=$(tb_counter fast "$counter")
	check "$label: the kernel answered the allowed gets ($counter $before -> $mid)" test "$mid" -gt "$before"
	tb_xdpkv acl "$TB_SRV_DEV" del allow connected >/dev/null || tb_die "acl del allow failed"
	touch "$d/go"
	check "$label: acl del allow: the open connection is cut off, the kernel's path too" wait "$cpid"
	check "$label: ... the kernel answered nothing more" test "$(tb_counter fast "$counter")" = "$mid"
	tb_xdpkv acl "$TB_SRV_DEV" add allow connected >/dev/null || tb_die "acl add allow failed"
}
