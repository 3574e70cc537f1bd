#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Markdown tables from a microbench matrix run (Google Benchmark JSON with
--benchmark_report_aggregates_only=true, or per-repetition rows: medians are
taken here then).

  matrix_table.py RUN.json summary   tables for docs/results.md
  matrix_table.py RUN.json full      every cell: ns/op and x null (medians)
"""
import json
import re
import statistics
import sys
from collections import defaultdict

NAME = re.compile(r"^matrix/(\w+)/(\w+)/k(\d+)/v(\d+)/fill(\d+)/")
OPS = ["get_hit", "get_miss", "set_new", "set_overwrite", "delete"]
LAYOUTS = ["hash_map", "array_fnv", "lru", "percpu", "lru_percpu", "set_assoc", "sieve", "s3fifo"]


def load(path):
    """(op, layout, k, v, fill) -> {counter: median over repetitions}"""
    doc = json.load(open(path))
    reps = defaultdict(lambda: defaultdict(list))
    med = {}
    for b in doc["benchmarks"]:
        m = NAME.match(b["name"])
        if not m or b.get("error_occurred"):
            continue
        key = (m[1], m[2], int(m[3]), int(m[4]), int(m[5]))
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                med[key] = b
        else:
            for c in ("ns_per_op", "x_null", "p50_ns", "x_null_p50", "null_ns", "live_items"):
                reps[key][c].append(b[c])
    for key, cs in reps.items():
        med.setdefault(key, {c: statistics.median(v) for c, v in cs.items()})
    return doc, med


def cell(med, key, what="both"):
    b = med.get(key)
    if not b:
        return "–"
    if what == "x":
        return "%.2f" % b["x_null"]
    return "%d (%.2f)" % (round(b["ns_per_op"]), b["x_null"])


def summary(med):
    ks = sorted({k[2] for k in med})
    vs = sorted({k[3] for k in med})
    fs = sorted({k[4] for k in med})
    k0 = 16 if 16 in ks else ks[0]
    v0 = 128 if 128 in vs else vs[0]
    f0 = 50 if 50 in fs else fs[len(fs) // 2]
    out = []
    out.append("### Every operation, key %d B, value %d B, fill %d %% — ns/op (× null)\n" % (k0, v0, f0))
    out.append("| layout | " + " | ".join(OPS) + " |")
    out.append("| --- |" + " ---: |" * len(OPS))
    for l in LAYOUTS:
        out.append("| %s | " % l + " | ".join(cell(med, (op, l, k0, v0, f0)) for op in OPS) + " |")
    out.append("\n### Fill level: × null at key %d B, value %d B\n" % (k0, v0))
    out.append("| layout | op | " + " | ".join("fill %d %%" % f for f in fs) + " |")
    out.append("| --- | --- |" + " ---: |" * len(fs))
    for l in LAYOUTS:
        for op in OPS:
            out.append("| %s | %s | " % (l, op) + " | ".join(cell(med, (op, l, k0, v0, f), "x") for f in fs) + " |")
    for op in ("get_hit", "set_overwrite"):
        out.append("\n### %s by key and value size, fill %d %% — × null\n" % (op, f0))
        out.append("| layout | key | " + " | ".join("v%d" % v for v in vs) + " |")
        out.append("| --- | ---: |" + " ---: |" * len(vs))
        for l in LAYOUTS:
            for k in ks:
                out.append("| %s | %d | " % (l, k) + " | ".join(cell(med, (op, l, k, v, f0), "x") for v in vs) + " |")
    # the extremes, over all cells
    xs = sorted((b["x_null"], key) for key, b in med.items())
    if xs:
        out.append("\nLowest × null: %s at %.2f; highest: %s at %.2f; median over all %d cells %.2f." % (
            "/".join(map(str, xs[0][1])), xs[0][0], "/".join(map(str, xs[-1][1])), xs[-1][0],
            len(xs), statistics.median(x for x, _ in xs)))
    return "\n".join(out)


def full(med):
    out = ["| op | layout | key | value | fill | live items | ns/op | p50 ns | null ns | × null | × null (p50) |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    order = {op: i for i, op in enumerate(OPS)}
    lorder = {l: i for i, l in enumerate(LAYOUTS)}
    for key in sorted(med, key=lambda k: (lorder.get(k[1], 9), order.get(k[0], 9), k[2], k[3], k[4])):
        b = med[key]
        out.append("| %s | %s | %d | %d | %d | %d | %d | %d | %d | %.2f | %.2f |" % (
            key[0], key[1], key[2], key[3], key[4], b["live_items"], round(b["ns_per_op"]),
            round(b["p50_ns"]), round(b["null_ns"]), b["x_null"], b["x_null_p50"]))
    return "\n".join(out)


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("summary", "full"):
        sys.exit(__doc__)
    _, med = load(sys.argv[1])
    if not med:
        sys.exit("no matrix/ benchmarks in " + sys.argv[1])
    print(summary(med) if sys.argv[2] == "summary" else full(med))


if __name__ == "__main__":
    main()
