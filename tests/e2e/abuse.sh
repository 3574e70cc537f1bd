#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: abuse from outside the allow list, forged sources, reflection
# and the two-server loop, while an allowed client keeps being served.
#
#   tests/e2e/abuse.sh
#
# xdpkv (hash_map, native, default policy: the connected subnet 10.77.X.0/24
# may read and write and is trusted; --max-amplification 10) and its slow path
# serve the testbed's server veth.  Two more hosts sit on the client's segment
# (macvlans on the client veth end, tests/lib/testbed.sh): "evil" 10.78.X.66
# (and 10.78.X.99, a victim's address), outside every list, and "two"
# 10.77.X.3, a second xdpkv server.  abuseclient.py runs the cases; it sees
# every reply on the wire (AF_PACKET), forged ones included.
#
#   closed    evil, in no list: get, set, overwrite, delete, incr, add,
#             flush_all, stats, version, a 100-key multi-get, IPv6, and
#             IP-fragmented writes and gets: no reply, drop_acl
#   reader    `xdpkv acl add allow 10.78.X.0/24`: evil may read, not write,
#             is not trusted: small gets answered; replies over 10x the
#             request (a 150-byte value, 1000 and 3000 bytes, a 100-key
#             multi-get of 1000 bytes, stats) are the SERVER_ERROR line or
#             nothing; every write, also behind a read in one datagram or in
#             IP fragments: no reply, nothing stored
#   spoof     raw frames from evil forging the victim (allowed, untrusted):
#             the bytes the server sends the victim stay under 10x; a source
#             in no list: drop_acl; a source inside the server's subnet: shown
#             (forging on one's own segment is outside the threat model)
#   ports     the allowed client from source ports 0, 11211, 53, 123, 1023
#             (IPv4 and IPv6, and IP fragments from 53 and 11211): no reply,
#             drop_port; port 1024 served
#   notlocal  frames to another MAC, the broadcast or a multicast MAC,
#             another address: not answered, pass_not_local
#   shape     reply-shaped datagrams (ERROR, END, VALUE ..., numbers, ...) and
#             bad frame headers: no reply, drop_reply / drop_frame
#   loop      server B (xdpkv --allow any --write-allow any) on 10.77.X.3,
#             first on port 11211, then on 11311; one frame forged from B to
#             A: the datagrams A and B exchange, counted on the wire, are at
#             most 4 within 0.5 s and none in the next 0.5 s
# After each phase the store must be what it was (the seeded items, no key the
# attacker tried, the same item count); if not, that is a FAIL and the store
# is put back, so that the next phase starts clean.  Throughout, a background
# client (trusted) sets and gets and must see no timeout, no error and no
# stale read.  At the end the amplification table (bytes out / bytes in per
# case) must be under 10x.
#
# A FAIL marked [slow path] is a check only the slow path can pass: the
# request (IP fragments, several commands in a datagram, a 100-key get) or
# the reply (too large for the frame) goes through `xdpkv serve`.
# Environment: XDPKV (CLI path), E2E_PREFIX (namespace prefix).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"

(($# == 0)) || { echo "usage: $0" >&2; exit 2; }
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV (build it, or set XDPKV)"
prefix=${E2E_PREFIX:-xa$$}
amp=10
peer_alt_port=11311

tb_up "$prefix"
tb_evil_up
tb_peer_up
tb_xdpkv attach "$TB_SRV_DEV" --mode native --entries 4096 --key-size 64 --value-size 4096 \
	--port "$TB_PORT" || tb_die "xdpkv attach failed"
tb_pin_napi
tb_serve_start

x=$(tb_subnet)
srv_mac=$(tb_mac "$TB_SRV_NS" "$TB_SRV_DEV")
status_cmd="nsenter --net=/run/netns/$TB_SRV_NS -- $XDPKV status $TB_SRV_DEV --json"
peer_status="nsenter --net=/run/netns/$TB_PEER_NS -- $XDPKV status $TB_PEER_DEV --json"
amp_log=$TB_TMP/amp.log
: >"$amp_log"
client=$here/abuseclient.py
common=(--port "$TB_PORT" --server4 "$TB_SRV_IP4" --server6 "$TB_SRV_IP6" --server-mac "$srv_mac"
	--status "$status_cmd" --amplification "$amp" --amp-log "$amp_log")

phase_fails=0 # failed checks in the phases
slow_fails=0  # ... of them marked [slow path]
# phase WHERE NAME ARGS...: run a phase of abuseclient.py with WHERE (tb_evl, tb_cli)
phase() {
	local where=$1 name=$2 out rc=0
	shift 2
	echo "---- $name ----"
	out=$($where python3 "$client" phase "$name" "${common[@]}" "$@" 2>&1) || rc=$?
	echo "$out"
	phase_fails=$((phase_fails + $(grep -c '^FAIL' <<<"$out" || true)))
	slow_fails=$((slow_fails + $(grep -c '^FAIL \[slow path\]' <<<"$out" || true)))
	if ((rc != 0)) && ! grep -q '^FAIL' <<<"$out"; then
		echo "FAIL phase $name exited with status $rc"
		phase_fails=$((phase_fails + 1))
	fi
}

# The store as the CLI sees it: a digest of each seeded item, every key the
# attacker tried that exists, and the item count.
read -r -a seed_keys <<<"$(python3 "$client" keys | sed -n 1p)"
read -r -a evil_keys <<<"$(python3 "$client" keys | sed -n 2p)"
store_view() {
	local k v
	for k in "${seed_keys[@]}"; do
		v=$(tb_xdpkv get "$TB_SRV_DEV" "$k" 2>&1 | sha256sum | cut -c1-16) || v=missing
		echo "$k $v"
	done
	for k in "${evil_keys[@]}"; do
		if tb_xdpkv get "$TB_SRV_DEV" "$k" >/dev/null 2>&1; then
			echo "$k present"
		fi
	done
	tb_xdpkv status "$TB_SRV_DEV" --json >"$TB_TMP/view.json" || echo "status failed"
	python3 "$here/xkvstatus.py" show "$TB_TMP/view.json" | grep '^live='
}

seed() { tb_cli python3 "$client" seed --server4 "$TB_SRV_IP4" --port "$TB_PORT"; }

# store_check PHASE: the store is what it was before PHASE; if not, put the
# seeded items back and remove the attacker's keys.
store_check() {
	store_view >"$TB_TMP/store.after"
	if cmp -s "$TB_TMP/store.before" "$TB_TMP/store.after"; then
		echo "PASS $1: the store is unchanged"
		return 0
	fi
	echo "FAIL $1: the store changed"
	diff "$TB_TMP/store.before" "$TB_TMP/store.after" | grep '^[<>]' | sed 's/^/   /' || true
	fail=1
	store_changed+=("$1")
	seed >/dev/null || tb_die "cannot put the seeded items back"
	local k
	for k in "${evil_keys[@]}"; do
		tb_xdpkv del "$TB_SRV_DEV" "$k" >/dev/null 2>&1 || true
	done
	sleep 0.3 # the background client's own keys are back after a flush_all
	store_view >"$TB_TMP/store.before"
}
store_changed=()

echo "---- seed (the allowed client) ----"
seed || tb_die "seeding failed"

echo "---- the background client starts ----"
bg_out=$TB_TMP/bg.json
tb_cli_bg python3 "$client" background --server4 "$TB_SRV_IP4" --port "$TB_PORT" \
	--stop-file "$TB_TMP/bg.stop" --ready-file "$TB_TMP/bg.ready" --out "$bg_out" --max-seconds 150
bg_pid=$TB_LAST_PID
for _ in $(seq 300); do
	[[ -e $TB_TMP/bg.ready ]] && break
	kill -0 "$bg_pid" 2>/dev/null || tb_die "the background client exited"
	sleep 0.1
done
[[ -e $TB_TMP/bg.ready ]] || tb_die "the background client did not get going within 10 s"
store_view >"$TB_TMP/store.before"
echo "store before:"
sed 's/^/   /' "$TB_TMP/store.before"

evil=(--dev "$TB_EVL_DEV" --src4 "$TB_EVL_IP4" --src6 "$TB_EVL_IP6")
cli=(--dev "$TB_CLI_DEV" --src4 "$TB_CLI_IP4" --src6 "$TB_CLI_IP6")

phase tb_evl closed "${evil[@]}"
store_check closed

echo "---- xdpkv acl $TB_SRV_DEV add allow $TB_EVL_NET4 ----"
tb_xdpkv acl "$TB_SRV_DEV" add allow "$TB_EVL_NET4" || tb_die "xdpkv acl add failed"
tb_xdpkv acl "$TB_SRV_DEV" list --json >"$TB_TMP/acl.json" || tb_die "xdpkv acl list failed"
tb_xdpkv acl "$TB_SRV_DEV"
check "the evil subnet is in the allow list only; 10x" python3 - "$TB_TMP/acl.json" "$TB_EVL_NET4" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
has = {l: any(e["cidr"] == sys.argv[2] for e in j[l]["entries"]) for l in ("allow", "write", "trust")}
sys.exit(0 if has == {"allow": True, "write": False, "trust": False} and j["max_amplification"] == 10 else 1)
EOF

phase tb_evl reader "${evil[@]}"
store_check reader
phase tb_evl spoof "${evil[@]}" --victim4 "$TB_VIC_IP4" --outside4 "10.79.$x.5" --inside4 "10.77.$x.50"
store_check spoof
phase tb_cli ports "${cli[@]}"
phase tb_cli notlocal "${cli[@]}" --other4 "10.77.$x.7" --other6 fd77::7
phase tb_cli shape "${cli[@]}"
store_check "ports, notlocal, shape"

# Server B: a second xdpkv that answers anyone, with its slow path.
peer_serve_pid=
peer_up() { # PORT
	tb_peer "$XDPKV" attach "$TB_PEER_DEV" --mode skb --entries 1024 --port "$1" \
		--allow any --write-allow any >/dev/null || tb_die "xdpkv attach $TB_PEER_DEV failed"
	tb_peer_bg "$XDPKV" serve "$TB_PEER_DEV" >>"$TB_TMP/peer-serve.log" 2>&1
	peer_serve_pid=$TB_LAST_PID
	local i
	for i in $(seq 600); do
		kill -0 "$peer_serve_pid" 2>/dev/null || tb_die "server B's slow path exited"
		nsenter --net="/run/netns/$TB_PEER_NS" -- ss -Hlun "sport = :$1" | grep -q . && return 0
		sleep 0.05
	done
	tb_die "server B's slow path did not bind port $1"
}
peer_down() {
	kill -TERM "$peer_serve_pid" 2>/dev/null
	wait "$peer_serve_pid" 2>/dev/null || true
	tb_peer "$XDPKV" detach "$TB_PEER_DEV" >/dev/null || tb_die "xdpkv detach $TB_PEER_DEV failed"
}
loop=(--peer4 "$TB_PEER_IP4" --peer-mac "$TB_PEER_MAC" --peer-status "$peer_status")
peer_up "$TB_PORT"
phase tb_cli loop "${cli[@]}" "${loop[@]}" --peer-port "$TB_PORT"
peer_down
peer_up "$peer_alt_port"
phase tb_cli loop "${cli[@]}" "${loop[@]}" --peer-port "$peer_alt_port"
peer_down
store_check loop

echo "---- the background client stops ----"
touch "$TB_TMP/bg.stop"
for _ in $(seq 50); do
	kill -0 "$bg_pid" 2>/dev/null || break
	sleep 0.1
done
wait "$bg_pid" 2>/dev/null || true
[[ -s $bg_out ]] || tb_die "the background client left no summary"
eval "$(python3 -c 'import json, shlex, sys
j = json.load(open(sys.argv[1]))
for k in ("ops", "errors", "timeouts", "lost", "stale"):
    print("bg_%s=%d" % (k, j[k]))
print("bg_seconds=%s" % shlex.quote(str(j["seconds"])))
print("bg_first=%s" % shlex.quote(j["first"] or "none"))' "$bg_out")"
echo "background client: $bg_ops operations in $bg_seconds s, $bg_lost lost once and answered" \
	"when sent again, $bg_timeouts timeouts, $bg_errors errors, $bg_stale stale reads (first: $bg_first)"

echo "---- result ----"
echo "amplification: UDP payload bytes (frame header included) per case; limit ${amp}x the request"
printf '  %-56s %8s %9s %6s %7s\n' case "bytes in" "bytes out" ratio verdict
worst=0
over=0
while IFS='|' read -r name n_in n_out _ limit; do
	ratio=$(awk -v o="$n_out" -v i="$n_in" 'BEGIN { printf "%.2f", o / i }')
	verdict=ok
	if [[ $limit == - ]]; then
		verdict=trusted # the loop: B is in A's subnet
	elif ((n_out > limit)); then
		verdict=OVER
		over=$((over + 1))
	fi
	if [[ $limit != - ]] && awk -v r="$ratio" -v w="$worst" 'BEGIN { exit !(r > w) }'; then
		worst=$ratio
	fi
	printf '  %-56s %8d %9d %6s %7s\n' "$name" "$n_in" "$n_out" "$ratio" "$verdict"
done <"$amp_log"

check "no phase changed the store (changed by: ${store_changed[*]:-none})" test "${#store_changed[@]}" -eq 0
check "every measured reply within ${amp}x (worst ${worst}x, $over over)" test "$over" -eq 0
check "the amplification table has rows" test -s "$amp_log"
check "the background client was served ($bg_ops operations)" test "$bg_ops" -ge 200
check "the background client saw no timeout ($bg_timeouts unanswered twice)" test "$bg_timeouts" -eq 0
check "the background client lost at most 1 % of its requests once ($bg_lost of $bg_ops)" \
	test $((bg_lost * 100)) -le "$bg_ops"
check "the background client saw no error reply ($bg_errors)" test "$bg_errors" -eq 0
check "the background client saw no stale read ($bg_stale; first: $bg_first)" test "$bg_stale" -eq 0
check "every check of the phases passed ($phase_fails failed, $slow_fails of them [slow path])" \
	test "$phase_fails" -eq 0
tb_serve_stop || { echo "FAIL xdpkv serve did not stop on SIGTERM"; fail=1; }

if ((fail == 0)); then
	echo "abuse: all passed"
else
	echo "abuse: FAILED ($phase_fails failed check(s) in the phases, $slow_fails of them marked [slow path])"
fi
exit $fail
