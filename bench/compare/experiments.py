# SPDX-License-Identifier: MIT
"""xdpkv compare's experiments: their letters and titles, the workloads, the
settings of each mode (full, quick, smoke), the row labels, and how many
cores and threads each scaling and microbenchmark point uses."""

EXPERIMENTS = "abcdefghijklmnop"
EXP_TITLES = {
    "a": "Max throughput per key distribution",
    "b": "Latency vs offered load",
    "c": "Write ratio",
    "d": "Key size and value size",
    "e": "Scan ratio (multi-key get)",
    "f": "Memory per item",
    "g": "Lost data",
    "h": "CPU per request",
    "i": "Share of requests per xdpkv path",
    "j": "Scaling with server cores",
    "k": "Persistence: snapshot and restore",
    "l": "In-kernel microbenchmark, 1…nproc threads, shared and disjoint keys",
    "m": "Hit ratio per byte: miss-ratio curves against libCacheSim",
    "n": "TCP scaling with third-party clients (memaslap, redis-benchmark)",
    "o": "BMC beside the layouts: UDP GETs at values BMC answers",
    "p": "Proxied and pipelined TCP clients (bench/clients)",
}
WORKLOADS = ("fixed", "etc", "twitter")
# --workload etc|twitter: the sizes are each key's (bench/loadgen/workload.h);
# a server is sized for the largest the load generator makes (its limits)
WORKLOAD_MAX_KEY, WORKLOAD_MAX_VALUE = 250, 1024

# (j) the mixes: name -> writes (%), key distribution, keys (None: all)
SCALING_MIXES = (("read", 5, "uniform", None), ("write", 50, "uniform", None),
                 ("zipf", 5, "zipf:0.99", None), ("hotkey", 5, "uniform", 1))


def scaling_cores(nproc, gen_cores=None):
    """(generator CPUs, server CPUs, server core counts) on an nproc-CPU
    machine.  The generator gets CPUs 0..G-1 (G = half, rounded up), the
    server the rest, one veth queue per server CPU.  veth puts a frame
    transmitted by XDP on CPU c into the peer's receive queue c mod queues
    (bench/README.md), so N generator threads on CPUs 0..N-1 feed queues
    0..N-1: the counts go 1, 2, 4 ... up to min(G, server CPUs)."""
    g = gen_cores or (nproc + 1) // 2
    if nproc < 2 or not 1 <= g < nproc:
        return None
    gen, server = list(range(g)), list(range(g, nproc))
    top = min(len(gen), len(server))
    counts, n = [], 1
    while n <= top:
        counts.append(n)
        n *= 2
    if counts[-1] != top:
        counts.append(top)
    return gen, server, counts


def microbench_threads(nproc):
    """(l) thread counts: 1, 2, 4 ... and nproc itself (1 and 2 on 2 CPUs;
    1, 2, 4, 8, 16 on 16)."""
    counts, n = [], 1
    while n <= max(1, nproc):
        counts.append(n)
        n *= 2
    if counts[-1] != max(1, nproc):
        counts.append(nproc)
    return counts


# (l) the operations: microbenchmark name -> what it sends (bench/README.md)
MB_OPS = ("get_hit", "set")


def microbench_filter(layout, threads):
    """The --benchmark_filter that selects (l)'s points of one layout: GET hit
    and SET, disjoint keys (OP/LAYOUT) and shared (OP_shared/LAYOUT), at the
    thread counts given (Google Benchmark appends /threads:N for N > 1)."""
    more = [str(n) for n in threads if n > 1]
    t = "(/threads:(%s))?" % "|".join(more) if more else ""
    return "^(%s)(_shared)?/%s/manual_time%s$" % ("|".join(MB_OPS), layout, t)


def cpu_list(cpus):
    return ",".join(str(c) for c in cpus)


def microbench_sizes(mb, threads):
    """(l) the microbenchmark's store size and keys per thread: its threads x
    keys must fit the preloaded entries (microbench refuses otherwise), so on
    a machine with many CPUs each thread gets fewer keys."""
    return dict(mb, keys=max(1, min(mb["keys"], mb["entries"] // (2 * threads))))


# (p) the rows of bench/clients/clients.py it runs (--client-rows overrides):
# behind nutcracker (twemproxy) with 8 and 32 clients, and the pipelining
# clients (multi-key gets, set_many and no-block sets with noreply or
# without waiting); the smoke setting one proxied and one pipelined row
CLIENT_ROWS = ("nutcracker_8", "nutcracker_32", "pymemcache_get_many", "pymemcache_set_many",
               "php_noblock", "php_getmulti")
SMOKE_CLIENT_ROWS = ("nutcracker_8", "pymemcache_get_many")

# ---- settings ---------------------------------------------------------------------

FULL = dict(keys=1_000_000, duration=10.0, warmup=2.0, depth=32, headline_repeat=5,
            dists=["uniform", "zipf:0.9", "zipf:0.95", "zipf:0.99"],
            fractions=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2],
            writes=[0, 5, 10, 25, 50, 75, 100],
            key_sizes=[16, 32, 64, 128], value_sizes=[128, 256, 512, 1024],
            scan_ratios=[0, 5, 25, 50], scan_len=10,
            kvexp_items=1_000_000, xdpgen=True, kvexp_scale=20,
            mb=dict(entries=1 << 20, keys=4096, min_time=0.1), client_rows=CLIENT_ROWS,
            kvexp=dict(key_sizes="16,64,128,250", value_sizes="32,128,512,1024",
                       fills="10,50,95", capacity=65536, ratios="0.5,0.9,1.0,1.5,2.0",
                       stale_keys=4096, rounds=4),
            hitratio=dict(keys=32768, budgets="1/64,1/32,1/16,1/8,1/4,1/2,1,2",
                          dists="0.6,0.9,0.99,1.2,uniform", seeds="1,2,3", warmup=2,
                          requests=4, tol=0.02))
# --quick: every layout and memcached (UDP, TCP) and Redis in about 4 minutes
# on 2 CPUs: the experiments the headline is made of (QUICK_EXPERIMENTS),
# 0.5 s points, the headline's own points run HEADLINE_REPEAT times for spreads
QUICK = dict(keys=50_000, duration=0.5, warmup=0.15, depth=32,
             dists=["uniform"],
             fractions=[0.5],
             writes=[0, 50, 100],
             key_sizes=[16, 128], value_sizes=[128, 1024],
             scan_ratios=[0, 25], scan_len=10,
             kvexp_items=50_000, xdpgen=True, kvexp_scale=0.2,
             mb=dict(entries=1 << 18, keys=2048, min_time=0.02), client_rows=CLIENT_ROWS,
             kvexp=dict(key_sizes="16", value_sizes="128", fills="50", capacity=8192,
                        ratios="0.5,1.0,2.0", stale_keys=1024, rounds=2),
             hitratio=dict(keys=4096, budgets="1/16,1/4,1", dists="0.99", seeds="1,2,3",
                           warmup=1, requests=2, tol=0.05))
QUICK_EXPERIMENTS = "abfgim"
QUICK_BASELINES = "memcached-udp,memcached-tcp,redis"
# timeout_ms: the socket client's wait for a reply (xkv-loadgen's default,
# 100 ms, unless set): a smoke run checks that replies come back right, on a
# machine that may be running other tests beside it (its 1 s of (h) once
# saw every reply later than 100 ms there)
# (the smoke test checks that every system answers right: one run a point)
SMOKE = dict(keys=10_000, duration=1.0, warmup=0.2, depth=16, timeout_ms=2000, headline_repeat=1,
             dists=["uniform"], fractions=[0.5], writes=[0, 100],
             key_sizes=[16], value_sizes=[128], scan_ratios=[25], scan_len=4,
             kvexp_items=10_000, xdpgen=True, kvexp_scale=0.5,
             mb=dict(entries=1 << 16, keys=1024, min_time=0.0005),
             client_rows=SMOKE_CLIENT_ROWS,
             kvexp=dict(key_sizes="16", value_sizes="128", fills="50", capacity=2048,
                        ratios="1.0", stale_keys=256, rounds=1),
             hitratio=dict(keys=1024, budgets="1/8,1", dists="0.99,uniform", seeds="1,2,3",
                           warmup=1, requests=2, tol=0.15))
BASE_KEY, BASE_VALUE, BASE_WRITE = 16, 128, 10
# The headline (headline.py): the offered load every system's CPU per request
# and latency are read at (a fraction of memcached-udp's max from (a)), the
# memory budget and key distribution of its hit ratio ((m)), the fill of its
# lost data ((g) kvexp lost), and how many runs its own points get
HEADLINE_FRACTION, HEADLINE_BUDGET, HEADLINE_DIST, HEADLINE_RATIO = 0.5, "1/4", "zipf0.99", 2.0
HEADLINE_REPEAT = 3
# (g) for memcached and Redis: the memory limit they are filled under, and
# the keys that fill it (~3x what 4 MB holds of 16 + 128-byte items)
LOST_MB, LOST_FILL = 4, 60_000
# (b)'s client modes beside the default (epoll: a reply timed when the client
# reads it).  LOW_CLIENT runs at the common load for every UDP system and the
# reflector, as many times as the headline's other points, to measure below the
# client's own wake-up: the client spins on its socket, so the client CPU never
# halts and the reply's receive work (the client veth's NAPI kthread, pinned
# to the client CPU) runs at once instead of first waking a halted vCPU (on
# this VM that wake-up is most of the default client's ~60 us floor).  The
# kernel-timestamp mode is kept for manual runs (xkv-loadgen --kernel-stamps):
# it still pays that wake-up, since the timestamp is taken by the NAPI kthread
CLIENT_MODES = {"spin": "--spin", "kstamp": "--kernel-stamps"}
CLIENT_TEXT = {"spin": "busy-polling client (xkv-loadgen --spin: it polls its socket without "
                       "sleeping, yielding the client CPU to the client veth's NAPI kthread, "
                       "so the client CPU never halts between replies)",
               "kstamp": "kernel receive timestamps (xkv-loadgen --kernel-stamps: a reply is "
                         "timed when the client's network stack receives it, SO_TIMESTAMPNS, "
                         "not when the client wakes up and reads it)"}
LOW_CLIENT = "spin"
# ... at LOW_FRACTION of the reference's max, not at the common load: the
# server CPU halts between requests too, and at half of memcached's max the
# lighter server (an XDP layout) halts between requests where memcached's CPU
# stays busy, so only the lighter one pays the wake-up (measured: at 86 k/s
# memcached-udp's spin p50 was 20 us, hash_map's 24; at 20 k/s 31 and 18).
# At a fifth of it every server's CPU idles between requests.
LOW_FRACTION = 0.2

# seconds outside the measurements: the testbed's set-up before them, the
# report and plots after them, the tear-down (~6 s measured on the quiet 2-vCPU VM)
SETUP_EST = 8
# seconds xkv-kvexp takes at kvexp_scale 1 (the quick setting's 0.2 measured
# on the quiet 2-vCPU VM: memory 2 s, lost 3 s), scaled per setting
KVEXP_EST = {"memory": 10, "lost": 15, "stale": 3}

SOCKET_LABEL = "end-to-end, socket client, client CPU-bound"
XDPGEN_LABEL = "server capacity, in-kernel generator"
SCALING_LABEL = "server capacity at N server cores, in-kernel generator (N threads)"
MB_LABEL = ("in-kernel microbenchmark: ns per request in the XDP program "
            "(BPF_PROG_TEST_RUN, repeat=1), N threads at once")
# Measured with xdpgen beside the layouts, same run, same path: the bare XDP_TX
# reflector (the ceiling) and the null store (the handler without a map).
CEILINGS = ("reflector", "xdpkv/null")
