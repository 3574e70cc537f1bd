#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The figures of docs/layouts*.md, from the data files checked in under docs/:

  bench/plot/plot_layouts.py [--docs DIR] [--out DIR]

--docs: the docs folder holding data/ and compare-full/, compare-quick/
(default: the repository's docs/); --out: where the figures
go (default DOCS/figures).  Each figure is written as PNG and SVG:

  memory_per_item   kvexp memory: bytes per item by value size, and at
                    16 + 128 B the kernel's element layout against the
                    measurement (hashtab.c: header, key, value, buckets)
  lost_keys         kvexp lost: share of keys readable after storing
                    r x capacity, three capacities, against (1 - e^-r)/r
  stale_reads       kvexp stale: percpu against hash_map, split and random
  fill_level        the matrix: x null by fill level per layout and op,
                    median over the 16 key/value sizes, IQR as error bars
  microbench_threads  bench/microbench/plot_microbench.py on the newest microbench
                    file (1 ... nproc threads)
  hot_set           microbench at 64 and at 4096 keys, one sitting: the map's
                    instructions against its memory (lesson 3)
  array_fnv_slots   kvexp lost: array_fnv's readable share against
                    (1 - e^-r)/r, FNV-1a and keyed, by capacity (lesson 4)
  lru_lock          microbench: lru and hash_map, 1 and 2 threads, in every
                    run kept; kvexp memory: lru's early eviction against the
                    batch-refill model (lesson 5)
  no_common_lru     microbench: live items and x null, lru against
                    lru --no-common-lru (lesson 6)
  lru_percpu        kvexp memory and microbench: lru_percpu against lru and
                    percpu (lesson 8)
  set_assoc         kvexp lost and microbench: set_assoc against array_fnv
  keyed_placement   microbench and kvexp lost: array_fnv keyed (SipHash)
                    against unseeded FNV-1a

Every point that has a spread in its data file is drawn with it (min-max of
repetitions where the file holds them, else +- the standard deviation);
each figure's footer says which.

Uses the plotting helpers of bench/compare/report.py and
bench/microbench/plot_microbench.py.  Needs python3-matplotlib.
"""
import argparse
import gzip
import json
import math
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(BENCH, "compare"))
sys.path.insert(0, os.path.join(BENCH, "microbench"))
import report  # noqa: E402  bench/compare/report.py
import plot_microbench  # noqa: E402  bench/microbench/plot_microbench.py

# the data files each figure is drawn from (relative to --docs)
MEMORY = "data/kvexp-memory-2026-11-22.json"
LOST = "data/kvexp-lost-2026-11-22.json"
LOST_RUNS = ("compare-full/results.json", "compare-quick/results.json")
STALE = ("data/kvexp-stale-split-2026-11-22.json", "data/kvexp-stale-random-2026-11-22.json")
MATRIX = "data/matrix-2026-11-22.json.gz"
MICROBENCH = "data/microbench-newfloor-2026-11-23.json"
MB_OLD = ("data/microbench-2026-11-22.json", "data/microbench-after-swar-2026-11-22.json",
          "data/microbench-current-2026-11-22.json", MICROBENCH)
MB_OLD_LABELS = ("main run", "after the word-at-a-time parser", "current build, quieter",
                 "new null floor")
HOT_SET = ("data/microbench-hotset-2026-11-23.json", "data/microbench-coldset-2026-11-23.json")
SETASSOC_MB = "data/setassoc-microbench-2026-11-23.json"
LOST_KEYED = "data/kvexp-lost-keyed-2026-11-23.json"
MEMORY_LRU = "data/kvexp-memory-lru-2026-11-23.json"
FNV_LIVE = "data/fnv-live-2026-11-23.json"
# xdpkv compare --experiments m, all layouts (fixed sizes) and --workload etc
HITRATIO = (("data/hitratio-compare-2026-11-27.json", "hitratio_mrc_all"),
            ("data/hitratio-etc-2026-11-27.json", "hitratio_mrc_etc"))
FIGURES = ("memory_per_item", "lost_keys", "stale_reads", "fill_level", "microbench_threads",
           "hot_set", "array_fnv_slots", "lru_lock", "no_common_lru", "lru_percpu", "set_assoc",
           "keyed_placement") + tuple(name for _, name in HITRATIO)

LAYOUTS = ("hash_map", "array_fnv", "lru", "percpu", "lru_percpu", "set_assoc", "sieve", "s3fifo")
SMALL = 9  # the smallest font size in the figures of this chapter

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
    """The compare report's colour of a layout; a microbench variant of one
    (array_fnv_unseeded, lru_no_common_lru) gets its layout's colour."""
    for suffix in ("_unseeded", "_no_common_lru"):
        layout = layout.replace(suffix, "")
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
    ax.legend(fontsize=SMALL - 1)

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
                ha="center", va="bottom", fontsize=SMALL - 1)
        ax.scatter([i], [r["bytes_per_item"]], marker="_", s=900, color="black", zorder=5,
                   label="measured" if i == 0 else None)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names)
    ax.set_ylim(0, max(bottoms) * 1.25)
    ax.set_ylabel("bytes per item")
    ax.set_title("16 B key + 128 B value: hashtab.c's layout (bars) against the measurement "
                 "(black)\n%d possible CPUs; bucket array = 16 B x capacity rounded up to 2^n"
                 % ncpu, fontsize=10)
    ax.legend(fontsize=SMALL - 1, loc="upper left")
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
    ax.legend(fontsize=SMALL - 1)
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
    ax.legend(fontsize=SMALL - 1)
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
                    ha="center", va="bottom", fontsize=SMALL - 1)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(["%s: set on CPU 0, get on CPU 1" % g if g == "split" else
                        "%s: each set and get on CPU 0 or 1" % g for g in groups])
    ax.axhline(50, color="gray", ls=":", lw=1)
    ax.text(-0.45, 51, "(n-1)/n for n = 2 CPUs, random steering", fontsize=SMALL - 1, color="gray")
    ax.set_ylim(0, 118)
    ax.set_ylabel("% of XDP gets that returned an older version or a miss")
    ax.set_title("Stale reads through XDP (kvexp stale, 4096 keys x 4 rounds)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=SMALL - 1)
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
    axs[0].legend(fontsize=SMALL - 1)
    n = len(next(iter(cells.values())))
    fig.suptitle("Cost by fill level, capacity %s: median over the %d key/value sizes, error "
                 "bars their interquartile range (matrix, 3 repetitions per cell)"
                 % (f"{int(j['context'].get('xkv_capacity', 0)):,}", n), fontsize=10)
    report.save(plt, fig, out, "fill_level.png", made)


def fig_microbench(plt, docs, out, made):
    path = os.path.join(docs, MICROBENCH)
    plot_microbench.main(["plot_microbench", os.path.join(out, "microbench"), path])
    made.append("microbench_threads.png")


# ---- the microbenchmark's x null with its spread -------------------------------------

def mb_points(docs, rel):
    """(op, layout, threads) -> (median, below, above, live items) of x_null
    in one microbench file, and the note saying what the error bars are."""
    r = plot_microbench.runs([os.path.join(docs, rel)])
    out = {}
    for (op, shared, lay, threads, _keys), rows in r.items():
        p = None if shared else plot_microbench.point(rows, "x_null")
        if p:
            out[(op, lay, threads)] = p + (max(b.get("live_items") or 0 for b in rows),)
    return out, plot_microbench.spread_note(r)


def mb_date(docs, rel):
    c = load(docs, rel)["context"]
    return "%s, load %.1f" % (c["date"][:16].replace("T", " "), c["load_avg"][0])


def xnull_bars(ax, pts, groups, series, title, labels=None, hatches=None, legend="lower right"):
    """groups: [(op, threads)] on x; one bar per series (a layout, or a
    (layout, file-label) pair with pts keyed alike); value printed on top."""
    n = len(series)
    w = 0.8 / n
    for i, s in enumerate(series):
        lay = s if isinstance(s, str) else s[0]
        xs, ys, lo, hi = [], [], [], []
        for g, (op, th) in enumerate(groups):
            p = pts.get((op, s, th))
            if p:
                xs.append(g + (i - (n - 1) / 2) * w)
                ys.append(p[0])
                lo.append(p[1])
                hi.append(p[2])
        ax.bar(xs, ys, w, yerr=[lo, hi], capsize=3, color=color(lay),
               hatch=(hatches or {}).get(s), edgecolor="white" if not hatches else "black",
               label=(labels or {}).get(s, s))
        for x, y, h in zip(xs, ys, hi):
            ax.text(x, y + h + 0.02, "%.2f" % y, ha="center", va="bottom", fontsize=SMALL - 1)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(["%s\n%d thread%s" % (op.replace("_", " "), th, "s" if th > 1 else "")
                        for op, th in groups], fontsize=SMALL)
    ax.axhline(1, color="gray", lw=1, ls=":")
    ax.set_ylabel("x null store (same run)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.12)
    ax.legend(fontsize=SMALL, loc=legend)


def footer(fig, text):
    """The figure's sources and what its error bars are, wrapped to its width."""
    import textwrap
    width = int(fig.get_figwidth() * 15)
    lines = textwrap.wrap(text, width)
    fig.text(0.5, 0.005, "\n".join(lines), ha="center", va="bottom", fontsize=SMALL)
    fig.tight_layout(rect=(0, 0.012 + 0.035 * len(lines) * 5 / fig.get_figheight(), 1, 1))


def save_fig(plt, fig, out, name, made):
    fig.savefig(os.path.join(out, name), dpi=110)
    fig.savefig(os.path.join(out, report.svg_name(name)))
    plt.close(fig)
    made.append(name)


def fig_hot_set(plt, docs, out, made):
    hot, note = mb_points(docs, HOT_SET[0])
    cold, _ = mb_points(docs, HOT_SET[1])
    kh = load(docs, HOT_SET[0])["context"]["xkv_keys"]
    kc = load(docs, HOT_SET[1])["context"]["xkv_keys"]
    fig, axs = plt.subplots(1, 2, figsize=(13, 4.8), sharey=True)
    lays = [lay for lay in ("hash_map", "array_fnv", "lru", "percpu")
            if ("get_hit", lay, 1) in hot]
    for ax, op in zip(axs, ("get_hit", "set")):
        for i, (pts, lab, alpha) in enumerate(((hot, "%s keys (hot: cache and TLB)" % kh, 0.45),
                                               (cold, "%s keys (cold)" % kc, 1.0))):
            xs = [g + (i - 0.5) * 0.4 for g in range(len(lays))]
            ps = [pts[(op, lay, 1)] for lay in lays]
            ax.bar(xs, [p[0] for p in ps], 0.4, yerr=[[p[1] for p in ps], [p[2] for p in ps]],
                   capsize=3, color=[color(lay) for lay in lays], alpha=alpha,
                   edgecolor="black")
            ax.bar([0], [0], 0, color="gray", alpha=alpha, edgecolor="black", label=lab)
            for x, p in zip(xs, ps):
                ax.text(x, p[0] + p[2] + 0.02, "%.2f" % p[0], ha="center", va="bottom",
                        fontsize=SMALL - 1)
        ax.set_xticks(range(len(lays)))
        ax.set_xticklabels(lays, fontsize=SMALL)
        ax.axhline(1, color="gray", lw=1, ls=":")
        ax.set_title("%s, 1 thread: the same map code, a hot and a cold key set" % op,
                     fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=SMALL, loc="upper left")
    axs[0].set_ylabel("x null store (same run)")
    footer(fig, "microbench, 1 Mi items per layout, %s then %s (docs/data/microbench-{hot,cold}"
           "set-2026-11-23.json); %s" % (mb_date(docs, HOT_SET[0]), mb_date(docs, HOT_SET[1]),
                                         note))
    save_fig(plt, fig, out, "hot_set.png", made)


def lost_series(docs):
    """(hash, capacity) -> [(r, readable share)] for array_fnv: FNV-1a from
    the 2026-11-22 files (before keying), keyed from the keyed run."""
    out = {}
    j = load(docs, LOST)
    out[("FNV-1a", j["params"]["capacity"])] = sorted(
        (r["ratio"], r["readable_share"]) for r in j["results"] if r["layout"] == "array_fnv")
    for rel in LOST_RUNS:
        res = load(docs, rel)
        rows = [r for r in res["rows"] if r.get("experiment") == "g" and r.get("kvexp") == "lost"
                and r.get("system") == "xdpkv/array_fnv"]
        caps = {r.get("capacity") for r in rows}
        if rows and len(caps) == 1:
            out[("FNV-1a", caps.pop())] = sorted((r["ratio"], r["readable_share"]) for r in rows)
    for run in load(docs, LOST_KEYED)["runs"]:
        pts = sorted((r["ratio"], r["readable_share"]) for r in run["results"]
                     if r["layout"] == "array_fnv")
        if pts:
            out[("keyed", run["params"]["capacity"])] = pts
    # FNV-1a at r = 1.0 from the microbenchmark's preload, for sizes the
    # kvexp runs above do not cover (their keys are the same: key:%012u)
    for run in load(docs, FNV_LIVE)["runs"]:
        m = re.search(r"# loaded array_fnv_unseeded: entries (\d+), live items (\d+)",
                      run["output"])
        if m and ("FNV-1a", int(m[1])) not in out:
            out[("FNV-1a", int(m[1]))] = [(1.0, int(m[2]) / int(m[1]))]
    return out


def predicted(r):
    return (1 - math.exp(-r)) / r


def fig_array_fnv(plt, docs, out, made):
    series = lost_series(docs)
    caps = sorted({c for _, c in series}, reverse=True)
    cmap = plt.get_cmap("viridis")
    fig, axs = plt.subplots(1, 2, figsize=(13, 5))
    rr = [x / 100 for x in range(20, 201)]
    axs[0].plot(rr, [100 * predicted(x) for x in rr], color="black", ls="--", lw=1.5,
                label="random placement, (1 - e^-r)/r")
    axs[1].axhline(0, color="black", ls="--", lw=1.5, label="(1 - e^-r)/r")
    for (h, cap), pts in sorted(series.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        if not pts:
            continue
        c = cmap(caps.index(cap) / max(1, len(caps) - 1) * 0.85)
        kw = dict(color=c, marker="o" if h == "FNV-1a" else "^", ls="-" if h == "FNV-1a" else ":",
                  label="%s, %s slots" % (h, f"{cap:,}"))
        axs[0].plot([p[0] for p in pts], [100 * p[1] for p in pts], **kw)
        axs[1].plot([p[0] for p in pts], [100 * (p[1] - predicted(p[0])) for p in pts], **kw)
    axs[0].set_ylabel("% of the keys set that can be read back")
    axs[0].set_title("array_fnv: one key per slot", fontsize=10)
    axs[1].set_ylabel("measured - predicted (percentage points)")
    axs[1].set_title("Distance from the random-placement prediction", fontsize=10)
    for ax in axs:
        ax.set_xlabel("keys set / slots (r)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=SMALL - 1)
    footer(fig, "kvexp lost, one run per point, keys key:%%012u (sequential). FNV-1a: "
           "docs/data/kvexp-lost-2026-11-22.json, compare-full and compare-quick (experiment g), "
           "65,535 slots from the microbenchmark's preload (%s); keyed (SipHash-1-3, kvexp's "
           "fixed seed): %s" % (FNV_LIVE.replace("data/", "docs/data/"),
                                LOST_KEYED.replace("data/", "docs/data/")))
    save_fig(plt, fig, out, "array_fnv_slots.png", made)


def lru_model_evicted(cap, ncpu):
    """bpf_lru_list.c as we read it: a CPU refills its local free list in
    batches of target_free = clamp(entries / possible CPUs / 2, 1, 128), and
    the last refill of a one-CPU fill evicts what the global free list lacks."""
    t = min(128, max(1, cap // ncpu // 2))
    return (-cap) % t


def fig_lru_lock(plt, docs, out, made):
    fig, axs = plt.subplots(1, 2, figsize=(14, 5.2), gridspec_kw={"width_ratios": [3, 2]})
    ax = axs[0]
    w = 0.2
    series = (("hash_map", 1), ("hash_map", 2), ("lru", 1), ("lru", 2))
    notes = set()
    for g, rel in enumerate(MB_OLD):
        pts, note = mb_points(docs, rel)
        notes.add(note)
        for i, (lay, th) in enumerate(series):
            p = pts.get(("set", lay, th))
            if not p:
                continue
            x = g + (i - 1.5) * w
            ax.bar(x, p[0], w, yerr=[[p[1]], [p[2]]], capsize=3, color=color(lay),
                   hatch="//" if th == 2 else None, edgecolor="black",
                   label="%s, %d thread%s" % (lay, th, "s" if th > 1 else "") if g == 0 else None)
            ax.text(x, p[0] + p[2] + 0.02, "%.2f" % p[0], ha="center", va="bottom",
                    fontsize=SMALL - 1)
    ax.set_xticks(range(len(MB_OLD)))
    ax.set_xticklabels(["%s\n%s" % (label, mb_date(docs, rel))
                        for label, rel in zip(MB_OLD_LABELS, MB_OLD)], fontsize=SMALL - 1)
    ax.set_ylabel("SET, x null store (same run)")
    ax.set_title("SET: lru against hash_map, 1 and 2 threads, in every microbench run kept\n"
                 "(the last run against the new null floor, whose SET copies the value)",
                 fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.25)
    ax.legend(fontsize=SMALL, loc="upper center", ncol=4)
    ax = axs[1]
    runs = load(docs, MEMORY_LRU)["runs"]
    ncpu = runs[0]["machine"].get("possible_cpus") or runs[0]["machine"]["nproc"]
    meas = {}
    for run in runs:
        for r in run["results"]:
            if r["layout"] in ("lru", "lru_percpu") and r["fill_pct"] == 100 \
                    and r.get("alloc", "prealloc") == "prealloc":
                meas.setdefault(r["layout"], []).append((r["capacity"], r["capacity"] - r["live"]))
    old = load(docs, MEMORY)
    for r in old["results"]:
        if r["layout"] == "lru" and (r["key_size"], r["value_size"]) == (16, 128):
            meas.setdefault("lru (2026-11-22)", []).append((r["capacity"],
                                                            r["capacity"] - r["live"]))
    caps = sorted({c for v in meas.values() for c, _ in v})
    ax.plot(range(len(caps)), [lru_model_evicted(c, ncpu) for c in caps], color="black",
            marker="_", ms=30, ls="none", mew=2,
            label="model: (-entries) mod clamp(entries/%d/2, 1, 128)" % ncpu)
    for k, (lay, pts) in enumerate(sorted(meas.items())):
        base = lay.split()[0]
        ax.plot([caps.index(c) + (k - 1) * 0.12 for c, _ in pts], [e for _, e in pts],
                marker="ox^"[k % 3], ls="none", ms=8, color=color(base), label=lay + ", measured")
    ax.set_xticks(range(len(caps)))
    ax.set_xticklabels([f"{c:,}" for c in caps], fontsize=SMALL - 1, rotation=20)
    ax.set_xlabel("entries (filled from userspace on one CPU with as many keys)")
    ax.set_ylabel("entries - live items (evicted before full)")
    ax.set_title("lru evicts a little before it is full: the batch refill", fontsize=10)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=SMALL - 1, loc="lower right", markerscale=0.6)
    footer(fig, "left: microbench, 1 Mi items, 4096 keys per thread; %s. right: kvexp memory, "
           "16 B keys + 128 B values (%s, docs/data/kvexp-memory-2026-11-22.json)"
           % (" / ".join(sorted(notes)), MEMORY_LRU.replace("data/", "docs/data/")))
    save_fig(plt, fig, out, "lru_lock.png", made)


def fig_no_common_lru(plt, docs, out, made):
    pts, note = mb_points(docs, MICROBENCH)
    fig, axs = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [1, 2]})
    ax = axs[0]
    lays = ("lru", "lru_no_common_lru")
    live = [pts[("set", lay, 1)][3] for lay in lays]
    ax.bar(range(2), live, 0.6, color=[color("lru"), "tab:gray"])
    for i, v in enumerate(live):
        ax.text(i, v, f"{int(v):,}", ha="center", va="bottom", fontsize=SMALL)
    ax.axhline(1048576, color="black", ls="--", lw=1, label="entries asked: 1,048,576")
    ax.set_xticks(range(2))
    ax.set_xticklabels(["lru", "lru\n--no-common-lru"], fontsize=SMALL)
    ax.set_ylabel("live items after preloading 1,048,576 keys from one CPU")
    ax.set_title("Capacity: one LRU share per CPU", fontsize=10)
    ax.set_ylim(0, 1.25e6)
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{int(v):,}"))
    ax.legend(fontsize=SMALL, loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    labels = {"lru": "lru", "lru_no_common_lru": "lru --no-common-lru"}
    xnull_bars(axs[1], pts, [("get_hit", 1), ("get_hit", 2), ("set", 1), ("set", 2)],
               ["lru", "lru_no_common_lru"], "Cost: x null at 1 and 2 threads (2 CPUs)",
               labels=labels, hatches={"lru_no_common_lru": "//", "lru": None})
    footer(fig, "microbench against the new null floor, %s (docs/data/%s); %s"
           % (mb_date(docs, MICROBENCH), os.path.basename(MICROBENCH), note))
    save_fig(plt, fig, out, "no_common_lru.png", made)


def fig_lru_percpu(plt, docs, out, made):
    pts, note = mb_points(docs, MICROBENCH)
    runs = load(docs, MEMORY_LRU)["runs"]
    at = {}
    for run in runs:
        for r in run["results"]:
            if (r["key_size"], r["value_size"], r["fill_pct"], r["capacity"],
                    r.get("alloc")) == (16, 128, 100, 100000, "prealloc"):
                at[r["layout"]] = r
    fig, axs = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [1, 2]})
    ax = axs[0]
    lays = [lay for lay in ("hash_map", "lru", "percpu", "lru_percpu") if lay in at]
    ax.bar(range(len(lays)), [at[lay]["bytes_per_item"] for lay in lays], 0.6,
           color=[color(lay) for lay in lays])
    for i, lay in enumerate(lays):
        ax.text(i, at[lay]["bytes_per_item"], "%.1f" % at[lay]["bytes_per_item"], ha="center",
                va="bottom", fontsize=SMALL)
    ax.set_xticks(range(len(lays)))
    ax.set_xticklabels(lays, fontsize=SMALL)
    ax.set_ylabel("map bytes per item")
    ax.set_title("Memory, 100,000 items of 16 + 128 B", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    xnull_bars(axs[1], pts, [("get_hit", 1), ("get_hit", 2), ("set", 1), ("set", 2)],
               ["lru", "percpu", "lru_percpu"], "Cost: x null at 1 and 2 threads",
               legend="upper left")
    footer(fig, "left: kvexp memory (%s); right: microbench against the new null floor, %s; %s"
           % (MEMORY_LRU.replace("data/", "docs/data/"), mb_date(docs, MICROBENCH), note))
    save_fig(plt, fig, out, "lru_percpu.png", made)


def fig_set_assoc(plt, docs, out, made):
    pts, note = mb_points(docs, SETASSOC_MB)
    runs = load(docs, LOST_KEYED)["runs"]
    run = max(runs, key=lambda j: j["params"]["capacity"])
    cap = run["params"]["capacity"]
    fig, axs = plt.subplots(1, 2, figsize=(13, 5))
    ax = axs[0]
    rr = [x / 100 for x in range(20, 201)]
    ax.plot(rr, [100 * min(1, 1 / x) for x in rr], color="gray", lw=6, alpha=0.3,
            label="everything up to capacity, min(1, 1/r)")
    ax.plot(rr, [100 * predicted(x) for x in rr], color="black", ls="--", lw=1,
            label="one key per slot, random: (1 - e^-r)/r")
    for lay in ("hash_map", "set_assoc", "array_fnv"):
        p = sorted((r["ratio"], r["readable_share"]) for r in run["results"] if r["layout"] == lay)
        if p:
            ax.plot([x[0] for x in p], [100 * x[1] for x in p], marker="o", color=color(lay),
                    label=lay + (" (keyed)" if lay != "hash_map" else ""))
    ax.set_xlabel("keys set / capacity (r)")
    ax.set_ylabel("% of the keys set that can be read back")
    ax.set_title("Keys kept, capacity %s (kvexp lost, one run per point)" % f"{cap:,}",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=SMALL)
    live = {lay: pts[("get_hit", lay, 1)][3] for lay in ("array_fnv", "set_assoc")}
    xnull_bars(axs[1], pts, [("get_hit", 1), ("set", 1)], ["array_fnv", "set_assoc"],
               "Cost, 1 thread (live after preloading 1,048,576 keys:\narray_fnv %s, "
               "set_assoc %s)" % (f"{int(live['array_fnv']):,}", f"{int(live['set_assoc']):,}"))
    footer(fig, "left: %s; right: microbench, %s (docs/data/%s), %s"
           % (LOST_KEYED.replace("data/", "docs/data/"), mb_date(docs, SETASSOC_MB),
              os.path.basename(SETASSOC_MB), note))
    save_fig(plt, fig, out, "set_assoc.png", made)


def fig_keyed(plt, docs, out, made):
    pts, note = mb_points(docs, SETASSOC_MB)
    series = lost_series(docs)
    fig, axs = plt.subplots(1, 2, figsize=(13, 4.8))
    xnull_bars(axs[0], pts, [("get_hit", 1), ("set", 1)], ["array_fnv_unseeded", "array_fnv"],
               "Cost of the hash: SipHash-1-3 (keyed) against FNV-1a",
               labels={"array_fnv_unseeded": "array_fnv, FNV-1a (--fnv-unseeded)",
                       "array_fnv": "array_fnv, keyed (default)"},
               hatches={"array_fnv_unseeded": "//", "array_fnv": None})
    ax = axs[1]
    caps = sorted({c for _, c in series})
    for i, h in enumerate(("FNV-1a", "keyed")):
        xs, ys = [], []
        for g, cap in enumerate(caps):
            v = dict(series.get((h, cap), [])).get(1.0)
            if v is not None:
                xs.append(g + (i - 0.5) * 0.38)
                ys.append(100 * v)
        ax.bar(xs, ys, 0.38, color=color("array_fnv"), hatch="//" if i == 0 else None,
               edgecolor="black", label="%s placement" % h)
        for x, y in zip(xs, ys):
            ax.text(x, y + 0.5, "%.1f" % y, ha="center", va="bottom", fontsize=SMALL - 1)
    ax.axhline(100 * predicted(1.0), color="black", ls="--", lw=1,
               label="(1 - e^-1) = 63.2 %")
    ax.set_xticks(range(len(caps)))
    ax.set_xticklabels([f"{c:,} slots" for c in caps], fontsize=SMALL)
    ax.set_ylim(40, 75)
    ax.set_ylabel("% readable after storing 1.0 x capacity")
    ax.set_title("Keys kept at r = 1.0, sequential keys (one run each)",
                 fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=SMALL, loc="lower right")
    footer(fig, "left: microbench, %s (docs/data/%s), %s; right: FNV-1a from the 2026-11-22 "
           "runs and (65,535 slots) %s, keyed from %s"
           % (mb_date(docs, SETASSOC_MB), os.path.basename(SETASSOC_MB), note,
              FNV_LIVE.replace("data/", "docs/data/"), LOST_KEYED.replace("data/", "docs/data/")))
    save_fig(plt, fig, out, "keyed_placement.png", made)


def fig_hitratio(plt, docs, out, made):
    """Hit ratio per byte: each layout's miss-ratio curves beside libCacheSim's
    and the models' (the figure of bench/kvexp/hitratio_vs_cachesim.py, which
    compare's report draws too), from the points compare wrote."""
    sys.path.insert(0, os.path.join(BENCH, "kvexp"))
    import hitratio_vs_cachesim as hvc
    for rel, name in HITRATIO:
        hvc.figure(load(docs, rel)["points"], os.path.join(out, name))
        made.append(name + ".png")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", default=os.path.join(os.path.dirname(BENCH), "docs"),
                    help="the docs folder with data/ and compare-*/ (default: %(default)s)")
    ap.add_argument("--out", default=None, help="output folder (default: DOCS/figures)")
    a = ap.parse_args(argv)
    out = a.out or os.path.join(a.docs, "figures")
    plt = report.plt_mod()
    if plt is None:
        sys.exit("plot_layouts: matplotlib is not installed (Debian: python3-matplotlib)")
    os.makedirs(out, exist_ok=True)
    made = []
    for f in (fig_memory, fig_lost, fig_stale, fig_fill, fig_microbench, fig_hot_set,
              fig_array_fnv, fig_lru_lock, fig_no_common_lru, fig_lru_percpu, fig_set_assoc,
              fig_keyed, fig_hitratio):
        f(plt, a.docs, out, made)
    for name in made:
        print(os.path.join(out, name), "and .svg")
    missing = [f for f in FIGURES if f + ".png" not in made]
    if missing:
        sys.exit("plot_layouts: not drawn: %s" % ", ".join(missing))


if __name__ == "__main__":
    main(sys.argv[1:])
