#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check an 'xdpkv compare' output directory (the compare_smoke test):

  check.py DIR --layouts L,... --baselines B,... [--experiments a,h,i | j | l]

Fails unless DIR has results.json, results.csv, report.md and at least one
PNG that the report links with an SVG beside it, the run completed without
errors, the machine and its start and end (date, load average) are recorded,
and, with a,h,i (default), every layout and baseline asked for has an
end-to-end throughput number > 0 from experiment (a) with no wrong values,
plus a CPU-per-request figure (h) and, for the layouts, a fast/slow path
split (i) that adds up; where the in-kernel generator ran, the reflector and
the null store beside them.  With j: every layout, the reflector and the null
store have a capacity > 0 at every core count and mix, the NAPI threads that
did the work are as many as the cores, and the report gives the ratios.
With l: the null store and every layout have a microbenchmark point for
GET hit and SET at every thread count recorded (disjoint keys, and shared
keys above one thread), each with ns per request > 0, as many repetitions as
--repeat asked for, and replies the microbenchmark validated before timing;
the report has its table and plot.
With p: every row the run asked for (config client_rows) has, per sitting,
memcached's and xdpkv's line from bench/clients/clients.sh: checks passed,
requests/s and server CPU per request > 0, the unseen share, xdpkv's share
in XDP; or both skipped with the reason; the report has a table per row with
those requests/s (or the reason) and shows p_clients.png.
With m: every layout has a hit ratio at every budget and distribution the
run's settings name, with one value per seed, mean/sd/min/max consistent
with them, hits per MiB that follow from them, the map within its budget, a
reference model for every point and, for layouts whose reference simulates
their exact placement and policy (all but the LRU maps), agreement within
its tolerance; Zipf 0.99 hits more than uniform; the largest budget more than
the smallest; the report has the table, the agreement and the figure.
Always: the headline, every cell against the row it comes from
(check_headline.py).
"""
import argparse
import fractions
import json
import os
import re
import sys

import check_headline
from bmc import O_QUICK_LAYOUTS


def check_bmc(rows, md, systems, need):
    """(o): every system at both mixes, 32-byte values, with replies, no wrong
    values, five runs and their spread; BMC's rows with its own counters
    (most GETs answered in XDP at 100 % gets), its value-limit probe, and the
    report's table and the list of where BMC does not take part."""
    o = [r for r in rows if r.get("experiment") == "o"]
    for s in systems:
        for w in (10, 0):
            rr = [r for r in o if r["system"] == s and r.get("write") == w and
                  not r.get("limit_probe")]
            ok = len(rr) == 1 and rr[0].get("value_size") == 32 and \
                (rr[0].get("throughput_ops") or 0) > 0 and not rr[0].get("wrong_values") and \
                len(rr[0].get("throughput_runs") or []) == 5
            need(ok, "(o) %s at %d %% sets: replies, no wrong values, 5 runs (%s)" % (
                s, w, rr and {k: rr[0].get(k) for k in ("throughput_ops", "wrong_values",
                                                        "throughput_runs")}))
            if ok and s == "bmc":
                need((rr[0].get("bmc_gets") or 0) > 0 and rr[0].get("xdp_share") is not None and
                     (w or rr[0]["xdp_share"] > 0.5),
                     "(o) bmc at %d %% sets: its counters read, share in XDP %s" % (
                         w, rr[0].get("xdp_share")))
    if "bmc" in systems:
        pr = [r for r in o if r["system"] == "bmc" and r.get("limit_probe")]
        need(len(pr) == 1 and pr[0].get("value_size") == 128,
             "(o) BMC's value limit probed at 128-byte values")
        need("Where BMC does not take part" in md and "÷ BMC" in md,
             "report.md has (o)'s table and where BMC does not take part")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--layouts", required=True)
    ap.add_argument("--baselines", required=True)
    ap.add_argument("--experiments", default="a,h,i")
    a = ap.parse_args()
    bad = []
    need = check_headline.needer(bad)
    for f in ("results.json", "results.csv", "report.md"):
        need(os.path.isfile(os.path.join(a.dir, f)), "%s exists" % f)
    if bad:
        return 1
    with open(os.path.join(a.dir, "results.json")) as f:
        res = json.load(f)
    with open(os.path.join(a.dir, "report.md")) as f:
        md = f.read()
    pngs = [p for p in os.listdir(a.dir) if p.endswith(".png")]
    need(len(pngs) >= 1, "at least one PNG (%s)" % ", ".join(sorted(pngs)))
    need(all(("](%s)" % p) in md for p in pngs), "report.md links every PNG")
    need(all(os.path.getsize(os.path.join(a.dir, p)) > 5000 for p in pngs),
         "every PNG has content (> 5 kB)")
    need(all(os.path.isfile(os.path.join(a.dir, p[:-4] + ".svg")) for p in pngs),
         "an SVG beside every PNG")
    need(res.get("status") == "complete", "status complete (%s)" % res.get("status"))
    need(not res.get("errors"), "no errors (%s)" % "; ".join(res.get("errors") or []))
    m = res.get("machine", {})
    for k in ("nproc", "cpu_model", "kernel", "packages", "date_start", "date_end",
              "loadavg_at_start", "loadavg_at_end"):
        need(m.get(k), "machine.%s recorded" % k)
    need(m.get("date_start", "~") <= m.get("date_end", ""), "the run starts before it ends")
    need(res.get("testbed", {}).get("server_cpu") is not None, "testbed placement recorded")
    rows = res.get("rows", [])
    # layouts this kernel cannot hold: compare skipped them, with the reason
    skipped = res.get("config", {}).get("skipped_layouts") or {}
    a.layouts = ",".join(l for l in a.layouts.split(",") if l and l not in skipped)
    check_headline.check(res, md, need)
    if "j" in a.experiments:
        check_scaling(res, rows, md, [l for l in a.layouts.split(",") if l], need)
    if "l" in a.experiments:
        check_microbench(res, rows, md, [l for l in a.layouts.split(",") if l], need)
    if "m" in a.experiments:
        check_hitratio(res, rows, md, [l for l in a.layouts.split(",") if l], need)
        check_hitratio_head(rows, ["xdpkv/" + l for l in a.layouts.split(",") if l] +
                            [b for b in a.baselines.split(",") if b in ("memcached-udp",
                                                                       "memcached-tcp", "redis")],
                            need)
    if "n" in a.experiments:
        check_tcpscale(rows, md, [b for b in a.baselines.split(",") if b], need)
    if "p" in a.experiments:
        check_clientmix(res, rows, md, need)
    if "g" in a.experiments:
        for s in [b for b in a.baselines.split(",") if b in ("memcached-udp", "memcached-tcp",
                                                               "redis")]:
            rr = [r for r in rows if r["experiment"] == "g" and r["system"] == s]
            need(len(rr) == 1 and rr[0]["capacity"] > 0 and
                 rr[0]["keys"] == int(rr[0]["ratio"] * rr[0]["capacity"]) and
                 rr[0]["readable"] + rr[0]["missing"] == rr[0]["keys"] and
                 0 <= rr[0]["readable_share"] <= 1,
                 "(g) %s: filled under its memory limit, %sx that set and read back (%s)" % (
                     s, rr and rr[0].get("ratio"), rr and {k: rr[0].get(k) for k in (
                         "capacity", "keys", "readable", "missing")}))
    if "o" in a.experiments:  # a quick run: (o) for bmc.O_QUICK_LAYOUTS of the layouts
        ol = [l for l in a.layouts.split(",") if l]
        if res.get("mode") == "quick" and set(ol) & set(O_QUICK_LAYOUTS):
            ol = [l for l in ol if l in O_QUICK_LAYOUTS]
        check_bmc(rows, md, ["xdpkv/" + l for l in ol] +
                  [b for b in a.baselines.split(",") if b in ("memcached-udp", "bmc")], need)
    a.baselines = ",".join(b for b in a.baselines.split(",") if b != "bmc")  # (o) only
    if "b" in a.experiments:
        check_latency(res, rows, md, ["xdpkv/" + l for l in a.layouts.split(",") if l] +
                      [b for b in a.baselines.split(",") if b], need)
    if not set("ahi") & set(a.experiments):
        print("%d check(s) failed" % len(bad) if bad else "all checks passed")
        return 1 if bad else 0
    systems = ["xdpkv/" + l for l in a.layouts.split(",") if l] + \
        [b for b in a.baselines.split(",") if b]
    for s in systems:
        a_rows = [r for r in rows if r["system"] == s and r["experiment"] == "a" and
                  r["tool"] == "loadgen"]
        tp = [r.get("throughput_ops") or 0 for r in a_rows]
        need(a_rows and all(t > 0 for t in tp), "%s: throughput > 0 in (a) (%s)" % (s, tp))
        need(all((r.get("hits") or 0) > 0 for r in a_rows), "%s: gets hit in (a)" % s)
        need(all(not r.get("wrong_values") for r in a_rows), "%s: no wrong values" % s)
        h = [r for r in rows if r["system"] == s and r["experiment"] == "h"]
        if "h" in a.experiments:
            need(h and all((r.get("server_cpu_us_per_req") or 0) > 0 for r in h),
                 "%s: CPU per request > 0 in (h)" % s)
        if s.startswith("xdpkv/"):
            need(all((r.get("xdp_ns_per_run") or 0) > 0 for r in h),
                 "%s: XDP program time from bpf_stats > 0" % s)
            for r in a_rows:
                f, sl, sh = r.get("fast_served"), r.get("slow_served"), r.get("fast_share")
                need(f is not None and sl is not None and f + sl > 0 and
                     abs(sh - f / (f + sl)) < 1e-3,
                     "%s: fast/slow split recorded and consistent (%s/%s)" % (s, f, sl))
    xg = [r for r in rows if r["experiment"] == "a" and r["tool"] == "xdpgen"]
    if xg:
        for c in ("reflector", "xdpkv/null"):
            tp = [r.get("throughput_ops") or 0 for r in xg if r["system"] == c]
            need(tp and all(t > 0 for t in tp), "%s: capacity > 0 beside the layouts (%s)" % (c, tp))
        need("× reflector" in md or "×)" in md, "report.md gives the layouts as a ratio to the reflector")
    print("%d check(s) failed" % len(bad) if bad else "all checks passed")
    return 1 if bad else 0


def check_latency(res, rows, md, systems, need):
    """(b): every system at every load, the reflector's floor beside them
    (its echoes received), the low-floor client mode for every UDP system and
    the floor, latencies in range, and every row's drops per stage recorded."""
    from experiments import HEADLINE_FRACTION, LOW_CLIENT, LOW_FRACTION
    import losses
    b = [r for r in rows if r["experiment"] == "b"]
    fr = sorted({r["fraction"] for r in b if not r.get("client")})  # the default client's loads
    need(HEADLINE_FRACTION in fr, "(b) runs at the common load %s (%s)" % (HEADLINE_FRACTION, fr))
    for s in systems + ["reflector"]:
        udp = s.startswith("xdpkv/") or s in ("memcached-udp", "reflector")
        for mode in (None, LOW_CLIENT) if udp else (None,):
            for f in fr if mode is None else (LOW_FRACTION,):
                rr = [r for r in b if r["system"] == s and r.get("client") == mode and
                      r["fraction"] == f]
                what = "(b) %s, %s client, %.0f %%" % (s, mode or "default", 100 * f)
                need(len(rr) == 1 and (rr[0].get("ops") or 0) > 0,
                     "%s: one row, replies received (%s)" % (what, [r.get("ops") for r in rr]))
                need(rr and 0 < (rr[0].get("lat_p50_us") or 0) <= (rr[0].get("lat_p99_us") or 0)
                     < 1e6, "%s: 0 < p50 <= p99 < 1 s (%s / %s)" % (
                         what, rr and rr[0].get("lat_p50_us"), rr and rr[0].get("lat_p99_us")))
                need(rr and sorted((rr[0].get("lost_at") or {})) == sorted(losses.STAGES),
                     "%s: drops recorded at every stage" % what)
                if rr:  # every run of the point: each unanswered request has a stage
                    r = rr[0]
                    las = r.get("lost_at_runs") or [r.get("lost_at")]
                    ts = r.get("timeouts_runs") or [r.get("timeouts")]
                    # all but a few: a reply that comes after its request's
                    # timeout *and* after the generator stopped reading is
                    # counted by no stage (hypothesis, seen only on a loaded
                    # machine: 20 of 783 with the whole suite running)
                    need(len(las) == len(ts) and all(
                        losses.unattributed(la or {}, t) <= max(10, (t or 0) // 20)
                        for la, t in zip(las, ts)),
                         "%s: every unanswered request attributed to a stage, all but 5 %% "
                         "(timeouts %s, drops %s)" % (what, ts, [sum((la or {}).values()) for la in las]))
    need("testbed's floor" in md and "Client mode %s" % LOW_CLIENT in md,
         "report.md has (b)'s floor and the %s client's table" % LOW_CLIENT)
    if any(r.get("timeouts") for r in b):
        need("Where unanswered requests were dropped" in md, "report.md says where the "
             "unanswered requests were dropped")


def check_tcpscale(rows, md, systems, need):
    """(n): a row per system and thread count from bench/tcpscale.sh, each
    with its validation passed, the client named, rates and CPU > 0."""
    n = [r for r in rows if r["experiment"] == "n"]
    threads = sorted({r["threads"] for r in n})
    need(threads and threads[0] == 1, "(n) thread counts from 1 (%s)" % threads)
    for s in systems:
        for t in threads:
            rr = [r for r in n if r["system"] == s and r["threads"] == t]
            need(len(rr) == 1 and rr[0].get("ok") is True, "(n) %s, %d threads: a row, its checks passed" % (s, t))
            need(rr and (rr[0].get("throughput_ops") or 0) > 0 and (rr[0].get("server_cpu_us_per_req") or 0) > 0,
                 "(n) %s, %d threads: requests/s and server CPU per request > 0" % (s, t))
            want = "redis-benchmark" if s == "redis" else "memaslap"
            need(rr and rr[0].get("client") == want, "(n) %s: client %s" % (s, want))
            if s == "xdpkv-tcp-kernel":
                need(rr and (rr[0].get("kernel_share") or 0) + (rr[0].get("xdp_share") or 0) > 0,
                     "(n) the kernel (XDP or the verdict) answered some requests")
            if s == "xdpkv-tcp":
                need(rr and rr[0].get("kernel_share") == 0 and not rr[0].get("xdp_share"),
                     "(n) --no-xdp-tcp --no-tcp-fast-path: the kernel answered none")
    need("n_tcpscale.png" in md, "(n) report.md shows n_tcpscale.png")


def check_clientmix(res, rows, md, need):
    """(p): see the module's docstring."""
    import clientmix
    from results import num
    want = res.get("config", {}).get("client_rows") or []
    need(want, "(p) the rows asked for are recorded (config client_rows)")
    ss = clientmix.sittings(res)
    measured = False
    for row in want:
        pts = ss.get(row) or []
        need(pts, "(p) %s: rows from bench/clients/clients.sh" % row)
        sec = md.split("### %s\n" % row, 1)[1].split("\n#", 1)[0] if "### %s\n" % row in md else ""
        need(sec, "(p) report.md has a section for %s" % row)
        for k, m, x in pts:
            what = "(p) %s, sitting %s" % (row, k)
            need(m and x, "%s: memcached's and xdpkv's lines" % what)
            if not (m and x):
                continue
            if m.get("skipped") or x.get("skipped"):
                need(m.get("skipped") and x.get("skipped") and "Not run: %s" % x["skipped"] in sec,
                     "%s: skipped, the reason in the report (%s)" % (what, x.get("skipped")))
                continue
            measured = True
            for r in (m, x):
                need(r.get("ok") is True and (r.get("req_per_s") or 0) > 0 and
                     (r.get("server_us_per_req") or 0) > 0 and
                     r.get("segs_unseen_share") is not None,
                     "%s, %s: checks passed, req/s, CPU per request, unseen share (%s)" % (
                         what, r.get("server"), {f: r.get(f) for f in (
                             "ok", "req_per_s", "server_us_per_req", "segs_unseen_share",
                             "error")}))
                need("| %s |" % num(r.get("req_per_s")) in sec,
                     "%s, %s: its req/s %s in the report's table" % (what, r.get("server"),
                                                                     num(r.get("req_per_s"))))
            need(x.get("xdp_share") is not None, "%s: xdpkv's share answered in XDP" % what)
    if measured:
        need("](%s)" % clientmix.PNG in md, "(p) report.md shows %s" % clientmix.PNG)


def check_scaling(res, rows, md, layouts, need):
    sc = res.get("testbed", {}).get("scaling") or {}
    counts = sc.get("core_counts") or []
    need(counts and counts[0] == 1, "(j) core counts recorded, from 1 (%s)" % counts)
    j = [r for r in rows if r["experiment"] == "j"]
    for s in ["reflector", "xdpkv/null"] + ["xdpkv/" + l for l in layouts]:
        for n in counts:
            for mix in ("read", "write", "zipf", "hotkey"):
                rr = [r for r in j if r["system"] == s and r["cores"] == n and r["mix"] == mix]
                need(len(rr) == 1 and (rr[0].get("throughput_ops") or 0) > 0,
                     "(j) %s, %d cores, %s: capacity > 0" % (s, n, mix))
                # never more queues than cores; none at all is a run too light for
                # the clock's 10 ms ticks (the reflector's sub-second smoke runs on a
                # busy machine got 0 ticks): the report marks it, the check lets it be
                q = rr[0].get("queues_busy") if rr else None
                need(q == n or (q == 0 and s == "reflector"),
                     "(j) %s, %d cores, %s: %s NAPI threads did the work" % (s, n, mix, q))
                need(rr and not rr[0].get("errors"), "(j) %s, %d cores, %s: no error replies"
                     % (s, n, mix))
    need("the ratio to the reflector" in md and re.search(r"\(\d+\.\d\d×", md) and
         "j_scaling.png" in md,
         "report.md has (j) with the ratios and its plot")


def check_hitratio_head(rows, systems, need):
    """The headline's hit ratio point: one row per system, every seed's
    sequence the same for every system (hitratio.c's checksum, regenerated in
    Python for the baselines), no wrong value, the budget a quarter of the
    working set."""
    hh = [r for r in rows if r["experiment"] == "m" and r.get("point") == "headline"]
    fnv = {}
    for s in systems:
        rr = [r for r in hh if r["system"] == s]
        need(len(rr) == 1, "(m) headline point: one row for %s (%d)" % (s, len(rr)))
        if len(rr) != 1:
            continue
        r = rr[0]
        need(r.get("wrong") == 0 and len(r.get("seeds") or []) >= 3 and
             all(0 <= x["hit_ratio"] <= 1 and x["hits"] + x["misses"] == x.get("requests")
                 for x in r["seeds"]) and r.get("hit_ratio") in r.get("hit_ratio_runs", []),
             "(m) headline %s: >= 3 seeds, hits + misses = requests, no wrong value, the "
             "median seed's hit ratio (%s)" % (s, r.get("hit_ratio_runs")))
        need(r.get("budget_bytes") and abs(4 * r["budget_bytes"] - r["working_set_bytes"]) < 4,
             "(m) headline %s: the budget is 1/4 of the working set (%s of %s B)" % (
                 s, r.get("budget_bytes"), r.get("working_set_bytes")))
        for x in r.get("seeds") or []:
            fnv.setdefault(x["seed"], set()).add(x.get("trace_fnv"))
    need(fnv and all(len(v) == 1 for v in fnv.values()),
         "(m) headline: every system got the same request sequence per seed (%s)" % fnv)


def check_hitratio(res, rows, md, layouts, need):
    h = res.get("config", {}).get("hitratio") or {}
    budgets = [b for b in h.get("budgets", "").split(",") if b]
    dists = [("uniform" if d == "uniform" else "zipf%g" % float(d))
             for d in h.get("dists", "").split(",") if d]
    nseeds = len([x for x in h.get("seeds", "").split(",") if x])
    need(budgets and dists and nseeds >= 3, "(m) budgets, distributions and >= 3 seeds recorded")
    hr = res.get("hitratio") or {}
    need(hr.get("simulator") and hr.get("points"), "(m) simulators and points in results.json")
    m = [r for r in rows if r["experiment"] == "m" and r.get("point") != "headline"]
    wb = (hr.get("params") or {}).get("working_set_bytes") or 0
    # exact models: the layout's own placement and policy (LRU maps excepted:
    # the kernel's LRU is an approximation, its agreement is reported only)
    lru = ("lru", "lru_percpu", "lru_no_common_lru")
    for l in layouts:
        s = "xdpkv/" + l
        for b in budgets:
            for d in dists:
                what = "(m) %s %s %s" % (l, b, d)
                rr = [r for r in m if r["system"] == s and r["budget"] == b and r["dist"] == d]
                need(len(rr) == 1, "%s: one point (%d)" % (what, len(rr)))
                if len(rr) != 1:
                    continue
                r = rr[0]
                runs = r.get("hit_ratio_runs") or []
                mean = sum(runs) / len(runs) if runs else -1
                need(len(runs) == nseeds and all(0 <= x <= 1 for x in runs),
                     "%s: a hit ratio in [0, 1] per seed (%s)" % (what, runs))
                need(abs(mean - r["hit_ratio"]) < 1e-5 and
                     r["hit_ratio_min"] == min(runs) and r["hit_ratio_max"] == max(runs) and
                     r["hit_ratio_sd"] >= 0, "%s: mean, min, max, sd follow from the seeds" % what)
                req = (h.get("requests") or 0) * (h.get("keys") or 0)
                want = r["hit_ratio"] * req / (r["map_bytes"] / 2 ** 20)
                need(abs(r["hits_per_mib"] - want) <= 0.001 * want + 1,
                     "%s: hits per MiB %s = hit ratio x requests / map MiB (%.1f)" %
                     (what, r["hits_per_mib"], want))
                frac = float(fractions.Fraction(b))  # "1/8" -> 0.125
                need(abs(r["budget_bytes"] - frac * wb) <= 1,
                     "%s: budget %s bytes = %s of the working set %s" % (what, r["budget_bytes"],
                                                                         b, wb))
                need(r.get("reference") and r.get("reference_hit_ratio") is not None,
                     "%s: a reference model" % what)
                if l not in lru:
                    need(r.get("within"), "%s: |kernel %.4f - %s %.4f| <= %.3f" % (
                        what, r["hit_ratio"], r.get("reference"), r.get("reference_hit_ratio"),
                        r.get("tolerance")))
        pts = {(r["budget"], r["dist"]): r["hit_ratio"] for r in m if r["system"] == s}
        if len(budgets) > 1 and "zipf0.99" in dists and "uniform" in dists:
            for b in budgets:
                need(pts.get((b, "zipf0.99"), 0) > pts.get((b, "uniform"), 1),
                     "(m) %s %s: Zipf 0.99 hits more than uniform" % (l, b))
            need(pts.get((budgets[-1], dists[0]), 0) > pts.get((budgets[0], dists[0]), 1),
                 "(m) %s: the largest budget hits more than the smallest" % l)
        need(l in (hr.get("summary") or {}), "(m) %s: agreement summary" % l)
    need("**Agreement**" in md and "m_hitratio.png" in md and "hits per MiB" in md,
         "report.md has (m) with its table, the agreement and the figure")


def check_microbench(res, rows, md, layouts, need):
    mb = res.get("testbed", {}).get("microbench") or {}
    threads = mb.get("threads") or []
    need(threads and threads[0] == 1 and threads[-1] == res["machine"].get("nproc"),
         "(l) thread counts recorded, 1 to nproc (%s)" % threads)
    n = res.get("config", {}).get("repeat", 1)
    ll = [r for r in rows if r["experiment"] == "l"]
    for s in ["xdpkv/null"] + ["xdpkv/" + l for l in layouts]:
        for op in mb.get("ops") or ["get_hit", "set"]:
            for t in threads:
                for keys in ("disjoint",) if t == 1 else ("disjoint", "shared"):
                    what = "(l) %s %s, %s keys, %d thread(s)" % (s, op, keys, t)
                    rr = [r for r in ll if r["system"] == s and r["op"] == op and
                          r["keys"] == keys and r["threads"] == t]
                    need(len(rr) == 1 and (rr[0].get("ns_per_op") or 0) > 0,
                         "%s: one point, ns per request > 0 (%s)" %
                         (what, [r.get("ns_per_op") for r in rr]))
                    need(rr and (rr[0].get("validated_replies") or 0) > 0,
                         "%s: replies validated before timing" % what)
                    need(rr and (n == 1 or len(rr[0].get("ns_per_op_runs") or []) == n),
                         "%s: %d repetition(s)" % (what, n))
    need("the ratio to the same system's one thread" in md and "l_microbench.png" in md,
         "report.md has (l) with the ratios to one thread and its plot")


if __name__ == "__main__":
    sys.exit(main())
