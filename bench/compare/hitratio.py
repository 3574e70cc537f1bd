# SPDX-License-Identifier: MIT
"""xdpkv compare (m): hit ratio per byte, one layout at a time.

  run_layout   xkv-kvexp hitratio --json for one layout (its progress lines go
               to compare's log), the JSON kept in logs/hitratio-LAYOUT.json
  check_doc    the run checked before anything is reported: every point and
               seed present, no wrong value, hits + misses = requests, every
               set answered, the map within its budget
  simulate     bench/kvexp/hitratio_vs_cachesim.py on that JSON: each run's
               request sequence regenerated (its checksum must match) and
               replayed in libCacheSim (bench/.venv) and the own models
  rows         one compare row per layout x budget x distribution
  md, plot     the report's section and its miss-ratio-curve figure (the
               figure is hitratio_vs_cachesim.figure: kernel, reference and
               libCacheSim curves on the same axes)
"""
import json
import os
import subprocess
import sys

from servers import CompareError

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
KVEXP_DIR = os.path.join(REPO, "bench", "kvexp")
SIM = os.path.join(KVEXP_DIR, "hitratio_vs_cachesim.py")
VENV_PY = os.path.join(REPO, "bench", ".venv", "bin", "python")
# what installs it there (a source tree's, or the package's under /usr/share/xdpkv)
SETUP = os.path.join(KVEXP_DIR, "setup-cachesim.sh")
# the map's bytes may miss the budget by this share, or the budget tolerance
# the run was given if larger (xkv-kvexp sizes it from whole entries), or by
# one page: array and arena maps are allocated in whole 4 KiB pages, which
# at a smoke test's small budgets is more than 10 %
BUDGET_SLACK = 0.10
PAGE = 4096
PNG = "m_hitratio.png"
LABEL = ("in-process: cache-aside gets and sets through the XDP program (BPF_PROG_TEST_RUN), "
         "map bytes as the kernel reports them; simulators on the same request sequences")


def simulator():
    """(python, libCacheSim version or None): bench/.venv's python where it
    imports libcachesim (bench/kvexp/setup-cachesim.sh), else this python and
    the own models only."""
    if os.access(VENV_PY, os.X_OK):
        p = subprocess.run([VENV_PY, "-c", "import libcachesim; from importlib.metadata import "
                            "version; print(version('libcachesim'))"],
                           capture_output=True, text=True, timeout=120)
        if p.returncode == 0 and p.stdout.strip():
            return VENV_PY, p.stdout.strip()
    return sys.executable, None


def kvexp_args(h, workload, cpu):
    return ["--keys", str(h["keys"]), "--budgets", h["budgets"], "--dists", h["dists"],
            "--seeds", h["seeds"], "--warmup", str(h["warmup"]), "--requests",
            str(h["requests"]), "--budget-tol", str(h["tol"]), "--workload", workload,
            "--cpu", str(cpu)]


def n_list(v):
    return len([x for x in v.split(",") if x])


def estimate(h):
    """Seconds of one layout: the simulators' start, store loads (~0.2 s per
    budget), requests at ~180 k/s through BPF_PROG_TEST_RUN and the simulators
    at ~1.1 M/s (the 2-vCPU VM: 664 s and 103 s for 5 layouts x 23.6 M
    requests; a quick run's layout, three budgets of a 4096-key run, took
    1.4 s on the quiet VM)."""
    req = (n_list(h["budgets"]) * n_list(h["dists"]) * n_list(h["seeds"]) *
           (h["warmup"] + h["requests"]) * h["keys"])
    return 0.1 + 0.2 * n_list(h["budgets"]) + req / 180000 + req / 1100000


def run_layout(kvexp, layout, h, workload, cpu, logdir, log, name=None):
    cmd = [kvexp, "hitratio", "--json", "--layouts", layout] + kvexp_args(h, workload, cpu)
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        raise CompareError("%s: %s" % (kvexp, e))
    err = []
    for line in p.stderr:  # progress while it runs
        err.append(line)
        if line.startswith("# "):
            log("  (m) " + line[2:].rstrip())
    out = p.stdout.read()
    p.wait()
    name = name or layout  # the logs' name: hitratio-NAME.json, .log
    with open(os.path.join(logdir, "hitratio-%s.json" % name), "w") as f:
        f.write(out)
    with open(os.path.join(logdir, "hitratio-%s.log" % name), "w") as f:
        f.write(" ".join(cmd) + "\n" + "".join(err))
    if p.returncode:
        raise CompareError("xkv-kvexp hitratio exited with %d: %s" % (
            p.returncode, "".join(err).strip()[-600:]))
    try:
        return json.loads(out)
    except ValueError:
        raise CompareError("xkv-kvexp hitratio printed no JSON")


def check_doc(doc, layout, h):
    """What is wrong with a run, before its numbers are believed."""
    bad = []
    rows = doc.get("results") or []
    want = n_list(h["budgets"]) * n_list(h["dists"])
    if doc.get("subcommand") != "hitratio" or len(rows) != want:
        bad.append("%d points, expected %d (budgets x distributions)" % (len(rows), want))
    for r in rows:
        tag = "%s %s" % (r.get("budget"), r.get("dist"))
        seeds = r.get("seeds") or []
        if r.get("layout") != layout:
            bad.append("%s: a point of layout %s" % (tag, r.get("layout")))
        if len(seeds) != n_list(h["seeds"]):
            bad.append("%s: %d seeds, expected %d" % (tag, len(seeds), n_list(h["seeds"])))
        if not 0 <= r.get("hit_ratio", -1) <= 1:
            bad.append("%s: hit ratio %s" % (tag, r.get("hit_ratio")))
        if not r.get("budget_bytes") or abs(r.get("map_bytes", 0) - r["budget_bytes"]) > \
                max(max(BUDGET_SLACK, h["tol"]) * r["budget_bytes"], PAGE):
            bad.append("%s: map %s bytes for a budget of %s" % (tag, r.get("map_bytes"),
                                                                r.get("budget_bytes")))
        for s in seeds:
            if s.get("wrong"):
                bad.append("%s seed %s: %d wrong values" % (tag, s.get("seed"), s["wrong"]))
            if s.get("set_other"):
                bad.append("%s seed %s: %d sets answered neither STORED nor out of memory" %
                           (tag, s.get("seed"), s["set_other"]))
            if s.get("hits", 0) + s.get("misses", 0) != r.get("requests"):
                bad.append("%s seed %s: hits + misses != requests" % (tag, s.get("seed")))
    return bad


def simulate(doc_path, out_path, python, own_only):
    cmd = [python, SIM, "--from-json", doc_path, "--out", out_path] + (
        ["--own-only"] if own_only else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=36000)
    if p.returncode:
        raise CompareError("%s exited with %d: %s" % (os.path.basename(SIM), p.returncode,
                                                      (p.stderr + p.stdout).strip()[-600:]))
    with open(out_path) as f:
        return json.load(f)


def rows(sim, workload):
    """(system, params, result) per point of a simulated run."""
    out = []
    for p in sim["points"]:
        ref, lcs, k = p["reference"], p.get("libcachesim"), p["kernel"]
        res = {"hit_ratio": k["hit_ratio"], "hit_ratio_sd": k["sd"],
               "hit_ratio_min": k["min"], "hit_ratio_max": k["max"],
               "hit_ratio_runs": k["per_seed"], "hits_per_mib": k["hits_per_mib"],
               "budget_bytes": p["budget_bytes"], "map_bytes": p["map_bytes"],
               "entries": p["entries"], "reference": ref,
               "reference_hit_ratio": p["models"][ref]["hit_ratio"], "diff": p["diff"],
               "tolerance": p["tolerance"], "within": p["within"], "libcachesim": lcs,
               "libcachesim_hit_ratio": p["models"][lcs]["hit_ratio"] if lcs else None,
               "diff_libcachesim": p.get("diff_libcachesim")}
        out.append(("xdpkv/" + p["layout"], {"budget": p["budget"], "budget_frac": p["budget_frac"],
                                             "dist": p["dist"], "workload": workload}, res))
    return out


def merge(sims, lcs_version, python):
    """results.json's "hitratio": the simulators used, every point, the
    agreement per layout, the parameters of the runs."""
    if not sims:
        return None
    params = dict(sims[0]["kvexp"]["params"])
    params.pop("key_sizes_hex", None)
    # the interpreter as a path in the source tree (REPO/...), not this machine's
    python = python and python.replace(REPO, "<source tree>")
    return {"simulator": ("libCacheSim %s and the own models (%s)" % (lcs_version, python)
                          if lcs_version else "the own models only: libCacheSim is not "
                          "installed (%s)" % SETUP),
            "libcachesim_version": lcs_version,
            "params": params, "machine": sims[0]["kvexp"].get("machine"),
            "tolerance": sims[0].get("tolerance"),
            "summary": {k: v for s in sims for k, v in s["summary"].items()},
            "points": [p for s in sims for p in s["points"]]}


# ---- report ---------------------------------------------------------------------------

def plot(res, outdir, made):
    hr = res.get("hitratio")
    if not hr or not hr.get("points"):
        return
    sys.path.insert(0, KVEXP_DIR)
    import hitratio_vs_cachesim as hvc
    hvc.figure(hr["points"], os.path.join(outdir, PNG[:-4]))
    made.append(PNG)


def pct(x):
    return "–" if x is None else "%.1f" % (100 * x)


def md(res, L, table):
    hr = res.get("hitratio")
    if not hr:
        return
    par = hr["params"]
    L.append("Simulators: %s. Working set: %s keys, workload %s (%s), %s bytes of keys + "
             "values; %s warm-up and %s counted requests per run; seeds %s.\n\n" % (
                 hr["simulator"], par["keys"], par.get("workload", "fixed"),
                 par.get("workload_source", "%s-byte keys, %s-byte values" % (
                     par["key_size"], par["value_size"])),
                 "{:,}".format(par["working_set_bytes"]), par["warmup_x"],
                 par["requests_x"], ", ".join(str(s) for s in par["seeds"])))
    pts = hr["points"]
    dists = list(dict.fromkeys(p["dist"] for p in pts))
    body = []
    for p in sorted(pts, key=lambda p: (p["layout"], p["budget_frac"])):
        if p["dist"] != dists[0]:
            continue
        cells = []
        for d in dists:
            q = next((x for x in pts if x["layout"] == p["layout"] and
                      x["budget"] == p["budget"] and x["dist"] == d), None)
            k = q and q["kernel"]
            cells.append("–" if not k else "%s ± %s (%s–%s); %.0f k" % (
                pct(k["hit_ratio"]), pct(k["sd"]), pct(k["min"]), pct(k["max"]),
                k["hits_per_mib"] / 1000))
        body.append([p["layout"], p["budget"], "{:,}".format(p["map_bytes"]),
                     "{:,}".format(p["entries"])] + cells)
    L.append(table(["layout", "budget", "map bytes", "entries"] + dists, body))
    L.append("\nCells: hit ratio %, mean ± sd over the seeds (min–max); then hits per MiB of "
             "map (thousands, counted hits / map MiB). Budget: a fraction of the working set's "
             "bytes; map bytes: the kernel's figure for the store map (fdinfo memlock).\n\n")
    body = []
    for layout, s in hr["summary"].items():
        lc = s.get("libcachesim")
        body.append([layout, s["reference"], "%d/%d" % (s["within"], s["points"]),
                     pct(s["tolerance"]), pct(s["max_abs_diff"]) + " (%s)" % s["worst"],
                     "%+.2f" % (100 * s["mean_signed_diff"]),
                     "–" if not lc or lc == s["reference"] else "%s: max %s, mean %+.2f" % (
                         lc, pct(s["libcachesim_max_abs_diff"]),
                         100 * s["libcachesim_mean_signed_diff"]),
                     s.get("explanation", "")])
    L.append("**Agreement** (kernel − model hit ratio, points, per point the mean over the "
             "seeds; tolerance fixed in bench/kvexp/hitratio_vs_cachesim.py):\n\n")
    L.append(table(["layout", "reference", "within", "tolerance", "max \\|diff\\|",
                    "mean diff", "libCacheSim beside it", "why"], body))
    L.append("\nThe figure: miss ratio against the map's MiB per layout, the XDP program solid "
             "(error bars: sd over the seeds), its reference model dashed, libCacheSim dotted "
             "where it is not the reference.\n")
