# SPDX-License-Identifier: MIT
"""xdpkv compare's plots: one PNG (and its SVG) per experiment, with matplotlib
where it is installed; the helpers bench/plot/plot_layouts.py uses too."""

import os

import bmc
import clientmix
import headline
import hitratio
import tcpscale
from results import (SOCKET, XDPGEN, dist_order, kvexp_memory_rows, microbench_points, ratio_row,
                     rows_of, scaling_ceiling, share_points, spread, systems_in)


# ---- plots -------------------------------------------------------------------------------
def plt_mod():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


DPI = 110  # the PNGs' (check_figures.py reads the texts back at it)


def save(plt, fig, outdir, name, made, rect=None):
    """NAME (a .png) and, beside it, the same figure as SVG (vector).  rect:
    the part of the figure the panels may fill (room for a shared legend)."""
    fig.tight_layout(rect=rect)
    fig.savefig(os.path.join(outdir, name), dpi=DPI)
    fig.savefig(os.path.join(outdir, svg_name(name)))
    plt.close(fig)
    made.append(name)


def shared_legend(fig, axs):
    """One legend for every panel, below them (the panels' own go): with many
    systems a legend per panel covers the lines.  Returns save()'s rect."""
    handles, labels = {}, []
    for ax in [a for row in axs for a in row]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
        if ax.get_legend():
            ax.get_legend().remove()
    lg = fig.legend([handles[x] for x in labels], labels, loc="lower center",
                    ncol=min(5, len(labels)), fontsize=8)
    # the panels start above the legend's measured height (and the axis names' room)
    fig.canvas.draw()
    h = lg.get_window_extent(fig.canvas.get_renderer()).height / fig.bbox.height
    return (0, h + 0.02, 1, 1)


def svg_name(png):
    return png[:-4] + ".svg"


# one colour per system in every plot
COLORS = {"memcached-udp": "tab:blue", "memcached-tcp": "tab:cyan", "redis": "tab:brown",
          "xdpkv/hash_map": "tab:orange", "xdpkv/array_fnv": "tab:green",
          "xdpkv/lru": "tab:red", "xdpkv/percpu": "tab:purple",
          "xdpkv/lru_percpu": "tab:pink", "xdpkv/set_assoc": "tab:olive",
          "xdpkv/arena": "teal", "xdpkv/sieve": "goldenrod", "xdpkv/s3fifo": "slateblue",
          "xdpkv/lru_no_common_lru": "darkred",
          "reflector": "black", "xdpkv/null": "tab:gray"}


def bars(ax, groups, series, values, ylabel, title, errs=None):
    """groups on x, one bar per series; values[(group, series)]; errs: the
    same keys, (below, above) error bars (--repeat's min and max)."""
    n = max(1, len(series))
    w = 0.8 / n
    errs = errs or {}
    for i, s in enumerate(series):
        xs = [g + (i - (n - 1) / 2) * w for g in range(len(groups))]
        ys = [values.get((gname, s)) or 0 for gname in groups]
        e = [errs.get((gname, s)) or (0, 0) for gname in groups]
        yerr = [[x[0] for x in e], [x[1] for x in e]] if any(errs.get((g, s)) for g in groups) \
            else None
        ax.bar(xs, ys, w, label=s, color=COLORS.get(s), yerr=yerr, capsize=2)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=0)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)


def lines(ax, res_rows, xkey, ykey, xlabel, ylabel, title, logy=False, scale=1.0, mark=None,
          legend=True):
    """One line per system; error bars from --repeat (the rows' ykey runs, see
    runs_of); mark(r): true for points drawn with a red ring (e.g. runs with
    timeouts)."""
    by = {}
    for r in res_rows:
        if r.get(ykey) is None or r.get(xkey) is None:
            continue
        e = spread(r, scale, ykey)
        by.setdefault(r["system"], []).append((r[xkey], r[ykey] * scale, e,
                                               bool(mark and mark(r))))
    marked = False
    for s, pts in by.items():
        pts.sort(key=lambda p: p[0])
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        yerr = None
        if any(p[2] for p in pts):
            yerr = [[(p[2] or (0, 0))[0] for p in pts], [(p[2] or (0, 0))[1] for p in pts]]
        # a client mode of its own ("SYSTEM (spin)"): the system's colour, dashed, triangles
        mode = s.endswith(")") and " (" in s
        ax.errorbar(xs, ys, yerr=yerr, marker="^" if mode else "o", label=s,
                    color=COLORS.get(s.split(" (")[0] if mode else s), capsize=2,
                    ls="--" if mode else "-")
        bad = [p for p in pts if p[3]]
        if bad:
            ax.scatter([p[0] for p in bad], [p[1] for p in bad], s=140, facecolors="none",
                       edgecolors="red", linewidths=1.5, zorder=5,
                       label=None if marked else "timeouts in the run")
            marked = True
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if logy:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    if by and legend:
        ax.legend(fontsize=7)


def plot_all(res, outdir):
    plt = plt_mod()
    made = []
    if plt is None:
        return made, "matplotlib is not installed (Debian: python3-matplotlib): no plots"
    headline.plot(plt, res, outdir, made, save, COLORS)
    a = rows_of(res, "a", "loadgen")
    if a:
        dists = sorted({r["dist"] for r in a}, key=dist_order)
        xg = rows_of(res, "a", "xdpgen")
        fig, axs = plt.subplots(1, 2 if xg else 1, figsize=(12 if xg else 7, 4.8), squeeze=False)
        vals = {(r["dist"], r["system"]): (r["throughput_ops"] or 0) / 1000 for r in a}
        errs = {(r["dist"], r["system"]): spread(r, 1e-3) for r in a}
        bars(axs[0][0], dists, systems_in(a), vals, "kops/s", "(a) " + SOCKET, errs)
        axs[0][0].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=3)
        if xg:
            vals = {(r["dist"], r["system"]): (r["throughput_ops"] or 0) / 1000 for r in xg}
            errs = {(r["dist"], r["system"]): spread(r, 1e-3) for r in xg}
            bars(axs[0][1], dists, systems_in(xg), vals, "kops/s (replies)", "(a) " + XDPGEN,
                 errs)
            axs[0][1].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2)
        save(plt, fig, outdir, "a_throughput.png", made)
    b = [r for r in rows_of(res, "b") if not r.get("client")]
    if b:
        fig, axs = plt.subplots(1, 3, figsize=(15, 4.2))
        tmo = lambda r: r.get("timeouts")  # noqa: E731
        # the busy-polling client's points beside the curves, as systems of their own
        spin = [dict(r, system="%s (%s)" % (r["system"], r["client"])) for r in rows_of(res, "b")
                if r.get("client")]
        lines(axs[0], b + spin, "offered", "lat_p50_us", "offered load (requests/s)",
              "p50 (µs)", "(b) p50 latency\n(reflector: the testbed's floor)", logy=True,
              mark=tmo, legend=False)
        lines(axs[1], b, "offered", "lat_p99_us", "offered load (requests/s)", "p99 (µs)",
              "(b) p99 latency\n(red ring: timeouts, 100 ms, not in the percentiles)",
              logy=True, mark=tmo, legend=False)
        lines(axs[2], b, "offered", "throughput_ops", "offered load (requests/s)",
              "achieved (replies/s)", "(b) achieved against offered", mark=tmo, legend=False)
        from matplotlib.ticker import MaxNLocator
        for ax in axs:  # few enough load ticks that their labels never touch
            ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        save(plt, fig, outdir, "b_latency.png", made, rect=shared_legend(fig, [list(axs)]))
    c = rows_of(res, "c")
    if c:
        fig, axs = plt.subplots(1, 2, figsize=(12, 4.2))
        lines(axs[0], c, "write", "throughput_ops", "sets (%)", "kops/s", "(c) throughput vs "
              "write ratio", scale=1e-3)
        lines(axs[1], c, "write", "lat_p99_us", "sets (%)", "µs", "(c) p99 latency vs write ratio")
        save(plt, fig, outdir, "c_write_ratio.png", made)
    d = rows_of(res, "d")
    if d:
        fig, axs = plt.subplots(1, 2, figsize=(12, 4.2))
        ks = [r for r in d if r["value_size"] == 128]
        vs = [r for r in d if r["key_size"] == 16]
        lines(axs[0], ks, "key_size", "throughput_ops", "key size (bytes), values 128 B",
              "kops/s", "(d) throughput vs key size", scale=1e-3)
        lines(axs[1], vs, "value_size", "throughput_ops", "value size (bytes), keys 16 B",
              "kops/s", "(d) throughput vs value size", scale=1e-3)
        save(plt, fig, outdir, "d_sizes.png", made)
    e = rows_of(res, "e")
    if e:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        lines(ax, e, "scan", "throughput_ops", "scans (%% of requests, %s keys each)" %
              e[0].get("scan_len"), "kops/s", "(e) throughput vs scan ratio", scale=1e-3)
        save(plt, fig, outdir, "e_scan.png", made)
    f = [r for r in rows_of(res, "f", "server") if r.get("bytes_per_item")]
    fk = kvexp_memory_rows(res)
    if f or fk:
        fig, axs = plt.subplots(1, 3 if fk else 2, figsize=(18 if fk else 12, 4.6))
        if fk:
            kv = "%s B keys, %s B values, fill %s%%" % (fk[0]["key_size"], fk[0]["value_size"],
                                                        fk[0]["fill_pct"])
            for ax, key, what in ((axs[1], "bytes_per_live_item", "per live item"),
                                  (axs[2], "bytes_per_capacity", "per entry of capacity")):
                ax.bar(["%s\n%s" % (r["system"].replace("xdpkv/", ""), r.get("alloc", ""))
                        for r in fk], [r[key] for r in fk], color="tab:green")
                ax.axhline(fk[0].get("raw_bytes_per_item") or 0, color="k", ls="--", lw=1,
                           label="raw key+value bytes")
                ax.set_ylabel("map bytes " + what)
                ax.set_title("(f) kvexp: map bytes %s\n%s" % (what, kv), fontsize=10)
                ax.tick_params(axis="x", labelsize=8, labelrotation=90)
                ax.legend(fontsize=7)
                ax.grid(axis="y", alpha=0.3)
        ax = axs[0]
        names = [r["system"] for r in f]
        own = [r.get("bytes_per_item") or 0 for r in f]
        rss = [r.get("rss_growth_per_item") or 0 for r in f]
        x = range(len(names))
        ax.bar([i - 0.2 for i in x], own, 0.4, label="server's own figure / item")
        ax.bar([i + 0.2 for i in x], rss, 0.4, label="RSS growth / item (processes only)")
        ax.set_xticks(list(x))
        ax.set_xticklabels([n.replace("xdpkv/", "") for n in names], rotation=90,
                           fontsize=8)
        ax.set_ylabel("bytes per item")
        ax.set_title("(f) memory per live item after the preload, %s items" %
                     (f[0].get("items_loaded") if f else "?"), fontsize=10)
        ax.legend(fontsize=7)
        ax.grid(axis="y", alpha=0.3)
        save(plt, fig, outdir, "f_memory.png", made)
    g = rows_of(res, "g")
    lost = [r for r in g if (r.get("kvexp") == "lost" or r["tool"] == "loadgen") and
            r.get("readable_share") is not None]
    stale = [r for r in g if r.get("kvexp") == "stale" and r.get("stale_rate") is not None]
    if lost or stale:
        fig, axs = plt.subplots(1, 2, figsize=(12, 4.2))
        if lost:
            ratios = sorted({r["ratio"] for r in lost})
            vals = {("%.2f" % r["ratio"], r["system"]): 100 * (1 - r["readable_share"])
                    for r in lost}
            bars(axs[0], ["%.2f" % x for x in ratios], systems_in(lost), vals,
                 "% of keys set that cannot be read back",
                 "(g) lost keys vs keys/capacity (kvexp lost)")
            axs[0].set_xlabel("keys set / capacity")
            axs[0].legend(fontsize=7)
        if stale:
            axs[1].bar(["%s (%s)" % (r["system"], r.get("role", "")) for r in stale],
                       [100 * r["stale_rate"] for r in stale], color="tab:red")
            axs[1].set_ylabel("% of reads stale")
            axs[1].set_title("(g) stale reads, set on one CPU, get on another (kvexp stale)",
                             fontsize=10)
            axs[1].grid(axis="y", alpha=0.3)
        save(plt, fig, outdir, "g_lost.png", made)
    h = [r for r in rows_of(res, "h") if r.get("server_cpu_us_per_req")]
    if h:
        fig, axs = plt.subplots(1, 2, figsize=(12, 4.2))
        xs = range(len(h))
        axs[0].bar([i - 0.2 for i in xs], [r["server_cpu_us_per_req"] for r in h], 0.4,
                   label="server core (/proc/stat)")
        axs[0].bar([i + 0.2 for i in xs], [r.get("server_threads_us_per_req") or 0 for r in h],
                   0.4, label="server threads (NAPI kthread + server process)")
        axs[0].set_xticks(list(xs))
        axs[0].set_xticklabels([r["system"] for r in h])
        axs[0].legend(fontsize=7)
        axs[0].set_ylabel("server CPU µs per request")
        axs[0].set_title("(h) server core busy time per request (/proc/stat)", fontsize=10)
        axs[0].tick_params(axis="x", labelsize=7, rotation=20)
        axs[0].grid(axis="y", alpha=0.3)
        hx = [r for r in h if r.get("xdp_ns_per_run")]
        axs[1].bar([r["system"] for r in hx], [r["xdp_ns_per_run"] for r in hx], color="tab:orange")
        axs[1].set_ylabel("ns per XDP program run")
        axs[1].set_title("(h) XDP program time (bpf_stats run_time_ns / run_cnt)", fontsize=10)
        axs[1].tick_params(axis="x", labelsize=7, rotation=20)
        axs[1].grid(axis="y", alpha=0.3)
        save(plt, fig, outdir, "h_cpu.png", made)
    ii = share_points(res) if "i" in res["config"].get("experiments", "i") else []
    if ii:
        # layouts x runs, the fast path's share as a colour: one row per
        # layout keeps the figure a page wide however many runs there are
        lays = systems_in([{"system": p[0]} for p in ii])
        runs = []
        for p in ii:
            if p[1] not in runs:
                runs.append(p[1])
        grid = [[None] * len(runs) for _ in lays]
        for sys_, run, share in ii:
            grid[lays.index(sys_)][runs.index(run)] = 100 * share
        fig, ax = plt.subplots(figsize=(min(16, 3 + 0.5 * len(runs)), 1.6 + 0.45 * len(lays)))
        import numpy as np
        m = np.ma.masked_invalid(np.array([[np.nan if v is None else v for v in row]
                                           for row in grid], dtype=float))
        im = ax.imshow(m, cmap="RdYlGn", vmin=0, vmax=100, aspect="auto")
        for y, row in enumerate(grid):
            for x, v in enumerate(row):
                if v is not None:
                    ax.text(x, y, "%.0f" % v, ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(runs)))
        ax.set_xticklabels(runs, fontsize=8, rotation=45, ha="right")
        ax.set_yticks(range(len(lays)))
        ax.set_yticklabels([x.replace("xdpkv/", "") for x in lays], fontsize=8)
        fig.colorbar(im, ax=ax, label="% served by the XDP fast path")
        ax.set_title("(i) share the XDP fast path answered\n(the rest: the slow path)",
                     fontsize=9)
        save(plt, fig, outdir, "i_paths.png", made)
    plot_scaling(plt, res, outdir, made)
    plot_microbench(plt, res, outdir, made)
    hitratio.plot(res, outdir, made)
    bmc.plot(plt, res, outdir, made, save, COLORS)
    tcpscale.plot(plt, res, outdir, made, lines, save)
    clientmix.plot(plt, res, outdir, made, save, bars)
    return made, None


def plot_scaling(plt, res, outdir, made):
    """(j) replies/s and the ratio to the reflector against server cores,
    one panel pair per mix."""
    j = rows_of(res, "j")
    if not j:
        return
    mixes = [m for m in ("read", "write", "zipf", "hotkey") if any(r["mix"] == m for r in j)]
    fig, axs = plt.subplots(2, len(mixes), figsize=(4.2 * len(mixes) + 1, 7.5), squeeze=False)
    ceil = scaling_ceiling(j)
    cores = sorted({r["cores"] for r in j})
    for i, mix in enumerate(mixes):
        rows = [r for r in j if r["mix"] == mix]
        lines(axs[0][i], rows, "cores", "throughput_ops", "server cores", "kreplies/s",
              "(j) %s: replies/s" % mix, scale=1e-3)
        ratio = [ratio_row(r, ceil[(mix, r["cores"])])
                 for r in rows if r["system"] != "reflector" and r.get("throughput_ops") and
                 ceil.get((mix, r["cores"]))]
        lines(axs[1][i], ratio, "cores", "ratio", "server cores", "× reflector",
              "(j) %s: ratio to the reflector" % mix)
        for ax in (axs[0][i], axs[1][i]):
            ax.set_xticks(cores)
            if len(cores) > 1:
                ax.set_xscale("log", base=2)
                ax.set_xticks(cores)
                ax.set_xticklabels([str(c) for c in cores])
        axs[1][i].axhline(1.0, color="black", lw=0.8, ls="--")
        axs[1][i].set_ylim(0, max([1.1] + [1.1 * x for r in ratio
                                            for x in [r["ratio"]] + r["ratio_runs"]]))
    save(plt, fig, outdir, "j_scaling.png", made, rect=shared_legend(fig, axs))


def plot_microbench(plt, res, outdir, made):
    """(l) ns per request and the ratio to one thread against threads, one
    column per (operation, keys)."""
    panels = microbench_points(res)
    if not panels:
        return
    fig, axs = plt.subplots(2, len(panels), figsize=(4.2 * len(panels) + 1, 7.5), squeeze=False)
    threads = sorted({r["threads"] for rr in panels.values() for r in rr})
    for i, ((op, keys), rows) in enumerate(panels.items()):
        what = "GET hit" if op == "get_hit" else "SET"
        lines(axs[0][i], rows, "threads", "ns_per_op", "threads", "ns per request",
              "(l) %s, %s keys" % (what, keys))
        lines(axs[1][i], [r for r in rows if r.get("ratio1")], "threads", "ratio1", "threads",
              "× one thread", "(l) %s, %s keys: ratio to one thread" % (what, keys))
        axs[1][i].axhline(1.0, color="black", lw=0.8, ls="--")
        for ax in (axs[0][i], axs[1][i]):
            if len(threads) > 2:
                ax.set_xscale("log", base=2)
            ax.set_xticks(threads)
            ax.set_xticklabels([str(t) for t in threads])
        axs[0][i].set_ylim(bottom=0)
        axs[1][i].set_ylim(0, max([1.5] + [1.1 * x for r in rows if r.get("ratio1")
                                            for x in [r["ratio1"]] + r["ratio1_runs"]]))
    save(plt, fig, outdir, "l_microbench.png", made, rect=shared_legend(fig, axs))
