#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hit ratio of every layout against a cache simulator.

Runs `xkv-kvexp hitratio --json` (or reads its JSON, --from-json), regenerates
each run's request sequence (cachesim_models.gen_trace; its checksum must
equal the run's trace_fnv), simulates it with the policy the layout
implements, and prints per point the kernel's hit ratio, each model's, and
the absolute difference from the layout's reference model:

  lru        libCacheSim LRU                      (own exact LRU beside it)
  lru_no_common_lru  libCacheSim LRU of entries / possible CPUs: one CPU's list
  set_assoc  libCacheSim CLOCK per set: one Clock of `ways` objects per bucket,
             requests routed by the layout's keyed placement hash (own per-set
             CLOCK and libCacheSim's global CLOCK beside it)
  sieve      libCacheSim SIEVE per set, routed the same way (own per-set SIEVE
             and libCacheSim's global SIEVE beside it)
  s3fifo     own S3-FIFO per set (libCacheSim's S3FIFO cannot be one per set:
             10 % of 8 objects is no small FIFO), libCacheSim's global S3-FIFO
             beside it
  array_fnv  libCacheSim 1-object LRU per slot, routed by the layout's
             placement: direct mapping (own direct-mapped beside it)
  arena      own oldest-of-window (libCacheSim has no such policy), the layout's
             placement; libCacheSim FIFO beside it (context)
  hash_map   own no-eviction (libCacheSim has none): refuses new keys when full
  + libCacheSim LRU at the same entries for hash_map and percpu (context)

--own-only: the own models alone (no libCacheSim needed; `xdpkv compare`
uses it, and says so in its report, where bench/.venv has no libCacheSim).

Cache size in every model: the number of entries the layout's map holds
(the row's `entries`), object size 1.  Writes the combined JSON (--out) and a
miss-ratio-curve figure (--figure; .png and .svg) with the kernel's and the
reference's curve per layout.

Needs libCacheSim (PyPI `libcachesim`): bench/kvexp/setup-cachesim.sh puts it
in bench/.venv; run this script with bench/.venv/bin/python.  Without it the
script stops (exit 2) and says so.

  sudo bench/.venv/bin/python bench/kvexp/hitratio_vs_cachesim.py \\
      --out docs/data/hitratio-DATE.json --figure docs/figures/hitratio_mrc -- --keys 32768
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cachesim_models as cm  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Absolute hit-ratio difference allowed between the kernel and the reference.
# Exact-placement models simulate the same placement and policy: any
# difference is a bug (or a writer race, which a single pinned caller has not).
# lru: the kernel's LRU is an approximation (below); 0.05 was set from the
# smoke test's runs, before the full run.
TOL = {"lru": 0.05, "lru_percpu": 0.05, "lru_no_common_lru": 0.05}
TOL_EXACT = 0.005

WHY = {
    "lru": "BPF_MAP_TYPE_LRU_HASH is not exact LRU: a hit only sets a reference bit; "
           "eviction rotates an active and an inactive list in batches and takes free nodes "
           "from per-CPU local free lists (refilled 128 at a time from the global lists), so "
           "it evicts in batches and keeps referenced (frequent) items longer than LRU would",
    "set_assoc": "same bucket placement and CLOCK as the model; a difference would be a bug",
    "sieve": "same bucket placement and SIEVE as the model; a difference would be a bug",
    "s3fifo": "same bucket placement and per-set S3-FIFO (1 small way, 8 ghost tags) as the "
              "model; a difference would be a bug",
    "array_fnv": "same placement and replacement as the model; a difference would be a bug",
    "arena": "same placement and window policy as the model; a difference would be a bug "
             "(libCacheSim's FIFO, shown beside it, has full associativity: arena replaces the "
             "oldest of only 4 slots, so it misses more than FIFO where the table is full)",
    "hash_map": "no eviction in both; a difference would be a bug (libCacheSim LRU beside it "
                "for context)",
}
WHY["percpu"] = WHY["hash_map"]
WHY["lru_percpu"] = WHY["lru"]
WHY["lru_no_common_lru"] = (
    "one LRU list per possible CPU, each with entries / CPUs nodes, and a CPU evicts from its "
    "own list only, so the model is LRU of one CPU's share; within that, the kernel's LRU "
    "approximation as for lru")


def need_libcachesim():
    try:
        import libcachesim  # noqa: F401
        from importlib.metadata import version
        return version("libcachesim")
    except ImportError as e:
        sys.exit("hitratio_vs_cachesim: libCacheSim is not importable (%s).\n"
                 "Install it: bench/kvexp/setup-cachesim.sh (PyPI libcachesim into bench/.venv),\n"
                 "then run this script with bench/.venv/bin/python." % e)


def run_kvexp(tool, extra):
    cmd = [tool, "hitratio", "--json"] + extra
    print("$ " + " ".join(cmd), file=sys.stderr)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if p.returncode == 77:
        sys.exit(77)
    if p.returncode:
        sys.exit("xkv-kvexp hitratio exited %d" % p.returncode)
    return json.loads(p.stdout)


def simulate(doc, use_lcs=True):
    par = doc["params"]
    keys, klen = par["keys"], cm.key_lengths(par)
    traces, points = {}, []
    bad_fnv = 0
    for r in doc["results"]:
        t0 = time.time()
        dist = "uniform" if r["dist"] == "uniform" else r["alpha"]
        mods = cm.models(r["layout"], r, keys, klen, use_lcs,
                         (doc.get("machine") or {}).get("possible_cpus", 1))
        if not mods:
            sys.exit("hitratio_vs_cachesim: no model of layout %s: add its policy to "
                     "cachesim_models.models() (libCacheSim has e.g. LRU, FIFO, Clock, "
                     "S3FIFO, Sieve)" % r["layout"])
        per = {name: [] for name, _ in mods}
        for s in r["seeds"]:
            k = (r["dist"], s["seed"])
            if k not in traces:
                traces[k] = cm.gen_trace(dist, keys, s["seed"], r["warmup"] + r["requests"])
            trace, fnv = traces[k]
            if fnv != s["trace_fnv"]:
                bad_fnv += 1
                print("trace checksum differs: %s seed %d: %s != %s" % (r["dist"], s["seed"], fnv,
                                                                        s["trace_fnv"]))
            for name, fn in mods:
                per[name].append(fn(trace, r["warmup"]) / r["requests"])
        models = {n: {"hit_ratio": sum(v) / len(v), "per_seed": v} for n, v in per.items()}
        ref = mods[0][0]
        tol = TOL.get(r["layout"], TOL_EXACT)
        diff = r["hit_ratio"] - models[ref]["hit_ratio"]
        lcs = cm.lcs_curve(models)
        points.append({
            "layout": r["layout"], "budget": r["budget"], "budget_frac": r["budget_frac"],
            "budget_bytes": r["budget_bytes"], "map_bytes": r["map_bytes"], "entries": r["entries"],
            "dist": r["dist"], "alpha": r["alpha"],
            "kernel": {"hit_ratio": r["hit_ratio"], "sd": r["hit_ratio_sd"],
                       "min": r["hit_ratio_min"], "max": r["hit_ratio_max"],
                       "per_seed": [s["hit_ratio"] for s in r["seeds"]],
                       "hits_per_mib": r["hits_per_mib"]},
            "models": models, "reference": ref, "diff": round(diff, 6), "tolerance": tol,
            "libcachesim": lcs,
            "diff_libcachesim": round(r["hit_ratio"] - models[lcs]["hit_ratio"], 6) if lcs else None,
            "within": abs(diff) <= tol, "sim_secs": round(time.time() - t0, 2)})
        print("# %s %s %s: %.1f s" % (r["layout"], r["budget"], r["dist"], time.time() - t0),
              file=sys.stderr)
    if bad_fnv:
        sys.exit("%d runs: the regenerated request sequence differs from the kernel run's" % bad_fnv)
    return points


def table(points):
    names = []
    for p in points:
        for n in p["models"]:
            if n not in names:
                names.append(n)
    print("%-10s %-6s %-9s %8s %10s %8s  %-26s %8s %8s  %s" % (
        "layout", "budget", "dist", "entries", "kernel", "sd", "reference", "ref", "diff", "ok"))
    for p in points:
        print("%-10s %-6s %-9s %8d %9.2f%% %7.2f%%  %-26s %7.2f%% %+7.2f%%  %s" % (
            p["layout"], p["budget"], p["dist"], p["entries"], p["kernel"]["hit_ratio"] * 100,
            p["kernel"]["sd"] * 100, p["reference"], p["models"][p["reference"]]["hit_ratio"] * 100,
            p["diff"] * 100, "ok" if p["within"] else "OUT (tol %.1f%%)" % (p["tolerance"] * 100)))
    summary = {}
    for layout in dict.fromkeys(p["layout"] for p in points):
        ps = [p for p in points if p["layout"] == layout]
        d = [abs(p["diff"]) for p in ps]
        worst = max(ps, key=lambda p: abs(p["diff"]))
        summary[layout] = {
            "reference": ps[0]["reference"], "tolerance": ps[0]["tolerance"], "points": len(ps),
            "within": sum(p["within"] for p in ps), "max_abs_diff": max(d),
            "mean_abs_diff": sum(d) / len(d),
            "mean_signed_diff": sum(p["diff"] for p in ps) / len(ps),
            "worst": "%s %s" % (worst["budget"], worst["dist"]),
            "explanation": WHY.get(layout, "")}
        lc = [p["diff_libcachesim"] for p in ps if p.get("diff_libcachesim") is not None]
        if lc:
            summary[layout].update({
                "libcachesim": ps[0]["libcachesim"], "libcachesim_max_abs_diff": max(map(abs, lc)),
                "libcachesim_mean_signed_diff": sum(lc) / len(lc)})
    print("\nagreement (|kernel - reference| hit ratio, per point = mean over seeds):")
    for layout, s in summary.items():
        print("  %-10s vs %-26s %3d/%-3d within %.1f%%; max %.2f%% (%s), mean %.2f%%, signed mean %+.2f%%" % (
            layout, s["reference"], s["within"], s["points"], s["tolerance"] * 100,
            s["max_abs_diff"] * 100, s["worst"], s["mean_abs_diff"] * 100,
            s["mean_signed_diff"] * 100))
    return summary


def figure(points, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    layouts = list(dict.fromkeys(p["layout"] for p in points))
    dists = list(dict.fromkeys(p["dist"] for p in points))
    cols = 3
    rows = (len(layouts) + 1 + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.8 * rows), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, layout in enumerate(layouts):
        ax = axes[i // cols][i % cols]
        for j, d in enumerate(dists):
            ps = sorted((p for p in points if p["layout"] == layout and p["dist"] == d),
                        key=lambda p: p["map_bytes"])
            if not ps:
                continue
            x = [p["map_bytes"] / 2 ** 20 for p in ps]
            c = colors[j % len(colors)]
            ax.errorbar(x, [1 - p["kernel"]["hit_ratio"] for p in ps],
                        yerr=[p["kernel"]["sd"] for p in ps], color=c, marker="o", ms=3,
                        label="%s kernel" % d)
            ax.plot(x, [1 - p["models"][p["reference"]]["hit_ratio"] for p in ps], color=c,
                    ls="--", marker="x", ms=4, label="%s reference" % d)
            lcs = ps[0].get("libcachesim")
            if lcs and lcs != ps[0]["reference"]:
                ax.plot(x, [1 - p["models"][lcs]["hit_ratio"] for p in ps], color=c, ls=":",
                        marker="+", ms=4, label="%s %s" % (d, lcs))
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 1)
        p0 = next(p for p in points if p["layout"] == layout)
        extra = p0.get("libcachesim")
        ax.set_title("%s vs %s%s" % (layout, p0["reference"],
                                     "; dotted: " + extra if extra and extra != p0["reference"]
                                     else ""), fontsize=8)
        ax.set_xlabel("store map MiB (kernel memlock)")
        ax.set_ylabel("miss ratio")
        ax.grid(alpha=0.3)
        if i == 0:
            ax.legend(fontsize=6, ncol=2)
    ax = axes[len(layouts) // cols][len(layouts) % cols]
    zd = "zipf0.99" if "zipf0.99" in dists else dists[0]
    for j, layout in enumerate(layouts):
        ps = sorted((p for p in points if p["layout"] == layout and p["dist"] == zd),
                    key=lambda p: p["map_bytes"])
        ax.plot([p["map_bytes"] / 2 ** 20 for p in ps], [1 - p["kernel"]["hit_ratio"] for p in ps],
                marker="o", ms=3, label=layout, color=colors[j % len(colors)])
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1)
    ax.set_title("all layouts, kernel, %s" % zd, fontsize=9)
    ax.set_xlabel("store map MiB (kernel memlock)")
    ax.set_ylabel("miss ratio")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    for k in range(len(layouts) + 1, rows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.suptitle("Miss-ratio curves: XDP program (solid, ±sd over seeds) vs the layout's reference "
                 "model (dashed) and libCacheSim where it is not the reference (dotted)",
                 fontsize=10)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig("%s.%s" % (path, ext), dpi=110)
    print("figure: %s.png, %s.svg" % (path, path), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kvexp", default=os.path.join(ROOT, "build/bench/kvexp/xkv-kvexp"))
    ap.add_argument("--from-json", help="a saved `xkv-kvexp hitratio --json` instead of running it")
    ap.add_argument("--out", help="combined JSON (kvexp run, models, agreement)")
    ap.add_argument("--figure", help="miss-ratio-curve figure, path without extension")
    ap.add_argument("--own-only", action="store_true",
                    help="the own Python models only (no libCacheSim)")
    ap.add_argument("kvexp_args", nargs="*", help="after --: arguments for xkv-kvexp hitratio")
    a = ap.parse_args()
    lcs_version = None if a.own_only else need_libcachesim()
    t0 = time.time()
    if a.from_json:
        with open(a.from_json) as f:
            doc = json.load(f)
    else:
        doc = run_kvexp(a.kvexp, a.kvexp_args)
    t1 = time.time()
    points = simulate(doc, not a.own_only)
    summary = table(points)
    out = {"tool": "hitratio_vs_cachesim.py", "libcachesim_version": lcs_version,
           "python": platform.python_version(),
           "cache_size": "entries the layout's map holds (cfg.entries), object size 1",
           "tolerance": {"exact_models": TOL_EXACT, **TOL},
           "set_assoc_per_set": "one libCacheSim Clock (1-bit, init_freq 0) of `ways` objects per "
                                "bucket; each request goes to its key's bucket by the layout's "
                                "keyed hash (SipHash-1-3, hash_seed) mod buckets",
           "sieve_per_set": "one libCacheSim Sieve of `ways` objects per bucket, routed as set_assoc",
           "s3fifo_per_set": "own model only (cachesim_models.set_s3fifo_own): libCacheSim's "
                             "S3FIFO of 8 objects has a small FIFO of 0 and admits nothing",
           "own_models": "cachesim_models.py: direct-mapped, oldest-of-window, no-eviction and an "
                         "exact LRU and per-set CLOCK, SIEVE and S3-FIFO written independently "
                         "of the kernel code",
           "kvexp_secs": doc.get("secs"), "sim_secs": round(time.time() - t1, 1),
           "summary": summary, "points": points, "kvexp": doc}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
        print("json: %s" % a.out, file=sys.stderr)
    if a.figure:
        figure(points, a.figure)
    print("total %.0f s (kvexp %.0f s)" % (time.time() - t0, t1 - t0), file=sys.stderr)


if __name__ == "__main__":
    main()
