#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""kvexp_smoke: run every xkv-kvexp subcommand at tiny sizes and check that
its JSON has the expected fields and values that follow from each layout's
contract.  Usage: check_kvexp.py PATH/TO/xkv-kvexp.  Exit 77 when not root."""
import json
import subprocess
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def run(tool, args):
    p = subprocess.run([tool] + args + ["--json"], capture_output=True, text=True, timeout=300)
    if p.returncode == 77:
        print(p.stderr.strip())
        sys.exit(77)
    if p.returncode != 0:
        print(p.stderr)
        sys.exit("xkv-kvexp %s exited %d" % (" ".join(args), p.returncode))
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        print(p.stdout)
        sys.exit("xkv-kvexp %s: not JSON: %s" % (" ".join(args), e))
    for f in ("tool", "subcommand", "machine", "params", "results"):
        check(f in doc, "%s: top-level field %s" % (args[0], f))
    check(doc.get("subcommand") == args[0], "%s: subcommand field" % args[0])
    for f in ("nproc", "cpu_model", "kernel", "date"):
        check(f in doc.get("machine", {}), "%s: machine.%s" % (args[0], f))
    return doc


def row(doc, **match):
    rows = [r for r in doc["results"] if all(r.get(k) == v for k, v in match.items())]
    check(len(rows) == 1, "exactly one result row for %s (got %d)" % (match, len(rows)))
    return rows[0] if rows else {}


def check_memory(tool):
    items = 4096
    doc = run(tool, ["memory", "--items", str(items), "--key-sizes", "64", "--value-sizes", "128",
                     "--fills", "10,50,95"])
    fields = ("layout", "alloc", "key_size", "value_size", "capacity", "items", "fill_pct", "live",
              "map_bytes", "bytes_per_item", "raw_bytes_per_item", "overhead_x")
    for r in doc["results"]:
        for f in fields:
            check(f in r, "memory row field %s" % f)
        check(r["raw_bytes_per_item"] == 64 + 128, "memory raw bytes = key + value")
        check(r["map_bytes"] > 0, "memory %s %s: map_bytes > 0" % (r["layout"], r["alloc"]))
        check(r["bytes_per_item"] > r["raw_bytes_per_item"],
              "memory %s %s fill %d: %.1f bytes/item > raw %d" % (
                  r["layout"], r["alloc"], r["fill_pct"], r["bytes_per_item"],
                  r["raw_bytes_per_item"]))
    for layout in ("hash_map", "array_fnv", "lru", "percpu", "lru_percpu", "set_assoc", "sieve", "s3fifo"):
        r = row(doc, layout=layout, alloc="prealloc")
        check(r.get("items") == items and r.get("capacity") == items,
              "memory %s: filled with capacity items" % layout)
    # hash_map without preallocation grows with the items stored
    np = [row(doc, layout="hash_map", alloc="no_prealloc", fill_pct=f) for f in (10, 50, 95, 100)]
    sizes = [r.get("map_bytes", 0) for r in np]
    check(sizes == sorted(sizes) and sizes[0] < sizes[-1],
          "memory hash_map no_prealloc grows with fill: %s" % sizes)
    pre = row(doc, layout="hash_map", alloc="prealloc")
    check(pre.get("map_bytes_empty") == pre.get("map_bytes"),
          "memory hash_map prealloc: same memory empty and full")
    # percpu keeps a value copy per possible CPU
    # percpu and lru_percpu keep a value copy per possible CPU
    pc = row(doc, layout="percpu", alloc="prealloc")
    lpc, lr = row(doc, layout="lru_percpu", alloc="prealloc"), row(doc, layout="lru", alloc="prealloc")
    if doc["machine"].get("possible_cpus", 1) > 1:
        check(pc.get("map_bytes", 0) > pre.get("map_bytes", 0),
              "memory percpu > hash_map with several CPUs")
        check(lpc.get("map_bytes", 0) > lr.get("map_bytes", 0),
              "memory lru_percpu > lru with several CPUs")


def check_lost(tool):
    cap = 4096
    doc = run(tool, ["lost", "--capacity", str(cap), "--ratios", "0.5,1.0,1.5"])
    for r in doc["results"]:
        check(r["keys"] == round(r["ratio"] * cap), "lost: keys = ratio x capacity")
        check(r["wrong"] == 0, "lost %s %.1f: no wrong replies" % (r["layout"], r["ratio"]))
        check(r["readable"] + r["missing"] + r["wrong"] == r["keys"], "lost: every key classified")
        check(r["set_stored"] + r["set_failed"] + r["set_other"] == r["keys"],
              "lost: every set classified")
        check(0 <= r["readable_share"] <= 1, "lost: share in [0, 1]")
    h5, h15 = row(doc, layout="hash_map", ratio=0.5), row(doc, layout="hash_map", ratio=1.5)
    check(h5.get("readable_share") == 1.0, "lost hash_map 0.5: all readable")
    check(h15.get("readable_share", 1) < 1.0, "lost hash_map 1.5: not all readable")
    check(h15.get("set_failed", 0) > 0, "lost hash_map 1.5: set failures (SERVER_ERROR)")
    check(h15.get("readable") == h15.get("set_stored"),
          "lost hash_map 1.5: every stored key stays readable (authoritative)")
    for layout in ("lru", "lru_percpu"):
        for ratio in (0.5, 1.0, 1.5):
            lr = row(doc, layout=layout, ratio=ratio)
            check(lr.get("set_failed", 1) == 0 and lr.get("set_other", 1) == 0,
                  "lost %s %.1f: sets never fail" % (layout, ratio))
        l15 = row(doc, layout=layout, ratio=1.5)
        check(l15.get("readable_share", 1) < 1.0, "lost %s 1.5: not all readable" % layout)
        check(l15.get("evictions", 0) > 0, "lost %s 1.5: evictions counted" % layout)
    a1 = row(doc, layout="array_fnv", ratio=1.0)
    check(a1.get("overwrites", 0) > 0, "lost array_fnv 1.0: overwrites > 0")
    check(a1.get("readable_share", 1) < 1.0, "lost array_fnv 1.0: collisions lose keys")
    s5, s1, s15 = (row(doc, layout="set_assoc", ratio=r) for r in (0.5, 1.0, 1.5))
    check(s5.get("readable_share", 0) > 0.99, "lost set_assoc 0.5: (almost) every key readable")
    check(s1.get("readable_share", 0) > a1.get("readable_share", 1),
          "lost set_assoc 1.0: keeps more than array_fnv (ways absorb collisions)")
    check(s15.get("overwrites", 0) > 0 and s15.get("set_failed", 1) == 0,
          "lost set_assoc 1.5: evicts (counted), never refuses")


def check_stale(tool):
    doc = run(tool, ["stale", "--layout", "percpu", "--keys", "512", "--rounds", "2"])
    check(doc["params"].get("steering") == "test_run on pinned CPUs", "stale: steering field")
    p, h = row(doc, layout="percpu"), row(doc, layout="hash_map")
    for r in (p, h):
        check(r.get("reads") == 512 * 2, "stale %s: reads = keys x rounds" % r.get("layout"))
        check(r.get("wrong") == 0, "stale %s: no wrong replies" % r.get("layout"))
        check(r.get("userspace_newest") == r.get("reads"),
              "stale %s: userspace reads the newest copy" % r.get("layout"))
    check(p.get("stale_rate", 0) > 0, "stale percpu: stale rate > 0")
    check(h.get("stale_rate", 1) == 0 and h.get("fresh") == h.get("reads"),
          "stale hash_map (control): stale rate 0")
    check(doc["params"].get("pattern") == "split" and p.get("reads_other_cpu") == p.get("reads"),
          "stale split: every get on the other CPU")
    # random steering: a get is stale exactly when another CPU served the set
    doc = run(tool, ["stale", "--keys", "256", "--rounds", "2", "--steering", "random"])
    p, h = row(doc, layout="percpu"), row(doc, layout="hash_map")
    check(0 < p.get("reads_other_cpu", 0) < p.get("reads", 0),
          "stale random: some gets on each CPU")
    check(p.get("stale") == p.get("reads_other_cpu"),
          "stale random percpu: stale reads = reads on the other CPU")
    check(h.get("stale") == 0 and h.get("wrong") == 0, "stale random hash_map: stale 0")
    # lru_percpu has percpu's copies: a get on the other CPU is stale too
    doc = run(tool, ["stale", "--layout", "lru_percpu", "--keys", "256", "--rounds", "2"])
    p = row(doc, layout="lru_percpu")
    check(p.get("wrong") == 0 and p.get("userspace_newest") == p.get("reads"),
          "stale lru_percpu: no wrong replies, userspace reads the newest copy")
    check(p.get("stale") == p.get("reads_other_cpu") == p.get("reads"),
          "stale split lru_percpu: every get on the other CPU is stale")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    tool = sys.argv[1]
    check_memory(tool)
    check_lost(tool)
    check_stale(tool)
    if failures:
        sys.exit("%d checks failed" % len(failures))
    print("kvexp_smoke: all checks passed")


if __name__ == "__main__":
    main()
