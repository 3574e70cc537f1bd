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
