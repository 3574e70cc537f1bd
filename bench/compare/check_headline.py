# SPDX-License-Identifier: MIT
"""Check the headline of an 'xdpkv compare' output (check.py calls it; also
on its own: check_headline.py DIR).  Independent of headline.py: the
definitions each column must come from, the field and the arithmetic are
written again here, so a headline that drifts from its experiments fails:

- one row per system the run compared (every layout, memcached UDP and TCP
  and Redis where they ran), each with every column;
- a cell with a value has a label and a source row of the same system, from
  the experiment and with the parameters its column is defined by, and its
  value, min, max and n follow from that row's field and its runs;
- a cell without a value says why, and there is no row it could have come
  from;
- only the capacity derived from CPU per request is marked estimated;
- report.md opens with the headline table, its cells print those values
  (— for an empty cell, † for an estimate), and the figure is linked."""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from experiments import (HEADLINE_BUDGET, HEADLINE_DIST, HEADLINE_FRACTION,  # noqa: E402
                         HEADLINE_RATIO, LOW_CLIENT, LOW_FRACTION)

BASELINES = ("memcached-udp", "memcached-tcp", "redis", "bmc")


def spec(system, rows=()):
    """column -> (parameters the source row must have, field, f(x), estimated);
    None: the column has no source for this system.  rows: the run's, for
    the baselines' bytes per item (three fresh servers' where the run has
    them, else the testbed server's)."""
    xdp = system.startswith("xdpkv/")
    fpoint = not xdp and any(r.get("system") == system and r.get("experiment") == "f" and
                             r.get("point") == "headline" for r in rows)
    b = {"experiment": "b", "fraction": HEADLINE_FRACTION, "client": None}
    low = dict(b, client=LOW_CLIENT, fraction=LOW_FRACTION)
    if system == "bmc":  # (o) only: every headline cell empty, with its reason
        return dict.fromkeys(("throughput", "capacity", "capacity_cpu", "cpu_us", "p50_us",
                              "p99_us", "p50_low_us", "p99_low_us", "timeouts",
                              "bytes_per_item", "hit_ratio", "hit_ratio_real", "lost_2x"))
    out = {
        "throughput": ({"experiment": "a", "tool": "loadgen", "dist": "uniform"},
                       "throughput_ops", lambda x: x / 1e6, False),
        "capacity": ({"experiment": "a", "tool": "xdpgen", "dist": "uniform"},
                     "throughput_ops", lambda x: x / 1e6, False) if xdp else None,
        "capacity_cpu": ({"experiment": "a", "tool": "loadgen", "dist": "uniform"},
                         "server_threads_us_per_req", lambda x: 1.0 / x, True),
        "cpu_us": (b, "server_threads_us_per_req", lambda x: x, False),
        "p50_us": (b, "lat_p50_us", lambda x: x, False),
        "p99_us": (b, "lat_p99_us", lambda x: x, False),
        "p50_low_us": (low, "lat_p50_us", lambda x: x, False),
        "p99_low_us": (low, "lat_p99_us", lambda x: x, False),
        "timeouts": (b, "timeouts", lambda x: x, False),
        "bytes_per_item": ({"experiment": "f", "point": "headline"} if fpoint else
                           {"experiment": "f", "tool": "server"},
                           "rss_growth_per_item" if system == "memcached-udp" or
                           system == "memcached-tcp" else "bytes_per_entry" if xdp else
                           "bytes_per_item", lambda x: x, False),
        "hit_ratio": ({"experiment": "m", "point": "headline", "budget": HEADLINE_BUDGET,
                       "dist": HEADLINE_DIST}, "hit_ratio", lambda x: x, False),
        # the layouts at the memory memcached-udp really used, memcached-udp itself
        "hit_ratio_real": ({"experiment": "m", "point": "headline-real"}, "hit_ratio",
                           lambda x: x, False) if xdp else
                          ({"experiment": "m", "point": "headline", "budget": HEADLINE_BUDGET,
                            "dist": HEADLINE_DIST}, "hit_ratio", lambda x: x, False)
                          if system == "memcached-udp" else None,
        "lost_2x": ({"experiment": "g", "kvexp": "lost", "ratio": HEADLINE_RATIO} if xdp else
                    {"experiment": "g", "tool": "loadgen", "ratio": HEADLINE_RATIO},
                    "readable_share", lambda x: 1.0 - x, False),
    }
    return out


def matches(r, system, want):
    return r.get("system") == system and all(r.get(k) == v for k, v in want.items())


def close(x, y):
    return x is not None and y is not None and abs(x - y) <= 1e-9 * max(1.0, abs(x), abs(y))


def check(res, md, need):
    h = res.get("headline")
    need(isinstance(h, dict) and h.get("rows"), "results.json has a headline")
    if not h or not h.get("rows"):
        return
    need(list(res)[0] == "headline", "the headline comes first in results.json")
    rows = res.get("rows", [])
    c = res.get("config", {})
    want = ["xdpkv/" + l for l in c.get("layouts", [])] + \
        [b for b in c.get("baselines", []) if b in BASELINES]
    got = [r.get("system") for r in h["rows"]]
    need(sorted(got) == sorted(want), "one headline row per system (%s)" % ", ".join(got))
    table = md_table(md)
    need(table is not None, "report.md opens with the headline table")
    keys = [col.get("key") for col in h.get("columns", [])]
    need(sorted(keys) == sorted(spec("xdpkv/x")), "the headline has every column (%s)" % keys)
    for hr in h["rows"]:
        s = hr.get("system")
        need(bool(hr.get("client_mode")), "%s: its client mode is stated" % s)
        printed = (table or {}).get(s)
        need(printed is not None and len(printed) == len(keys),
             "%s: a row of %d cells in report.md's headline" % (s, len(keys)))
        for j, k in enumerate(keys):
            cl = hr.get(k)
            what = "%s, %s" % (s, k)
            if not isinstance(cl, dict):
                need(False, "%s: the cell is there" % what)
                continue
            sp = spec(s, rows).get(k)
            text = printed[j] if printed and j < len(printed) else None
            source = [i for i, r in enumerate(rows) if sp and matches(r, s, sp[0]) and
                      r.get(sp[1]) is not None]
            if cl.get("value") is None:
                need(bool(cl.get("why")), "%s: empty, and says why" % what)
                need(not source, "%s: empty although row %s of (%s) has %s" % (
                    what, source[:1], sp[0]["experiment"] if sp else "?", sp[1] if sp else "?"))
                need(text == "—", "%s: printed as — (%s)" % (what, text))
                continue
            need(bool(cl.get("label")), "%s: labelled" % what)
            src = cl.get("source") or {}
            i = src.get("row")
            ok = sp is not None and isinstance(i, int) and 0 <= i < len(rows) and \
                matches(rows[i], s, sp[0]) and src.get("field") == sp[1]
            need(ok, "%s: its source row %s is %s's, from (%s) with %s, field %s" % (
                what, i, s, sp[0]["experiment"] if sp else "?", sp[0] if sp else "?",
                sp[1] if sp else "?"))
            if not ok:
                continue
            r, f = rows[i], sp[2]
            need(close(cl["value"], f(r[sp[1]])), "%s: %s = f(row %d %s = %s)" % (
                what, cl["value"], i, sp[1], r[sp[1]]))
            # the row's runs of that field, where it has them: the cell's spread
            rf = {"throughput_ops": "throughput_runs"}.get(sp[1], sp[1] + "_runs")
            runs = [f(x) for x in (r.get(rf) or []) if x is not None]
            lo, hi = (min(runs), max(runs)) if runs else (cl["value"], cl["value"])
            need(close(cl.get("min"), lo) and close(cl.get("max"), hi) and
                 cl.get("n") == max(1, len(runs)), "%s: spread %s–%s over %s runs (row: %s–%s "
                 "over %d)" % (what, cl.get("min"), cl.get("max"), cl.get("n"), lo, hi,
                               len(runs)))
            need(bool(cl.get("estimated")) == sp[3], "%s: %s" % (
                what, "marked estimated" if sp[3] else "not marked estimated"))
            if cl.get("artefact"):  # below the floor: flagged, the number in brackets
                fl = [r.get(sp[1]) for r in rows if matches(r, "reflector", sp[0])]
                need(text is not None and text.startswith("artefact (") and fl and
                     fl[0] is not None and cl["value"] < fl[0], "%s: below the floor %s, "
                     "printed as an artefact (%r)" % (what, fl[:1], text))
                text = text and text[len("artefact ("):]
            if text is not None:
                num = re.match(r"-?[0-9.]+", text)
                v = float(num.group(0)) if num else None
                dec = len(num.group(0).split(".")[1]) if num and "." in num.group(0) else 0
                need(v is not None and abs(v - cl["value"]) <= 0.51 * 10 ** -dec + 1e-12 and
                     (("†" in text) == sp[3]), "%s: printed %r for %s" % (what, text, cl["value"]))
    # the figure: wherever a system has both a capacity and its bytes per item
    placed = [r["system"] for r in h["rows"] if (r.get("bytes_per_item") or {}).get("value")
              is not None and any((r.get(k) or {}).get("value") is not None
                                  for k in ("capacity", "capacity_cpu"))]
    if placed and res.get("plots"):
        need("headline.png" in res["plots"] and "](headline.png)" in md,
             "the headline figure places %s, and report.md links it" % ", ".join(placed))


def md_table(md):
    """The first section of report.md must be the headline: system -> its cells."""
    secs = re.findall(r"^## (.*)$", md, re.M)
    if not secs or not secs[0].startswith("Headline"):
        return None
    part = md.split("## " + secs[0], 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in part.splitlines():
        if line.startswith("| ") and not line.startswith("| system"):
            cells = [x.strip() for x in line.strip().strip("|").split("|")]
            out[cells[0]] = cells[1:]
    return out


def needer(bad):
    """need(cond, what): prints PASS or FAIL what, and keeps the failures in bad."""
    def need(cond, what):
        print("%s %s" % ("PASS" if cond else "FAIL", what))
        if not cond:
            bad.append(what)
    return need


def main():
    d = sys.argv[1]
    with open(os.path.join(d, "results.json")) as f:
        res = json.load(f)
    with open(os.path.join(d, "report.md")) as f:
        md = f.read()
    bad = []
    check(res, md, needer(bad))
    print("%d check(s) failed" % len(bad) if bad else "all checks passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
