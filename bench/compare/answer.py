# SPDX-License-Identifier: MIT
"""xdpkv compare's answer: the first lines of the report, which layout to
pick for the run's workload and when to pick another, derived from the
headline's measured cells by the rules stated in RULES (never from an
estimate).  Where two systems' min-max ranges overlap the answer says "no
difference resolved" instead of a ratio."""

import bmc

RULES = (
    "1. keep the layouts whose hit ratio at the budget is not resolved below the best "
    "layout's (their min–max ranges overlap the best's): a cache is first judged by what "
    "its memory holds; "
    "2. among those, the fewest bytes per item (the kernel's figure for the map); "
    "3. on a tie (within 1 B), the highest socket-client throughput. "
    "*Pick V when …* names the layout that wins on one column alone where it is another: "
    "the highest server capacity (in-kernel generator), the fewest bytes per item, the "
    "highest hit ratio.")


def _v(row, k):
    c = row.get(k) or {}
    return c.get("value") if not c.get("artefact") else None


def _rng(row, k):
    c = row.get(k) or {}
    return c.get("min"), c.get("max")


def overlap(a, b, k):
    (alo, ahi), (blo, bhi) = _rng(a, k), _rng(b, k)
    return None not in (alo, ahi, blo, bhi) and alo <= bhi and blo <= ahi


def ratio(a, b, k):
    """a's k as a multiple of b's, or 'no difference resolved'."""
    if _v(a, k) is None or not _v(b, k):
        return None
    if overlap(a, b, k):
        return "no difference resolved from"
    return "%.2f×" % (_v(a, k) / _v(b, k))


def pick(rows):
    """(the pick, [(why, layout)] for the other cases, the layouts it is not
    told apart from), by RULES."""
    lay = [r for r in rows if r["system"].startswith("xdpkv/") and
           all(_v(r, k) is not None for k in ("hit_ratio", "bytes_per_item", "throughput"))]
    if not lay:
        return None, [], []
    best_hr = max(lay, key=lambda r: _v(r, "hit_ratio"))
    keep = [r for r in lay if r is best_hr or overlap(r, best_hr, "hit_ratio")]
    least = min(_v(r, "bytes_per_item") for r in keep)
    keep = [r for r in keep if _v(r, "bytes_per_item") <= least + 1]
    x = max(keep, key=lambda r: _v(r, "throughput"))
    # the layouts rule 3 picked x over by a throughput the run does not resolve
    tied = [r["system"][6:] for r in keep if r is not x and overlap(r, x, "throughput")]
    other = []
    cap = [r for r in lay if _v(r, "capacity") is not None]
    if cap:
        fast = max(cap, key=lambda r: _v(r, "capacity"))
        if fast is not x:
            other.append(("when server capacity per core matters more than hit ratio "
                          "(%.3f M replies/s per server core, in-kernel generator; %s %s)" % (
                              _v(fast, "capacity"), (ratio(fast, x, "capacity") or "?"),
                              x["system"][6:]), fast))
    small = min(lay, key=lambda r: _v(r, "bytes_per_item"))
    if small is not x:
        other.append(("when memory per item matters more than hit ratio (%.0f B per item)" %
                      _v(small, "bytes_per_item"), small))
    if best_hr is not x and not overlap(best_hr, x, "hit_ratio"):
        other.append(("when the last hit counts more than memory (hit ratio %.3f)" %
                      _v(best_hr, "hit_ratio"), best_hr))
    return x, other, tied


def md(res, h, L):
    rows = h["rows"]
    x, other, tied = pick(rows)
    if x is None:
        L.append("No answer: the run has no layout with throughput, bytes per item and hit "
                 "ratio all measured.\n\n")
        return
    c = res["config"]
    mc = next((r for r in rows if r["system"] == "memcached-udp"), None)
    cl = h["common_load"]
    hr = x["hit_ratio"]
    name = x["system"][6:]
    vs = ""
    if mc and ratio(x, mc, "throughput"):
        vs = ", %s memcached-udp's throughput with the same client (%.3f against %.3f M " \
             "replies/s)" % (ratio(x, mc, "throughput"), _v(x, "throughput"),
                             _v(mc, "throughput"))
    p99 = x.get("p99_us") or {}
    L.append("**For this workload** (%s keys, %s-byte keys, %s-byte values, %s%% sets, uniform "
             "keys; hit ratio at a %s budget of a 29,128-key working set, Zipf %s), **pick "
             "%s**: it costs %.0f B per item (the kernel's figure for its map per entry: the map "
             "full; this run held %s keys in %s entries) and gives %.3f M replies/s%s, at %s µs p99 at the common load "
             "(%s requests/s), hit ratio %.3f.\n\n" % (
                 "{:,}".format(c["keys"]), c.get("base_key_size"), c.get("base_value_size"),
                 c.get("base_write_ratio"), h["budget"], h["dist"].replace("zipf", ""), name,
                 _v(x, "bytes_per_item"), "{:,}".format(c["keys"]),
                 "{:,}".format(2 * c["keys"]), _v(x, "throughput"), vs,
                 "%.0f" % p99["value"] if p99.get("value") is not None else "?",
                 "{:,}".format(cl["requests_per_s"]) if cl.get("requests_per_s") else "?",
                 hr["value"]))
    real = x.get("hit_ratio_real") or {}
    mreal = (mc or {}).get("hit_ratio_real") or {}
    if real.get("value") is not None and mreal.get("value") is not None:
        d = "no difference resolved" if overlap(x, mc, "hit_ratio_real") else "%+.3f" % (
            real["value"] - mreal["value"])
        L.append("At the memory memcached-udp really used for its 1 MiB budget (its RSS growth, "
                 "the same bytes for both), %s's hit ratio is %.3f against memcached-udp's "
                 "%.3f (%s).\n\n" % (name, real["value"], mreal["value"], d))
    if tied:
        L.append("%s and %s are not told apart by this run: every column the rules use overlaps "
                 "(no difference resolved); %s has the higher median throughput.\n\n" % (
                     ", ".join(tied), name, name))
    for why, r in other:
        L.append("- pick **%s** %s;\n" % (r["system"][6:], why))
    brow = bmc.best_against(res, name)
    if brow:
        L.append("- BMC, the published in-kernel memcached cache, answers only GETs whose "
                 "reply fits the request's frame: at %d-byte values (its table, (o)), %s\n" % (
                     bmc.O_VALUE, brow))
    L.append("\nThe rules: %s\n\n" % RULES)
    if res.get("mode") != "full":
        L.append("*This is a %s run*: %s runs of %s s per headline point (a full run: 5 runs "
                 "of 10 s), so its spreads are wide; where two ranges overlap the report says "
                 "*no difference resolved*.\n\n" % (
                     res.get("mode"), max([cc.get("n", 1) for r in rows for cc in r.values()
                                           if isinstance(cc, dict)] or [1]), c.get("duration")))
