# SPDX-License-Identifier: MIT
"""xdpkv compare's headline: one row per system (every layout, memcached UDP
and TCP, Redis), the same definitions for all, built from the experiments'
rows of results.json.  Every cell names the row and field it comes from
(source), its spread over the runs of that row (min, max, n), whether it is
estimated rather than measured, and a label; a cell that could not be filled
says why.  check.py verifies each cell against its source row, so the table
cannot drift from the experiments.  Also the headline figure: capacity
against bytes per item, hit ratio written beside each layout."""

import answer
import bmc
from experiments import (CLIENT_TEXT, HEADLINE_BUDGET, HEADLINE_DIST, HEADLINE_FRACTION,
                         HEADLINE_RATIO, LOW_CLIENT, LOW_FRACTION)

PNG = "headline.png"

# (key, heading, unit) in the order of the table
COLUMNS = (
    ("throughput", "throughput, socket client, closed loop", "M replies/s"),
    ("capacity", "capacity per server core, in-kernel generator (XDP only)", "M replies/s"),
    ("capacity_cpu", "estimate: capacity from server CPU per request", "M requests/s"),
    ("cpu_us", "server CPU per request at the common load", "µs"),
    ("p50_us", "p50 at the common load", "µs"),
    ("p99_us", "p99 at the common load", "µs"),
    ("p50_low_us", "p50 at the low load, busy-polling client", "µs"),
    ("p99_low_us", "p99 at the low load, busy-polling client", "µs"),
    ("timeouts", "requests unanswered at the common load", "count"),
    ("bytes_per_item", "bytes per item", "B"),
    ("hit_ratio", "hit ratio at the budget", ""),
    ("hit_ratio_real", "hit ratio at memcached-udp's real memory", ""),
    ("lost_2x", "data lost at 2x capacity", "of keys set"),
)
# a cell's field -> the field of its runs ("FIELD_runs" unless named here)
RUNS_OF = {"hit_ratio": "hit_ratio_runs", "throughput_ops": "throughput_runs"}


def client_mode(system):
    """How the socket client talks to a system (every row states it)."""
    if system.startswith("xdpkv/") or system in ("memcached-udp", "bmc"):
        return ("UDP, one request per datagram, 32 in flight; (a) closed loop; the common "
                "load open loop (Poisson)")
    return ("TCP, 32 connections, one request in flight on each (not pipelined); (a) closed "
            "loop; the common load open loop (Poisson)")


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
        "throughput": {"experiment": "a", "tool": "loadgen", "dist": "uniform"},
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
        "hit_ratio_real": {"experiment": "m", "point": "headline-real",
                           "memcached-udp": "its own headline (m) row"},
        "lost_2x": {"experiment": "g", "ratio": HEADLINE_RATIO, "layouts": "kvexp lost",
                    "memcached, redis": "tool loadgen (a memory limit)"},
    }


def systems(res):
    c = res["config"]
    out = ["xdpkv/" + l for l in c.get("layouts", [])]
    out += [b for b in c.get("baselines", []) if b in ("memcached-udp", "memcached-tcp", "redis",
                                                      "bmc")]
    return out


def build_row(res, system):
    if system == "bmc":
        return dict(bmc.headline_row(res, COLUMNS), client_mode=client_mode(system))
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
            need("a") or ("no in-kernel generator for a socket server: see the throughput and the "
                          "estimate from CPU per request" if not xdp else "no in-kernel generator row"))
    own = "the server's own threads (NAPI kthread + server process)"
    i = find(rows, system, "a", tool="loadgen", dist="uniform")
    if i is None:
        out["capacity_cpu"] = missing(need("a") or "no (a) socket-client row, uniform keys")
        out["throughput"] = missing(need("a") or "no (a) socket-client row, uniform keys")
    else:
        out["throughput"] = cell(rows, i, "throughput_ops", "xkv-loadgen on the client CPU, "
                                 "uniform keys, 32 requests in flight, each system in the "
                                 "client mode of its protocol (below)", tf="mega")
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
        fl = find(rows, "reflector", "b", fraction=LOW_FRACTION, client=LOW_CLIENT)
        # the median latency only: a tail (p99) of a few hundred replies is too noisy
        # to hold against the floor's
        for k, f in (("p50_low_us", "lat_p50_us"),):
            floor = rows[fl].get(f) if fl is not None else None
            if floor is not None and out[k].get("value") is not None and \
                    out[k]["value"] < floor:
                out[k]["artefact"] = ("below the testbed's floor (the reflector's %.0f µs, "
                                      "row %d): a timing artefact, not a result" % (floor, fl))
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
        # full: a preallocated map's memory does not change with its fill, so the
        # memory per item at capacity is memlock / entries; memcached's and Redis's
        # grow with their items (RSS growth, used_memory per item), full or not
        out["bytes_per_item"] = cell(rows, f, "bytes_per_entry", "the kernel's figure for the "
                                     "map (memlock) / its entries: the memory per item when "
                                     "the map is full (the baselines: RSS growth or "
                                     "used_memory per item, which grow with the items)")
    elif system == "redis":
        out["bytes_per_item"] = cell(rows, f, "bytes_per_item", "INFO used_memory / keys")
    else:
        out["bytes_per_item"] = cell(rows, f, "rss_growth_per_item", "RSS growth over the "
                                     "preload / items")
    m = find(rows, system, "m", point="headline", budget=HEADLINE_BUDGET, dist=HEADLINE_DIST)
    if m is not None:
        out["hit_ratio"] = cell(rows, m, "hit_ratio", rows[m].get("label") or "?")
        g = [x for x in rows[m].get("rss_growth_runs") or [] if x is not None]
        if g and not xdp:  # beside the budget: what the server really used for it
            out["hit_ratio"]["note"] = ("RSS growth over the replay %.2f MiB (median of %d "
                                        "seeds) for the 1 MiB budget" % (
                                            sorted(g)[len(g) // 2] / 2**20, len(g)))
    else:
        out["hit_ratio"] = missing(need("m") or "no headline (m) row")
    # the same bytes for every system: the memory memcached-udp really used
    mr = find(rows, system, "m", point="headline-real") if xdp else (
        m if system == "memcached-udp" else None)
    if mr is not None:
        out["hit_ratio_real"] = cell(rows, mr, "hit_ratio", rows[mr].get("label") or "?")
    else:
        out["hit_ratio_real"] = missing(need("m") or (
            "no (m) row at memcached-udp's real memory" if xdp else
            "its real memory is not memcached-udp's (see the note beside its hit ratio)"))
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
    if c.get("artefact"):
        return "artefact (%.0f, below the floor)" % c["value"]
    d = {"throughput": 3, "capacity": 3, "capacity_cpu": 3, "cpu_us": 2, "p50_us": 0, "p99_us": 0,
         "p50_low_us": 0, "p99_low_us": 0,
         "timeouts": 0, "bytes_per_item": 0, "hit_ratio": 3, "hit_ratio_real": 3,
         "lost_2x": 3}[key]
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
    answer.md(res, h, L)
    L.append("One row per system. Numbers are the median run, with the min–max over the runs "
             "in brackets (n runs per cell: the headline's points run %s times). Every column "
             "is measured the same way for every system that has it; the one estimate has its "
             "own column, named so and marked **†**. The *common load* is %s requests/s (%g × "
             "%s's max from (a)), the same offered rate for every system. The hit ratio is at a "
             "memory budget of %s of a 4 MiB working set (29,128 keys of 16 + 128 bytes: "
             "1 MiB), Zipf %s, cache-aside, the same request sequences for every system, each "
             "in its own memory accounting (the kernel's figure for a map, memcached's -m, "
             "Redis's maxmemory above its used_memory when empty). The figure below "
             "places each system by its measured throughput against bytes per item.\n\n" % (
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
        "UDP systems" if "UDP" in r["client_mode"] else "TCP systems",
        r["client_mode"]) for r in h["rows"]})) + ".\n\n")
    arte = sorted({"%s, %s: %s" % (r["system"], c["heading"], r[c["key"]]["artefact"])
                   for r in h["rows"] for c in h["columns"] if r[c["key"]].get("artefact")})
    if arte:
        L.append("Flagged, not results:\n\n" + "".join("- %s\n" % a for a in arte) + "\n")
    bs = res.get("baseline_settings") or {}
    if bs:
        L.append("How the baselines ran:\n\n" + "".join(
            "- %s: %s\n" % (k, "; ".join("%s `%s`" % (kk, vv) if kk == "command" else
                                         "%s %s" % (kk.replace("_", " "), vv)
                                         for kk, vv in v.items()))
            for k, v in sorted(bs.items())) + "\n")
    notes = ["%s, %s: %s" % (r["system"], c["heading"], r[c["key"]]["note"]) for r in h["rows"]
             for c in h["columns"] if r[c["key"]].get("note")]
    if notes:
        L.append("Beside the cells:\n\n" + "".join("- %s\n" % n for n in notes) + "\n")
    why = sorted({"%s — %s" % (c["heading"], r[c["key"]]["why"]) for r in h["rows"]
                  for c in h["columns"] if r[c["key"]].get("value") is None and
                  r["system"] != "bmc"})
    for r in h["rows"]:  # BMC's row: one line, its reasons once each
        if r["system"] == "bmc":
            why.append("bmc, every cell — " + "; ".join(dict.fromkeys(
                r[c["key"]]["why"][len("BMC: "):] for c in h["columns"])))
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
        L.append("\n![measured throughput against bytes per item](%s) ([SVG](%s))\n" % (
            PNG, PNG[:-4] + ".svg"))


# ---- the figure ----------------------------------------------------------------------

MARKERS = "ovs^D<>pP*hX"


def plot(plt, res, outdir, made, save, colors):
    """Measured throughput (the same client for every system) against bytes
    per item; no text beside the points: each system is a marker of its own,
    named in the legend with its hit ratio, so no label can sit on the wrong
    point.  The axis names are the table's headings."""
    h = res.get("headline")
    if not h:
        return
    heads = {c["key"]: "%s (%s)" % (c["heading"], c["unit"]) for c in h["columns"]}
    pts = [r for r in h["rows"] if r["bytes_per_item"].get("value") is not None and
           r["throughput"].get("value") is not None]
    if not pts:
        return
    fig, ax = plt.subplots(figsize=(10, 5.5))
    for i, r in enumerate(pts):
        s, cap, bpi = r["system"], r["throughput"], r["bytes_per_item"]["value"]
        hr = r["hit_ratio"].get("value")
        ax.errorbar([bpi], [cap["value"]], yerr=[[cap["value"] - cap["min"]],
                                                 [cap["max"] - cap["value"]]],
                    fmt=MARKERS[i % len(MARKERS)], ms=8, color=colors.get(s, "C%d" % (i % 10)),
                    capsize=3, label="%s%s" % (s.replace("xdpkv/", ""),
                                               ", hit %.3f" % hr if hr is not None else ""))
    ax.set_xlabel(heads["bytes_per_item"])
    ax.set_ylabel(heads["throughput"])
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.set_title("Throughput against memory per item (median, min–max bars); hit ratio at a %s "
                 "budget, Zipf %s" % (h["budget"], h["dist"].replace("zipf", "")), fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3)
    save(plt, fig, outdir, PNG, made)
