#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Figures from bench/microbench's JSON (--benchmark_format=json):

  bench/microbench/plot_microbench.py OUT FILE.json [FILE.json ...]

OUT_threads.png/.svg: ns per request and the ratio to the null store per
layout against the thread count, disjoint keys (solid) and shared keys
(dashed), for GET hit and SET.  OUT_keys.png/.svg, when the files were run
with different --xkv_keys (the key-set sweep): the ratio to the null store
(p50) against the keys per thread.  Points are medians over the
repetitions' runs, error bars their min and max; a file written with
--benchmark_report_aggregates_only holds no runs, only aggregates: its
points are the median aggregate, error bars ± the stddev aggregate (the
figure says which).  Needs python3-matplotlib.
"""
import json
import re
import statistics
import sys

NAME = re.compile(r"^(get_hit|set)(_shared)?/([a-z_]+)/manual_time(?:/threads:(\d+))?$")


def runs(files):
    """(op, shared, layout, threads, keys) -> [benchmark iteration rows]"""
    out = {}
    for f in files:
        with open(f) as fh:
            j = json.load(fh)
        keys = int(j.get("context", {}).get("xkv_keys", 0))
        for b in j.get("benchmarks", []):
            if b.get("run_type") not in ("iteration", "aggregate"):
                continue
            m = NAME.match(b.get("run_name", b["name"]))
            if m:
                k = (m[1], bool(m[2]), m[3], int(m[4] or 1), keys)
                out.setdefault(k, []).append(b)
    return out


def point(rows, key):
    """(median, below, above): over the repetitions' runs, min and max;
    from aggregates only, the median and ± the stddev."""
    v = [r[key] for r in rows if r.get("run_type") == "iteration" and r.get(key)]
    if v:
        med = statistics.median(v)
        return med, med - min(v), max(v) - med
    agg = {r.get("aggregate_name"): r.get(key) for r in rows if r.get("run_type") == "aggregate"}
    if not agg.get("median"):
        return None
    sd = agg.get("stddev") or 0.0
    return agg["median"], sd, sd


def spread_note(r):
    """What the error bars of figures from these runs are."""
    if any(b.get("run_type") == "iteration" for rows in r.values() for b in rows):
        return "points: median over the repetitions; error bars: their min and max"
    return "points: median over the repetitions; error bars: ± their standard deviation " \
        "(the file holds aggregates only)"


def plot_lines(ax, data, key, ylabel, title, styles=True):
    """data: (layout, shared) -> {x: rows}; one colour per layout, shared
    keys dashed."""
    layouts = sorted({k[0] for k in data})
    for (layout, shared), pts in sorted(data.items()):
        pts = sorted((x, point(rows, key)) for x, rows in pts.items())
        pts = [(x, p) for x, p in pts if p]
        if not pts:
            continue
        ax.errorbar([x for x, _ in pts], [p[0] for _, p in pts],
                    yerr=[[p[1] for _, p in pts], [p[2] for _, p in pts]],
                    marker="o", capsize=2, ls="--" if shared else "-",
                    color=(plt_cmap(len(layouts)))(layouts.index(layout)),
                    label=layout + (" (shared keys)" if shared and styles else ""))
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2, loc="best")


def plt_cmap(n):
    """Distinct colours for n layouts (tab10 up to 10, else tab20)."""
    import matplotlib
    return matplotlib.colormaps["tab10" if n <= 10 else "tab20"]


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out, r = argv[1], runs(argv[2:])
    if not r:
        sys.exit("plot_microbench: no get_hit/set benchmarks in %s" % ", ".join(argv[2:]))
    keysets = sorted({k[4] for k in r})
    fig, axs = plt.subplots(2, 2, figsize=(13, 9))
    for col, op in enumerate(("get_hit", "set")):
        data = {}
        for (o, shared, layout, threads, keys), rows in r.items():
            if o == op and keys == keysets[-1]:
                data.setdefault((layout, shared), {})[threads] = rows
                shared_runs = any(k[0] == op and k[1] and k[2] == layout for k in r)
                if threads == 1 and shared_runs:  # one thread: shared = disjoint
                    data.setdefault((layout, True), {})[1] = rows
        plot_lines(axs[0][col], data, "ns_per_op", "ns per request (per thread)",
                   "%s: ns per request vs threads (%d keys per thread)" % (op, keysets[-1]))
        plot_lines(axs[1][col], data, "x_null", "× null store (same run)",
                   "%s: ratio to the null store vs threads" % op)
        tcount = sorted({k[3] for k in r})
        for ax in (axs[0][col], axs[1][col]):
            ax.set_xlabel("threads (one per CPU)")
            ax.set_xticks(tcount)
    fig.text(0.5, 0.003, spread_note(r), ha="center", va="bottom", fontsize=8)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    for ext in ("png", "svg"):
        fig.savefig("%s_threads.%s" % (out, ext), dpi=110)
    plt.close(fig)
    if len(keysets) > 1:
        fig, axs = plt.subplots(1, 2, figsize=(12, 4.5))
        for col, op in enumerate(("get_hit", "set")):
            data = {}
            for (o, shared, layout, threads, keys), rows in r.items():
                if o == op and threads == 1:
                    data.setdefault((layout, False), {})[keys] = rows
            plot_lines(axs[col], data, "x_null_p50", "× null store (p50)",
                       "%s, 1 thread: ratio to the null store vs keys" % op, styles=False)
            axs[col].set_xscale("log", base=2)
            axs[col].set_xlabel("distinct keys per thread (--xkv_keys)")
        fig.text(0.5, 0.003, spread_note(r), ha="center", va="bottom", fontsize=8)
        fig.tight_layout(rect=(0, 0.04, 1, 1))
        for ext in ("png", "svg"):
            fig.savefig("%s_keys.%s" % (out, ext), dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    main(sys.argv)
