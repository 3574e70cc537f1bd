#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memaslap over TCP against memcached and `xdpkv serve`, and redis-benchmark
# against Redis, at 1..N server threads (issue 19's measurement): requests
# per second and server CPU per request; for xdpkv the share of requests
# answered in the driver hook (XDP), in the kernel (sk_skb verdict) and in
# userspace, and independently of xdpkv's counters the share of the client's
# TCP segments that never reached the server's TCP stack (1 - the server
# namespace's TcpInSegs / the client namespace's TcpOutSegs, over the run).
#
#   bench/tcpscale.sh [--threads 1,2,4,8] [--duration 10] [--servers LIST]
#                     [--server-cpus 8-15] [--client-cpus 0-7] [--conns 32]
#                     [--layout hash_map] [--redis-keys 100000] [--perf DIR]
#                     [--syscalls] [--json FILE] [--build-dir DIR]
#
# One veth test bed (tests/lib/testbed.sh) with as many queues as server
# CPUs; the server namespace's NAPI threads and the server on --server-cpus,
# the client on --client-cpus with min(N, client CPUs) threads and conns*N
# connections: 16-byte keys, 128-byte values, 90 % gets.  Servers (--servers,
# default all five): memcached (-t N), xdpkv (serve --threads N; TCP
# answered in XDP, the default), xdpkv-verdict (attach --no-xdp-tcp: the
# sk_skb verdict answers in the kernel), xdpkv-nofast (attach --no-xdp-tcp
# --no-tcp-fast-path: serve answers everything), all four
# driven by memaslap (Debian's memcaslap, -T threads; its keys carry bytes
# 0x10-0x1f, so xdpkv is attached with --binary-keys), and redis
# (redis-server --io-threads N --io-threads-do-reads yes, no persistence),
# driven by redis-benchmark.  Every server end gets an XDP program (xdpkv's,
# or XDP_PASS), so all take the same NAPI path.
# redis-benchmark runs one command per process and a request count, not a
# mix or a duration: --redis-keys keys key:000000000000.. (16 bytes) are
# preloaded with 128-byte values, a get-only run sizes the request count
# (the warm-up: until one run lasts >= 1 s), then two processes at once, GET
# on 9/10 of the connections and threads with 90 % of the requests, SET on
# the rest with 10 %, -r keys -d 128; requests/s = both counts over the wall
# time until both ended (elapsed_s).  Checked from the server's INFO over the
# run: every GET a hit, no error replies, the counts redis-benchmark sent.
# Server CPU per request = busy time of the server CPUs (/proc/stat: all but
# idle and iowait, whoever spent it) over the requests.  A run with an error
# reply, a failed verification or no gets (memaslap), or a failed check
# (Redis) is reported (ok false) and the script exits 1.  Each row names its
# client ("client"): memaslap and redis-benchmark rows do not share a client.
# Defaults fit this 2-CPU VM: server on CPU 1, client on CPU 0, threads 1.
# --perf DIR: `perf record -g` of the server CPUs for each run
# (DIR/<server>-<N>.data; `perf report -i` it).  --syscalls: `perf stat` of
# the system calls made on the server CPUs over the run, per request, by
# name (the row's "syscalls_per_req").
# One JSON line per run on stdout (and appended to --json FILE).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
threads=1 duration=10 servers=memcached,xdpkv,xdpkv-verdict,xdpkv-nofast,redis scpus=1 ccpus=0 conns=32
layout=hash_map rkeys=100000 perfdir='' sysc='' json='' build=$here/../build
usage() { awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; }
while (($#)); do
	case $1 in
	--threads) threads=$2; shift 2 ;;
	--duration) duration=$2; shift 2 ;;
	--servers) servers=$2; shift 2 ;;
	--server-cpus) scpus=$2; shift 2 ;;
	--client-cpus) ccpus=$2; shift 2 ;;
	--conns) conns=$2; shift 2 ;;
	--layout) layout=$2; shift 2 ;;
	--redis-keys) rkeys=$2; shift 2 ;;
	--perf) perfdir=$2; shift 2 ;;
	--syscalls) sysc=1; shift ;;
	--json) json=$2; shift 2 ;;
	--build-dir) build=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "bench/tcpscale.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
done
XDPKV=${XDPKV:-$build/cli/xdpkv}
PY=${PYTHON:-python3} # the kit's on a larger machine (bench/devkit.sh)
IFS=, read -ra NLIST <<<"$threads"
IFS=, read -ra SLIST <<<"$servers"
need() { # TOOL PACKAGE
	command -v "$1" >/dev/null || { echo "bench/tcpscale.sh: $1 missing (apt-get install $2)" >&2; exit 2; }
}
for s in "${SLIST[@]}"; do
	case $s in
	memcached) need memcached memcached; need memcaslap libmemcached-tools ;;
	xdpkv | xdpkv-verdict | xdpkv-nofast)
		[[ -x $XDPKV ]] || { echo "bench/tcpscale.sh: build first ($XDPKV)" >&2; exit 2; }
		need memcaslap libmemcached-tools ;;
	redis) need redis-server redis-server; need redis-benchmark redis-tools; need redis-cli redis-tools ;;
	*) echo "bench/tcpscale.sh: unknown server $s (memcached, xdpkv, xdpkv-verdict, xdpkv-nofast, redis)" >&2; exit 2 ;;
	esac
done
[[ -z $perfdir && -z $sysc ]] || need perf linux-perf
# the calls counted by --syscalls (all of them, and these by name)
SYSCALLS=recvfrom,sendto,read,write,sendmsg,recvmsg,epoll_wait,bpf,ioctl,getsockopt,futex

# "8-15" or "1,3" -> one CPU a line
cpu_list() { "$PY" -c 'import sys
out = []
for part in sys.argv[1].split(","):
    a, _, b = part.partition("-")
    out += range(int(a), int(b or a) + 1)
print(" ".join(map(str, out)))' "$1"; }
read -ra SCPU <<<"$(cpu_list "$scpus")"
read -ra CCPU <<<"$(cpu_list "$ccpus")"

# shellcheck source=../tests/lib/testbed.sh
. "$here/../tests/lib/testbed.sh"
# shellcheck disable=SC2034 # read by testbed.sh
TB_SERVER_CPU=$scpus TB_CLIENT_CPU=$ccpus TB_QUEUES=${#SCPU[@]}
# shellcheck disable=SC2034
[[ -f $build/tests/xdp_pass.bpf.o ]] && TB_XDP_PASS_OBJ=$build/tests/xdp_pass.bpf.o
tb_up "xts$$"
PASS_OBJ=$(tb_xdp_pass_obj)
# the client's NAPI threads (the replies' receive side) on the client CPUs
tb_pin_napi_spread "$TB_CLI_NS" "$TB_CLI_DEV" "$ccpus"

cfg=$here/memaslap.cfg # 16-byte keys, 128-byte values, 90 % gets

cli() { tb_run nsenter --net="/run/netns/$TB_CLI_NS" -- taskset -c "$ccpus" "$@"; }
memaslap() { # CONNS THREADS TIME [ARGS...]: memaslap in the client namespace
	cli memcaslap -s "$TB_SRV_IP4:$TB_PORT" -F "$cfg" -T "$2" -c "$1" -t "$3" "${@:4}"
}
rcli() { cli redis-cli -h "$TB_SRV_IP4" -p "$TB_PORT" "$@"; }
rbench() { # LOG CONNS THREADS REQUESTS TEST: redis-benchmark in the client namespace
	cli redis-benchmark -h "$TB_SRV_IP4" -p "$TB_PORT" -c "$2" --threads "$3" -n "$4" -t "$5" \
		-r "$rkeys" -d 128 >"$1" 2>&1
}
rb_secs() { awk '/requests completed in/ { s = $(NF - 1) } END { print s + 0 }' "$1"; }
xdp_pass() { # on|off: XDP_PASS on the server end, the NAPI path of xdpkv's runs
	if [[ $1 == on ]]; then
		tb_run ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv obj "$PASS_OBJ" sec xdp ||
			tb_die "cannot attach XDP_PASS to $TB_SRV_DEV"
	else
		tb_run ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv off
	fi
}

# Redis: preload the keys redis-benchmark's -r draws from (key:%012d, 16
# bytes) with 128-byte values; then get-only runs, each up to 8x longer,
# until one lasts >= 1 s: the warm-up and the rate the timed run is sized by.
# Prints the requests per second.
redis_warm() { # DIR CONNS THREADS
	local d=$1 req=20000 secs=0 rate=0
	# shellcheck disable=SC2016 # Python, not shell
	"$PY" -c 'import sys
v = b"v" * 128
out = sys.stdout.buffer
for i in range(int(sys.argv[1])):
    k = b"key:%012d" % i
    out.write(b"*3\r\n$3\r\nSET\r\n$16\r\n%s\r\n$128\r\n%s\r\n" % (k, v))' "$rkeys" |
		rcli --pipe >"$d/preload.log" 2>&1 || true
	for _ in 1 2 3 4 5 6; do
		rbench "$d/warm.log" "$2" "$3" "$req" get || break
		secs=$(rb_secs "$d/warm.log")
		rate=$(awk -v r="$req" -v s="$secs" 'BEGIN { printf "%d", (s > 0 ? r / s : 0) }')
		awk -v s="$secs" 'BEGIN { exit !(s >= 1) }' && break
		req=$(awk -v r="$req" -v s="$secs" 'BEGIN { m = (s > 0.05 ? 1.5 / s : 8)
			printf "%d", r * (m > 8 ? 8 : m) }')
	done
	echo "$rate"
}

run() { # SERVER N
	local srv=$1 n=$2 pid ct log=$TB_TMP/$1.$2 perfpid='' rc=0 client=memaslap
	local nc=$((conns * n)) cs=0 ts=0 ng=0 ns=0 rate
	ct=$((n < ${#CCPU[@]} ? n : ${#CCPU[@]}))
	mkdir -p "$log"
	case $srv in
	memcached)
		xdp_pass on
		tb_ns_bg "$TB_SRV_NS" "$scpus" memcached -u nobody -t "$n" -p "$TB_PORT" -U 0 \
			-l "$TB_SRV_IP4" -m 2048 -c 4096
		pid=$TB_LAST_PID ;;
	redis)
		client=redis-benchmark
		xdp_pass on
		tb_ns_bg "$TB_SRV_NS" "$scpus" redis-server --bind "$TB_SRV_IP4" --port "$TB_PORT" \
			--io-threads "$n" --io-threads-do-reads yes --save '' --appendonly no \
			--protected-mode no --maxclients 10000 --dir "$log" --logfile "$log/redis.log"
		pid=$TB_LAST_PID ;;
	xdpkv | xdpkv-verdict | xdpkv-nofast)
		local extra=()
		[[ $srv = xdpkv-verdict ]] && extra=(--no-xdp-tcp)
		[[ $srv = xdpkv-nofast ]] && extra=(--no-xdp-tcp --no-tcp-fast-path)
		# a new key with every set: room for the run's sets at 200k/s per thread
		local entries=$((1 << 20))
		while ((entries < duration * n * 40000 + 100000)); do entries=$((entries * 2)); done
		tb_xdpkv --variant "$layout" attach "$TB_SRV_DEV" --mode native --entries "$entries" \
			--key-size 16 --value-size 256 --binary-keys --port "$TB_PORT" "${extra[@]}" >/dev/null
		tb_ns_bg "$TB_SRV_NS" "$scpus" "$XDPKV" serve "$TB_SRV_DEV" --threads "$n"
		pid=$TB_LAST_PID ;;
	esac
	tb_pin_napi_spread "$TB_SRV_NS" "$TB_SRV_DEV" "$scpus" 2>/dev/null
	tb_wait_listen "$TB_SRV_NS" "$TB_PORT" 200 "$pid" || tb_die "$srv did not listen on TCP $TB_PORT"
	# warm-up: connections made, the first keys set (Redis: preloaded too)
	if [[ $client == memaslap ]]; then
		memaslap "$nc" "$ct" 2s >/dev/null 2>&1 || true
	else
		rate=$(redis_warm "$log" "$nc" "$ct")
		# 9:1 by connections, threads and requests; about --duration seconds
		cs=$(((nc + 5) / 10)) ts=$(((ct + 5) / 10))
		((ts >= 1)) || ts=1
		ns=$((rate * duration / 10)) ng=$((rate * duration - rate * duration / 10))
		rcli INFO all >"$log/info0" 2>&1 || true
	fi
	if [[ -n $perfdir ]]; then
		mkdir -p "$perfdir"
		perf record -q -g -C "$scpus" -o "$perfdir/$srv-$n.data" -- sleep $((duration + 1)) \
			>/dev/null 2>&1 &
		perfpid=$!
	fi
	local sysc_pid=''
	if [[ -n $sysc ]]; then
		local ev=raw_syscalls:sys_enter c
		for c in ${SYSCALLS//,/ }; do ev+=",syscalls:sys_enter_$c"; done
		perf stat -x, -o "$log/syscalls" -e "$ev" -C "$scpus" -- sleep "$duration" >/dev/null 2>&1 &
		sysc_pid=$!
	fi
	local b0 b1 t0 t1 pg ps
	local segs0 segs1
	segs0="$(tb_tcp_segs "$TB_SRV_NS" InSegs) $(tb_tcp_segs "$TB_CLI_NS" OutSegs)"
	b0=$(tb_busy "${SCPU[@]}") t0=$EPOCHREALTIME
	if [[ $client == memaslap ]]; then
		memaslap "$nc" "$ct" "${duration}s" --verify=0.01 >"$log/memaslap.log" 2>&1 || rc=$?
	else
		rbench "$log/get.log" $((nc - cs)) "$ct" "$ng" get &
		pg=$!
		rbench "$log/set.log" "$cs" "$ts" "$ns" set &
		ps=$!
		wait "$pg" || rc=$?
		wait "$ps" || rc=$?
	fi
	b1=$(tb_busy "${SCPU[@]}") t1=$EPOCHREALTIME
	segs1="$(tb_tcp_segs "$TB_SRV_NS" InSegs) $(tb_tcp_segs "$TB_CLI_NS" OutSegs)"
	[[ -z $perfpid ]] || wait "$perfpid" || true
	[[ -z $sysc_pid ]] || wait "$sysc_pid" || true
	local fast='{}'
	case $srv in
	xdpkv*)
		fast=$(tb_xdpkv status "$TB_SRV_DEV" --json | "$PY" -c 'import json,sys
c = json.load(sys.stdin)["counters"]
print(json.dumps({"tcp_fast": c["fast"].get("tcp_fast", 0), "tcp_xdp": c["fast"].get("tcpx_answered", 0),
                  "tcp_slow": c["slow"].get("tcp_slow", 0),
                  "xdp_refused": {k[len("tcpx_refused_"):]: v for k, v in c["fast"].items()
                                  if k.startswith("tcpx_refused_") and v},
                  "xdp_replayed": c["fast"].get("tcpx_replayed", 0)}))') ;;
	redis)
		rcli INFO all >"$log/info1" 2>&1 || true
		rcli STRLEN key:000000000042 >"$log/strlen" 2>&1 || true ;;
	esac
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	case $srv in
	xdpkv*) tb_xdpkv detach "$TB_SRV_DEV" >/dev/null ;;
	*) xdp_pass off ;;
	esac
	"$PY" - "$srv" "$n" "$ct" "$nc" "$rc" "$log" "$((b1 - b0))" "$(getconf CLK_TCK)" \
		"$fast" "$duration" "$scpus" "$ccpus" "$layout" "$client" "$t0" "$t1" \
		"$rkeys $ng $ns $cs $ts" "$segs0 $segs1" <<'PY'
import json, re, sys
(srv, n, ct, nc, rc, log, busy, hz, fast, dur, scpus, ccpus, layout, client, t0, t1,
 redis, segs) = sys.argv[1:]
elapsed = float(t1) - float(t0)
row = {"server": srv, "client": client, "threads": int(n), "client_threads": int(ct),
       "conns": int(nc), "layout": layout if srv.startswith("xdpkv") else None}


def text(name):
    try:
        return open("%s/%s" % (log, name), errors="replace").read()
    except OSError:
        return ""


def memaslap():
    t = text("memaslap.log")

    def last(name):
        m = re.findall(r"^%s:\s*(\d+)" % name, t, re.M)
        return int(m[-1]) if m else None
    tps = re.findall(r"TPS:\s*(\d+)", t)
    ops = re.findall(r"Run time:.*?Ops:\s*(\d+)", t, re.S)
    errors = len(re.findall(r"^<\d+ (ERROR|CLIENT_ERROR|SERVER_ERROR)", t, re.M))
    row.update({"tps": int(tps[-1]) if tps else None, "ops": int(ops[-1]) if ops else None,
                "gets": last("cmd_get"), "get_misses": last("get_misses"),
                "verify_failed": last("verify_failed"), "error_replies": errors,
                "memaslap_rc": int(rc)})
    return bool(row["tps"] and row["gets"] and not errors and not row["verify_failed"])


def info(name):
    """INFO all: key -> value; cmdstat_X -> {calls: ...}."""
    out = {}
    for line in text(name).splitlines():
        k, _, v = line.strip().partition(":")
        if "=" in v:
            v = dict(x.split("=", 1) for x in v.split(","))
        out[k] = v
    return out


def redis_bench():
    keys, ng, ns, cs, ts = map(int, redis.split())
    i0, i1 = info("info0"), info("info1")

    def delta(k, sub=None):
        a, b = i0.get(k, {} if sub else 0), i1.get(k, {} if sub else 0)
        if sub:
            a, b = a.get(sub, 0), b.get(sub, 0)
        return int(b) - int(a)
    gets, sets = delta("cmdstat_get", "calls"), delta("cmdstat_set", "calls")
    errors = delta("total_error_replies") + sum(delta("cmdstat_" + c, f) for c in ("get", "set")
                                                for f in ("failed_calls", "rejected_calls"))
    pre = re.search(r"errors: (\d+), replies: (\d+)", text("preload.log"))
    loaded = int(i0.get("db0", {}).get("keys", 0))
    vlen = text("strlen").strip()
    logs = text("get.log") + text("set.log")
    secs = [float(x) for x in re.findall(r"requests completed in ([\d.]+) seconds", logs)]
    row.update({"tps": round((gets + sets) / elapsed) if elapsed > 0 and gets + sets else None,
                "ops": gets + sets, "gets": gets, "sets": sets, "get_hits": delta("keyspace_hits"),
                "get_misses": delta("keyspace_misses"), "verify_failed": None,
                "error_replies": errors, "requests_sent": ng + ns, "conns_get_set": [int(nc) - cs, cs],
                "client_threads_get_set": [int(ct), ts], "redis_keys": keys,
                "keys_loaded": loaded, "preload_errors": int(pre[1]) if pre else None,
                "value_len": int(vlen) if vlen.isdigit() else None, "redis_benchmark_s": secs,
                # the shorter process's time over the longer's: the share of the run
                # with both GET and SET traffic (the client CPUs are shared between them)
                "overlap": round(min(secs) / max(secs), 3) if len(secs) == 2 and max(secs) else None,
                "io_threads": int(n), "io_threads_do_reads": True})
    return bool(gets and gets == ng and sets == ns and row["get_hits"] == gets and
                not row["get_misses"] and not errors and loaded == keys and pre and
                not int(pre[1]) and row["value_len"] == 128 and "Error" not in logs)


ok = memaslap() if client == "memaslap" else redis_bench()
row.update({"client_rc": int(rc), "duration_s": int(dur), "elapsed_s": round(elapsed, 3),
            "server_cpus": scpus, "client_cpus": ccpus, **json.loads(fast)})
sc = text("syscalls")
if sc and row["tps"]:
    # perf stat -x,: count,unit,event,... over `duration` seconds of the run
    per = {}
    for line in sc.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[0].isdigit() and "sys_enter" in f[2]:
            name = f[2].split(":")[-1].replace("sys_enter_", "").replace("sys_enter", "all")
            per[name] = round(int(f[0]) / (row["tps"] * int(dur)), 3)
    row["syscalls_per_req"] = per
if row["ops"] and row["tps"]:
    row["server_us_per_req"] = round(int(busy) / int(hz) / row["ops"] * 1e6, 2)
    row["server_cpu_s"] = round(int(busy) / int(hz), 2)
if "tcp_fast" in row:
    tot = row["tcp_fast"] + row["tcp_xdp"] + row["tcp_slow"]
    row["kernel_share"] = round(row["tcp_fast"] / tot, 3) if tot else 0.0
    row["xdp_share"] = round(row["tcp_xdp"] / tot, 3) if tot else 0.0
si0, so0, si1, so1 = map(int, segs.split())
if so1 > so0:
    # the client's segments the server's TCP stack never saw (XDP took them)
    row["segs_client_out"] = so1 - so0
    row["segs_server_in"] = si1 - si0
    row["segs_unseen_share"] = round(1 - (si1 - si0) / (so1 - so0), 3)
row["ok"] = bool(ok and not int(rc))
print(json.dumps(row), flush=True)
PY
}

echo "# $(date -u '+%F %T') UTC, $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); server CPUs $scpus, client CPUs $ccpus, ${duration}s per run" >&2
bad=0
for n in "${NLIST[@]}"; do
	for s in "${SLIST[@]}"; do
		line=$(run "$s" "$n")
		echo "$line"
		[[ -z $json ]] || echo "$line" >>"$json"
		[[ $line == *'"ok": true'* ]] || { echo "bench/tcpscale.sh: a bad run: $line (logs $TB_TMP/$s.$n/)" >&2; bad=1; }
	done
done
exit $bad
