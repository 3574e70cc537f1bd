#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The figures of docs/layouts.md, from the data files checked in under docs/:

  bench/plot_layouts.py [--docs DIR] [--out DIR]

--docs: the docs folder holding data/ and compare-full/, compare-quick/
(default: the docs/ beside this script's bench/); --out: where the figures
go (default DOCS/figures).  Each figure is written as PNG and SVG:

  memory_per_item   kvexp memory: bytes per item by value size, and at
                    16 + 128 B the kernel's element layout against the
                    measurement (hashtab.c: header, key, value, buckets)
  lost_keys         kvexp lost: share of keys readable after storing
                    r x capacity, three capacities, against (1 - e^-r)/r
  stale_reads       kvexp stale: percpu against hash_map, split and random
  fill_level        the matrix: x null by fill level per layout and op,
                    median over the 16 key/value sizes, IQR as error bars
  microbench_threads  bench/plot_microbench.py on the newest microbench
                    file (1 ... nproc threads)

Uses the plotting helpers of bench/compare/report.py and
bench/plot_microbench.py.  Needs python3-matplotlib.
"""
import argparse
import gzip
import json
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "compare"))
sys.path.insert(0, HERE)
import report  # noqa: E402  bench/compare/report.py
import plot_microbench  # noqa: E402

# the data files each figure is drawn from (relative to --docs)
MEMORY = "data/kvexp-memory-2026-11-22.json"
LOST = "data/kvexp-lost-2026-11-22.json"
LOST_RUNS = ("compare-full/results.json", "compare-quick/results.json")
STALE = ("data/kvexp-stale-split-2026-11-22.json", "data/kvexp-stale-random-2026-11-22.json")
MATRIX = "data/matrix-2026-11-22.json.gz"
MICROBENCH = "data/microbench-newfloor-2026-11-23.json"
FIGURES = ("memory_per_item", "lost_keys", "stale_reads", "fill_level", "microbench_threads")

LAYOUTS = ("hash_map", "array_fnv", "lru", "percpu", "lru_percpu")

# kernel/bpf/hashtab.c (6.x, x86-64): sizeof(struct htab_elem) before the key,
# and sizeof(struct bucket) (an hlist_nulls_head and a 4-byte lock, padded)
HTAB_ELEM_HDR = 48
HTAB_BUCKET = 16
XKV_ENTRY_HDR = 32  # common/entry.h: the header before a value


def load(docs, rel):
    path = os.path.join(docs, rel)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def color(layout):
    return report.COLORS.get("xdpkv/" + layout)


def r8(n):
    return (n + 7) // 8 * 8


def pow2(n):
    return 1 << max(0, (n - 1).bit_length())


def htab_model(layout, key, value, capacity, items, ncpu):
    """Bytes per item as hashtab.c lays a preallocated map out: one element
    per entry (header, key and value each rounded to 8; for per-CPU maps a
    pointer in the element and one value copy per possible CPU) and a bucket
    array of capacity rounded up to a power of two.  Parts, in order."""
    entry = r8(XKV_ENTRY_HDR + value)
    per = capacity / items
    parts = [("bucket array", HTAB_BUCKET * pow2(capacity) / items),
             ("element header", HTAB_ELEM_HDR * per), ("key", r8(key) * per)]
    if layout in ("percpu", "lru_percpu"):
        parts += [("per-CPU pointer", 8 * per), ("entry (all CPUs' copies)", ncpu * entry * per)]
    else:
        parts.append(("entry (32 B header + value)", entry * per))
    return parts


def fig_memory(plt, docs, out, made):
    j = load(docs, MEMORY)
    ncpu = j["machine"].get("possible_cpus") or j["machine"]["nproc"]
    rows = j["results"]
    fig, axs = plt.subplots(1, 2, figsize=(14, 5.2))
    ax = axs[0]
    k16 = [r for r in rows if r["key_size"] == 16 and r["fill_pct"] == 100]
    series = {}
    for r in k16:
        name = r["layout"] + (" (no prealloc)" if r.get("alloc") == "no_prealloc" else "")
        series.setdefault(name, []).append((r["value_size"], r["bytes_per_item"], r))
    for name, pts in sorted(series.items()):
        pts.sort()
        lay = name.split()[0]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="x" if lay == "lru" else "o",
                color=color(lay), ls=":" if "no prealloc" in name else "-",
                label=name + (", per entry (= hash_map)" if lay == "lru" else ", per entry"))
        if lay == "array_fnv":
            ax.plot([p[0] for p in pts], [p[2]["bytes_per_live_item"] for p in pts],
                    marker="s", color=color(lay), ls="--", label="array_fnv, per *live* item")
    vs = sorted({r["value_size"] for r in k16})
    ax.plot(vs, [16 + v for v in vs], color="black", ls="--", lw=1, label="raw key + value")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(vs)
    ax.set_xticklabels([str(v) for v in vs])
    ax.set_xlabel("value size (bytes), 16-byte keys")
    ax.set_ylabel("map bytes per item (kernel's memlock / items)")
    ax.set_title("Memory per item, %s items, full (kvexp memory)" % f"{k16[0]['items']:,}",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)

    # the kernel's arithmetic against the measurement at 16 + 128 B
    ax = axs[1]
    at = {r["layout"]: r for r in rows if (r["key_size"], r["value_size"], r["fill_pct"],
                                           r.get("alloc")) == (16, 128, 100, "prealloc")}
    names = [lay for lay in LAYOUTS if lay in at]
    bottoms = [0.0] * len(names)
    colours = {}
    for i, lay in enumerate(names):
        r = at[lay]
        if lay == "array_fnv":
            parts = [("slot (key + entry, no element header)",
                      r8(16) + r8(XKV_ENTRY_HDR + 128))]
        else:
            parts = htab_model(lay, 16, 128, r["capacity"], r["items"], ncpu)
        for label, b in parts:
            if label not in colours:
                colours[label] = "C%d" % len(colours)
            ax.bar(i, b, 0.6, bottom=bottoms[i], color=colours[label],
                   label=label if label not in ax.get_legend_handles_labels()[1] else None)
            bottoms[i] += b
        ax.text(i, bottoms[i], "model %.0f\nmeasured %.0f" % (bottoms[i], r["bytes_per_item"]),
                ha="center", va="bottom", fontsize=7)
        ax.scatter([i], [r["bytes_per_item"]], marker="_", s=900, color="black", zorder=5,
                   label="measured" if i == 0 else None)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names)
    ax.set_ylim(0, max(bottoms) * 1.25)
    ax.set_ylabel("bytes per item")
    ax.set_title("16 B key + 128 B value: hashtab.c's layout (bars) against the measurement "
                 "(black)\n%d possible CPUs; bucket array = 16 B x capacity rounded up to 2^n"
                 % ncpu, fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    report.save(plt, fig, out, "memory_per_item.png", made)


def fig_lost(plt, docs, out, made):
    j = load(docs, LOST)
    fig, axs = plt.subplots(1, 2, figsize=(13, 4.8))
    ax = axs[0]
    by = {}
    for r in j["results"]:
        by.setdefault(r["layout"], []).append((r["ratio"], r["readable_share"]))
    rr = [x / 100 for x in range(10, 201)]
    ax.plot(rr, [100 * min(1, 1 / x) for x in rr], color="gray", lw=6, alpha=0.3,
            label="everything up to capacity, min(1, 1/r)")
    ax.plot(rr, [100 * (1 - math.exp(-x)) / x for x in rr], color="black", ls="--", lw=1,
            label="random placement, (1 - e^-r)/r")
    for lay, pts in sorted(by.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], marker="o", color=color(lay),
                label=lay + (" (hash_map, lru and percpu coincide)" if lay == "percpu" else ""),
                alpha=0.8)
    ax.set_xlabel("keys set / capacity (r)")
    ax.set_ylabel("% of the keys set that can be read back")
    ax.set_title("Lost keys, capacity %s (kvexp lost, one run per point)"
                 % f"{j['params']['capacity']:,}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax = axs[1]
    ax.plot(rr, [100 * (1 - math.exp(-x)) / x for x in rr], color="black", ls="--", lw=1,
            label="random placement, (1 - e^-r)/r")
    sizes = [(j["params"]["capacity"], [(p[0], p[1]) for p in sorted(by.get("array_fnv", []))])]
    for rel in LOST_RUNS:
        res = load(docs, rel)
        pts = sorted((r["ratio"], r["readable_share"]) for r in res["rows"]
                     if r.get("experiment") == "g" and r.get("kvexp") == "lost"
                     and r.get("system") == "xdpkv/array_fnv")
        caps = {r["capacity"] for r in res["rows"] if r.get("experiment") == "g"
                and r.get("kvexp") == "lost" and r.get("capacity")}
        if pts and len(caps) == 1:
            sizes.append((caps.pop(), pts))
    for i, (cap, pts) in enumerate(sorted(sizes)):
        ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], marker="os^"[i % 3],
                color=color("array_fnv"), alpha=0.4 + 0.3 * i, label="array_fnv, %s slots"
                % f"{cap:,}")
    ax.set_xlabel("keys set / capacity (r)")
    ax.set_ylabel("% of the keys set that can be read back")
    ax.set_title("array_fnv at three capacities: FNV-1a mod 2^n on sequential keys\n"
                 "(docs/data kvexp lost; compare-full and compare-quick experiment g)",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    report.save(plt, fig, out, "lost_keys.png", made)


def fig_stale(plt, docs, out, made):
    fig, ax = plt.subplots(figsize=(8, 4.4))
    groups, vals, counts = [], {}, {}
    for rel in STALE:
        j = load(docs, rel)
        g = j["params"]["pattern"]
        groups.append(g)
        for r in j["results"]:
            vals[(g, r["layout"])] = 100 * r["stale_rate"]
            counts[(g, r["layout"])] = r
    lays = sorted({k[1] for k in vals}, key=lambda x: LAYOUTS.index(x) if x in LAYOUTS else 99)
    n = len(lays)
    for i, lay in enumerate(lays):
        xs = [g + (i - (n - 1) / 2) * 0.8 / n for g in range(len(groups))]
        ys = [vals.get((g, lay), 0) for g in groups]
        ax.bar(xs, ys, 0.8 / n, color=color(lay), label=lay)
        for x, y, g in zip(xs, ys, groups):
            r = counts.get((g, lay), {})
            ax.text(x, y + 1, "%.1f %%\n(%s of %s)" % (y, f"{r.get('stale', 0):,}",
                                                      f"{r.get('reads', 0):,}"),
                    ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(["%s: set on CPU 0, get on CPU 1" % g if g == "split" else
                        "%s: each set and get on CPU 0 or 1" % g for g in groups])
    ax.axhline(50, color="gray", ls=":", lw=1)
    ax.text(-0.45, 51, "(n-1)/n for n = 2 CPUs, random steering", fontsize=7, color="gray")
    ax.set_ylim(0, 118)
    ax.set_ylabel("% of XDP gets that returned an older version or a miss")
    ax.set_title("Stale reads through XDP (kvexp stale, 4096 keys x 4 rounds)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    report.save(plt, fig, out, "stale_reads.png", made)


def fig_fill(plt, docs, out, made):
    j = load(docs, MATRIX)
    cells = {}
    for b in j["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        p = b["run_name"].split("/")  # matrix/OP/LAYOUT/kK/vV/fillF/...
        cells.setdefault((p[1], p[2], int(p[5][4:])), []).append(b["x_null"])
    ops = [o for o in ("get_hit", "get_miss", "set_new", "set_overwrite", "delete")
           if any(k[0] == o for k in cells)]
    fills = sorted({k[2] for k in cells})
    fig, axs = plt.subplots(1, len(ops), figsize=(3.3 * len(ops) + 1, 4.2), sharey=True)
    for ax, op in zip(axs, ops):
        lays = [lay for lay in LAYOUTS if any(k[:2] == (op, lay) for k in cells)]
        for i, lay in enumerate(lays):
            pts = []
            for f in fills:
                v = sorted(cells.get((op, lay, f), []))
                if not v:
                    continue
                q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0], v[0], v[0]]
                pts.append((f, q[1], q[1] - q[0], q[2] - q[1]))
            off = (i - (len(lays) - 1) / 2) * 1.2
            ax.errorbar([p[0] + off for p in pts], [p[1] for p in pts],
                        yerr=[[p[2] for p in pts], [p[3] for p in pts]], marker="o", capsize=2,
                        color=color(lay), label=lay)
        ax.set_title(op, fontsize=10)
        ax.set_xticks(fills)
        ax.set_xticklabels(["%d %%" % f for f in fills])
        ax.set_xlabel("fill (% of capacity)")
        ax.grid(alpha=0.3)
    axs[0].set_ylabel("x null store (same run)")
    axs[0].legend(fontsize=7)
    n = len(next(iter(cells.values())))
    fig.suptitle("Cost by fill level, capacity %s: median over the %d key/value sizes, error "
                 "bars their interquartile range (matrix, 3 repetitions per cell)"
                 % (f"{int(j['context'].get('xkv_capacity', 0)):,}", n), fontsize=10)
    report.save(plt, fig, out, "fill_level.png", made)


def fig_microbench(plt, docs, out, made):
    path = os.path.join(docs, MICROBENCH)
    plot_microbench.main(["plot_microbench", os.path.join(out, "microbench"), path])
    made.append("microbench_threads.png")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", default=os.path.join(os.path.dirname(HERE), "docs"),
                    help="the docs folder with data/ and compare-*/ (default: %(default)s)")
    ap.add_argument("--out", default=None, help="output folder (default: DOCS/figures)")
    a = ap.parse_args(argv)
    out = a.out or os.path.join(a.docs, "figures")
    plt = report.plt_mod()
    if plt is None:
        sys.exit("plot_layouts: matplotlib is not installed (Debian: python3-matplotlib)")
    os.makedirs(out, exist_ok=True)
    made = []
    for f in (fig_memory, fig_lost, fig_stale, fig_fill, fig_microbench):
        f(plt, a.docs, out, made)
    for name in made:
        print(os.path.join(out, name), "and .svg")


if __name__ == "__main__":
    main(sys.argv[1:])
