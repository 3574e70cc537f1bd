# SPDX-License-Identifier: MIT
"""xdpkv compare (n): TCP scaling with third-party clients, one point at a time.

  cpus       the client and server CPUs and the server thread counts: (j)'s
             split (scaling_cores), threads 1, 2, 4 ... and the server CPUs
  servers    the servers measured: all four, or those --baselines names
  run_point  bench/tcpscale.sh for one server at N server threads (its own
             testbed, memaslap or redis-benchmark), --repeat times; the run
             with the median requests/s is the row, every run's kept
  md, plot   the report's section and n_tcpscale.png
"""
import json
import os

from experiments import cpu_list, microbench_threads, scaling_cores
from results import num, rows_of, runs_of, tp
from servers import CompareError, run_script

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "tcpscale.sh")
PNG = "n_tcpscale.png"
LABEL = ("end-to-end over TCP, third-party clients (bench/tcpscale.sh: memaslap, "
         "redis-benchmark), N server threads on N server CPUs")
# compare's system name -> tcpscale.sh's server; the names are compare's
# baselines for the same servers, so colours and --baselines carry over
SERVERS = {"memcached-tcp": "memcached", "xdpkv-tcp-kernel": "xdpkv", "xdpkv-tcp": "xdpkv-nofast",
           "redis": "redis"}
# seconds a point costs beyond its duration: a testbed up and down, the
# server's start, memaslap's 2 s warm-up (redis: the preload and the sizing runs)
OVERHEAD = 6.0


def cpus(nproc, gen_cores=None):
    """(client CPUs, server CPUs, server thread counts): (j)'s split of the
    machine (the client on the lower CPUs, the server on the rest), threads
    1, 2, 4 ... and the number of server CPUs itself; None below 2 CPUs."""
    sc = scaling_cores(nproc, gen_cores)
    if not sc:
        return None
    client, server, _ = sc
    return client, server, microbench_threads(len(server))


def servers(baselines, given):
    """The systems (n) measures: all four unless --baselines was given, then
    the TCP servers it names."""
    return [s for s in SERVERS if not given or s in baselines]


def duration(s):
    """tcpscale.sh takes whole seconds."""
    return max(1, int(round(s["duration"])))


def estimate(s):
    return (duration(s) + OVERHEAD) * s.get("repeat", 1)


def run_once(name, threads, s, split, xdpkv, logdir):
    """One bench/tcpscale.sh run: its JSON row.  The script brings up a
    testbed of its own (prefix xts<pid>) and takes it down on exit and on
    SIGTERM (servers.run_script)."""
    client, server, _ = split
    srv = SERVERS[name]
    cmd = ["bash", SCRIPT, "--servers", srv, "--threads", str(threads),
           "--duration", str(duration(s)), "--server-cpus", cpu_list(server),
           "--client-cpus", cpu_list(client),
           "--build-dir", os.path.dirname(os.path.dirname(os.path.abspath(xdpkv)))]
    rc, out = run_script(cmd, os.path.join(logdir, "tcpscale-%s-%d.log" % (srv, threads)),
                         120 + 4 * duration(s), "bench/tcpscale.sh %s" % srv)
    lines = [x for x in out.splitlines() if x.startswith("{")]
    if not lines:
        raise CompareError("bench/tcpscale.sh %s exited with %d and printed no row (log: "
                           "logs/tcpscale-%s-%d.log)" % (srv, rc, srv, threads))
    return json.loads(lines[-1])


def run_point(name, threads, s, split, xdpkv, logdir):
    """--repeat runs of one point: the run with the median requests/s,
    with every run's requests/s and µs per request (throughput_runs,
    server_cpu_us_per_req_runs).  The row is returned even when a run failed
    its checks (ok false): the caller records it, then fails the step."""
    n = s.get("repeat", 1)
    runs = [run_once(name, threads, s, split, xdpkv, logdir) for _ in range(n)]
    for r in runs:
        r["throughput_ops"] = r.get("tps")
        r["server_cpu_us_per_req"] = r.get("server_us_per_req")
    runs.sort(key=lambda r: r.get("tps") or 0)
    med = dict(runs[n // 2])
    if n > 1:
        med.update(throughput_runs=[r.get("tps") for r in runs],
                   server_cpu_us_per_req_runs=[r.get("server_us_per_req") for r in runs],
                   repeat=n)
    med["ok"] = all(r.get("ok") for r in runs)
    return med


def md(res, L, table):
    rr = rows_of(res, "n")
    if not rr:
        return

    def us(r):
        v = num(r.get("server_cpu_us_per_req"), "%.2f")
        runs = runs_of(r, "server_cpu_us_per_req")
        return v + (" (%.2f–%.2f)" % (min(runs), max(runs)) if len(runs) > 1 else "")
    body = [[r["system"], r.get("client"), r["threads"], tp(r), us(r),
             num(r.get("kernel_share"), "%.3f"), num(r.get("elapsed_s"), "%.1f"),
             "yes" if r.get("ok") else "**no**"]
            for r in sorted(rr, key=lambda r: (r["threads"], list(SERVERS).index(r["system"])))]
    L.append(table(["server", "client", "server threads", "kreq/s", "server µs / request",
                    "kernel share", "elapsed s", "checks"], body))
    rep = any(r.get("repeat") for r in rr)
    L.append("\nkreq/s and µs per request: %s. *server µs / request*: the server CPUs' busy "
             "time (/proc/stat, everything that ran there) over the requests. *kernel share*: "
             "the requests xdpkv's sk_skb program answered in the kernel (xdpkv-tcp-kernel "
             "only). memaslap and redis-benchmark are different clients (connections, threads, "
             "parsing, Redis's RESP against memcached's text protocol): compare rows of the same "
             "client; the memaslap rows compare memcached and xdpkv with one client. Each row's "
             "own fields (gets, sets, hits, client threads, connections): results.json; the "
             "script's stderr: logs/tcpscale-SERVER-N.log.\n" % (
                 "the median of --repeat runs (with an even --repeat the upper middle one), "
                 "min–max" if rep else "one run"))


def plot(plt, res, outdir, made, lines, save):
    rr = [r for r in rows_of(res, "n") if r.get("throughput_ops")]
    if not rr:
        return
    fig, axs = plt.subplots(1, 2, figsize=(12, 4.4))
    threads = sorted({r["threads"] for r in rr})
    clients = "; ".join("%s: %s" % (c, ", ".join(sorted({r["system"] for r in rr
                                                          if r.get("client") == c})))
                        for c in sorted({r.get("client") for r in rr}))
    lines(axs[0], rr, "threads", "throughput_ops", "server threads (= server CPUs)", "kreq/s",
          "(n) requests/s over TCP\n(%s)" % clients, scale=1e-3)
    lines(axs[1], rr, "threads", "server_cpu_us_per_req", "server threads (= server CPUs)",
          "server CPU µs per request", "(n) server CPU per request (/proc/stat)")
    for ax in axs:
        if len(threads) > 2:
            ax.set_xscale("log", base=2)
        ax.set_xticks(threads)
        ax.set_xticklabels([str(t) for t in threads])
        ax.set_ylim(bottom=0)
    save(plt, fig, outdir, PNG, made)

