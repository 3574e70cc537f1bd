#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end: xdpkv@IFACE.service under a real systemd as PID 1 (issue 8).
#   tests/e2e/systemd_unit.sh [LAYOUT]
# A throw-away systemd-nspawn container boots the host's systemd: its root is
# a tmpfs (--volatile=yes), /usr is the host's with `cmake --install` of this
# build on top (an overlay: the unit, xdpkv and xdpkv-service at the paths the
# .deb uses), its network namespace is the testbed's server namespace (the
# veth's server end), bpffs is the host's.  Inside it:
#  1. the package's postinst creates the user xdpkv and /var/lib/xdpkv;
#  2. the installed unit names the interface's device (BindsTo=, After=);
#     a container has no device units (read-only /sys, no udev), so systemd
#     refuses that dependency and the start fails at once: the unit is then
#     started from a copy without those two lines (checked: nothing else
#     differs);
#  3. systemctl start returns once serve's READY=1 (Type=notify) reached
#     systemd: active/running, StatusText "serving" from serve's own message,
#     systemd's debug log shows the notification from the main PID;
#  4. UDP (XDP and the slow path) and TCP from the client namespace;
#  5. the serve process as systemd runs it: CapBnd is exactly the unit's
#     CapabilityBoundingSet, no effective capabilities, user xdpkv,
#     NoNewPrivs, a seccomp filter, / read-only, /var/lib/xdpkv writable,
#     its own /tmp;
#  6. systemctl stop: a final snapshot owned by xdpkv, the store stays
#     attached (XDP answers with no serve); start again keeps it; serve
#     killed: Restart=on-failure starts it again, the store kept;
#  7. with XDPKV_PURGE=yes stop detaches; start restores the snapshot;
#  8. a damaged snapshot: the start fails and detaches, so does each restart
#     by Restart=on-failure, serve never runs, the file stays byte for byte
#     and restore --salvage still recovers its intact block; with
#     XDPKV_RESTORE_ARGS=--salvage the start restores that block and keeps
#     the damaged file as FILE.partial.
# docs/install.md ("Tested under systemd") says what this cannot test.
# Environment: XDPKV (the CLI, for the host side), XKV_BUILD_DIR (the build
# to install into the container), XKV_POSTINST, CMAKE (cmake).  Names carry
# the PID: namespaces sdPID-*, machine and cgroups xkv-sd-PID.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"
layout=${1:-lru}
[[ -x $XDPKV ]] || tb_die "xdpkv CLI not found at $XDPKV"
[[ -d ${XKV_BUILD_DIR:-} ]] || tb_die "XKV_BUILD_DIR: the build directory to install"
[[ -f ${XKV_POSTINST:-} ]] || tb_die "XKV_POSTINST: the package's postinst"
command -v systemd-nspawn >/dev/null ||
	tb_die "systemd-nspawn not found: apt-get install systemd-container (tests/lib/install-deps.sh)"
[[ -x /lib/systemd/systemd ]] || tb_die "/lib/systemd/systemd not found: apt-get install systemd"

tb_up "sd$$"
dev=$TB_SRV_DEV
machine=xkv-sd-$$
nspawn_pid=
leader=

# The container gets cgroups of its own (nspawn --keep-unit makes
# supervisor/ and payload/ beside itself; systemd in it builds its tree under
# payload/): a child of this script's cgroup in the systemd hierarchies, the
# cgroup2 one and, on a hybrid host, name=systemd.
cg_dirs=()
while read -r target fstype opts; do
	[[ $fstype == cgroup2 || $opts == *name=systemd* ]] || continue
	if [[ $fstype == cgroup2 ]]; then own=$(sed -n 's/^0:://p' /proc/self/cgroup)
	else own=$(sed -n 's/^[0-9]*:name=systemd://p' /proc/self/cgroup); fi
	cg_dirs+=("$target${own%/}/$machine")
done < <(findmnt -rn -o TARGET,FSTYPE,OPTIONS -t cgroup,cgroup2)
((${#cg_dirs[@]})) || tb_die "no cgroup2 or name=systemd hierarchy mounted"

# Halt the container (SIGTERM to nspawn: systemd shuts down), then make sure:
# kill what is left in its cgroups, remove them.
sd_down() {
	set +e
	if [[ -n $nspawn_pid ]] && kill -0 "$nspawn_pid" 2>/dev/null; then
		kill -TERM "$nspawn_pid"
		for _ in $(seq 100); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.1; done
	fi
	[[ -n $leader ]] && kill -KILL "$leader" 2>/dev/null
	[[ -n $nspawn_pid ]] && { kill -KILL "$nspawn_pid" 2>/dev/null; wait "$nspawn_pid" 2>/dev/null; }
	local d pids
	for d in "${cg_dirs[@]}"; do
		[[ -d $d ]] || continue
		for _ in $(seq 20); do
			pids=$(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null)
			[[ -z $pids ]] && break
			kill -KILL $pids 2>/dev/null
			sleep 0.1
		done
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
		[[ -d $d ]] && tb_log "cannot remove cgroup $d"
	done
	rm -rf "/run/systemd/nspawn/propagate/$machine"
	nspawn_pid= leader=
}
trap 'sd_down; tb_down' EXIT
trap 'sd_down; tb_down; trap - INT; kill -INT $$' INT
trap 'sd_down; tb_down; trap - TERM; kill -TERM $$' TERM

# what the .deb installs, under $TB_TMP/stage (cpack uses the same rules)
stage=$TB_TMP/stage
DESTDIR=$stage "${CMAKE:-cmake}" --install "$XKV_BUILD_DIR" >/dev/null || tb_die "cmake --install $XKV_BUILD_DIR"
unit=$stage/usr/lib/systemd/system/xdpkv@.service
[[ -f $unit && -x $stage/usr/sbin/xdpkv && -x $stage/usr/libexec/xdpkv/xdpkv-service ]] ||
	tb_die "the install has no unit, xdpkv or xdpkv-service at the .deb's paths"
conf=$TB_TMP/etc-xdpkv
mkdir -p "$conf"
cp "$stage/etc/xdpkv/example.conf" "$conf/"
write_conf() { # PURGE [ATTACH_ARGS [RESTORE_ARGS]]
	printf 'XDPKV_LAYOUT=%s\nXDPKV_ATTACH_ARGS=%s\nXDPKV_PURGE=%s\nXDPKV_RESTORE_ARGS=%s\n' \
		"$layout" "${2:---entries 4096}" "$1" "${3:-}" >"$conf/$dev.conf"
}
write_conf no

# /sys/fs/bpf: the host's bpffs (the pins outlive the container; tb_down
# removes them).  The capabilities nspawn drops by default that the unit's
# bounding set keeps: CAP_BPF CAP_PERFMON CAP_NET_ADMIN; its seccomp filter
# refuses bpf() (EPERM) unless allowed.  The tmpfs /etc is a first boot
# (presets enable every service): booted to basic.target, none of them runs.
mkdir -p "${cg_dirs[@]}" || tb_die "cannot create the container's cgroups ${cg_dirs[*]}"
(
	for d in "${cg_dirs[@]}"; do echo "$BASHPID" >"$d/cgroup.procs"; done
	exec systemd-nspawn --quiet --register=no --keep-unit --machine="$machine" \
		--volatile=yes --directory=/ --overlay-ro="/usr:$stage/usr:/usr" \
		--network-namespace-path="/run/netns/$TB_SRV_NS" \
		--capability=CAP_BPF,CAP_PERFMON,CAP_NET_ADMIN --system-call-filter='bpf perf_event_open' \
		--bind=/sys/fs/bpf --bind-ro="$conf:/etc/xdpkv" \
		--console=pipe --boot -- systemd.unit=basic.target systemd.firstboot=off
) </dev/null >"$TB_TMP/nspawn.log" 2>&1 &
nspawn_pid=$!
for _ in $(seq 100); do
	leader=$(pgrep -P "$nspawn_pid" -x systemd || true)
	[[ -n $leader ]] && break
	kill -0 "$nspawn_pid" 2>/dev/null || break
	sleep 0.1
done
[[ -n $leader ]] || { cat "$TB_TMP/nspawn.log" >&2; tb_die "systemd-nspawn did not start systemd"; }
ct() { nsenter --target="$leader" --all -- "$@"; }
ctl() { timeout 60 nsenter --target="$leader" --all -- systemctl --no-pager "$@"; }
show() { ctl show -P "$1" "xdpkv@$dev.service"; }
journal_has() { # UNIT TEXT: journald takes the services' output asynchronously
	# UNIT "*": the whole journal.  journald learns a line's unit from its
	# writer's cgroup when it reads the line: the last line of a process
	# that exits at once (ExecStartPre's script) may carry none.
	local by=(-u "$1")
	[[ $1 == "*" ]] && by=()
	for _ in $(seq 300); do # up to 30 s: journald lags on a loaded machine
		# grep reads all of it: with -q, journalctl could die of SIGPIPE (pipefail)
		ct journalctl --no-pager "${by[@]}" | grep -- "$2" >/dev/null && return 0
		sleep 0.1
	done
	return 1
}
not() { ! "$@"; }
journal_tail() {
	echo "---- the container's journal (xdpkv@$dev, no debug lines) ----"
	ct journalctl --no-pager -o short-monotonic -p info -u "xdpkv@$dev" | tail -n 60
}
booted() { [[ $state == running || $state == degraded ]]; }
state=
for _ in $(seq 300); do
	state=$(ct systemctl is-system-running 2>/dev/null || true)
	booted && break
	sleep 0.1
done
check "systemd booted in the container ($state)" booted
booted || { cat "$TB_TMP/nspawn.log" >&2; exit 1; }
check "systemd is PID 1 in the container" test "$(ct cat /proc/1/comm)" = systemd

# 1. the postinst, as dpkg runs it
check "postinst configure" ct sh -s configure <"$XKV_POSTINST"
check "postinst: /var/lib/xdpkv owned by xdpkv, 0750" test "$(ct stat -c '%U %a' /var/lib/xdpkv)" = "xdpkv 750"

# 2. the installed unit as it is
devunit=sys-subsystem-net-devices-$dev.device
check "BindsTo= the interface's device" test "$(show BindsTo)" = "$devunit"
check "After= the interface's device" grep -qw "$devunit" <<<"$(show After)"
check "Type=notify NotifyAccess=main" test "$(show Type) $(show NotifyAccess)" = "notify main"
check "at most 5 starts a minute (StartLimitBurst, StartLimitIntervalUSec)" \
	test "$(show StartLimitBurst) $(show StartLimitIntervalUSec)" = "5 1min"
check "the installed unit: the start fails at once (no device units in a container)" not ctl start "xdpkv@$dev"
check "... systemd says starting the device unit is unsupported" journal_has "$devunit" unsupported
attached() { tb_xdpkv status "$dev" --prometheus 2>/dev/null | grep '^xdpkv_attached{.*} 1$' >/dev/null; }
check "... and nothing was attached" not attached

# the same unit without the device dependency, in /etc/systemd/system
sed -e '/^BindsTo=sys-subsystem-net-devices-%i\.device$/d' \
	-e 's/^After=sys-subsystem-net-devices-%i\.device /After=/' "$unit" >"$TB_TMP/unit"
unit_diff() {
	diff "$unit" "$TB_TMP/unit" | grep '^[<>]' >"$TB_TMP/unit.diff"
	[[ $(grep -c '^<' "$TB_TMP/unit.diff") == 2 && $(grep -c '^>' "$TB_TMP/unit.diff") == 1 ]] &&
		grep -qx '> After=network.target' "$TB_TMP/unit.diff"
}
check "the copy differs in BindsTo= and the device in After= only" unit_diff
ct sh -c 'cat >/etc/systemd/system/xdpkv@.service' <"$TB_TMP/unit"
ctl daemon-reload
ctl reset-failed
ct systemd-analyze log-level debug

# 3. start: Type=notify
check "systemctl start xdpkv@$dev" ctl start "xdpkv@$dev"
# the rest would only time out, one check after another
((fail)) && { journal_tail; exit 1; }
# at once: Type=notify makes start wait for READY=1, sent once both are bound
bound() { [[ $(tb_srv ss -Hln "( sport = :$TB_PORT )" | awk '{print $1}' | sort -u | tr '\n' ' ') == "tcp udp " ]]; }
check "UDP and TCP port $TB_PORT bound when start returns" bound
check "active (running)" test "$(show ActiveState)/$(show SubState)" = active/running
check "StatusText from serve's notification" test "$(show StatusText)" = serving
mainpid=$(show MainPID)
check "MainPID $mainpid is xdpkv serve $dev" grep -q "^/usr/sbin/xdpkv serve $dev " <<<"$(ct ps -o args= -p "$mainpid")"
check "systemd got READY=1 from the main PID" journal_has "xdpkv@$dev" "Got notification message from PID $mainpid (READY=1"
check "ExecStartPre started afresh" journal_has "*" "no snapshot at /var/lib/xdpkv/$dev.snap yet"
ct systemd-analyze log-level info

# 4. traffic from the client namespace
ask() { # WHAT
	tb_cli python3 - "$TB_SRV_IP4" "$TB_PORT" "$@" <<'PY'
import socket, struct, sys
ip, port, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(2)
def udp(i, req):
    u.sendto(struct.pack("!HHHH", i, 0, 1, 0) + req, (ip, port))
    return u.recv(65536)[8:]
def tcp(req):
    t = socket.create_connection((ip, port), timeout=2); t.sendall(req)
    out = b""
    while not out.endswith((b"END\r\n", b"STORED\r\n")):
        b = t.recv(65536)
        if not b: break
        out += b
    t.close(); return out
if what == "fill":
    for i in range(5):
        assert udp(i, b"set k%d 0 0 2\r\nv%d\r\n" % (i, i)) == b"STORED\r\n", i
    assert tcp(b"set t 0 0 3\r\ntcp\r\n") == b"STORED\r\n"
    assert b"STAT pid" in udp(9, b"stats\r\n")  # the slow path over UDP
    assert tcp(b"get k3\r\n") == b"VALUE k3 0 2\r\nv3\r\nEND\r\n"
else:  # XDP alone (no serve needed): every item is there
    for i in range(5):
        assert udp(20 + i, b"get k%d\r\n" % i) == b"VALUE k%d 0 2\r\nv%d\r\nEND\r\n" % (i, i), i
    assert udp(30, b"get t\r\n") == b"VALUE t 0 3\r\ntcp\r\nEND\r\n"
PY
}
check "UDP (XDP and slow path) and TCP answered" ask fill
items() { tb_xdpkv status "$dev" --prometheus 2>/dev/null | sed -n 's/^xdpkv_curr_items{.*} //p'; }
check "6 items" test "$(items)" = 6

# 5. the sandbox serve runs in
capmask() { # CAP_NAME... -> the hex CapBnd of /proc/PID/status
	python3 - "$@" <<'PY'
import sys
# linux/capability.h
n = {"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3,
     "CAP_FSETID": 4, "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8,
     "CAP_NET_BIND_SERVICE": 10, "CAP_NET_RAW": 13, "CAP_NET_ADMIN": 12, "CAP_IPC_LOCK": 14,
     "CAP_SYS_RESOURCE": 24, "CAP_SYS_ADMIN": 21, "CAP_PERFMON": 38, "CAP_BPF": 39}
m = 0
for c in sys.argv[1:]:
    m |= 1 << n[c]  # an unknown name fails the check
print("%016x" % m)
PY
}
want=$(capmask $(sed -n 's/^CapabilityBoundingSet=//p' "$unit"))
status() { ct sed -n "s/^$1:[[:space:]]*//p" "/proc/$mainpid/status"; }
check "serve's CapBnd is the unit's CapabilityBoundingSet ($want)" test "$(status CapBnd)" = "$want"
check "serve has no effective capabilities" test "$(status CapEff)" = 0000000000000000
check "serve runs as xdpkv" test "$(status Uid | cut -f2)" = "$(ct id -u xdpkv)"
check "NoNewPrivileges" test "$(status NoNewPrivs)" = 1
check "a seccomp filter (RestrictAddressFamilies)" test "$(status Seccomp)" = 2
mnt() { ct findmnt --task "$mainpid" -no OPTIONS --target "$1" | cut -d, -f1; }
check "ProtectSystem=strict: /etc read-only" test "$(mnt /etc)" = ro
check "ReadWritePaths: /var/lib/xdpkv writable" test "$(mnt /var/lib/xdpkv)" = rw
own_tmp() {
	local a b
	a=$(ct stat -c %d:%i "/proc/$mainpid/root/tmp") && b=$(ct stat -c %d:%i /tmp) && [[ $a != "$b" ]]
}
check "PrivateTmp: serve's /tmp is its own" own_tmp

# 6. stop with XDPKV_PURGE=no, start again
snap=/var/lib/xdpkv/$dev.snap
check "systemctl stop" ctl stop "xdpkv@$dev"
check "stopped cleanly: inactive, result success" test "$(show ActiveState)/$(show Result)" = inactive/success
check "the final snapshot, owned by xdpkv" test "$(ct stat -c %U "$snap" 2>/dev/null)" = xdpkv
check "still attached and pinned after stop (XDPKV_PURGE=no)" attached
check "XDP answers every item with the service stopped" ask check
check "start again" ctl start "xdpkv@$dev"
check "... kept the attached store" journal_has "xdpkv@$dev" "still attached to $dev"
check "6 items after the restart" test "$(items)" = 6

# Restart=on-failure: serve killed, systemd starts it again (the store kept)
oldpid=$(show MainPID)
ct kill -KILL "$oldpid"
restarted() {
	local pid
	for _ in $(seq 300); do
		pid=$(show MainPID)
		[[ $(show ActiveState) == active && $pid != 0 && $pid != "$oldpid" ]] && return 0
		sleep 0.1
	done
	return 1
}
check "Restart=on-failure: serve killed, running again" restarted
check "... once (NRestarts=1)" test "$(show NRestarts)" = 1
check "6 items after the restart by systemd" test "$(items)" = 6

# 7. XDPKV_PURGE=yes: stop detaches, start restores the snapshot
write_conf yes
check "stop with XDPKV_PURGE=yes" ctl stop "xdpkv@$dev"
check "... detached" not attached
check "start restores the snapshot" ctl start "xdpkv@$dev"
check "... says so" journal_has "xdpkv@$dev" "restoring $snap"
check "XDP answers every item after the restore" ask check
check "stop (XDPKV_PURGE=yes) at the end" ctl stop "xdpkv@$dev"

# 8. a damaged snapshot (4,096 items in two blocks, one byte of the second
# flipped) with the default XDPKV_PURGE=no: the start fails, and so does
# each restart by Restart=on-failure (restore again, never "still
# attached"); serve never runs, the file stays byte for byte, and a salvage
# still restores its intact block.  Then XDPKV_RESTORE_ARGS=--salvage starts.
tb_xdpkv attach "$dev" --entries 8192 --value-size 512 >/dev/null || tb_die "attach (host)"
tb_xdpkv load "$dev" --generate 4096 --value-size 300 >/dev/null || tb_die "load (host)"
tb_xdpkv snapshot "$dev" "$TB_TMP/good.snap" --threads 1 >/dev/null || tb_die "snapshot (host)"
tb_xdpkv detach "$dev" >/dev/null || tb_die "detach (host)"
read -r _ b0 b1 rest < <(python3 "$here/snapdamage.py" "$TB_TMP/good.snap" "$TB_TMP/bad.snap" 1)
check "a damaged snapshot of 4096 items in two blocks ($b0 + $b1)" test -z "$rest" -a "$((b0 + b1))" = 4096
ct sh -c "cat >$snap && chown xdpkv:xdpkv $snap && chmod 0600 $snap && rm -f $snap.prev" <"$TB_TMP/bad.snap"
big="--entries 8192 --value-size 512"
mark=$(ct journalctl --no-pager -u "xdpkv@$dev" | wc -l)
since_mark() { ct journalctl --no-pager -u "xdpkv@$dev" | tail -n +$((mark + 1)) | grep -- "$1" >/dev/null; }
write_conf no "$big"
ctl reset-failed
check "start with the damaged snapshot fails" not ctl start "xdpkv@$dev"
restore_failed() { [[ $(ct journalctl --no-pager -u "xdpkv@$dev" | grep -c "restoring $snap failed (exit 3): detached") -ge $1 ]]; }
tries() { for _ in $(seq 300); do restore_failed "$1" && return 0; sleep 0.1; done; return 1; }
check "... restore's exit 3: detached" tries 1
check "Restart=on-failure: the restart restores again and fails again" tries 2
check "... never 'still attached'" not since_mark "still attached to $dev: re-attaching"
ctl stop "xdpkv@$dev" || true
check "stopped: nothing attached" not attached
check "serve never ran: no final snapshot" not since_mark "final snapshot"
ct cat "$snap" >"$TB_TMP/after.snap"
check "the damaged file is there byte for byte" cmp -s "$TB_TMP/after.snap" "$TB_TMP/bad.snap"
tb_xdpkv attach "$dev" --entries 8192 --value-size 512 >/dev/null || tb_die "attach (host)"
rc=0; tb_xdpkv restore "$dev" "$TB_TMP/after.snap" --salvage --json >"$TB_TMP/salvage.json" 2>/dev/null || rc=$?
salvaged=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stored"])' "$TB_TMP/salvage.json")
check "restore --salvage of it: its intact block's $b0 items (exit $rc, $salvaged stored)" test "$rc/$salvaged" = "1/$b0"
tb_xdpkv detach "$dev" >/dev/null || tb_die "detach (host)"
write_conf yes "$big" --salvage
ctl reset-failed
check "start with XDPKV_RESTORE_ARGS=--salvage" ctl start "xdpkv@$dev"
check "... $b0 items" test "$(items)" = "$b0"
check "... the damaged file kept as $snap.partial" bash -c 'cmp -s <("$@") "$0"' "$TB_TMP/bad.snap" \
	nsenter --target="$leader" --all -- cat "$snap.partial"
check "stop: the final snapshot of the $b0 items" ctl stop "xdpkv@$dev"
ct cat "$snap" >"$TB_TMP/final.snap"
check "... in $snap" test "$(python3 -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(), 48)[0])' "$TB_TMP/final.snap")" = "$b0"
((fail)) && journal_tail
exit $fail
