# SPDX-License-Identifier: MIT
"""xdpkv compare's headline: one row per system (every layout, memcached UDP
and TCP, Redis), the same definitions for all, built from the experiments'
rows of results.json.  Every cell names the row and field it comes from
(source), its spread over the runs of that row (min, max, n), whether it is
estimated rather than measured, and a label; a cell that could not be filled
says why.  check.py verifies each cell against its source row, so the table
cannot drift from the experiments.  Also the headline figure: capacity
against bytes per item, hit ratio written beside each layout."""

from experiments import (CLIENT_TEXT, HEADLINE_BUDGET, HEADLINE_DIST, HEADLINE_FRACTION,
                         HEADLINE_RATIO, LOW_CLIENT, LOW_FRACTION, XDPGEN_LABEL)

PNG = "headline.png"

# (key, heading, unit) in the order of the table
COLUMNS = (
    ("capacity", "capacity per server core, measured", "M replies/s"),
    ("capacity_cpu", "capacity from server CPU per request", "M requests/s"),
    ("cpu_us", "server CPU per request at the common load", "µs"),
    ("p50_us", "p50 at the common load", "µs"),
    ("p99_us", "p99 at the common load", "µs"),
    ("p50_low_us", "p50 at the low load, busy-polling client", "µs"),
    ("p99_low_us", "p99 at the low load, busy-polling client", "µs"),
    ("timeouts", "requests unanswered at the common load", "count"),
    ("bytes_per_item", "bytes per item", "B"),
    ("hit_ratio", "hit ratio at the budget", ""),
    ("lost_2x", "data lost at 2x capacity", "of keys set"),
)
# a cell's field -> the field of its runs ("FIELD_runs" unless named here)
RUNS_OF = {"hit_ratio": "hit_ratio_runs", "throughput_ops": "throughput_runs"}


def client_mode(system):
    """How the socket client talks to a system (every row states it)."""
    if system.startswith("xdpkv/") or system == "memcached-udp":
        return ("UDP, one request per datagram; (a) closed loop, 32 in flight; the common "
                "load open loop (Poisson)")
    return ("TCP, one connection, 32 requests in flight pipelined (several share a segment); "
            "the common load open loop (Poisson)")


def transform(name, x):
    if x is None:
        return None
    if name == "inverse_us":  # µs per request -> M requests/s
        return 1.0 / x if x else None
    if name == "one_minus":
        return 1.0 - x
    if name == "mega":
        return x / 1e6
    return x


def cell(rows, idx, field, label, tf=None, estimated=False, runs_field=None):
    """A cell from rows[idx][field] (through the transform tf), with the
    spread over the row's runs where it has them."""
    r = rows[idx]
    v = transform(tf, r.get(field))
    if v is None:
        return missing("%s: %s is empty in its row" % (label, field))
    rf = runs_field or RUNS_OF.get(field, field + "_runs")
    runs = [transform(tf, x) for x in (r.get(rf) or []) if x is not None]
    runs = [x for x in runs if x is not None]
    lo, hi = (min(runs), max(runs)) if runs else (v, v)
    return {"value": v, "min": lo, "max": hi, "n": len(runs) or 1, "estimated": estimated,
            "label": label,
            "source": {"experiment": r["experiment"], "row": idx, "field": field,
                       "runs_field": rf if runs else None, "transform": tf}}


def missing(why):
    return {"value": None, "why": why}


def find(rows, system, exp, **want):
    for i, r in enumerate(rows):
        if r.get("system") == system and r.get("experiment") == exp and \
                all(r.get(k) == v for k, v in want.items()):
            return i
    return None


# what a source row must match, per column: experiment and parameters
def definitions(res):
    return {
        "capacity": {"experiment": "a", "tool": "xdpgen", "dist": "uniform"},
        "capacity_cpu": {"experiment": "a", "tool": "loadgen", "dist": "uniform"},
        "cpu_us": {"experiment": "b", "fraction": HEADLINE_FRACTION, "client": None},
        "p50_us": {"experiment": "b", "fraction": HEADLINE_FRACTION, "client": None},
        "p99_us": {"experiment": "b", "fraction": HEADLINE_FRACTION, "client": None},
        "p50_low_us": {"experiment": "b", "fraction": LOW_FRACTION, "client": LOW_CLIENT},
        "p99_low_us": {"experiment": "b", "fraction": LOW_FRACTION, "client": LOW_CLIENT},
        "timeouts": {"experiment": "b", "fraction": HEADLINE_FRACTION, "client": None},
        "bytes_per_item": {"experiment": "f", "tool": "server",
                           "memcached, redis": "point headline (three fresh servers) if the "
                                               "run has it"},
        "hit_ratio": {"experiment": "m", "point": "headline", "budget": HEADLINE_BUDGET,
                      "dist": HEADLINE_DIST},
        "lost_2x": {"experiment": "g", "ratio": HEADLINE_RATIO, "layouts": "kvexp lost",
                    "memcached, redis": "tool loadgen (a memory limit)"},
    }


def systems(res):
    c = res["config"]
    out = ["xdpkv/" + l for l in c.get("layouts", [])]
    out += [b for b in c.get("baselines", []) if b in ("memcached-udp", "memcached-tcp", "redis")]
    return out


def build_row(res, system):
    rows, exps = res["rows"], res["config"].get("experiments", "")
    xdp = system.startswith("xdpkv/")
    ref = res["config"].get("reference_max")
    load = "%.0f k requests/s" % (HEADLINE_FRACTION * ref / 1000) if ref else "?"
    out = {"system": system, "client_mode": client_mode(system)}

    def need(exp):
        return None if exp in exps else "not measured: experiment (%s) was not run" % exp

    # capacity: the in-kernel generator's replies/s (XDP layouts only)
    i = find(rows, system, "a", tool="xdpgen", dist="uniform") if xdp else None
    if i is not None:
        busy = rows[i].get("server_busy")
        out["capacity"] = cell(rows, i, "throughput_ops", "in-kernel generator, uniform keys, "
                               "server core %s busy" % ("%.0f %%" % (100 * busy) if busy
                                                        else "?"), tf="mega")
    else:
        out["capacity"] = missing(
            need("a") or ("no in-kernel generator for a socket server: see the capacity from "
                          "CPU per request" if not xdp else "no in-kernel generator row"))
    own = "the server's own threads (NAPI kthread + server process)"
    i = find(rows, system, "a", tool="loadgen", dist="uniform")
    if i is None:
        out["capacity_cpu"] = missing(need("a") or "no (a) socket-client row, uniform keys")
    else:
        out["capacity_cpu"] = cell(
            rows, i, "server_threads_us_per_req", "1 / server CPU per request of %s at the "
            "socket client's closed-loop max ((a), uniform keys; the server is not saturated "
            "there, so per-request overheads weigh more than at capacity): an estimate" % own,
            tf="inverse_us", estimated=True)
    sp = find(rows, system, "b", fraction=LOW_FRACTION, client=LOW_CLIENT)
    if sp is None:
        why = need("b") or ("the %s client mode is UDP only" % LOW_CLIENT if "UDP" not in
                            client_mode(system) else "no %s (b) row" % LOW_CLIENT)
        out["p50_low_us"] = out["p99_low_us"] = missing(why)
    else:
        at = "%s, at %s requests/s (%g x %s's max: every server's CPU idles between requests)" % (
            CLIENT_TEXT[LOW_CLIENT], "%.0f k" % (LOW_FRACTION * ref / 1000) if ref else "?",
            LOW_FRACTION, res["config"].get("reference_system") or "?")
        out["p50_low_us"] = cell(rows, sp, "lat_p50_us", at)
        out["p99_low_us"] = cell(rows, sp, "lat_p99_us", at)
    b = find(rows, system, "b", fraction=HEADLINE_FRACTION, client=None)
    if b is None:
        why = need("b") or "no (b) row at %g of the reference's max" % HEADLINE_FRACTION
        for k in ("cpu_us", "p50_us", "p99_us", "timeouts"):
            out[k] = missing(why)
    else:
        at = "at %s (%g x %s's max)" % (load, HEADLINE_FRACTION,
                                       res["config"].get("reference_system") or "?")
        out["cpu_us"] = cell(rows, b, "server_threads_us_per_req", "%s, %s" % (own, at))
        out["p50_us"] = cell(rows, b, "lat_p50_us", "socket client, " + at)
        out["p99_us"] = cell(rows, b, "lat_p99_us", "socket client, " + at)
        out["timeouts"] = cell(rows, b, "timeouts", "requests with no reply within the "
                               "client's timeout, " + at)
    # the baselines: three fresh servers' figures where the run has them (the
    # headline's (f) point), else the testbed server's one
    fh = None if xdp else find(rows, system, "f", point="headline")
    f = fh if fh is not None else find(rows, system, "f", tool="server")
    if f is None:
        out["bytes_per_item"] = missing(need("f") or "no (f) row")
    elif fh is not None:
        out["bytes_per_item"] = cell(rows, f, "bytes_per_item" if system == "redis" else
                                     "rss_growth_per_item", rows[f].get("label") or "?")
    elif xdp:
        out["bytes_per_item"] = cell(rows, f, "bytes_per_item", "the kernel's figure for the "
                                     "map (memlock) / live items, after the preload (the "
                                     "kernel's accounting of that map: one value)")
    elif system == "redis":
        out["bytes_per_item"] = cell(rows, f, "bytes_per_item", "INFO used_memory / keys")
    else:
        out["bytes_per_item"] = cell(rows, f, "rss_growth_per_item", "RSS growth over the "
                                     "preload / items")
    m = find(rows, system, "m", point="headline", budget=HEADLINE_BUDGET, dist=HEADLINE_DIST)
    if m is not None:
        out["hit_ratio"] = cell(rows, m, "hit_ratio", rows[m].get("label") or "?")
    else:
        out["hit_ratio"] = missing(need("m") or "no headline (m) row")
    g = (find(rows, system, "g", kvexp="lost", ratio=HEADLINE_RATIO) if xdp else
         find(rows, system, "g", tool="loadgen", ratio=HEADLINE_RATIO))
    if g is not None and not xdp:
        out["lost_2x"] = cell(rows, g, "readable_share", "the server under a %d MB memory limit, "
                              "%gx the items it holds set once, then read back (memcached and "
                              "Redis evict, LRU)" % (rows[g].get("mem_mb") or 0, HEADLINE_RATIO),
                              tf="one_minus")
    elif g is not None:
        out["lost_2x"] = cell(rows, g, "readable_share", "share of the keys set at %gx capacity "
                              "(xkv-kvexp lost) that cannot be read back: hash_map and percpu "
                              "refuse the sets past capacity (SERVER_ERROR, the client knows), "
                              "the others evict or overwrite" % HEADLINE_RATIO, tf="one_minus")
        if rows[g].get("set_failed"):
            out["lost_2x"]["note"] = "%d sets refused" % rows[g]["set_failed"]
    else:
        out["lost_2x"] = missing(need("g") or "no (g) row at %gx" % HEADLINE_RATIO)
    return out


def build(res):
    ref = res["config"].get("reference_max")
    return {
        "definitions": definitions(res),
        "common_load": {"fraction": HEADLINE_FRACTION, "of": res["config"].get(
            "reference_system"), "requests_per_s": (round(HEADLINE_FRACTION * ref)
                                                    if ref else None)},
        "budget": HEADLINE_BUDGET, "dist": HEADLINE_DIST, "lost_ratio": HEADLINE_RATIO,
        "columns": [{"key": k, "heading": h, "unit": u} for k, h, u in COLUMNS],
        "rows": [build_row(res, s) for s in systems(res)],
    }


# ---- text --------------------------------------------------------------------------

def fmt(c, key):
    """A cell as the report prints it: value (min–max), † where estimated."""
    if c.get("value") is None:
        return "—"
    d = {"capacity": 3, "capacity_cpu": 3, "cpu_us": 2, "p50_us": 0, "p99_us": 0,
         "p50_low_us": 0, "p99_low_us": 0,
         "timeouts": 0, "bytes_per_item": 0, "hit_ratio": 3, "lost_2x": 3}[key]
    f = lambda x: "%.*f" % (d, x)  # noqa: E731
    s = f(c["value"])
    if c["n"] > 1 and f(c["min"]) != f(c["max"]):
        s += " (%s–%s)" % (f(c["min"]), f(c["max"]))
    return s + (" †" if c.get("estimated") else "")


def md(res, L):
    h = res.get("headline")
    if not h:
        return
    cl = h["common_load"]
    L.append("\n## Headline: every system on the same definitions\n\n")
    L.append("One row per system. Numbers are the median run, with the min–max over the runs "
             "in brackets (n runs per cell: the headline's points run %s times); **†** marks an "
             "estimate rather than a measurement. The *common load* is %s requests/s (%g × %s's "
             "max from (a)), the same offered rate for every system. The hit ratio is at a "
             "memory budget of %s of a 4 MiB working set (29,128 keys of 16 + 128 bytes: "
             "1 MiB), Zipf %s, cache-aside, the same request sequences for every system, each "
             "in its own memory accounting (the kernel's figure for a map, memcached's -m, "
             "Redis's maxmemory above its used_memory when empty). The figure below "
             "places each system by capacity against bytes per item.\n\n" % (
                 max([c.get("n", 1) for r in h["rows"] for c in r.values()
                      if isinstance(c, dict)] or [1]),
                 "{:,}".format(cl["requests_per_s"]) if cl["requests_per_s"] else "?",
                 cl["fraction"], cl["of"] or "?", h["budget"], h["dist"].replace("zipf", "")))
    floor = [r for r in res["rows"] if r["system"] == "reflector" and r["experiment"] == "b"
             and ((r.get("fraction") == cl["fraction"] and not r.get("client")) or
                  (r.get("fraction") == LOW_FRACTION and r.get("client") == LOW_CLIENT))]

    def spread(r, f):
        v, runs = r.get(f), [x for x in r.get(f + "_runs") or [] if x is not None]
        if v is None:
            return "?"
        return "%.0f" % v + (" (%.0f–%.0f)" % (min(runs), max(runs)) if len(runs) > 1 else "")
    if floor:
        L.append("The testbed's own floor (the bare XDP reflector sending each request back, no "
                 "server): %s.\n\n" % "; ".join(
                     "%s client at %g x the max, p50 %s µs, p99 %s µs" % (
                         r.get("client") or "default (epoll)", r["fraction"],
                         spread(r, "lat_p50_us"),
                         spread(r, "lat_p99_us")) for r in floor))
    head = ["system"] + ["%s (%s)" % (c["heading"], c["unit"]) if c["unit"] else c["heading"]
                         for c in h["columns"]]
    body = [[r["system"]] + [fmt(r[c["key"]], c["key"]) for c in h["columns"]]
            for r in h["rows"]]
    L.append("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n")
    for b in body:
        L.append("| " + " | ".join(b) + " |\n")
    L.append("\nClient modes: " + "; ".join(sorted({"%s: %s" % (
        "xdpkv layouts, memcached-udp" if "UDP" in r["client_mode"] else "memcached-tcp, redis",
        r["client_mode"]) for r in h["rows"]})) + ".\n\n")
    why = sorted({"%s — %s" % (c["heading"], r[c["key"]]["why"]) for r in h["rows"]
                  for c in h["columns"] if r[c["key"]].get("value") is None})
    L.append("What each column is (every cell's row and field are in results.json, "
             "`headline`):\n\n")
    labels = {}
    for r in h["rows"]:
        for c in h["columns"]:
            if r[c["key"]].get("label"):
                labels.setdefault(c["heading"], r[c["key"]]["label"])
    for k, v in labels.items():
        L.append("- %s: %s\n" % (k, v))
    if why:
        L.append("\nEmpty cells (—):\n\n" + "".join("- %s\n" % w for w in why))
    if PNG in (res.get("plots") or []):
        L.append("\n![capacity against bytes per item](%s) ([SVG](%s))\n" % (
            PNG, PNG[:-4] + ".svg"))


# ---- the figure ----------------------------------------------------------------------

def plot(plt, res, outdir, made, save, colors):
    h = res.get("headline")
    if not h:
        return
    pts = []
    for r in h["rows"]:
        bpi = r["bytes_per_item"].get("value")
        cap = r["capacity"] if r["capacity"].get("value") is not None else r["capacity_cpu"]
        if bpi is None or cap.get("value") is None:
            continue
        pts.append((r, bpi, cap))
    if not pts:
        return
    fig, ax = plt.subplots(figsize=(11, 5.5))
    xspan = max(p[1] for p in pts) or 1
    yspan = max(p[2]["value"] for p in pts) or 1
    placed = []  # labels drawn so far: a label near another goes below it
    for r, bpi, cap in pts:
        s = r["system"]
        est = cap.get("estimated")
        c = colors.get(s, "black")
        ax.errorbar([bpi], [cap["value"]], yerr=[[cap["value"] - cap["min"]],
                                                 [cap["max"] - cap["value"]]],
                    fmt="o" if s.startswith("xdpkv/") else "s", ms=8, color=c,
                    mfc="white" if est else c, capsize=3,
                    label=s.replace("xdpkv/", "") + (" (estimate)" if est else ""))
        hr = r["hit_ratio"].get("value")
        near = sum(1 for x, y in placed if abs(x - bpi) < 0.04 * xspan and
                   abs(y - cap["value"]) < 0.06 * yspan)
        placed.append((bpi, cap["value"]))
        ax.annotate(s.replace("xdpkv/", "") + ("\nhit %.2f" % hr if hr is not None else ""),
                    (bpi, cap["value"]), textcoords="offset points",
                    xytext=(6, 4 - 20 * near), fontsize=7)
    ax.set_xlabel("bytes per item (the kernel's map figure; RSS / used_memory for the "
                  "baselines)")
    ax.set_ylabel("capacity per server core (M requests/s)")
    ax.set_ylim(bottom=0)
    ax.set_xlim(0, 1.15 * xspan)  # room for the labels right of the points
    ax.set_title("Capacity against memory per item\nfilled: measured (%s); hollow: 1 / server "
                 "CPU per request (an estimate); hit ratio at a %s budget, Zipf %s" % (
                     XDPGEN_LABEL, h["budget"], h["dist"].replace("zipf", "")), fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3)
    save(plt, fig, outdir, PNG, made)
