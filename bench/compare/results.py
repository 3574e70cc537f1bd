# SPDX-License-Identifier: MIT
"""xdpkv compare's results, read for the report and the plots: the rows of an
experiment, the systems in them, numbers as the tables print them, the
spreads over repetitions, the points of the scaling and microbenchmark
experiments."""


def num(v, fmt="%.0f"):
    if v is None or v == "":
        return "–"
    if isinstance(v, (int, float)):
        return fmt % v
    return str(v)


def table(head, body):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for b in body:
        out.append("| " + " | ".join(str(x) for x in b) + " |")
    return "\n".join(out) + "\n"


def kops(v):
    return "–" if v is None else "%.1f" % (v / 1000.0)


def tp(r):
    """kops/s of a row, with the spread of its repeats."""
    v = kops(r.get("throughput_ops"))
    runs = [x for x in r.get("throughput_runs") or [] if x is not None]
    if len(runs) > 1:
        v += " (%s–%s)" % (kops(min(runs)), kops(max(runs)))
    return v


def rows_of(res, exp, tool=None):
    return [r for r in res["rows"] if r["experiment"] == exp and (tool is None or
                                                                   r["tool"] == tool)]


def systems(res):
    seen = []
    for r in res["rows"]:
        if r["system"] not in seen:
            seen.append(r["system"])
    return seen


def runs_of(r, key):
    """The --repeat runs of a row's value key: throughput_ops ->
    throughput_runs, any other key K -> K_runs."""
    rk = "throughput_runs" if key == "throughput_ops" else key + "_runs"
    return [x for x in r.get(rk) or [] if x is not None]


def spread(r, scale=1.0, key="throughput_ops"):
    """(below, above) the row's value (default its throughput): its --repeat
    runs' min and max, or None with fewer than two runs."""
    runs = runs_of(r, key)
    v = r.get(key)
    if len(runs) < 2 or v is None:
        return None
    return ((v - min(runs)) * scale, (max(runs) - v) * scale)


def kvexp_memory_rows(res):
    """kvexp memory rows of one key/value size (16 + 128 B if measured) at
    the highest fill, with bytes per entry of capacity added."""
    rr = [r for r in rows_of(res, "f", "kvexp") if r.get("bytes_per_live_item")]
    if not rr:
        return []
    kv = (16, 128) if any((r.get("key_size"), r.get("value_size")) == (16, 128) for r in rr) \
        else (rr[0].get("key_size"), rr[0].get("value_size"))
    rr = [r for r in rr if (r.get("key_size"), r.get("value_size")) == kv]
    top = max(r.get("fill_pct") or 0 for r in rr)
    out = []
    for r in rr:
        if (r.get("fill_pct") or 0) == top and r.get("map_bytes") and r.get("capacity"):
            out.append(dict(r, bytes_per_capacity=r["map_bytes"] / r["capacity"]))
    return out


def ratio_row(r, ref):
    """(j) a row with its ratio to the reflector's median, and each of its
    --repeat runs' (ratio_runs: the error bars of the ratio panel)."""
    return dict(r, ratio=r["throughput_ops"] / ref,
                ratio_runs=[t / ref for t in runs_of(r, "throughput_ops")])


def scaling_ceiling(j):
    """(mix, cores) -> the reflector's replies/s in the same run."""
    return {(r["mix"], r["cores"]): r["throughput_ops"] for r in j
            if r["system"] == "reflector" and r.get("throughput_ops")}


MB_PANELS = (("get_hit", "disjoint"), ("get_hit", "shared"), ("set", "disjoint"),
             ("set", "shared"))


def microbench_points(res):
    """(l) rows by panel: (op, keys) -> rows, each with ratio1 (ns/op over the
    same system's one-thread ns/op) and ratio1_runs.  One thread has no shared
    variant (one thread shares with nobody): its disjoint row is in both."""
    rr = rows_of(res, "l")
    one = {(r["system"], r["op"]): r for r in rr if r["threads"] == 1}
    out = {}
    for op, keys in MB_PANELS:
        pts = []
        for r in rr:
            if r["op"] != op or not (r["keys"] == keys or r["threads"] == 1):
                continue
            base = one.get((r["system"], op), {}).get("ns_per_op")
            if base:
                r = dict(r, ratio1=r["ns_per_op"] / base,
                         ratio1_runs=[x / base for x in runs_of(r, "ns_per_op")])
            pts.append(r)
        if pts:
            out[(op, keys)] = pts
    return out


SOCKET = "end-to-end, socket client, client CPU-bound"
XDPGEN = "server capacity, in-kernel generator"


def dist_order(d):
    return (0, 0) if d == "uniform" else (1, float(d.split(":")[1]))


def systems_in(rows):
    out = []
    for r in rows:
        if r["system"] not in out:
            out.append(r["system"])
    return out


def point_name(r):
    e = r["experiment"]
    if e == "a":
        return "a %s%s" % (r.get("dist"), " xdpgen" if r["tool"] == "xdpgen" else "")
    if e == "c":
        return "c %s%% sets" % r.get("write")
    if e == "d":
        return "d k%s v%s" % (r.get("key_size"), r.get("value_size"))
    if e == "e":
        return "e %s%% scans" % r.get("scan")
    if e == "b":
        return "b %.0f%%" % (100 * r.get("fraction", 0))
    return e


def share_points(res):
    out = []
    for r in res["rows"]:
        if r["system"].startswith("xdpkv/") and r.get("fast_share") is not None and \
                r["experiment"] in "acde":
            out.append((r["system"], point_name(r), r["fast_share"]))
    return out
