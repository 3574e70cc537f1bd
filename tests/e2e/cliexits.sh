#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: what the CLI tells a newcomer when something is wrong
# (docs/cli.md, "Exit status").
#   tests/e2e/cliexits.sh
# - -V is --version; an unknown option before the command names xdpkv once;
# - --help comes before any check: 'attach badif --help' helps, exit 0;
# - a missing input (load, import, restore) or an unwritable output
#   (snapshot) is an I/O error: exit 3, nothing on stdout;
# - --json prints one JSON object on success and on failure (the error);
# - the key rule: memcached's by default, --strict-keys protocol.txt's;
# - status without IFACE lists the stores of this network namespace only,
#   and names the others.
# Environment: XDPKV (CLI), E2E_PREFIX.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# run ARGS...: the CLI in the server's namespace; $rc, $T/out, $T/err
run() {
	rc=0
	nsenter --net="/run/netns/$TB_SRV_NS" -- "$XDPKV" "$@" >"$T/out" 2>"$T/err" || rc=$?
}
is_json() { /usr/bin/python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert isinstance(o, dict)' "$T/out"; }
json_has() { /usr/bin/python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert sys.argv[2] in o, o' "$T/out" "$1"; }
empty_out() { [[ ! -s $T/out ]]; }
not() { ! "$@"; }

# without a testbed
"$XDPKV" --version >"$T/version"
rc=0; "$XDPKV" -V >"$T/out" 2>"$T/err" || rc=$?
check "-V: exit 0 ($rc), the same as --version" test "$rc" = 0 -a "$(cat "$T/out")" = "$(cat "$T/version")"
rc=0; "$XDPKV" -Q >"$T/out" 2>"$T/err" || rc=$?
cat "$T/err"
check "-Q: exit 2 ($rc)" test "$rc" = 2
check "... 'xdpkv: unknown option '-Q'' (the name once)" grep -qx "xdpkv: unknown option '-Q'" "$T/err"
check "... the hint names 'xdpkv --help'" grep -q "'xdpkv --help'" "$T/err"
check "... nowhere 'xdpkv: xdpkv:' or 'xdpkv xdpkv'" not grep -q 'xdpkv: xdpkv:\|xdpkv xdpkv' "$T/err"
for cmd in "attach xkvnosuchif0 --help" "attach xkvnosuchif0 --entries 0 -h" "load xkvnosuchif0 /nonexistent --help"; do
	rc=0
	# shellcheck disable=SC2086
	"$XDPKV" $cmd >"$T/out" 2>"$T/err" || rc=$?
	check "$cmd: the help, exit 0 ($rc), nothing on stderr" \
		test "$rc" = 0 -a "$(head -c 13 "$T/out")" = "Usage: xdpkv " -a ! -s "$T/err"
done

tb_up "${E2E_PREFIX:-xc$$}"
dev=$TB_SRV_DEV
tb_xdpkv attach "$dev" --entries 4096 >/dev/null || tb_die "attach"

# the key rule: memcached's (any byte but NUL) unless --strict-keys
run status "$dev" --json
check "attach's default key rule: any byte but NUL, as memcached" grep -q '"binary_keys":true' "$T/out"
run attach "$dev" --entries 4096 --strict-keys --binary-keys
check "attach --strict-keys --binary-keys: exit 2 ($rc), says why" \
	test "$rc" = 2 -a "$(grep -c 'contradict' "$T/err")" = 1
run attach "$dev" --entries 4096 --strict-keys
check "re-attach --strict-keys: exit 0 ($rc)" test "$rc" = 0
run status "$dev" --json
check "... protocol.txt's rule" grep -q '"binary_keys":false' "$T/out"
run attach "$dev" --entries 4096
check "re-attach without it: exit 0 ($rc), the default again" test "$rc" = 0

# missing inputs: exit 3 (I/O), nothing on stdout
for cmd in "load $dev /nonexistent" "import $dev /nonexistent.jsonl" "restore $dev /nonexistent.snap"; do
	# shellcheck disable=SC2086
	run $cmd
	check "$cmd: exit 3 ($rc), nothing on stdout" test "$rc" = 3 -a ! -s "$T/out"
	check "... says why on stderr" grep -q 'No such file' "$T/err"
	# shellcheck disable=SC2086
	run $cmd --json
	check "$cmd --json: exit 3 ($rc), a JSON object with the error" test "$rc" = 3
	check "... valid JSON" json_has error
done
run snapshot "$dev" /nonexistent-dir/x.snap
check "snapshot to an unwritable path: exit 3 ($rc), nothing on stdout" test "$rc" = 3 -a ! -s "$T/out"
run snapshot "$dev" /nonexistent-dir/x.snap --json
check "... --json: the error as JSON" json_has error

# --json on success, and on a damaged file
run load "$dev" --generate 3000 --value-size 300 --json
check "load --json: exit 0 ($rc), JSON" test "$rc" = 0
check "... with its counts" json_has stored
run snapshot "$dev" "$T/good.snap" --threads 1 --json
check "snapshot --json: exit 0 ($rc), JSON" json_has items
/usr/bin/python3 "$here/snapdamage.py" "$T/good.snap" "$T/bad.snap" 0 >/dev/null
run restore "$dev" "$T/bad.snap" --json
check "restore --json of a damaged file: exit 3 ($rc)" test "$rc" = 3
check "... a JSON object with the error" json_has error
check "... which names the block" grep -q 'block 0 of' "$T/out"
run restore "$dev" "$T/bad.snap" --json --salvage
check "restore --json --salvage: exit 1 ($rc), its JSON report" test "$rc" = 1
check "... bad_blocks in it" json_has bad_blocks
run status "$dev" --json --bogus
check "a bad option with --json: exit 2 ($rc), JSON" test "$rc" = 2
check "... valid JSON" is_json

# status without IFACE: this namespace's stores only
rc=0; tb_cli "$XDPKV" status >"$T/out" 2>"$T/err" || rc=$?
cat "$T/out"
check "status in the client's namespace: no store of $dev listed" not grep -q "^$dev:" "$T/out"
check "... but named as not in this network namespace" grep -q "not in this network namespace.* $dev" "$T/out"
rc=0; tb_cli "$XDPKV" status --json >"$T/out" 2>"$T/err" || rc=$?
check "status --json there: $dev not among the interfaces" not grep -q "\"$dev\"" "$T/out"
run status
check "status in the server's namespace lists $dev (the default layout, lru)" grep -q "^$dev: lru" "$T/out"
exit $fail
