# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The xdpkv testbed: two network namespaces joined by a veth pair.
#
#   PREFIX-srv  [PREFIX-s] 10.77.X.1/24 fd77::1/64   xdpkv, its slow path, napi on CPU 1
#        |  veth
#   PREFIX-cli  [PREFIX-c] 10.77.X.2/24 fd77::2/64   XDP_PASS (to receive XDP_TX), clients on CPU 0
#
# Source this file, then:
#   tb_up PREFIX             create it (PREFIX: at most 13 characters) and arm a
#                            trap so tb_down runs on EXIT, INT and TERM
#   tb_xdpkv ARGS...         run the CLI in the server namespace (foreground)
#   tb_xdpkv_allcpus ARGS... the same, on every CPU (snapshot, restore: threads)
#   tb_srv CMD...            run CMD in the server namespace on the server CPU
#   tb_cli CMD...            run CMD in the client namespace on the client CPU
#   tb_srv_bg CMD...         same as tb_srv, in the background; PID in TB_LAST_PID,
#                            killed by tb_down
#   tb_ns_bg NS CPU CMD...   CMD in namespace NS on CPU, in the background
#                            (PID in TB_LAST_PID, killed by tb_down)
#   tb_wait_listen NS PORT TRIES [PID]
#                            wait (TRIES x 50 ms) for a TCP listener on PORT in
#                            NS; fails at once if process PID is gone
#   tb_counter PATH NAME     counter NAME of `xdpkv status --json` (PATH: fast
#                            or slow), after the slow path's next push (0.3 s)
#   tb_busy CPU...           busy jiffies of these CPUs so far (/proc/stat: all
#                            but idle and iowait, whoever spent them)
#   tb_tcp_segs NS NAME      TCP counter NAME (InSegs, OutSegs) of namespace NS
#                            (/proc/net/snmp)
#   tb_serve_start [ARGS]    start `xdpkv serve DEV` in the background and wait
#                            until its port answers; tb_serve_stop stops it
#   tb_pin_napi              make the server veth's NAPI threaded and pin its
#                            kthread(s) to the server CPU (call after attach:
#                            a veth has NAPI only while XDP is attached)
#   tb_pin_napi_spread NS DEV CPUS
#                            the same for DEV in NS, one kthread per CPU of the
#                            list CPUS (0,1,2): queue i's on the i-th CPU
#   tb_down                  remove everything (idempotent)
#
# More hosts on the client's segment (after tb_up; tests/e2e/abuse.sh): each
# is a namespace whose interface is a macvlan on the client veth end, so its
# frames reach the server's veth from a MAC of its own, like a third machine
# on the same switch.  tb_down removes them, their processes and pins too.
#   tb_evil_up               PREFIX-evl [PREFIX-e] 10.78.X.66/24 fd78::66/64, and
#                            10.78.X.99/32 (a victim's address): outside the
#                            server's subnets; the server routes 10.78.X.0/24
#                            and fd78::/64 back over its veth
#   tb_peer_up               PREFIX-two [PREFIX-b] 10.77.X.3/24 fd77::3/64: a
#                            second host inside the server's subnet
#   tb_evl / tb_peer CMD...  run CMD there on the client CPU (foreground);
#   tb_evl_bg / tb_peer_bg   in the background (PID in TB_LAST_PID)
#   tb_mac NS DEV            print DEV's MAC address in NS
#
# More servers, each behind its own veth to the client namespace (after tb_up;
# tests/e2e/proxy.sh: a proxy in the client namespace in front of several
# servers).  Their interfaces carry their own `xdpkv attach`; tb_down removes
# them, their processes and pins too.  PREFIX: at most 12 characters here.
#   tb_xsrv_up SLOT          SLOT 1..9: PREFIX-sSLOT [PREFIX-sSLOT] 10.(80+SLOT).X.1/24,
#                            veth to [PREFIX-cSLOT] 10.(80+SLOT).X.2/24 in the
#                            client namespace (XDP_PASS there); names and
#                            addresses in TB_XSRV_NS/_DEV/_IP4/_CIP4[SLOT]
#   tb_xsrv SLOT CMD...      run CMD there on the server CPU (foreground);
#   tb_xsrv_bg SLOT CMD...   in the background (PID in TB_LAST_PID)
#   tb_xsrv_serve_start SLOT [ARGS]
#                            `xdpkv serve` there with 2 TCP threads, waiting
#                            for its TCP listener; log in $TB_TMP/serve-SLOT.log
#
# Processes that pin (the CLI) enter with `nsenter --net`: `ip netns exec`
# remounts /sys and hides bpffs.  `ip netns exec` is used for sysfs only.
#
# Environment: XDPKV (path of the CLI, default <repo>/build/cli/xdpkv),
# TB_XDP_PASS_OBJ (a compiled xdp_pass.bpf.o; compiled on the fly if unset),
# TB_QUEUES=N (default 1): both veth ends get N receive and N transmit
# queues, each with its own NAPI instance (bench/README.md, "Many server
# cores"), TB_CTL_ANYCPU=1 to run tb_xdpkv on any CPU (the test suite sets
# it: see tb_xdpkv), TB_VERBOSE=1 to trace the commands.

TB_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TB_REPO=$(cd "$TB_LIB_DIR/../.." && pwd)
: "${XDPKV:=$TB_REPO/build/cli/xdpkv}"
TB_SERVER_CPU=1
TB_CLIENT_CPU=0
TB_PORT=11211
TB_PIN_ROOT=/sys/fs/bpf/xdpkv
TB_PIDS=()
TB_ACTIVE=0
TB_SERVE_PID=
TB_XNS=()   # extra namespaces (tb_evil_up, tb_peer_up)
TB_XDEVS=() # their interfaces, "NS DEV IFINDEX": may carry an xdpkv attach

tb_log() { echo "[testbed] $*" >&2; }
tb_die() { echo "[testbed] FAIL: $*" >&2; exit 1; }
# tb_layout_ok LAYOUT: can this kernel hold the layout's store?  If not, a
# SKIP line with the reason ('xdpkv layouts --json': arena where BPF arenas
# are missing or not permitted) and status 1: a test over several layouts
# goes on with the next.
tb_layout_ok() {
	local why
	why=$("$XDPKV" layouts --json | /usr/bin/python3 -c 'import json, sys
l = {x["name"]: x for x in json.load(sys.stdin)}.get(sys.argv[1])
print(l.get("unavailable_reason", "") if l and l.get("available") is False else "")' "$1") || return 0
	[[ -z $why ]] && return 0
	echo "SKIP: layout $1 is not available on this kernel ($(uname -r)): $why"
	return 1
}
# tb_need_layout LAYOUT: the test is skipped (exit 77, which ctest counts as
# skipped: SKIP_RETURN_CODE, tests/CMakeLists.txt; tests/run.sh lists the
# reasons) unless this kernel can hold the layout's store.
tb_need_layout() { tb_layout_ok "$1" || exit 77; }

tb_run() {
	[[ ${TB_VERBOSE:-0} == 1 ]] && echo "+ $*" >&2
	"$@"
}

# 10.77.X.0/24 and ifindexes derived from the prefix, so parallel testbeds
# differ even in what namespaces would hide (libxdp keys its pins by ifindex).
tb_hash() { printf '%s' "$1" | cksum | cut -d' ' -f1; }

tb_check_env() {
	[[ $(id -u) == 0 ]] || tb_die "must run as root"
	local t
	local tools=(ip nsenter taskset)
	# clang only compiles xdp_pass.bpf.c when no built object is given
	[[ -n ${TB_XDP_PASS_OBJ:-} && -f $TB_XDP_PASS_OBJ ]] || tools+=(clang)
	for t in "${tools[@]}"; do
		command -v "$t" >/dev/null || tb_die "missing tool: $t"
	done
	if ! mountpoint -q /sys/fs/bpf; then
		mount -t bpf bpf /sys/fs/bpf || tb_die "cannot mount bpffs on /sys/fs/bpf"
	fi
}

tb_xdp_pass_obj() {
	if [[ -n ${TB_XDP_PASS_OBJ:-} && -f $TB_XDP_PASS_OBJ ]]; then
		echo "$TB_XDP_PASS_OBJ"
		return
	fi
	local obj=$TB_TMP/xdp_pass.bpf.o
	clang -O2 -g -target bpf -I"/usr/include/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)" \
		-c "$TB_LIB_DIR/xdp_pass.bpf.c" -o "$obj" || tb_die "cannot compile xdp_pass.bpf.c"
	echo "$obj"
}

# tb_veth_up SRV_NS SRV_DEV CLI_DEV OBJ: XDP_PASS (OBJ) on the client end (it
# must run XDP to receive what the server XDP_TXes), both ends up, wait for
# the carrier.
tb_veth_up() {
	local ns=$1 dev=$2 cdev=$3 obj=$4 i
	tb_run ip -n "$TB_CLI_NS" link set dev "$cdev" xdpdrv obj "$obj" sec xdp ||
		tb_die "cannot attach XDP_PASS to $cdev"
	tb_run ip -n "$ns" link set "$dev" up || tb_die "link up $dev"
	tb_run ip -n "$TB_CLI_NS" link set "$cdev" up || tb_die "link up $cdev"
	for i in $(seq 200); do
		ip -n "$TB_CLI_NS" link show "$cdev" | grep -q LOWER_UP && break
		sleep 0.1
	done
}

tb_up() {
	local prefix=${1:?tb_up PREFIX}
	((${#prefix} <= 13)) || tb_die "prefix '$prefix' longer than 13 characters (IFNAMSIZ)"
	[[ $prefix =~ ^[A-Za-z0-9_-]+$ ]] || tb_die "prefix '$prefix': letters, digits, _ and - only"
	tb_check_env

	TB_PREFIX=$prefix
	TB_SRV_NS=$prefix-srv
	TB_CLI_NS=$prefix-cli
	TB_SRV_DEV=$prefix-s
	TB_CLI_DEV=$prefix-c
	local h; h=$(tb_hash "$prefix")
	local x=$((h % 200 + 20))
	TB_SRV_IP4=10.77.$x.1
	TB_CLI_IP4=10.77.$x.2
	TB_SRV_IP6=fd77::1
	TB_CLI_IP6=fd77::2
	TB_PIN_DIR=$TB_PIN_ROOT/$TB_SRV_DEV
	local idx=$((1000 + (h / 200) % 60000 * 2))
	TB_SRV_IFINDEX=$idx
	TB_QUEUES=${TB_QUEUES:-1}
	[[ $TB_QUEUES =~ ^[1-9][0-9]{0,2}$ ]] || tb_die "TB_QUEUES='$TB_QUEUES': a number of queues, 1..999"
	local queues=()
	((TB_QUEUES > 1)) && queues=(numrxqueues "$TB_QUEUES" numtxqueues "$TB_QUEUES")

	# Leftovers of an earlier run with the same prefix would make the
	# result meaningless: remove them first.
	if ip netns list | grep -qE "^($TB_SRV_NS|$TB_CLI_NS)( |$)" || [[ -e $TB_PIN_DIR ]]; then
		tb_log "removing leftovers of an earlier run with prefix $prefix"
		TB_ACTIVE=1
		tb_down
	fi

	TB_ACTIVE=1
	TB_TMP=$(mktemp -d "/tmp/xdpkv-tb-$prefix.XXXXXX")
	trap 'tb_down' EXIT
	trap 'tb_down; trap - INT; kill -INT $$' INT
	trap 'tb_down; trap - TERM; kill -TERM $$' TERM

	local obj; obj=$(tb_xdp_pass_obj) || exit 1

	tb_run ip netns add "$TB_SRV_NS" || tb_die "ip netns add $TB_SRV_NS"
	tb_run ip netns add "$TB_CLI_NS" || tb_die "ip netns add $TB_CLI_NS"
	tb_run ip link add "$TB_SRV_DEV" index "$idx" netns "$TB_SRV_NS" "${queues[@]}" type veth \
		peer name "$TB_CLI_DEV" index $((idx + 1)) netns "$TB_CLI_NS" "${queues[@]}" ||
		tb_die "cannot create veth pair $TB_SRV_DEV/$TB_CLI_DEV"
	tb_run ip -n "$TB_SRV_NS" link set lo up
	tb_run ip -n "$TB_CLI_NS" link set lo up
	tb_run ip -n "$TB_SRV_NS" addr add "$TB_SRV_IP4/24" dev "$TB_SRV_DEV"
	tb_run ip -n "$TB_CLI_NS" addr add "$TB_CLI_IP4/24" dev "$TB_CLI_DEV"
	tb_run ip -n "$TB_SRV_NS" addr add "$TB_SRV_IP6/64" dev "$TB_SRV_DEV" nodad
	tb_run ip -n "$TB_CLI_NS" addr add "$TB_CLI_IP6/64" dev "$TB_CLI_DEV" nodad
	tb_veth_up "$TB_SRV_NS" "$TB_SRV_DEV" "$TB_CLI_DEV" "$obj"
	if command -v ping >/dev/null; then
		tb_cli ping -c1 -W2 "$TB_SRV_IP4" >/dev/null || tb_die "no IPv4 connectivity over $TB_SRV_DEV"
		tb_cli ping -6 -c1 -W2 "$TB_SRV_IP6" >/dev/null || tb_die "no IPv6 connectivity over $TB_SRV_DEV"
	fi
	tb_log "up: $TB_SRV_NS/$TB_SRV_DEV $TB_SRV_IP4 $TB_SRV_IP6 <-> $TB_CLI_NS/$TB_CLI_DEV $TB_CLI_IP4 $TB_CLI_IP6"
}

tb_srv() { tb_run nsenter --net="/run/netns/$TB_SRV_NS" -- taskset -c "$TB_SERVER_CPU" "$@"; }
tb_cli() { tb_run nsenter --net="/run/netns/$TB_CLI_NS" -- taskset -c "$TB_CLIENT_CPU" "$@"; }
# TB_CTL_ANYCPU=1 (the test suite): tb_xdpkv runs on any CPU instead, so that
# the one-shot commands of tests side by side (attach: the verifier, seconds
# of CPU) do not all queue on the server CPU; serve, the NAPI thread and the
# clients keep their CPUs.
tb_xdpkv() {
	# an attach of a layout this kernel lacks: the test is skipped
	if [[ " $* " == *" attach "* && ( $1 == --variant || $1 == --layout ) ]]; then
		tb_need_layout "$2"
	fi
	if [[ ${TB_CTL_ANYCPU:-0} == 1 ]]; then
		tb_xdpkv_allcpus "$@"
	else
		tb_srv "$XDPKV" "$@"
	fi
}
# The CLI in the server's namespace on every CPU, for the commands that split
# their work over threads (snapshot, restore): tb_xdpkv pins to one CPU.
tb_xdpkv_allcpus() { tb_run nsenter --net="/run/netns/$TB_SRV_NS" -- "$XDPKV" "$@"; }

# nsenter and taskset exec, so $! is the process itself (a function run
# with & would put a subshell in between).
# tb_ns_bg NS CPU CMD...: CMD in NS on CPU in the background (PID in
# TB_LAST_PID, killed by tb_down)
tb_ns_bg() {
	local ns=$1 cpu=$2
	shift 2
	[[ ${TB_VERBOSE:-0} == 1 ]] && echo "+ (bg) $*" >&2
	nsenter --net="/run/netns/$ns" -- taskset -c "$cpu" "$@" &
	TB_LAST_PID=$!
	TB_PIDS+=("$TB_LAST_PID")
}

tb_srv_bg() { tb_ns_bg "$TB_SRV_NS" "$TB_SERVER_CPU" "$@"; }

tb_cli_bg() { tb_ns_bg "$TB_CLI_NS" "$TB_CLIENT_CPU" "$@"; }

# Start the slow path; wait until it has bound its port (it answers
# "version"), or fail.  Output goes to $TB_TMP/serve.log.
tb_serve_start() {
	tb_srv_bg "$XDPKV" serve "$TB_SRV_DEV" "$@" >"$TB_TMP/serve.log" 2>&1
	TB_SERVE_PID=$TB_LAST_PID
	local i
	for i in $(seq 600); do
		kill -0 "$TB_SERVE_PID" 2>/dev/null ||
			{ cat "$TB_TMP/serve.log" >&2; tb_die "xdpkv serve exited"; }
		if nsenter --net="/run/netns/$TB_SRV_NS" -- ss -Hlun "sport = :$TB_PORT" 2>/dev/null | grep -q .; then
			return 0
		fi
		sleep 0.05
	done
	cat "$TB_TMP/serve.log" >&2
	tb_die "xdpkv serve did not bind UDP port $TB_PORT within 5 s"
}

# tb_wait_listen NS PORT TRIES [PID]: poll every 50 ms until a TCP socket
# listens on PORT in NS; 1 after TRIES polls, 2 as soon as PID (if given) is gone.
tb_wait_listen() {
	local i
	for ((i = 0; i < $3; i++)); do
		[[ -z ${4:-} ]] || kill -0 "$4" 2>/dev/null || return 2
		nsenter --net="/run/netns/$1" -- ss -Hltn "sport = :$2" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

# tb_serve_start with 2 TCP worker threads, then wait for its TCP listener too.
tb_tcp_segs() {
	ip netns exec "$1" awk -v f="$2" '$1 == "Tcp:" && !h { for (i = 2; i <= NF; i++) c[$i] = i; h = 1; next }
		$1 == "Tcp:" { print $c[f]; exit }' /proc/net/snmp
}

tb_busy() {
	awk -v l=" $* " '$1 ~ /^cpu[0-9]+$/ && index(l, " " substr($1, 4) " ") {
		s += $2 + $3 + $4 + $7 + $8 + $9 } END { print s + 0 }' /proc/stat
}

tb_counter() {
	sleep 0.3 # the slow path pushes its counters every 100 ms
	tb_xdpkv status "$TB_SRV_DEV" --json | /usr/bin/python3 -c \
		'import json,sys; print(json.load(sys.stdin)["counters"][sys.argv[1]][sys.argv[2]])' "$1" "$2"
}

tb_serve_tcp_start() {
	tb_serve_start --threads 2 "$@"
	tb_wait_listen "$TB_SRV_NS" "$TB_PORT" 600 && return 0
	cat "$TB_TMP/serve.log" >&2
	tb_die "xdpkv serve did not listen on TCP port $TB_PORT"
}

tb_serve_stop() {
	[[ -n $TB_SERVE_PID ]] || return 0
	kill -TERM "$TB_SERVE_PID" 2>/dev/null
	local i rc=0
	for i in $(seq 400); do
		kill -0 "$TB_SERVE_PID" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$TB_SERVE_PID" 2>/dev/null; then
		kill -KILL "$TB_SERVE_PID" 2>/dev/null
		tb_log "xdpkv serve ignored SIGTERM for 2.5 s"
		rc=1
	fi
	wait "$TB_SERVE_PID" 2>/dev/null
	TB_SERVE_PID=
	return $rc
}

# napi/<dev>-<id> kthreads of a veth (default: the server's), in the order
# of their NAPI ids (kthreads show their full name in /proc/PID/comm).
# veth adds one NAPI instance per receive queue, queue 0 first, and NAPI
# ids grow as instances are added, so this is queue order.
tb_napi_pids() {
	local dev=${1:-$TB_SRV_DEV} f comm
	for f in /proc/[0-9]*/comm; do
		read -r comm <"$f" 2>/dev/null || continue
		[[ $comm =~ ^napi/$dev-([0-9]+)$ ]] || continue
		f=${f#/proc/}
		echo "${BASH_REMATCH[1]} ${f%/comm}"
	done | sort -n | cut -d' ' -f2
}

# Native XDP on a veth runs in the veth's NAPI: make it a thread and pin it.
# Generic (skb) XDP has no veth NAPI; it runs where the backlog is processed,
# so steer that to the server CPU with RPS instead.
tb_pin_napi() {
	local pids
	pids=$(tb_napi_pids)
	if [[ -z $pids ]] && ip -n "$TB_SRV_NS" link show "$TB_SRV_DEV" | grep -q ' xdpgeneric '; then
		local mask
		mask=$(printf '%x' $((1 << TB_SERVER_CPU)))
		ip netns exec "$TB_SRV_NS" sh -c "echo $mask > /sys/class/net/$TB_SRV_DEV/queues/rx-0/rps_cpus" ||
			tb_die "cannot set RPS on $TB_SRV_DEV"
		tb_log "no native XDP on $TB_SRV_DEV (no NAPI): receive steered to CPU $TB_SERVER_CPU by RPS"
		return 0
	fi
	tb_pin_napi_spread "$TB_SRV_NS" "$TB_SRV_DEV" "$TB_SERVER_CPU"
}

# tb_pin_napi_spread NS DEV CPUS: DEV's NAPI threaded, its i-th kthread (in
# queue order) pinned to the i-th CPU of CPUS (comma-separated), cycling
# through the list when DEV has more queues than CPUS names.
tb_pin_napi_spread() {
	local ns=$1 dev=$2 cpus p i=0
	IFS=, read -ra cpus <<<"$3"
	((${#cpus[@]})) || tb_die "tb_pin_napi_spread: no CPUs given"
	ip netns exec "$ns" sh -c "echo 1 > /sys/class/net/$dev/threaded" ||
		tb_die "cannot make $dev NAPI threaded"
	local pids; pids=$(tb_napi_pids "$dev")
	[[ -n $pids ]] || tb_die "no napi/$dev-* kthread found"
	local placed=()
	for p in $pids; do
		local c=${cpus[i % ${#cpus[@]}]}
		taskset -pc "$c" "$p" >/dev/null || tb_die "cannot pin napi kthread $p to CPU $c"
		placed+=("$p:$c")
		i=$((i + 1))
	done
	tb_log "$dev napi kthread:CPU ${placed[*]}"
}

tb_kill_pids() {
	local p
	for p in "${TB_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${TB_PIDS[@]}"; do
		local i
		for i in $(seq 40); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	TB_PIDS=()
	TB_SERVE_PID=
}

# Any process still inside one of our namespaces (e.g. started by a child).
tb_kill_ns_pids() {
	local ns pids
	for ns in "$TB_SRV_NS" "$TB_CLI_NS" "${TB_XNS[@]}"; do
		[[ -e /run/netns/$ns ]] || continue
		pids=$(ip netns pids "$ns" 2>/dev/null)
		[[ -n $pids ]] || continue
		tb_log "killing leftover processes in $ns: $(echo $pids)"
		kill -TERM $pids 2>/dev/null
		local i
		for i in $(seq 20); do
			sleep 0.1
			pids=$(ip netns pids "$ns" 2>/dev/null)
			[[ -n $pids ]] || break
		done
		[[ -n $pids ]] && kill -KILL $pids 2>/dev/null
	done
}

tb_down() {
	((TB_ACTIVE)) || return 0
	TB_ACTIVE=0
	local -
	set +e
	trap - EXIT INT TERM
	tb_kill_pids
	tb_kill_ns_pids
	tb_extra_down
	if [[ -e /run/netns/$TB_SRV_NS ]]; then
		if [[ -x $XDPKV && -e $TB_PIN_DIR ]]; then
			nsenter --net="/run/netns/$TB_SRV_NS" -- "$XDPKV" detach "$TB_SRV_DEV" >/dev/null 2>&1 ||
				tb_log "xdpkv detach $TB_SRV_DEV failed (removing the pins by hand)"
		fi
		ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdp off 2>/dev/null
	fi
	[[ -e $TB_PIN_DIR ]] && rm -rf "$TB_PIN_DIR"
	# libxdp's dispatcher pins are named by ifindex (ours is unique)
	rm -rf /sys/fs/bpf/xdp/dispatch-"$TB_SRV_IFINDEX"-* 2>/dev/null
	ip netns del "$TB_SRV_NS" 2>/dev/null
	ip netns del "$TB_CLI_NS" 2>/dev/null
	# a veth whose namespace is gone is gone too; be sure
	ip link del "$TB_SRV_DEV" 2>/dev/null
	ip link del "$TB_CLI_DEV" 2>/dev/null
	[[ -n ${TB_TMP:-} && -d $TB_TMP ]] && rm -rf "$TB_TMP"
	tb_log "down: $TB_PREFIX"
	return 0
}

# ---- more hosts on the client's segment ------------------------------------

tb_mac() { ip -n "$1" -br link show dev "$2" | awk '{print $3}'; }

# Ifindexes of the extra interfaces: a range apart from tb_up's (libxdp's
# dispatcher pins are named by ifindex, across namespaces).
tb_xindex() { echo $((200000 + ($(tb_hash "$TB_PREFIX") / 200) % 60000 * 4 + $1)); }

# Remove what an extra host of this prefix left, or what tb_down must take
# down: its processes are gone already (tb_kill_ns_pids).
tb_extra_remove() { # NS DEV IFINDEX
	local ns=$1 dev=$2 idx=$3
	if [[ -e /run/netns/$ns && -x $XDPKV && -e $TB_PIN_ROOT/$dev ]]; then
		nsenter --net="/run/netns/$ns" -- "$XDPKV" detach "$dev" >/dev/null 2>&1 ||
			tb_log "xdpkv detach $dev failed (removing the pins by hand)"
	fi
	if [[ -e /run/netns/$ns ]]; then
		ip -n "$ns" link set dev "$dev" xdp off 2>/dev/null || true
	fi
	rm -rf "${TB_PIN_ROOT:?}/$dev" /sys/fs/bpf/xdp/dispatch-"$idx"-* 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
	return 0
}

tb_extra_down() {
	local x
	for x in "${TB_XDEVS[@]}"; do
		# shellcheck disable=SC2086
		tb_extra_remove $x
	done
	for x in "${TB_XNS[@]}"; do
		ip netns del "$x" 2>/dev/null || true
	done
	TB_XDEVS=()
	TB_XNS=()
	return 0
}

# tb_macvlan_host NS DEV SLOT ADDR...: namespace NS with a macvlan DEV on the
# client veth end (private mode: it talks to the server only, over the veth),
# addresses ADDR (CIDR; IPv6 ones without DAD), up.
tb_macvlan_host() {
	local ns=$1 dev=$2 slot=$3
	shift 3
	((TB_ACTIVE)) || tb_die "tb_up first"
	local idx; idx=$(tb_xindex "$slot")
	if [[ -e /run/netns/$ns || -e $TB_PIN_ROOT/$dev ]]; then
		tb_log "removing leftovers of an earlier run: $ns"
		tb_extra_remove "$ns" "$dev" "$idx"
	fi
	TB_XNS+=("$ns")
	TB_XDEVS+=("$ns $dev $idx")
	tb_run ip netns add "$ns" || tb_die "ip netns add $ns"
	tb_run ip -n "$TB_CLI_NS" link add "$dev" index "$idx" link "$TB_CLI_DEV" type macvlan mode private ||
		tb_die "cannot create macvlan $dev on $TB_CLI_DEV"
	tb_run ip -n "$TB_CLI_NS" link set "$dev" netns "$ns" || tb_die "cannot move $dev to $ns"
	tb_run ip -n "$ns" link set lo up
	local a
	for a in "$@"; do
		if [[ $a == *:* ]]; then
			tb_run ip -n "$ns" addr add "$a" dev "$dev" nodad || tb_die "addr $a on $dev"
		else
			tb_run ip -n "$ns" addr add "$a" dev "$dev" || tb_die "addr $a on $dev"
		fi
	done
	tb_run ip -n "$ns" link set "$dev" up || tb_die "link up $dev"
}

# The server's subnet number X (10.77.X.0/24).
tb_subnet() { local x=${TB_SRV_IP4#10.77.}; echo "${x%.1}"; }

tb_evil_up() {
	local x; x=$(tb_subnet)
	TB_EVL_NS=$TB_PREFIX-evl
	TB_EVL_DEV=$TB_PREFIX-e
	TB_EVL_NET4=10.78.$x.0/24
	TB_EVL_IP4=10.78.$x.66
	TB_VIC_IP4=10.78.$x.99
	TB_EVL_NET6=fd78::/64
	TB_EVL_IP6=fd78::66
	tb_macvlan_host "$TB_EVL_NS" "$TB_EVL_DEV" 0 "$TB_EVL_IP4/24" "$TB_VIC_IP4/32" "$TB_EVL_IP6/64"
	tb_run ip -n "$TB_EVL_NS" route add "${TB_SRV_IP4%.1}.0/24" dev "$TB_EVL_DEV" ||
		tb_die "evil route to the server's subnet"
	tb_run ip -n "$TB_EVL_NS" route add fd77::/64 dev "$TB_EVL_DEV" ||
		tb_die "evil route to the server's IPv6 subnet"
	tb_run ip -n "$TB_SRV_NS" route add "$TB_EVL_NET4" dev "$TB_SRV_DEV" ||
		tb_die "server route to $TB_EVL_NET4"
	tb_run ip -n "$TB_SRV_NS" route add "$TB_EVL_NET6" dev "$TB_SRV_DEV" ||
		tb_die "server route to $TB_EVL_NET6"
	TB_EVL_MAC=$(tb_mac "$TB_EVL_NS" "$TB_EVL_DEV")
	tb_log "evil: $TB_EVL_NS/$TB_EVL_DEV $TB_EVL_MAC $TB_EVL_IP4 (victim $TB_VIC_IP4) $TB_EVL_IP6"
}

tb_peer_up() {
	local x; x=$(tb_subnet)
	TB_PEER_NS=$TB_PREFIX-two
	TB_PEER_DEV=$TB_PREFIX-b
	TB_PEER_IP4=10.77.$x.3
	TB_PEER_IP6=fd77::3
	tb_macvlan_host "$TB_PEER_NS" "$TB_PEER_DEV" 1 "$TB_PEER_IP4/24" "$TB_PEER_IP6/64"
	TB_PEER_MAC=$(tb_mac "$TB_PEER_NS" "$TB_PEER_DEV")
	tb_log "peer: $TB_PEER_NS/$TB_PEER_DEV $TB_PEER_MAC $TB_PEER_IP4 $TB_PEER_IP6"
}

tb_evl() { tb_run nsenter --net="/run/netns/$TB_EVL_NS" -- taskset -c "$TB_CLIENT_CPU" "$@"; }
tb_peer() { tb_run nsenter --net="/run/netns/$TB_PEER_NS" -- taskset -c "$TB_CLIENT_CPU" "$@"; }

tb_evl_bg() { tb_ns_bg "$TB_EVL_NS" "$TB_CLIENT_CPU" "$@"; }

tb_peer_bg() { tb_ns_bg "$TB_PEER_NS" "$TB_CLIENT_CPU" "$@"; }

# ---- more servers, each on its own veth ------------------------------------

TB_XSRV_NS=() TB_XSRV_DEV=() TB_XSRV_IP4=() TB_XSRV_CIP4=()

tb_xsrv_up() {
	local slot=${1:?tb_xsrv_up SLOT}
	((TB_ACTIVE)) || tb_die "tb_up first"
	[[ $slot =~ ^[1-9]$ ]] || tb_die "tb_xsrv_up: SLOT is 1..9, not '$slot'"
	((${#TB_PREFIX} <= 12)) || tb_die "tb_xsrv_up: prefix '$TB_PREFIX' longer than 12 characters (IFNAMSIZ)"
	local ns=$TB_PREFIX-s$slot dev=$TB_PREFIX-s$slot cdev=$TB_PREFIX-c$slot
	local x; x=$(tb_subnet)
	# a range apart from tb_up's and tb_xindex's (libxdp names its pins by ifindex)
	local idx=$((400000 + ($(tb_hash "$TB_PREFIX") / 200) % 60000 * 20 + 2 * slot))
	if [[ -e /run/netns/$ns || -e $TB_PIN_ROOT/$dev ]]; then
		tb_log "removing leftovers of an earlier run: $ns"
		tb_extra_remove "$ns" "$dev" "$idx"
	fi
	TB_XNS+=("$ns")
	TB_XDEVS+=("$ns $dev $idx")
	TB_XSRV_NS[slot]=$ns
	TB_XSRV_DEV[slot]=$dev
	TB_XSRV_IP4[slot]=10.$((80 + slot)).$x.1
	TB_XSRV_CIP4[slot]=10.$((80 + slot)).$x.2
	local obj; obj=$(tb_xdp_pass_obj) || exit 1
	TB_XDP_PASS_OBJ=$obj # compiled once
	tb_run ip netns add "$ns" || tb_die "ip netns add $ns"
	tb_run ip link add "$dev" index "$idx" netns "$ns" type veth \
		peer name "$cdev" index $((idx + 1)) netns "$TB_CLI_NS" ||
		tb_die "cannot create veth pair $dev/$cdev"
	tb_run ip -n "$ns" link set lo up
	tb_run ip -n "$ns" addr add "${TB_XSRV_IP4[slot]}/24" dev "$dev"
	tb_run ip -n "$TB_CLI_NS" addr add "${TB_XSRV_CIP4[slot]}/24" dev "$cdev"
	tb_veth_up "$ns" "$dev" "$cdev" "$obj"
	if command -v ping >/dev/null; then
		tb_cli ping -c1 -W2 "${TB_XSRV_IP4[slot]}" >/dev/null || tb_die "no IPv4 connectivity over $dev"
	fi
	tb_log "server $slot: $ns/$dev ${TB_XSRV_IP4[slot]} <-> $TB_CLI_NS/$cdev ${TB_XSRV_CIP4[slot]}"
}

tb_xsrv() {
	local slot=$1
	shift
	tb_run nsenter --net="/run/netns/${TB_XSRV_NS[slot]}" -- taskset -c "$TB_SERVER_CPU" "$@"
}

tb_xsrv_bg() {
	local slot=$1
	shift
	tb_ns_bg "${TB_XSRV_NS[slot]}" "$TB_SERVER_CPU" "$@"
}

tb_xsrv_serve_start() {
	local slot=$1
	shift
	local log=$TB_TMP/serve-$slot.log
	tb_xsrv_bg "$slot" "$XDPKV" serve "${TB_XSRV_DEV[slot]}" --threads 2 "$@" >"$log" 2>&1
	tb_wait_listen "${TB_XSRV_NS[slot]}" "$TB_PORT" 600 "$TB_LAST_PID" && return 0
	cat "$log" >&2
	tb_die "xdpkv serve (server $slot) exited, or did not listen on TCP port $TB_PORT within 10 s"
}
