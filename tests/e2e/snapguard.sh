#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: a snapshot that holds items is never replaced silently by one
# that holds fewer (docs/snapshots.md, "Replacing a snapshot").
#   tests/e2e/snapguard.sh
# 1. A 4,096-item snapshot of two blocks, one of them damaged (a flipped
#    payload byte): xdpkv-service start fails with restore's exit 3 and leaves
#    nothing attached; a second start (systemd's restart) restores again and
#    fails again (not "still attached"); the file is untouched.
# 2. serve --snapshot-file over an empty store and the intact snapshot:
#    SIGTERM's final snapshot is refused (exit 3), the file untouched, no
#    .prev; with --snapshot-allow-shrink it is replaced and the old one kept
#    as FILE.prev; a full store replaces it (FILE.prev: the one before); after
#    a flush_all the emptied store replaces it.
# 3. xdpkv-service start with XDPKV_RESTORE_ARGS=--salvage: the intact block
#    restored, the damaged file kept as FILE.partial, byte for byte.
# Environment: XDPKV (CLI), XKV_SERVICE (the configured xdpkv-service),
# E2E_PREFIX.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV"
[[ -x ${XKV_SERVICE:-} ]] || tb_die "XKV_SERVICE: the configured xdpkv-service"
tb_up "${E2E_PREFIX:-xg$$}"
dev=$TB_SRV_DEV T=$TB_TMP
attach() { tb_xdpkv attach "$dev" --entries 8192 --value-size 512 --port "$TB_PORT" >/dev/null; }
items() { tb_xdpkv status "$dev" --prometheus 2>/dev/null | sed -n 's/^xdpkv_curr_items{.*} //p'; }
attached() { tb_xdpkv status "$dev" --prometheus 2>/dev/null | grep -q '^xdpkv_attached{.*} 1$'; }
hdr_items() { /usr/bin/python3 -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(), 48)[0])' "$1"; }
same() { cmp -s "$1" "$2"; }
not() { ! "$@"; }

# the snapshot: 4,096 items of ~340 bytes, one thread: two blocks of 1 MiB at most
attach || tb_die "attach"
tb_xdpkv load "$dev" --generate 4096 --value-size 300 >/dev/null || tb_die "load"
tb_xdpkv snapshot "$dev" "$T/good.snap" --threads 1 >/dev/null || tb_die "snapshot"
tb_xdpkv detach "$dev" >/dev/null || tb_die "detach"
read -r _ b0 b1 rest < <(/usr/bin/python3 "$here/snapdamage.py" "$T/good.snap" "$T/bad.snap" 1)
check "the snapshot has two blocks, 4096 items ($b0 + $b1)" test -z "$rest" -a "$((b0 + b1))" = 4096
cp "$T/bad.snap" "$T/bad.orig"

# 1. a damaged snapshot fails the start and leaves nothing attached, twice
export XDPKV XDPKV_LAYOUT=hash_map XDPKV_PURGE=no XDPKV_SNAPSHOT=$T/bad.snap
export XDPKV_ATTACH_ARGS="--entries 8192 --value-size 512 --port $TB_PORT"
for try in 1 2; do
	rc=0
	tb_srv "$XKV_SERVICE" start "$dev" >"$T/start$try.log" 2>&1 || rc=$?
	cat "$T/start$try.log"
	check "start $try with a damaged snapshot fails with restore's 3 ($rc)" test "$rc" = 3
	check "... restored again, not 'still attached'" not grep -q 'still attached' "$T/start$try.log"
	check "... says it detached and how to salvage" grep -q 'detached.*--salvage' "$T/start$try.log"
	check "... nothing attached" not attached
	check "... the damaged file untouched" same "$T/bad.snap" "$T/bad.orig"
done

# 2. serve's snapshots never shrink the file silently
serve_term() { # ARGS...: serve until SIGTERM; its exit status in $src
	tb_serve_start --keep-privileges --snapshot-file "$T/s.snap" "$@"
	kill -TERM "$TB_SERVE_PID"
	src=0
	wait "$TB_SERVE_PID" || src=$?
	TB_SERVE_PID=
	cat "$T/serve.log"
}
cp "$T/good.snap" "$T/s.snap"
attach || tb_die "attach"
serve_term
check "an empty store over 4096 items: the final snapshot refused, exit 3 ($src)" test "$src" = 3
check "... says why" grep -q 'fewer than the 4096' "$T/serve.log"
check "... the file untouched" same "$T/s.snap" "$T/good.snap"
check "... no .prev (nothing replaced)" not test -e "$T/s.snap.prev"
serve_term --snapshot-allow-shrink
check "--snapshot-allow-shrink: replaced, exit 0 ($src)" test "$src" = 0
check "... by the empty store's snapshot" test "$(hdr_items "$T/s.snap")" = 0
check "... the 4096 items kept as s.snap.prev" same "$T/s.snap.prev" "$T/good.snap"
tb_xdpkv restore "$dev" "$T/good.snap" >/dev/null || tb_die "restore"
cp "$T/good.snap" "$T/s.snap"
serve_term
check "a full store replaces it (exit $src)" test "$src" = 0 -a "$(hdr_items "$T/s.snap")" = 4096
check "... s.snap.prev is the file replaced" same "$T/s.snap.prev" "$T/good.snap"
cp "$T/s.snap" "$T/full.snap"
tb_serve_start --keep-privileges --snapshot-file "$T/s.snap"
tb_cli /usr/bin/python3 - "$TB_SRV_IP4" "$TB_PORT" <<'PY' || tb_die "flush_all"
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
s.sendto(struct.pack("!HHHH", 1, 0, 1, 0) + b"flush_all\r\n", (sys.argv[1], int(sys.argv[2])))
assert s.recv(65536)[8:] == b"OK\r\n"
PY
sleep 0.5 # the flush walk
kill -TERM "$TB_SERVE_PID"; src=0; wait "$TB_SERVE_PID" || src=$?; TB_SERVE_PID=
check "after a flush_all the emptied store replaces it (exit $src)" test "$src" = 0 -a "$(hdr_items "$T/s.snap")" = 0
check "... s.snap.prev is the full one" same "$T/s.snap.prev" "$T/full.snap"
tb_xdpkv detach "$dev" >/dev/null || tb_die "detach"

# 3. --salvage: the intact block restored, the damaged file kept
rc=0
XDPKV_RESTORE_ARGS=--salvage tb_srv "$XKV_SERVICE" start "$dev" >"$T/salvage.log" 2>&1 || rc=$?
cat "$T/salvage.log"
check "start with XDPKV_RESTORE_ARGS=--salvage succeeds ($rc)" test "$rc" = 0
check "... the intact block's $b0 items restored" test "$(items)" = "$b0"
check "... the damaged file kept as bad.snap.partial, byte for byte" same "$T/bad.snap.partial" "$T/bad.orig"
check "... and bad.snap gone (serve's snapshots start afresh)" not test -e "$T/bad.snap"
exit $fail
