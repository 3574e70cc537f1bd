# SPDX-License-Identifier: MIT
"""xdpkv compare's (o): BMC (Orange-OpenSource/bmc-cache, NSDI'21) beside the
layouts and memcached-udp, on the same testbed, with the same client and
keys, where BMC applies: UDP GETs whose reply BMC can write into the
request's frame.  xdpkv ships no BMC code: --bmc-dir names a build the user
made from BMC's repository (docs/compare.md gives the steps and the four
changes today's kernel and libbpf need).  Here: the option's checks, the
plan's steps, BMC's counters per point, and the report's section."""

import json
import os
import time

import servers
from experiments import BASE_KEY, SOCKET_LABEL
from results import num, table
from servers import CompareError, env, run, stop_group, tail, tb, tb_bg

# (o): 16-byte keys, 32-byte values (a reply BMC can build); the mixes; runs
# per point (the spread: min-max over them); the layouts of a quick run
O_VALUE = 32
O_MIXES = ((10, "90 % gets"), (0, "100 % gets"))
O_RUNS = 5
O_QUICK_LAYOUTS = ("hash_map", "s3fifo")
# the probe of BMC's value limit: the headline's own value size, 100 % gets,
# one run (observed, not assumed: what the client gets back)
O_LIMIT_VALUE = 128
NOTE = ("UDP, {keys} keys of %d bytes with %d-byte values (a reply that BMC writes into the "
        "request's own frame: it answers only those), uniform keys, closed loop, 32 in flight, "
        "the same socket client for every system, %d runs per point (median, min–max). BMC "
        "runs in front of the same memcached as memcached-udp (same settings, below). *answered "
        "in XDP*: BMC's hits over the GETs it saw (its own counters, map_stats); xdpkv's fast "
        "path over all requests. A ratio is printed only where the min–max ranges do not "
        "overlap; else *no difference resolved*." % (BASE_KEY, O_VALUE, O_RUNS))


PIN = "/sys/fs/bpf/bmc_tx_filter"  # where BMC's loader pins its TC program
STATS = ("get_recv_count", "set_recv_count", "get_resp_count", "hit_misprediction",
         "hit_count", "miss_count", "update_count", "invalidation_count")


class BmcSystem(servers.MemcachedSystem):
    """BMC in front of the same memcached as memcached-udp: its loader
    (DIR/bmc, which opens DIR/bmc_kern.o) attaches the XDP program to the
    server veth and pins the TC program, which is then attached to the
    veth's egress (clsact); stop() ends the loader (SIGTERM: it detaches its
    XDP program) and takes the TC program and the pin off."""
    kind = "bmc"

    def __init__(self, name, xdpkv, log):
        super().__init__("memcached-udp", xdpkv, log)
        self.name, self.proto, self.bmc = "bmc", "mc-udp", None

    def start(self, cfg):
        self.start_memcached(cfg)
        d, dev, ns = env("XKV_BMC_DIR"), env("TB_SRV_DEV"), env("TB_SRV_NS")
        idx = int(run(["ip", "-n", ns, "-o", "link", "show", "dev", dev]).split(":")[0])
        if os.path.exists(PIN):
            os.unlink(PIN)
        self.bmc = tb_bg(self.log, "tb_srv", os.path.join(d, "bmc"), idx)
        t0 = time.time()
        while not os.path.exists(PIN):
            if self.bmc.poll() is not None or time.time() - t0 > 120:
                self.stop()
                raise CompareError("bmc: its loader did not pin %s (log: %s): %s" % (
                    PIN, self.log, tail(self.log, 600)))
            time.sleep(0.1)
        tb("tb_srv", "tc", "qdisc", "replace", "dev", dev, "clsact")
        tb("tb_srv", "tc", "filter", "replace", "dev", dev, "egress", "bpf", "object-pinned", PIN)
        tb("tb_pin_napi")
        self.settings = dict(self.settings, bmc="BMC_DIR/bmc (its XDP program on the server "
                             "veth, its TC program on the veth's egress) in front of that memcached")

    def stop(self):
        stop_group(self.bmc, "bmc", grace=10.0, comm="bmc")  # it detaches its XDP program
        self.bmc = None
        tb("tb_srv", "tc", "qdisc", "del", "dev", env("TB_SRV_DEV"), "clsact", check=False)
        if os.path.exists(PIN):
            os.unlink(PIN)
        stop_group(self.proc, "memcached", comm="memcached")
        self.proc = None

    def stats(self):
        """BMC's own counters (its map_stats, one struct bmc_stats a CPU):
        GETs received, hits answered in XDP, misses, cache updates."""
        try:
            j = json.loads(run(["bpftool", "-j", "map", "dump", "name", "map_stats"]))
        except (CompareError, ValueError):
            return None
        tot = dict.fromkeys(STATS, 0)
        for e in j:
            for v in e.get("values", []):
                raw = bytes(int(b, 16) for b in v.get("value", []))
                for i, n in enumerate(STATS):
                    tot[n] += int.from_bytes(raw[4 * i:4 * i + 4], "little")
        return tot


servers.EXTRA_SYSTEMS["bmc"] = BmcSystem


def check(ap, a):
    """--bmc-dir DIR: a BMC build (DIR/bmc and DIR/bmc_kern.o); it adds bmc
    to the baselines and (o) to the experiments when they are not named."""
    if a.bmc_dir is None:
        if "bmc" in a.baselines:
            ap.error("--baselines bmc needs --bmc-dir DIR: a BMC build (docs/compare.md, "
                     "\"BMC\")")
        return
    d = os.path.abspath(a.bmc_dir)
    for f in ("bmc", "bmc_kern.o"):
        if not os.path.isfile(os.path.join(d, f)):
            ap.error("--bmc-dir %s: no %s there (build BMC as docs/compare.md, \"BMC\", says)"
                     % (a.bmc_dir, f))
    if not os.access(os.path.join(d, "bmc"), os.X_OK):
        ap.error("--bmc-dir %s: bmc is not executable" % a.bmc_dir)
    os.environ["XKV_BMC_DIR"] = d
    if "bmc" not in a.baselines:
        a.baselines.append("bmc")
    if not a.experiments_given and "o" not in a.experiments:
        a.experiments += "o"


def share(before, after):
    """BMC's counters over one point: GETs it saw, hits it answered in XDP."""
    if not before or not after:
        return {}
    d = {k: after[k] - before[k] for k in after}
    g = d["get_recv_count"]
    return {"bmc_gets": g, "bmc_hits": d["hit_count"], "bmc_misses": d["miss_count"],
            "bmc_updates": d["update_count"], "bmc_invalidations": d["invalidation_count"],
            "xdp_share": round(d["hit_count"] / g, 4) if g else None}


class BmcSteps:
    """A mixin of runner.Runner: (o)'s steps."""

    def bmc_steps(self):
        s, a = self.s, self.args
        pt = (s["duration"] + s["warmup"] + 0.22) * O_RUNS
        layouts = list(a.layouts)
        if a.quick and any(l in O_QUICK_LAYOUTS for l in layouts):
            layouts = [l for l in layouts if l in O_QUICK_LAYOUTS]
        names = [b for b in ("memcached-udp", "bmc") if b in a.baselines]
        names += ["xdpkv/" + l for l in layouts]
        cfg = self.cfg(BASE_KEY, O_VALUE)
        steps = []
        for name in names:
            for w, _ in O_MIXES:
                steps.append((name, cfg, "o", {"dist": "uniform", "write": w, "key_size": BASE_KEY,
                                               "value_size": O_VALUE, "runs": O_RUNS}, pt, "lg"))
        if "bmc" in names:
            steps.append(("bmc", self.cfg(BASE_KEY, O_LIMIT_VALUE), "o",
                          {"dist": "uniform", "write": 0, "key_size": BASE_KEY,
                           "value_size": O_LIMIT_VALUE, "runs": 1, "limit_probe": True},
                          s["duration"] + s["warmup"] + 1.5, "lg"))
        return steps


# ---- the report ------------------------------------------------------------------------

def _range(r, f="throughput_ops", runs="throughput_runs"):
    v = [x for x in r.get(runs) or [r.get(f)] if x is not None]
    return (min(v), max(v)) if v else (None, None)


def compare_to(r, ref):
    """r's throughput as a ratio to ref's, or 'no difference resolved' where
    their min-max ranges overlap."""
    if ref is None or not ref.get("throughput_ops") or r is ref:
        return "—"
    lo, hi = _range(r)
    rlo, rhi = _range(ref)
    if None in (lo, hi, rlo, rhi):
        return "—"
    if lo <= rhi and rlo <= hi:
        return "no difference resolved"
    return "%.2f×" % (r["throughput_ops"] / ref["throughput_ops"])


def ratio_text(r, ref):
    t = compare_to(r, ref)
    return t + " from" if t == "no difference resolved" else t + " of"


def rows_o(res):
    return [r for r in res["rows"] if r.get("experiment") == "o"]


def md_o(res, L):
    rows = rows_o(res)
    pts = [r for r in rows if not r.get("limit_probe")]
    if not pts:
        if "bmc" not in res["config"].get("baselines", []):
            L.append("BMC was not given (`--bmc-dir DIR`, docs/compare.md \"BMC\").\n")
        return
    body = []
    for w, mix in O_MIXES:
        at = [r for r in pts if r.get("write") == w]
        bmc = next((r for r in at if r["system"] == "bmc"), None)
        mc = next((r for r in at if r["system"] == "memcached-udp"), None)
        for r in at:
            lo, hi = _range(r)
            share = r.get("xdp_share") if r["system"] == "bmc" else r.get("fast_share")
            body.append([mix, r["system"], "%.1f (%.1f–%.1f)" % (
                r["throughput_ops"] / 1e3, lo / 1e3, hi / 1e3) if lo is not None else "—",
                compare_to(r, bmc), compare_to(r, mc),
                num(r.get("server_threads_us_per_req"), "%.2f"), num(r.get("lat_p99_us")),
                "%.1f %%" % (100 * share) if share is not None else "—",
                num(r.get("timeouts")), str(r.get("repeat") or 1)])
    L.append("**%s**, %d-byte values (kops/s: median of the runs (min–max))\n\n" % (
        SOCKET_LABEL, O_VALUE))
    L.append(table(["mix", "system", "throughput (k replies/s)", "÷ BMC", "÷ memcached-udp",
                    "server CPU per request (µs)", "p99 (µs)", "answered in XDP",
                    "timeouts", "runs"], body))
    L.append("\nServer CPU per request: the server's own threads (the server veth's NAPI "
             "kthread, which runs the XDP programs, and the server process) over the "
             "measured window, at the closed-loop rate of that run.\n\n")
    L.append("Where BMC does not take part (BMC's row in the headline is empty for these "
             "reasons):\n\n")
    probe = next((r for r in rows if r.get("limit_probe")), None)
    if probe:
        L.append("- values of %d bytes (the headline's workload), 100 %% gets, observed in "
                 "this run: %s k replies/s, %s requests unanswered within the client's "
                 "timeout, %s of %s GETs answered by BMC's XDP path (BMC's source writes a "
                 "reply into the request's frame grown by at most 128 bytes, "
                 "ADJUST_HEAD_LEN)\n" % (
                     O_LIMIT_VALUE, num((probe.get("throughput_ops") or 0) / 1e3, "%.2f"),
                     num(probe.get("timeouts")), num(probe.get("bmc_hits")),
                     num(probe.get("bmc_gets"))))
    L.append("- TCP (memcached-tcp, Redis's columns): BMC's XDP program passes TCP to "
             "memcached unanswered, only UDP GETs are cached\n"
             "- sets: BMC invalidates the key in XDP and passes the set to memcached, so "
             "every set is memcached's (the 90 % mix above)\n"
             "- the in-kernel generator, hit ratio per byte (m), memory per item (f), lost "
             "data (g): not measured for BMC (its source sizes its cache as one array of "
             "3,250,000 slots of key + value room, allocated whole at load)\n")


def headline_row(res, columns):
    """BMC's row in the headline: every cell says why it is empty."""
    why = {k: "BMC: the headline's 128-byte values exceed the reply BMC writes into the "
              "request's frame (see (o), where it runs at %d-byte values)" % O_VALUE
           for k, _, _ in columns}
    for k in ("capacity",):
        why[k] = "BMC: no in-kernel generator row (it needs memcached's socket to fill)"
    for k in ("bytes_per_item", "hit_ratio", "lost_2x"):
        why[k] = "BMC: not measured (its cache is one fixed array, allocated whole at load)"
    out = {"system": "bmc", "client_mode": "UDP, one request per datagram"}
    for k, v in why.items():
        out[k] = {"value": None, "why": v}
    return out


def best_against(res, layout):
    """One sentence: the layout (or the first layout (o) ran) against BMC at
    each mix of (o): throughput and server CPU per request."""
    rows = [r for r in rows_o(res) if not r.get("limit_probe")]
    out = []
    for w, mix in O_MIXES:
        at = [r for r in rows if r.get("write") == w]
        b = next((r for r in at if r["system"] == "bmc"), None)
        x = next((r for r in at if r["system"] == "xdpkv/" + layout), None) or next(
            (r for r in at if r["system"].startswith("xdpkv/")), None)
        if not b or not x:
            continue
        cb, cx = b.get("server_threads_us_per_req"), x.get("server_threads_us_per_req")
        out.append("%s: %s %s BMC's throughput (%.1f against %.1f k replies/s), at %s BMC's "
                   "server CPU per request" % (
                       mix, x["system"][6:], ratio_text(x, b),
                       x["throughput_ops"] / 1e3, b["throughput_ops"] / 1e3,
                       "%.2f×" % (cx / cb) if cb and cx else "?"))
    return "; ".join(out) + "." if out else None


PNG = "o_bmc.png"


def plot(plt, res, outdir, made, save, colors):
    """(o): throughput and server CPU per request per system at each mix,
    the median with min-max bars; the names on the axis, no text on the bars."""
    rows = [r for r in rows_o(res) if not r.get("limit_probe") and r.get("throughput_ops")]
    if not rows:
        return
    systems = list(dict.fromkeys(r["system"] for r in rows))
    fig, axs = plt.subplots(1, 2, figsize=(11, 4.4))
    width = 0.8 / len(O_MIXES)
    for k, (w, mix) in enumerate(O_MIXES):
        at = {r["system"]: r for r in rows if r.get("write") == w}
        xs = [i + (k - (len(O_MIXES) - 1) / 2) * width for i in range(len(systems))]
        tp = [at[s]["throughput_ops"] / 1e3 if s in at else 0 for s in systems]
        lo = [tp[i] - _range(at[s])[0] / 1e3 if s in at else 0 for i, s in enumerate(systems)]
        hi = [_range(at[s])[1] / 1e3 - tp[i] if s in at else 0 for i, s in enumerate(systems)]
        axs[0].bar(xs, tp, width, yerr=[lo, hi], capsize=3, label=mix, color="C%d" % k)
        cpu = [at[s].get("server_threads_us_per_req") or 0 if s in at else 0 for s in systems]
        axs[1].bar(xs, cpu, width, label=mix, color="C%d" % k)
    for ax, yl in ((axs[0], "throughput (k replies/s)"),
                   (axs[1], "server CPU per request (µs)")):
        ax.set_xticks(range(len(systems)))
        ax.set_xticklabels([s.replace("xdpkv/", "") for s in systems], fontsize=8)
        ax.set_ylabel(yl)
        ax.grid(axis="y", alpha=0.3)
    axs[0].set_title("(o) %d-byte values, median of %d runs (min–max)" % (O_VALUE, O_RUNS),
                     fontsize=9)
    axs[1].set_title("(o) the server's own threads per request", fontsize=9)
    axs[1].legend(fontsize=8)
    save(plt, fig, outdir, PNG, made)
