# SPDX-License-Identifier: MIT
"""xdpkv compare (p): proxied and pipelined TCP clients, through the client
matrix (bench/clients/clients.sh): for each row, a real memcached client
against xdpkv (attach's default layout, `serve --threads 1`) and memcached
(-t 1), both in one sitting of the script, on a testbed of its own.

  rows        the rows bench/clients/clients.py knows (--client-rows checked)
  ClientSteps the plan's steps, one per row, and the step (a mixin of
              runner.Runner: its self.s, self.record, self.stop_system)
  run_row     clients.sh --rows ROW: the JSON line of each server
  md, plot    the report's section (a table per row) and p_clients.png
"""
import importlib.util
import json
import os
import statistics

from results import num, rows_of, table
from servers import CompareError, run_script
from session import log

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENTS = os.path.join(os.path.dirname(HERE), "clients")
SCRIPT = os.path.join(CLIENTS, "clients.sh")
PNG = "p_clients.png"
LABEL = ("end-to-end over TCP, real memcached clients (bench/clients/clients.sh), xdpkv and "
         "memcached one after the other in one sitting, one server thread each")
# clients.sh's servers -> compare's names for the same servers (colours, the
# other TCP experiments): xdpkv's default attach answers TCP in the kernel
SERVERS = {"memcached": "memcached-tcp", "xdpkv": "xdpkv-tcp-kernel"}
# what each row's client does (bench/clients/clients.py); what one request is
ROW_TEXT = {
    "nutcracker_8": "8 raw-socket clients, one `get` outstanding each, through nutcracker "
                    "(twemproxy) on the client's host, which keeps one connection to the "
                    "server and pipelines the clients' gets on it. A request: one get.",
    "nutcracker_32": "As nutcracker_8 with 32 clients: up to 32 gets pipelined on the "
                     "proxy's one server connection.",
    "pymemcache_get_many": "pymemcache `get_many` of 10 keys: one multi-key `get` line, one "
                           "reply of 10 values. A request: one get_many (10 keys).",
    "pymemcache_set_many": "pymemcache `set_many` of 8 keys with its default noreply: 8 "
                           "`set … noreply` in one write, no reply awaited; every 32nd round a "
                           "get_many reads them back. A request: one set.",
    "php_noblock": "php-memcached with OPT_NO_BLOCK: each `set` is written without waiting "
                   "for its reply; a getMulti at the end reads every key back. A request: one "
                   "set.",
    "php_getmulti": "php-memcached `getMulti` of 10 keys: one multi-key get. A request: one "
                    "getMulti (10 keys).",
    "memaslap_multiget": "memaslap with --division=10: multi-key gets of 10 keys; a request: "
                         "one key (memaslap's Ops).",
    "perl_fast": "Cache::Memcached::Fast: set, get and a get_multi of 10 keys per round.",
}
NOTE = ("The client matrix (bench/clients/clients.sh; bench/README.md) for the clients that "
        "do not wait for one reply before the next request: a proxy (nutcracker, twemproxy) "
        "that pipelines many clients' gets on one server connection, and clients that "
        "pipeline themselves (multi-key gets, set_many with noreply, php-memcached's no-block "
        "sets). For each row, one sitting of the script runs the row's real client against "
        "memcached (-t 1) and then xdpkv (`xdpkv attach` with its default layout, `xdpkv "
        "serve --threads 1`: the kernel's TCP paths on), each freshly started on the server "
        "CPU with an XDP program on its veth end (memcached's: XDP_PASS), so both take the "
        "same NAPI path; the ratios are xdpkv's over memcached's in the same sitting. A row "
        "whose client is not installed is reported as not run, with the reason.")
# seconds beyond the runs: a sitting's testbed up and down, and per server its
# start, the preload and the status reads (measured on the 2-CPU VM)
SITTING_S, RUN_S = 2.0, 0.8


def rows():
    """The rows bench/clients/clients.py defines, or None where the client
    matrix is not beside compare (the .deb installs it there)."""
    path = os.path.join(CLIENTS, "clients.py")
    if not os.path.isfile(path) or not os.path.isfile(SCRIPT):
        return None
    spec = importlib.util.spec_from_file_location("xkv_clients", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return list(mod.ROWS)


def check(ap, a):
    """--client-rows: known rows of the client matrix (a list from here on,
    None: the setting's)."""
    if a.client_rows is None:
        return
    a.client_rows = [x.strip() for x in a.client_rows.split(",") if x.strip()]
    known = rows()
    if known is None:
        ap.error("--client-rows: the client matrix (bench/clients) is not beside compare")
    for r in a.client_rows:
        if r not in known:
            ap.error("--client-rows: unknown row '%s' (%s)" % (r, ", ".join(known)))
    if not a.client_rows:
        ap.error("--client-rows: at least one row")


def duration(s):
    """Seconds a client runs: compare's duration, at least 1 s (memaslap
    rows take whole seconds; a client's start is part of its run)."""
    return max(1.0, s["duration"])


def estimate(s):
    return (SITTING_S + 2 * (duration(s) + RUN_S)) * s.get("repeat", 1)


def run_row(row, s, xdpkv, logdir):
    """One sitting of bench/clients/clients.sh for ROW: its two JSON lines
    (memcached's, xdpkv's; a skipped row's lines carry the reason).  The
    script brings its own testbed up (prefix xcm<pid>) and down."""
    log_ = os.path.join(logdir, "clients-%s.log" % row)
    cmd = ["bash", SCRIPT, "--rows", row, "--duration", "%g" % duration(s),
           "--build-dir", os.path.dirname(os.path.dirname(os.path.abspath(xdpkv)))]
    rc, out = run_script(cmd, log_, 180 + 4 * duration(s),
                         "bench/clients/clients.sh --rows %s" % row)
    lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    if sorted(x.get("server") for x in lines) != sorted(SERVERS):
        raise CompareError("bench/clients/clients.sh --rows %s exited with %d and printed %d "
                           "JSON lines, not one per server (log: logs/clients-%s.log)" % (
                               row, rc, len(lines), row))
    return lines


def result_row(j, sitting):
    """record()'s arguments for one of clients.sh's JSON lines: experiment,
    system, parameters and the line, with compare's names for its rate and
    CPU per request beside clients.sh's."""
    return ("p", SERVERS[j["server"]], {"client_row": j["row"], "sitting": sitting},
            dict(j, throughput_ops=j.get("req_per_s"),
                 server_cpu_us_per_req=j.get("server_us_per_req"),
                 loadavg_1m=round(os.getloadavg()[0], 2)))


class ClientSteps:
    def clientmix_steps(self):
        """(p) one step per row of the setting (or --client-rows)."""
        if rows() is None:
            self.notes.append("p: the client matrix (bench/clients/clients.sh) is not beside "
                              "compare: not measured; run it from a source tree")
            return []
        want = self.args.client_rows or self.s["client_rows"]
        self.s["client_rows"] = list(want)  # results.json's config: the rows asked for
        return [("clients " + r, self.cfg(), "p", {"client_row": r}, estimate(self.s),
                 "clientmix") for r in want]

    def clientmix_step(self, row):
        """--repeat sittings of one row, this testbed's servers stopped (the
        script's servers take its CPUs).  Every JSON line is a row of
        results.json; a row the script skipped (its client not installed) is
        a note with the reason; a run that failed its checks is recorded,
        then fails the step."""
        self.stop_system()
        bad = []
        for k in range(self.s.get("repeat", 1)):
            skipped = None
            for j in run_row(row, self.s, self.tools["xdpkv"], self.logdir):
                self.record(*result_row(j, k + 1), tool="clients.sh", label=LABEL)
                if j.get("skipped"):
                    skipped = j["skipped"]
                elif not j.get("ok"):
                    bad.append("%s: %s" % (j["server"], j.get("error") or j.get("first_wrong")))
            if skipped:
                self.notes.append("p: row %s not run: %s (bench/clients/clients.sh)" % (
                    row, skipped))
                log("(p) row %s skipped: %s" % (row, skipped))
                return
        if bad:
            raise CompareError("bench/clients/clients.sh --rows %s: a run failed its checks "
                               "(%s; the rows are in results.json, the log in "
                               "logs/clients-%s.log)" % (row, "; ".join(bad)[:400], row))


# ---- the report ------------------------------------------------------------------

def sittings(res):
    """row -> [(sitting, memcached's row, xdpkv's row)] in the order run."""
    out = {}
    for r in rows_of(res, "p"):
        d = out.setdefault(r["client_row"], {}).setdefault(r.get("sitting", 1), {})
        d[r.get("server")] = r
    return {row: [(k, d.get("memcached"), d.get("xdpkv")) for k, d in sorted(ss.items())]
            for row, ss in out.items()}


def ratio(x, m, key):
    """xdpkv's KEY over memcached's in one sitting, or None."""
    if not x or not m or not x.get(key) or not m.get(key):
        return None
    return x[key] / m[key]


def checks(r):
    if not r:
        return "**missing**"
    if not r.get("ok"):
        return "**no**: %s" % str(r.get("error") or r.get("first_wrong"))[:120].replace("|", "/")
    if (r.get("cpu1_foreign_share") or 0) > 0.2:
        return "yes; noisy: %.0f %% of CPU 1 others'" % (100 * r["cpu1_foreign_share"])
    return "yes"


HEAD = ["sitting", "memcached req/s", "xdpkv req/s", "req/s × memcached",
        "memcached µs / req", "xdpkv µs / req", "CPU × memcached", "xdpkv answered in XDP",
        "unseen by TCP: memcached", "unseen by TCP: xdpkv", "checks: memcached", "checks: xdpkv"]


def md(res, L):
    """A table per row: each sitting's two servers, their ratios and shares."""
    ss = sittings(res)
    if not ss:
        return
    for row, pts in ss.items():
        L.append("### %s\n\n%s\n\n" % (row, ROW_TEXT.get(row, "bench/clients/clients.py's "
                                                           "row %s." % row)))
        why = next((r.get("skipped") for _, m, x in pts for r in (m, x)
                    if r and r.get("skipped")), None)
        if why:
            L.append("Not run: %s.\n\n" % why)
            continue
        body = []
        for k, m, x in pts:
            g = lambda r, f, fmt="%.0f": num((r or {}).get(f), fmt)  # noqa: E731
            body.append([k, g(m, "req_per_s"), g(x, "req_per_s"),
                         num(ratio(x, m, "req_per_s"), "%.2f×"), g(m, "server_us_per_req", "%.1f"),
                         g(x, "server_us_per_req", "%.1f"),
                         num(ratio(x, m, "server_us_per_req"), "%.2f×"),
                         g(x, "xdp_share", "%.3f"), g(m, "segs_unseen_share", "%.3f"),
                         g(x, "segs_unseen_share", "%.3f"), checks(m), checks(x)])
        L.append(table(HEAD, body) + "\n")
    L.append("Each sitting: one run of bench/clients/clients.sh for the row, memcached then "
             "xdpkv, each freshly started on the server CPU, the row's keys preloaded, then "
             "the client for %s s on the client CPU, every reply checked (ok: no wrong reply, no "
             "error). *req/s*: the client's requests over the run (see each row for what a "
             "request is). *µs / req*: the server CPU's busy time (/proc/stat: everything that "
             "ran there, the NAPI thread and the server) over the requests; the server and its "
             "NAPI thread alone: `own_us_per_req` in results.json. *answered in XDP*: the "
             "share of xdpkv's TCP requests its XDP program answered (`xdpkv status` "
             "tcpx_answered over tcp_fast + tcpx_answered + tcp_slow). *unseen by TCP*: the "
             "share of the client's segments to the server that the server's TCP stack never "
             "received (1 − its TcpInSegs over the client's TcpOutSegs, loopback to the proxy "
             "excluded). *noisy*: others than the server used over 20 %% of the server CPU in "
             "the run. Every line the script printed: results.json (experiment p); its stderr: "
             "logs/clients-ROW.log.\n" % num(duration(res["config"]), "%g"))


def plot(plt, res, outdir, made, save, bars):
    """The req/s ratio and the CPU-per-request ratio (xdpkv over memcached in
    the same sitting) per row: the median sitting's, the min–max as bars."""
    vals, errs, groups = {}, {}, []
    series = (("req_per_s", "requests/s"), ("server_us_per_req", "server CPU / request"))
    for row, pts in sittings(res).items():
        for key, name in series:
            rs = [x for x in (ratio(x, m, key) for _, m, x in pts) if x is not None]
            if rs:
                v = statistics.median(rs)
                vals[(row, name)] = v
                if len(rs) > 1:
                    errs[(row, name)] = (v - min(rs), max(rs) - v)
        if (row, series[0][1]) in vals:
            groups.append(row)
    if not groups:
        return
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(groups) + 2), 4.6))
    bars(ax, groups, [n for _, n in series], vals, "xdpkv ÷ memcached (same sitting)",
         "(p) proxied and pipelined clients: xdpkv over memcached\n(bench/clients/clients.sh; "
         "above 1: more requests/s, more CPU per request)", errs)
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xticklabels(groups, rotation=20, ha="right", fontsize=8)
    ax.legend(fontsize=8)
    save(plt, fig, outdir, PNG, made)
