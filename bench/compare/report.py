# SPDX-License-Identifier: MIT
"""xdpkv compare's output: results.json, results.csv, report.md, PNG plots."""

import csv
import json
import os

import bmc
import clientmix
import headline
import hitratio
import tcpscale
from plots import plot_all, svg_name
from plots import COLORS, plt_mod, save  # noqa: F401  bench/plot/plot_layouts.py uses them as report.*
from results import (SOCKET, XDPGEN, dist_order, kops, microbench_points, num, point_name, rows_of,
                     runs_of, scaling_ceiling, systems_in, table, tp)

NOTES = {
    "a": "Closed loop, one client thread on the client CPU with 32 requests in flight, "
         "{base} over {keys} keys (preloaded). **{socket}**: on this testbed the client, not "
         "the server, is usually the bottleneck for the XDP layouts, so these numbers bound what "
         "one socket client core can drive, not what the server can serve. The second table is "
         "**{xdpgen}**: requests built and sent by a BPF program (BPF_PROG_TEST_RUN, live "
         "frames) from the client veth, replies counted by an XDP program there; the XDP "
         "layouts only (the baselines need the socket stack, which the generator bypasses). "
         "Every system gets the same client mode: 32 requests in flight, one per datagram over "
         "UDP and one per connection over TCP (memcached-tcp, Redis: 32 connections, not "
         "pipelined). "
         "The generator sends far more frames than one server core can answer: the replies/sent "
         "column is the share answered, the rest is dropped at the server veth's queue.",
    "b": "Open loop, Poisson arrivals at fractions of {ref}'s max throughput from (a) "
         "({refmax} ops/s), same workload as (a) uniform. A system that cannot keep up shows "
         "its achieved rate below the offered one and latency growing with the queue; "
         "timeouts (UDP, 100 ms) are counted, not retried.",
    "c": "Closed loop, uniform keys, {base_kv}; the share of requests that are sets varies.",
    "d": "Closed loop, uniform keys, {write}% sets; each key/value size on a freshly started "
         "server preloaded with that size. On a veth, a native-XDP frame has ~200 bytes of "
         "headroom and no tailroom: replies that do not fit are passed to xdpkv's slow path "
         "(see (i)).",
    "e": "Closed loop, uniform keys; a scan is one multi-key get of {scan_len} consecutive keys "
         "(one datagram / one pipelined command). xdpkv's fast path answers multi-gets whose "
         "reply fits one frame; larger ones go to the slow path. Throughput counts requests "
         "(a scan is one request).",
    "f": "The same dataset ({keys} items, {base_kv}) preloaded into each server. xdpkv: the "
         "kernel's figure for the store map (memlock in its fdinfo) divided by live items — "
         "it is the memory of the whole preallocated capacity ({entries}), so it depends on "
         "the capacity chosen. memcached: its own `stats bytes` and the RSS growth over the "
         "preload. Redis: INFO `used_memory` and the RSS growth over the preload.",
    "g": "From xkv-kvexp (in-process, no network): what each layout loses (collisions, "
         "evictions) and what it serves stale.",
    "h": "Closed loop, uniform keys, {base}. Busy time of the server CPU from /proc/stat (user+nice+system+irq+softirq+steal "
         "ticks) over the middle 80% of a closed-loop run, divided by the requests served "
         "in it: everything the server core did per request (driver, XDP, stack, server). "
         "For xdpkv, the XDP program's own run time from bpf_stats (`run_time_ns/run_cnt`, "
         "kernel.bpf_stats_enabled=1 only during this run), which is inside the CPU figure. "
         "The xdpgen rows are the generator's own figure (server CPU busy / replies). "
         "At the socket client's load the server core is mostly idle and each request "
         "pays for waking the NAPI thread (and the server process) — costly in a VM; the "
         "generator keeps the server saturated, where that cost is shared by a batch.",
    "i": "xdpkv's `status` counters over each run: **fast** = requests the XDP program "
         "answered, **slow** = requests the userspace slow path read.",
    "j": "Server capacity (replies/s with the server cores saturated by the in-kernel "
         "generator) at N server cores: the veth has one queue per server core, each queue's "
         "NAPI thread pinned to its own core, N generator threads on other cores (a frame "
         "sent by XDP from CPU c lands in receive queue c mod queues, so thread i feeds "
         "queue i). Mixes: **read** 5 % sets, **write** 50 % sets, **zipf** Zipf 0.99 with "
         "5 % sets, **hotkey** every request for one key with 5 % sets. Every layout is "
         "shown as a ratio to the bare XDP_TX reflector measured in the same run at the "
         "same core count and mix. CPU per reply: the busy time of the server cores whose "
         "NAPI threads did the work (/proc/stat), over the replies.",
    "k": "The preloaded dataset ({keys} items, {base_kv}) written to disk and read back, no "
         "traffic. xdpkv: `xdpkv snapshot --compress lz4` and `xdpkv restore` of that file into "
         "the same store (the keys are overwritten), the commands' own timings (fsync "
         "included). Redis: BGSAVE until its forked child is done, and DEBUG RELOAD NOSAVE "
         "(the RDB load alone), by wall clock.",
    "l": "The in-kernel microbenchmark (bench/microbench; bench/README.md): each request is "
         "one BPF_PROG_TEST_RUN (repeat = 1) of the XDP program on a real frame, timed by the "
         "kernel, every reply validated before timing; no network, no testbed traffic. N "
         "threads at once, thread t pinned to CPU t: **disjoint** keys (each thread its own "
         "keys) and **shared** keys (every thread walks the same keys: the same buckets, LRU "
         "nodes and cache lines). GET hit and SET (an overwrite) of 16-byte keys, 128-byte "
         "values. ns per request as each thread sees it (the mean over its requests, averaged "
         "over the threads), and the ratio to one thread: 1.0× means N threads each run as "
         "fast as one alone; above 1 is what sharing the map (locks, LRU lists, cache lines) "
         "and the machine's cores costs. The null store (the handler without a map) is the "
         "floor: what it loses with more threads is the harness's and the machine's, not a "
         "map's.",
    "m": "Per layout and memory budget (a fraction of the working set's bytes; the store is "
         "sized until the kernel's own figure for its map, fdinfo memlock, meets the budget), "
         "a request sequence per key distribution (Zipf α, uniform) and seed runs through the "
         "XDP program as a cache-aside client does: `get`, and on a miss `set` of the same key "
         "(xkv-kvexp hitratio; warm-up requests not counted; every hit's bytes checked). The "
         "same sequences (regenerated, checksum checked) are replayed in libCacheSim with the "
         "policy each layout claims (lru: LRU; set_assoc: CLOCK per set; array_fnv: a "
         "one-object cache per slot, i.e. direct-mapped) and in Python models of each "
         "layout's documented policy (arena: oldest of a 4-slot window; hash_map: no "
         "eviction), with the map's entries as the cache size. Hits per MiB: counted hits "
         "over the map's MiB.",
    "n": "bench/tcpscale.sh per server and thread count, each on a veth testbed of its own "
         "with one queue per server CPU: N server threads on N server CPUs (memcached -t N; "
         "`xdpkv serve --threads N`, hash_map, with the kernel's sk_skb path on "
         "(xdpkv-tcp-kernel) and off (xdpkv-tcp); `redis-server --io-threads N "
         "--io-threads-do-reads yes`, no persistence), the client on the other CPUs with "
         "32 × N connections, 16-byte keys, 128-byte values, 90 % gets. The memcached "
         "servers are driven by memaslap (Debian's memcaslap, -T threads, 1 % of the gets "
         "verified); Redis, which memaslap does not speak, by redis-benchmark: the keys it "
         "draws from preloaded, then a GET process on 9/10 of the connections with 90 % of "
         "the requests and a SET process on the rest with 10 %, at once, sized by a get-only "
         "warm-up to last about the duration; requests/s over the wall time until both "
         "ended, every GET checked to be a hit (the server's INFO over the run), no error "
         "replies. Every server end runs an XDP program (xdpkv's, or XDP_PASS), so all take "
         "the same NAPI path. Two clients, two protocols: the table names each row's.",
}

CONTEXT = (
    "## What these numbers are (and are not)\n\n"
    "Everything runs on one {nproc}-CPU machine: the server on CPU {scpu}, the client on CPU "
    "{ccpu}, joined by a veth pair between two network namespaces. A veth is not a NIC: "
    "there is no DMA, no interrupt moderation and no RSS (in (j) a frame goes to the receive "
    "queue of the CPU that sent it), the sender pays for "
    "part of the receive path, and the client is a socket program competing for one core. "
    "The socket-client numbers are end-to-end and usually **client-bound** for the XDP "
    "layouts; the in-kernel generator's numbers show the server's own capacity on one core. "
    "For context only: the thesis this project follows reports an XDP hash-map store at up "
    "to 24x Redis's throughput on a 100G NIC with many cores — a very different setting, "
    "and not something this machine can reproduce or confirm.\n"
)


def problems(r):
    bad = []
    for k in ("timeouts", "wrong_values", "errors"):
        if r.get(k):
            bad.append("%s %s" % (r[k], k.replace("_", " ")))
    return ", ".join(bad)


# ---- csv / json ------------------------------------------------------------------------

def write_csv(path, rows):
    cols = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: (json.dumps(v) if isinstance(v, (dict, list)) else v)
                        for k, v in r.items()})


def first_numeric(rows, prefer=()):
    for k in prefer:
        if any(isinstance(r.get(k), (int, float)) for r in rows):
            return k
    skip = {"experiment", "system", "tool", "label", "kvexp"}
    for r in rows:
        for k, v in r.items():
            if k not in skip and isinstance(v, (int, float)) and not isinstance(v, bool):
                return k
    return None


# ---- markdown ------------------------------------------------------------------------------

def md_a(res, L):
    a = rows_of(res, "a", "loadgen")
    if a:
        dists = sorted({r["dist"] for r in a}, key=dist_order)
        body = []
        for s in systems_in(a):
            rr = {r["dist"]: r for r in a if r["system"] == s}
            probs = "; ".join("%s: %s" % (d, problems(rr[d])) for d in dists
                              if d in rr and problems(rr[d]))
            u = rr.get("uniform", {})
            cl = "%s / %s" % (num((u.get("client_core_busy") or 0) * 100, "%.0f%%"),
                              num((u.get("loadgen_cpu_share") or 0) * 100, "%.0f%%")) \
                if u.get("client_core_busy") is not None else "–"
            body.append([s] + [tp(rr[d]) if d in rr else "–" for d in dists]
                        + [num(u.get("lat_p99_us"), "%.0f"), cl, probs or "none"])
        L.append("**%s** (kops/s%s)\n\n" % (SOCKET, "; median of repeats (min–max)"
                                              if any(r.get("repeat") for r in a) else ""))
        L.append(table(["system"] + dists + ["p99 µs (uniform)",
                                             "client core busy / xkv-loadgen's share (uniform)",
                                             "timeouts / wrong / errors"], body))
        L.append("\nThe client core's busy time (/proc/stat) against the share xkv-loadgen "
                 "itself used: the rest is the kernel's send/receive work for it (softirq, the "
                 "client veth's NAPI thread) — or other work on a shared machine.\n")
    xg = rows_of(res, "a", "xdpgen")
    if xg:
        dists = sorted({r["dist"] for r in xg}, key=dist_order)
        ceil = {r["dist"]: r.get("throughput_ops") for r in xg if r["system"] == "reflector"}

        def cell(r, d):
            t = r["throughput_ops"]
            if not ceil.get(d) or r["system"] == "reflector" or not t:
                return kops(t)
            return "%s (%.3f×)" % (kops(t), t / ceil[d])
        body = []
        for s in systems_in(xg):
            rr = {r["dist"]: r for r in xg if r["system"] == s}
            body.append([s] + [cell(rr[d], d) if d in rr else "–" for d in dists]
                        + [num(rr.get(dists[0], {}).get("reply_ratio"), "%.3f"),
                           num((rr.get(dists[0], {}).get("server_busy") or 0) * 100, "%.0f%%")])
        L.append("\n**%s** (kreplies/s%s; the XDP systems only)\n\n"
                 % (XDPGEN, ", and as a ratio to the reflector's of the same run" if ceil else ""))
        L.append(table(["system"] + dists + ["replies/sent (%s)" % dists[0],
                                              "server CPU busy (%s)" % dists[0]], body))
        if ceil:
            L.append("\n*reflector*: a bare XDP_TX program on the same path (swaps MACs, "
                     "addresses, ports; bench/reflector), the ceiling; *xdpkv/null*: the whole "
                     "handler with no map (`xdpkv --variant null`), so handler and map costs "
                     "separate. Every reply checked before its rate is kept.\n")


def md_grid(res, L, exp, xkey, xfmt, cell, rr=None):
    """A table: one line per system, one column per value of xkey, cell(row)
    in each.  rr: the rows (default: every row of exp)."""
    rr = rows_of(res, exp) if rr is None else rr
    if not rr:
        return
    xs = sorted({r[xkey] for r in rr if r.get(xkey) is not None})
    body = []
    for s in systems_in(rr):
        m = {r[xkey]: r for r in rr if r["system"] == s}
        body.append([s] + [cell(m[x]) if x in m else "–" for x in xs])
    L.append(table(["system"] + [xfmt(x) for x in xs], body))


def md_b(res, L):
    b = rows_of(res, "b")
    cell = lambda r: "%s / %s µs (%s k)" % (  # noqa: E731
        num(r.get("lat_p50_us")), num(r.get("lat_p99_us")), kops(r.get("throughput_ops"))) + (
        " ⚠ %s timeouts" % r["timeouts"] if r.get("timeouts") else "")
    md_grid(res, L, "b", "fraction", lambda x: "%.0f%%" % (100 * x), cell,
            rr=[r for r in b if not r.get("client")])
    L.append("\nCells: p50 / p99 latency (achieved kops/s). Columns: offered load as a "
             "fraction of the reference max. `reflector` is the testbed's floor: the bare XDP "
             "reflector sends each request back (xkv-loadgen --echo) through the same veth, NAPI "
             "threads and client socket, so its latency is what the testbed costs with no "
             "server at all.\n")
    from experiments import CLIENT_TEXT
    for mode in sorted({r["client"] for r in b if r.get("client")}):
        spin = [r for r in b if r.get("client") == mode]
        floor = next((r for r in spin if r["system"] == "reflector"), None)
        L.append("\n**Client mode %s**: %s, at %s of the reference max:\n\n" % (
            mode, CLIENT_TEXT.get(mode, mode), ", ".join(
                sorted({"%.0f %%" % (100 * r["fraction"]) for r in spin}))))
        body = [[r["system"], num(r.get("lat_p50_us")), num(r.get("lat_p99_us")),
                 num(r["lat_p50_us"] - floor["lat_p50_us"], "%.1f")
                 if floor and r.get("lat_p50_us") is not None and r is not floor else "–",
                 num(r.get("timeouts"))] for r in spin]
        L.append(table(["system", "p50 (µs)", "p99 (µs)", "p50 above the floor (µs)",
                        "timeouts"], body))
    # every run of a row (a repeated point keeps each run's timeouts and drops)
    runs = [(r, i, t, (r.get("lost_at_runs") or [r.get("lost_at")])[i] if r.get("lost_at_runs")
             else r.get("lost_at")) for r in b
            for i, t in enumerate(r.get("timeouts_runs") or [r.get("timeouts")])]
    lost = [x for x in runs if x[2] or any((x[3] or {}).values())]
    if lost:
        import losses
        L.append("\n**Where unanswered requests were dropped** (each stage's own drop counter "
                 "over the run, warm-up included; `late replies`: replies that came after their "
                 "request's timeout; every run of a repeated point):\n\n")
        body = [[r["system"], "%.0f %%" % (100 * r["fraction"]), r.get("client") or "epoll",
                 "%d of %d" % (i + 1, len(r.get("timeouts_runs") or [1])), num(t),
                 losses.describe(la or {}) or "no stage counted a drop",
                 num(losses.unattributed(la or {}, t))] for r, i, t, la in lost]
        L.append(table(["system", "load", "client", "run", "timeouts", "dropped at",
                        "not counted at any stage"], body))


def md_c(res, L):
    md_grid(res, L, "c", "write", lambda x: "%s%% sets" % x,
            lambda r: "%s k, p99 %s µs" % (tp(r), num(r.get("lat_p99_us"))))


def md_d(res, L):
    rr = rows_of(res, "d")
    if not rr:
        return
    pts = sorted({(r["key_size"], r["value_size"]) for r in rr})
    body = []
    for s in systems_in(rr):
        m = {(r["key_size"], r["value_size"]): r for r in rr if r["system"] == s}
        cells = []
        for p in pts:
            r = m.get(p)
            if not r:
                cells.append("–")
                continue
            c = tp(r)
            if r.get("fast_share") is not None:
                c += " (fast %.0f%%)" % (100 * r["fast_share"])
            if problems(r):
                c += " ⚠ " + problems(r)
            cells.append(c)
        body.append([s] + cells)
    L.append(table(["system"] + ["k%d v%d" % p for p in pts], body))
    L.append("\nkops/s; for xdpkv, the share the XDP fast path served.\n")


def md_e(res, L):
    md_grid(res, L, "e", "scan", lambda x: "%s%% scans" % x,
            lambda r: "%s k, p99 %s µs%s" % (tp(r),
                                             num(r.get("lat_p99_us")),
                                             " (fast %.0f%%)" % (100 * r["fast_share"])
                                             if r.get("fast_share") is not None else ""))


def md_f(res, L):
    f = rows_of(res, "f", "server")
    if f:
        body = []
        for r in f:
            own = r.get("map_memory") or r.get("mc_bytes") or r.get("used_memory")
            body.append([r["system"], num(r.get("live_items")), num(own),
                         num(r.get("bytes_per_item"), "%.1f"),
                         num(r.get("rss")), num(r.get("rss_growth_per_item"), "%.1f")])
        L.append(table(["system", "live items", "server's own figure (B)", "B / item",
                        "RSS (B)", "RSS growth / item"], body))
    kv = rows_of(res, "f", "kvexp")
    if kv:
        L.append("\n**xkv-kvexp memory** (in-process)\n\n")
        L.append(generic_table(kv))


def md_g(res, L):
    g = rows_of(res, "g")
    srv = [r for r in g if r["tool"] == "loadgen"]
    if srv:
        L.append("\n**memcached and Redis at %gx what they hold** (%s)\n\n" % (
            srv[0]["ratio"], srv[0]["label"]))
        L.append(table(["system", "items held", "keys set", "readable", "lost"], [
            [r["system"], num(r["capacity"]), num(r["keys"]), num(r["readable"]),
             "%.3f" % (1 - r["readable_share"])] for r in srv]))
    g = [r for r in g if r["tool"] != "loadgen"]
    for sub in sorted({r.get("kvexp") for r in g}):
        L.append("\n**xkv-kvexp %s**\n\n" % sub)
        L.append(generic_table([r for r in g if r.get("kvexp") == sub]))


def md_h(res, L):
    h = rows_of(res, "h")
    if h:
        body = [[r["system"], kops(r.get("throughput_ops")),
                 num((r.get("server_busy") or 0) * 100, "%.0f%%"),
                 num(r.get("server_cpu_us_per_req"), "%.2f"),
                 num((r.get("server_threads_busy") or 0) * 100, "%.0f%%"),
                 num(r.get("server_threads_us_per_req"), "%.2f"),
                 num(r.get("xdp_ns_per_run"), "%.0f"),
                 num((r["xdp_share_of_server_threads"] or 0) * 100, "%.0f%%")
                 if r.get("xdp_share_of_server_threads") is not None else "–"]
                for r in h]
        L.append(table(["system", "kops/s", "server CPU busy", "server CPU µs / request",
                        "server threads busy", "server threads µs / request",
                        "XDP ns / run", "XDP share of server threads"], body))
        L.append("\n*server CPU*: the whole core (/proc/stat), including anything else that ran "
                 "on it; *server threads*: utime+stime of the server veth's NAPI kthread and the "
                 "server process (xdpkv: its slow path) only; *XDP share*: bpf_stats run time over "
                 "the server threads' CPU time in the same window (with bpf_stats on, each run "
                 "also pays for two clock reads).\n")
    xg = [r for r in rows_of(res, "a", "xdpgen") if r.get("dist") == "uniform"]
    if xg:
        L.append("\nIn-kernel generator (a, uniform): server CPU per reply\n\n")
        L.append(table(["system", "kreplies/s", "server CPU busy", "server CPU µs / reply"],
                       [[r["system"], kops(r.get("throughput_ops")),
                         num((r.get("server_busy") or 0) * 100, "%.0f%%"),
                         num(r.get("server_cpu_us_per_req"), "%.3f")] for r in xg]))


def md_i(res, L):
    pts = [r for r in res["rows"] if r["system"].startswith("xdpkv/") and
           r.get("fast_share") is not None]
    if not pts:
        return
    body = [[r["system"], point_name(r), num(r.get("fast_served")), num(r.get("slow_served")),
             "%.1f%%" % (100 * r["fast_share"]), num(r.get("pass_room")), num(r.get("pass_cmd")),
             num(r.get("pass_busy"))] for r in pts]
    L.append(table(["layout", "run", "fast", "slow", "fast share", "pass_room", "pass_cmd",
                    "pass_busy"], body))
    L.append("\npass_room: the reply did not fit the frame; pass_cmd: a command the fast path "
             "does not serve; pass_busy: an array_fnv slot was being written.\n")


def md_j(res, L):
    j = rows_of(res, "j")
    if not j:
        return
    ceil = scaling_ceiling(j)

    def cell(r):
        c = tp(r)
        t, ref = r.get("throughput_ops"), ceil.get((r["mix"], r["cores"]))
        if r["system"] != "reflector" and t and ref:
            runs = runs_of(r, "throughput_ops")
            c += " (%.2f×%s)" % (t / ref, ", %.2f–%.2f" % (min(runs) / ref, max(runs) / ref)
                                 if len(runs) > 1 else "")
        c += ", %s / %s µs" % (num(r.get("server_cpu_us_per_req"), "%.3f"),
                               num(r.get("server_threads_us_per_req"), "%.3f"))
        if r.get("queues_busy") is not None and r["queues_busy"] != r["cores"]:
            c += " ⚠ %d queues busy" % r["queues_busy"]
        busy = r.get("server_threads_busy", r.get("server_busy"))
        if busy is not None and busy < 0.9:
            # not the server's capacity: the generator (or the machine) was the limit
            c += " ⚠ NAPI %.0f%% busy" % (100 * busy)
        return c
    for mix in [m for m in ("read", "write", "zipf", "hotkey") if any(r["mix"] == m for r in j)]:
        rows = [r for r in j if r["mix"] == mix]
        L.append("\n**%s** (%s%% sets, %s%s)\n\n" % (
            mix, rows[0]["write"], rows[0]["dist"], ", one key" if rows[0].get("keys") else ""))
        md_grid(res, L, "j", "cores", lambda n: "%d core%s" % (n, "s" if n > 1 else ""), cell,
                rows)
    L.append("\nCells: kreplies/s (%s), the ratio to the reflector at the same core count "
             "and mix, then µs per reply: the server cores' busy time (/proc/stat, everything "
             "that ran there) / the server veth's NAPI threads' own CPU time. ⚠ NAPI N%% busy: "
             "the NAPI threads (the XDP program's) ran less than 90%% of the time per core, so "
             "the rate is the generator's or a busy machine's, not the server's capacity, and "
             "ratios to it mean little.\n" % (
                 "the median of --repeat runs (with an even --repeat the upper middle one), "
                 "min–max" if any(r.get("repeat") for r in j)
                 else "one run"))
    if any(r.get("repeat") for r in j):
        L.append("\nWith --repeat, the ratio's range (and the error bars of the ratio panel) "
                 "are the layout's min and max run over the reflector's median run.\n")
    # The same comparison by CPU per reply, which needs no saturated reflector:
    # where the generator cannot feed the reflector (⚠ above), this is the
    # fair ratio; where both are saturated it matches the capacity ratio.
    ref_us = {(r["mix"], r["cores"]): r["server_threads_us_per_req"] for r in j
              if r["system"] == "reflector" and r.get("server_threads_us_per_req")}
    if ref_us:
        L.append("\n**By CPU per reply** (the reflector's NAPI-thread µs per reply over the "
                 "system's, same mix and core count: the share of the reflector's capacity the "
                 "system would reach if both were saturated; it does not depend on the "
                 "generator keeping up)\n\n")
        xs = sorted({r["cores"] for r in j})
        mixes = [m for m in ("read", "write", "zipf", "hotkey") if any(r["mix"] == m for r in j)]
        body = []
        for s_ in systems_in(j):
            if s_ == "reflector":
                continue
            line = [s_]
            for mix in mixes:
                for n in xs:
                    r = next((x for x in j if x["system"] == s_ and x["mix"] == mix and
                              x["cores"] == n), None)
                    ref, us = ref_us.get((mix, n)), r and r.get("server_threads_us_per_req")
                    line.append("%.2f×" % (ref / us) if ref and us else "–")
            body.append(line)
        L.append(table(["system"] + ["%s, %d" % (m, n) for m in mixes for n in xs], body))
        L.append("\nColumns: mix, server cores.\n")


def md_l(res, L):
    panels = microbench_points(res)
    if not panels:
        return
    rr = rows_of(res, "l")
    rep_ = any(r.get("repeat") for r in rr)

    def cell(r):
        v = num(r.get("ns_per_op"), "%.0f")
        runs = runs_of(r, "ns_per_op")
        if len(runs) > 1:
            v += " (%.0f–%.0f)" % (min(runs), max(runs))
        if r["threads"] > 1 and r.get("ratio1"):
            v += ", %.2f×" % r["ratio1"]
            if len(r.get("ratio1_runs") or []) > 1:
                v += " (%.2f–%.2f)" % (min(r["ratio1_runs"]), max(r["ratio1_runs"]))
        if r.get("busy_share"):
            v += ", %.1f%% busy" % (100 * r["busy_share"])
        return v
    for (op, keys), rows in panels.items():
        L.append("\n**%s, %s keys** (ns per request%s)\n\n" % (
            "GET hit" if op == "get_hit" else "SET (overwrite)", keys,
            "; one thread: the same run as disjoint" if keys == "shared" else ""))
        md_grid(res, L, "l", "threads", lambda n: "%d thread%s" % (n, "s" if n > 1 else ""),
                cell, rows)
    one = [r for r in rr if r["threads"] == 1 and r["op"] == "get_hit"]
    if one:
        L.append("\nOne thread, GET hit, × the null store of the same run (`x_null`): %s.\n" %
                 ", ".join("%s %.2f×" % (r["system"].replace("xdpkv/", ""), r["x_null"])
                           for r in one if r.get("x_null")))
    val = {r["system"]: r.get("validated_replies") for r in rr}
    L.append("\nCells: ns per request (%s), then at N threads the ratio to the same system's "
             "one thread (1.00× = no slowdown; its range: each repetition over the one-thread "
             "median). *busy*: shared-key SETs that found the entry being written and were "
             "passed to the slow path (a correct answer, not an error). Replies validated before "
             "timing: %s. Per-repetition numbers, p50, the null store's ns in the same run "
             "(`null_ns`) and `live_items`: results.json / results.csv; the microbenchmark's own "
             "JSON: logs/microbench-LAYOUT.json.\n" % (
                 "median of --repeat repetitions, min–max" if rep_ else "one repetition",
                 ", ".join("%s %s" % (s.replace("xdpkv/", ""), num(v)) for s, v in val.items())))


def generic_table(rows):
    skip = {"experiment", "tool", "label", "kvexp"}
    cols = ["system"]
    for r in rows:
        for k, v in r.items():
            if k not in skip and k not in cols and not isinstance(v, (dict, list)):
                cols.append(k)
    body = [[num(r.get(c), "%.4g") if isinstance(r.get(c), float) else num(r.get(c), "%d")
             if isinstance(r.get(c), int) else num(r.get(c)) for c in cols] for r in rows]
    return table(cols, body)


def md_k(res, L):
    pts = rows_of(res, "k", "server")
    if not pts:
        return
    body = [[r["system"], num(r.get("items")), num(r.get("snapshot_s"), "%.3f"),
             num(r.get("restore_s"), "%.3f"),
             num(r["file_bytes"] / 1e6, "%.1f") if r.get("file_bytes") else "–"] for r in pts]
    L.append(table(["system", "items", "snapshot / BGSAVE s", "restore / load s", "file MB"], body))


NOTES["o"], NOTES["p"] = bmc.NOTE, clientmix.NOTE
MD = {"a": md_a, "b": md_b, "c": md_c, "d": md_d, "e": md_e, "f": md_f, "g": md_g, "h": md_h,
      "i": md_i, "j": md_j, "k": md_k, "l": md_l,
      "m": lambda res, L: hitratio.md(res, L, table),
      "n": lambda res, L: tcpscale.md(res, L, table), "o": bmc.md_o, "p": clientmix.md}
PNG = {"a": "a_throughput.png", "b": "b_latency.png", "c": "c_write_ratio.png",
       "d": "d_sizes.png", "e": "e_scan.png", "f": "f_memory.png", "g": "g_lost.png",
       "h": "h_cpu.png", "i": "i_paths.png", "j": "j_scaling.png", "l": "l_microbench.png",
       "m": hitratio.PNG, "n": tcpscale.PNG, "o": bmc.PNG, "p": clientmix.PNG}


def write_md(path, res, pngs, plot_note):
    from experiments import EXP_TITLES
    c, m, t = res["config"], res["machine"], res["testbed"]
    L = ["# xdpkv compare — %s run, %s\n\n" % (res["mode"], res["date"])]
    took = ""
    if res.get("seconds_to_report") is not None:
        took = " (%s s from the start of xdpkv compare to this report, testbed set-up included; " \
               "estimated %s s at the start)" % (res["seconds_to_report"], res["estimated_seconds"])
    L.append("Status: **%s**, %s s measuring%s. Command: `%s`.\n\n" % (
        res["status"], res["wall_seconds"], took, res["command"]))
    headline.md(res, L)
    L.append("\n## The run\n\n")
    la = lambda k: ", ".join("%.2f" % x for x in m.get(k) or []) or "?"  # noqa: E731
    L.append("Machine: %s CPUs, %s, kernel %s, %.0f GiB. " % (
        m.get("nproc"), m.get("cpu_model"), m.get("kernel"), (m.get("memory_bytes") or 0) / 2**30))
    if m.get("date_start"):
        L.append("Started %s, load average %s; ended %s, load average %s.\n" % (
            m["date_start"], la("loadavg_at_start"), m.get("date_end") or "?",
            la("loadavg_at_end")))
    else:  # results.json of a compare before the fix: both taken at the end
        L.append("Date %s and load average %s, both taken at the end of the run (this "
                 "results.json is from a compare that recorded no start).\n" % (
                     res["date"], la("loadavg_at_end")))
    L.append("Packages: %s.\n\n" % ", ".join("%s %s" % (k, v) for k, v in m["packages"].items()
                                             if v))
    L.append("Testbed: server %s; client %s.\n\n" % (t["server"], t["client"]))
    for p in t["placement"]:
        L.append("- %s\n" % p)
    wl = c.get("workload", "fixed")
    sizes = ("%s-byte keys, %s-byte values" % (c["base_key_size"], c["base_value_size"])
             if wl == "fixed" else "**workload %s**: each key's key and value size from a "
             "production study (docs/compare.md, \"Workloads\"); the sizes in the experiments' "
             "notes below do not apply" % wl)
    L.append("\nWorkload defaults: %s keys (%s, %s%% sets), "
             "%s s measured after %s s warm-up per point; every server preloaded with every "
             "key; xdpkv: native XDP, entries = %s.\n\n" % (
                 c["keys"], sizes, c["base_write_ratio"],
                 c["duration"], c["warmup"], c["entries"]))
    L.append(CONTEXT.format(nproc=m.get("nproc"), scpu=t["server_cpu"], ccpu=t["client_cpu"]))
    for l, why in (c.get("skipped_layouts") or {}).items():
        L.append("\nNot run: layout %s, which this kernel (%s) cannot hold: %s.\n" % (
            l, m.get("kernel"), why))
    if res["notes"] or res["errors"] or plot_note:
        L.append("\n## Notes and errors\n\n")
        for n in res["notes"]:
            L.append("- note: %s\n" % n)
        for e in res["errors"]:
            L.append("- **error**: %s\n" % e)
        if plot_note:
            L.append("- note: %s\n" % plot_note)
    fmt = dict(keys=c["keys"], socket=SOCKET, xdpgen=XDPGEN,
               base="%d-byte keys, %d-byte values, %d%% sets" % (c["base_key_size"],
                                                                c["base_value_size"],
                                                                c["base_write_ratio"]),
               base_kv="%d-byte keys, %d-byte values" % (c["base_key_size"],
                                                         c["base_value_size"]),
               write=c["base_write_ratio"], ref=c.get("reference_system") or "memcached-udp",
               refmax=num(c.get("reference_max")), scan_len=c.get("scan_len"),
               entries=c["entries"])
    for e in c["experiments"]:
        L.append("\n## (%s) %s\n\n" % (e, EXP_TITLES[e]))
        L.append("*What this measures:* " + NOTES[e].format(**fmt) + "\n\n")
        n0 = len(L)
        MD[e](res, L)
        if len(L) == n0:
            L.append("No measurements (see the notes and errors above).\n")
        if PNG.get(e) in pngs:
            L.append("\n![%s](%s) ([SVG](%s))\n" % (EXP_TITLES[e], PNG[e], svg_name(PNG[e])))
    with open(path, "w") as f:
        f.write("".join(L))


def write_all(outdir, res):
    """Writes results.json (the headline first), results.csv, the plots and
    report.md; returns results.json's content."""
    hl = headline.build(res)
    res = dict([("headline", hl)] + [(k, v) for k, v in res.items() if k != "headline"])
    # the numbers first: plotting is the slow part
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    write_csv(os.path.join(outdir, "results.csv"), res["rows"])
    pngs, plot_note = [], None
    try:
        pngs, plot_note = plot_all(res, outdir)
    except Exception as e:  # noqa: BLE001 - a plot must not lose the numbers
        plot_note = "plotting failed: %r" % e
    res["plots"] = pngs
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    write_csv(os.path.join(outdir, "results.csv"), res["rows"])
    write_md(os.path.join(outdir, "report.md"), res, pngs, plot_note)
    return res
