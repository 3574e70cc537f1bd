#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""kvexp_hitratio_smoke: `xkv-kvexp hitratio --quick` on lru, array_fnv, sieve and s3fifo,
its rows checked: fields and sane ranges, the request sequence is the one
cachesim_models.py generates (trace_fnv), hit ratio rises with memory, Zipf
beats uniform, and each layout is within tolerance of its own Python
reference (exact LRU for lru, direct-mapped with the layout's keyed
placement for array_fnv, per-set SIEVE and S3-FIFO with the same placement
for sieve and s3fifo).  No PyPI package is needed (libCacheSim is the
full check's, hitratio_vs_cachesim.py).
Usage: check_hitratio.py PATH/TO/xkv-kvexp [extra hitratio args].  Exit 77 when not root."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cachesim_models as cm  # noqa: E402

# lru: the kernel's LRU approximation (per-CPU free lists, lists rotated in
# batches) against exact LRU; array_fnv: the same placement and policy, so
# only a bug separates them; sieve, s3fifo: the same.  Absolute hit-ratio difference.
TOL = {"lru": 0.06, "array_fnv": 0.005, "sieve": 0.005, "s3fifo": 0.005}
LAYOUTS = ("lru", "array_fnv", "sieve", "s3fifo")
# hit ratio may fall this much from one budget to the next larger one (seed noise)
MONO_SLACK = 0.01

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)
    return cond


def main():
    tool = sys.argv[1]
    args = [tool, "hitratio", "--quick", "--json", "--layouts", ",".join(LAYOUTS)] + sys.argv[2:]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if p.returncode == 77:
        print(p.stderr.strip())
        sys.exit(77)
    if p.returncode != 0:
        print(p.stderr)
        sys.exit("xkv-kvexp hitratio exited %d" % p.returncode)
    doc = json.loads(p.stdout)
    par = doc["params"]
    keys, klen = par["keys"], cm.key_lengths(par)
    check(doc.get("subcommand") == "hitratio", "subcommand field")
    rows = doc["results"]
    want = len(LAYOUTS) * 3 * 2
    check(len(rows) == want, "%d points (%d layouts x 3 budgets x 2 dists), got %d" % (
        want, len(LAYOUTS), len(rows)))
    for r in rows:
        tag = "%s %s %s" % (r["layout"], r["budget"], r["dist"])
        for f in ("budget_bytes", "map_bytes", "entries", "hit_ratio", "hit_ratio_sd",
                  "hits_per_mib", "seeds", "warmup", "requests"):
            check(f in r, "%s: field %s" % (tag, f))
        check(len(r["seeds"]) >= 3, "%s: at least 3 seeds" % tag)
        check(0 <= r["hit_ratio"] <= 1, "%s: hit ratio %.4f in [0, 1]" % (tag, r["hit_ratio"]))
        check(abs(r["map_bytes"] / r["budget_bytes"] - 1) <= 0.10,
              "%s: map bytes %d within 10%% of the budget %d" % (tag, r["map_bytes"], r["budget_bytes"]))
        check(r["entries"] > 0, "%s: entries" % tag)
        for s in r["seeds"]:
            check(s["wrong"] == 0, "%s seed %d: no wrong replies" % (tag, s["seed"]))
            check(s["hits"] + s["misses"] == r["requests"], "%s: hits + misses = requests" % tag)
            check(s["set_failed"] == 0 and s["set_other"] == 0, "%s: every set STORED" % tag)
        # a budget of the whole working set's raw bytes holds fewer items than keys
        check(r["entries"] < keys * 2, "%s: entries %d plausible" % (tag, r["entries"]))

    by = {}
    for r in rows:
        by.setdefault((r["layout"], r["dist"]), []).append(r)
    for (layout, dist), rs in by.items():
        rs.sort(key=lambda r: r["budget_frac"])
        for a, b in zip(rs, rs[1:]):
            check(b["hit_ratio"] >= a["hit_ratio"] - MONO_SLACK,
                  "%s %s: hit ratio rises with memory (%s %.4f -> %s %.4f)" % (
                      layout, dist, a["budget"], a["hit_ratio"], b["budget"], b["hit_ratio"]))
        check(rs[-1]["hit_ratio"] > rs[0]["hit_ratio"] + 0.05,
              "%s %s: the largest budget hits clearly more than the smallest" % (layout, dist))
    for r in rows:
        if r["dist"] != "uniform":
            u = [x for x in rows if x["layout"] == r["layout"] and x["budget"] == r["budget"]
                 and x["dist"] == "uniform"]
            if u:
                check(r["hit_ratio"] > u[0]["hit_ratio"],
                      "%s %s: Zipf beats uniform" % (r["layout"], r["budget"]))

    # the references, on the same sequences
    traces = {}
    print("%-10s %-6s %-10s %8s %8s %8s" % ("layout", "budget", "dist", "kernel", "model", "diff"))
    for r in rows:
        dist = "uniform" if r["dist"] == "uniform" else r["alpha"]
        ref_hits = []
        for s in r["seeds"]:
            k = (r["dist"], s["seed"])
            if k not in traces:
                traces[k] = cm.gen_trace(dist, keys, s["seed"], r["warmup"] + r["requests"])
            trace, fnv = traces[k]
            check(fnv == s["trace_fnv"], "%s %s seed %d: trace checksum %s = %s" % (
                r["layout"], r["dist"], s["seed"], fnv, s["trace_fnv"]))
            name, fn = [m for m in cm.models(r["layout"], r, keys, klen, False) if m[0].startswith("own")][0]
            ref_hits.append(fn(trace, r["warmup"]))
        ref = sum(ref_hits) / len(ref_hits) / r["requests"]
        diff = r["hit_ratio"] - ref
        print("%-10s %-6s %-10s %8.4f %8.4f %+8.4f  (%s)" % (r["layout"], r["budget"], r["dist"],
                                                         r["hit_ratio"], ref, diff, name))
        check(abs(diff) <= TOL[r["layout"]], "%s %s %s: |kernel %.4f - %s %.4f| <= %.3f" % (
            r["layout"], r["budget"], r["dist"], r["hit_ratio"], name, ref, TOL[r["layout"]]))
    if failures:
        sys.exit("%d check(s) failed" % len(failures))
    print("ok: %d points" % len(rows))


if __name__ == "__main__":
    main()
