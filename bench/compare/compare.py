#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""xdpkv compare: xdpkv's layouts against memcached and Redis, on the
veth testbed (docs/compare.md).

  xdpkv compare [--quick | --smoke] [--layouts L,...] [--baselines B,...]
                [--experiments a,b,...] [--workload fixed|etc|twitter]
                [--repeat N] [--out DIR] [--json]
  xdpkv compare --experiments j,l --repeat 3     (scaling and microbenchmark,
                                                  every layout)
  xdpkv compare --experiments m --quick          (hit ratio per byte, every
                                                  layout, against libCacheSim)
  xdpkv compare --experiments n --quick          (TCP scaling, memaslap and
                                                  redis-benchmark)
  xdpkv compare --experiments p --duration 5     (proxied and pipelined TCP
                                                  clients, bench/clients)

Experiments:
  a  max throughput per key distribution (socket client, closed loop; and
     the in-kernel generator's server capacity for the XDP layouts)
  b  latency (p50, p99) vs offered load, open loop, as fractions of
     memcached-UDP's max
  c  write ratio 0..100 %
  d  key size and value size
  e  scan ratio (multi-key get of N keys)
  f  memory per item
  g  lost data (kvexp lost + stale)
  h  server CPU per request (/proc/stat) and XDP program time (bpf_stats)
  i  share of requests each xdpkv path served
  j  scaling with server cores: server capacity (in-kernel generator) of
     each XDP layout and the reflector at 1, 2, 4 ... server cores, for
     read-heavy, write-heavy, Zipf 0.99 and single-hot-key mixes
  k  persistence: xdpkv snapshot / restore against Redis BGSAVE / RDB load
  l  the in-kernel microbenchmark (bench/microbench, BPF_PROG_TEST_RUN) of
     each layout and the null store at 1, 2, 4 ... nproc threads at once,
     GET hit and SET, disjoint and shared keys: ns per request and the
     ratio to one thread (no testbed traffic; every reply validated first)
  m  hit ratio per byte: per layout, a memory budget sweep (fractions of the
     working set's bytes, as the kernel reports the map) under Zipf alpha
     0.6 ... 1.2 and uniform keys, cache-aside gets through the XDP program
     (xkv-kvexp hitratio), spreads over seeds; every run's request sequence
     replayed in libCacheSim (bench/.venv, bench/kvexp/setup-cachesim.sh) and
     in Python models of each layout's policy; miss-ratio curves of both
  n  TCP scaling with third-party clients: bench/tcpscale.sh (its own
     testbed) at 1, 2, 4 ... server threads on as many server CPUs (j's
     split): memaslap against memcached and xdpkv serve (kernel TCP path on:
     xdpkv-tcp-kernel, off: xdpkv-tcp), redis-benchmark against Redis
     (--io-threads N); requests/s, server CPU per request, kernel share
  o  BMC beside the layouts (with --bmc-dir): UDP GETs at values BMC answers
  p  proxied and pipelined TCP clients: bench/clients/clients.sh (its own
     testbed) once per row, xdpkv (attach's default, serve --threads 1) and
     memcached (-t 1) in one sitting: nutcracker with 8 and 32 clients,
     pymemcache get_many and set_many, php-memcached no-block sets and
     getMulti (--client-rows); requests/s, server CPU per request and the
     ratios, the share answered in XDP, the segments the server's TCP stack
     never saw

Layouts: the registry's (`xdpkv layouts`), and lru_no_common_lru (lru with
--no-common-lru).  Workloads (--workload): fixed key and value sizes, or
production ones: etc (Facebook ETC, Atikoglu et al. SIGMETRICS'12) or twitter
(Twitter's clusters, Yang et al. OSDI'20); docs/compare.md "Workloads".

Writes DIR/results.json, results.csv, report.md and one PNG per experiment
(default DIR: ./results/<timestamp>).  Progress and ETA on stderr.  Needs
root.  Environment: XDPKV (the CLI; set by 'xdpkv compare'), XKV_LOADGEN,
XKV_XDPGEN, XKV_KVEXP, XKV_MICROBENCH (override the tools' paths).
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
REPO = os.path.dirname(os.path.dirname(HERE))

import bmc  # noqa: E402
import clientmix  # noqa: E402
import hitratio  # noqa: E402
import servers  # noqa: E402
import tcpscale  # noqa: E402
from experiments import (BASE_KEY, BASE_VALUE, BASE_WRITE, CLIENT_ROWS, EXPERIMENTS,  # noqa: E402
                         FULL, MB_OPS, QUICK, QUICK_BASELINES, QUICK_EXPERIMENTS, SETUP_EST, SMOKE,
                         SMOKE_CLIENT_ROWS, WORKLOADS, cpu_list, scaling_cores)
from runner import Runner  # noqa: E402
from servers import CompareError, env, tb  # noqa: E402
from session import Interrupted, fmt_s, log, on_signal  # noqa: E402


# ---- tools -------------------------------------------------------------------------

def find_tool(envname, *candidates):
    p = os.environ.get(envname)
    if p:
        return p if os.access(p, os.X_OK) else None
    for c in candidates:
        if os.access(c, os.X_OK):
            return c
    return None


def tools(xdpkv):
    build = os.path.dirname(os.path.dirname(os.path.abspath(xdpkv)))
    b = os.path.join(build, "bench")
    return {
        "xdpkv": xdpkv,
        "loadgen": find_tool("XKV_LOADGEN", b + "/loadgen/xkv-loadgen"),
        "xdpgen": find_tool("XKV_XDPGEN", b + "/xdpgen/xkv-xdpgen", b + "/xdpgen/xdpgen"),
        "kvexp": find_tool("XKV_KVEXP", b + "/kvexp/xkv-kvexp", b + "/kvexp/kvexp"),
        "microbench": find_tool("XKV_MICROBENCH", b + "/microbench"),
    }


def pkg_version(pkg):
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def machine_info():
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    versions = {p: pkg_version(p) for p in
                ("memcached", "redis-server", "libbpf1", "libbpf-dev", "libxdp1", "clang",
                 "clang-14", "linux-libc-dev", "python3-matplotlib")}
    return {"nproc": os.cpu_count(), "cpu_model": model, "kernel": platform.release(),
            "kernel_version": platform.version(), "memory_bytes": mem,
            "hostname": platform.node(), "packages": versions}


def now_stamp():
    """The date and the load average, taken now (a run's start and end)."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return datetime.datetime.now().isoformat(timespec="seconds"), load


# ---- top level -----------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(prog="xdpkv compare", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--quick", action="store_true",
                    help="the headline's experiments (%s) for every layout and %s: 50k keys, "
                         "0.6 s per point, the headline's points 3 times (4-6 min on 2 CPUs)" % (
                             ",".join(QUICK_EXPERIMENTS), QUICK_BASELINES))
    ap.add_argument("--smoke", action="store_true",
                    help="the test suite's setting: tiny and fast (< 90 s); implies --quick's "
                         "tools; default experiments a,h,i")
    ap.add_argument("--layouts", default=None, metavar="L,...",
                    help="xdpkv layouts (default: all of them: the registry's, as `xdpkv "
                         "layouts` lists them, and lru_no_common_lru, lru attached with "
                         "--no-common-lru)")
    ap.add_argument("--baselines", default=None,
                    help="memcached-udp,memcached-tcp,redis,xdpkv-tcp,xdpkv-tcp-kernel (default: all five; "
                         "--quick: memcached-udp,memcached-tcp,redis; --smoke: memcached-udp,redis); (n) runs the four TCP ones "
                         "unless this names some")
    ap.add_argument("--experiments", default=None,
                    help="letters a..p, comma-separated (default: all; --quick: %s; --smoke: "
                         "a,h,i)" % ",".join(QUICK_EXPERIMENTS))
    ap.add_argument("--workload", default="fixed", choices=WORKLOADS,
                    help="key and value sizes: fixed (16-byte keys, 128-byte values; (d) "
                         "varies them), etc (Facebook ETC) or twitter (Twitter's clusters): "
                         "each key's sizes from a published study (docs/compare.md "
                         "\"Workloads\"); for the socket client's experiments and (m)")
    ap.add_argument("--no-ceilings", action="store_true",
                    help="(a) without the reflector and null-store capacity rows that the "
                         "layouts' in-kernel-generator numbers are reported against")
    ap.add_argument("--gen-cores", type=int, default=None, metavar="G",
                    help="(j) CPUs 0..G-1 for the in-kernel generator, the rest for the "
                         "server (default: half the CPUs, rounded up)")
    ap.add_argument("--out", default=None, help="output directory (default results/<timestamp>)")
    ap.add_argument("--json", action="store_true", help="print results.json on stdout at the end")
    ap.add_argument("--repeat", type=int, default=None, metavar="N",
                    help="runs of every point: socket client, in-kernel generator ((a), (j)) "
                         "and microbenchmark repetitions ((l)); the median run is reported (with "
                         "an even N the upper of the two middle runs: every number of a cell "
                         "comes from one run), the min-max as the range and the error bars "
                         "(1..20, default 1; a shared machine is noisy; odd N recommended)")
    ap.add_argument("--bmc-dir", default=None, metavar="DIR",
                    help="a BMC build (bmc and bmc_kern.o, made from Orange-OpenSource/bmc-cache "
                         "as docs/compare.md says): adds bmc to the baselines and (o), BMC beside "
                         "the layouts, to the experiments")
    ap.add_argument("--client-rows", default=None, metavar="ROW,...",
                    help="(p) the rows of bench/clients/clients.py to run (default %s; "
                         "--smoke: %s)" % (",".join(CLIENT_ROWS), ",".join(SMOKE_CLIENT_ROWS)))
    ap.add_argument("--keys", type=int, default=None, help="override the key space (>= 1)")
    ap.add_argument("--duration", type=float, default=None, help="override seconds per point")
    ap.add_argument("--estimate", action="store_true",
                    help="print the plan's measurements and its estimated time, and exit "
                         "(no root, nothing measured)")
    ap.add_argument("--prefix", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--render", metavar="DIR", default=None,
                    help="only rewrite report.md, results.csv and the plots of DIR from its "
                         "results.json (no root, no measurements)")
    a = ap.parse_args(argv)

    def lst(v):
        return [x.strip() for x in v.split(",") if x.strip()]
    if a.quick and a.smoke:
        ap.error("--quick and --smoke are two different settings: give one")
    if a.keys is not None and a.keys < 1:
        ap.error("--keys: a number of keys >= 1 (got %d)" % a.keys)
    if a.duration is not None and not a.duration > 0:
        ap.error("--duration: seconds per point > 0 (got %g)" % a.duration)
    a.known_layouts = ()
    gone = {}
    if not a.render:  # the registry's, through the CLI that runs us
        try:
            cli = os.environ.get("XDPKV") or os.path.join(REPO, "build", "cli", "xdpkv")
            a.known_layouts = servers.registry_layouts(cli)
            gone = servers.unavailable_layouts(cli)
        except CompareError as e:
            ap.error(str(e))
    a.layouts = lst(a.layouts) if a.layouts is not None else list(a.known_layouts)
    for l in a.layouts:
        if l not in a.known_layouts:
            ap.error("--layouts: unknown layout '%s' (%s)" % (l, ", ".join(a.known_layouts)))
    # what this kernel cannot hold is skipped, with its reason (results.json,
    # report.md), never failed
    a.skipped_layouts = {l: gone[l] for l in a.layouts if l in gone}
    a.layouts = [l for l in a.layouts if l not in gone]
    a.baselines_given = a.baselines is not None
    if a.baselines is None:
        a.baselines = ("memcached-udp,redis" if a.smoke else QUICK_BASELINES if a.quick
                       else ",".join(servers.BASELINES))
    a.baselines = lst(a.baselines) if a.baselines != "none" else []
    for b in a.baselines:
        if b not in servers.BASELINES + servers.OPTIONAL_BASELINES:
            ap.error("--baselines: unknown baseline '%s' (%s)" % (b, ", ".join(
                servers.BASELINES + servers.OPTIONAL_BASELINES)))
    a.experiments_given = a.experiments is not None
    if a.experiments is None:
        a.experiments = ("a,h,i" if a.smoke else ",".join(QUICK_EXPERIMENTS) if a.quick
                         else ",".join(EXPERIMENTS))
    a.experiments = "".join(lst(a.experiments))
    for e in a.experiments:
        if e not in EXPERIMENTS:
            ap.error("--experiments: unknown experiment '%s' (a..p)" % e)
    bmc.check(ap, a)
    clientmix.check(ap, a)
    if a.gen_cores is not None and not 1 <= a.gen_cores < (os.cpu_count() or 1):
        ap.error("--gen-cores: 1..%d on this machine (the server needs a CPU)" %
                 ((os.cpu_count() or 1) - 1))
    if not a.layouts and not a.baselines:
        ap.error("nothing to compare: no layouts and no baselines")
    if a.repeat is not None and not 1 <= a.repeat <= 20:
        ap.error("--repeat: 1..20")
    if a.render and not os.path.isfile(os.path.join(a.render, "results.json")):
        ap.error("--render: %s has no results.json" % a.render)
    return a


def settings_for(a):
    s = dict(SMOKE if a.smoke else QUICK if a.quick else FULL)
    if a.keys is not None:
        s["keys"] = a.keys
    if a.duration is not None:
        s["duration"] = a.duration
    if a.repeat:
        s["repeat"] = a.repeat
    return s


def outer(argv, a):
    """Check, then run ourselves again under the testbed wrapper."""
    if os.geteuid() != 0:
        sys.exit("xdpkv compare: needs root (XDP, BPF maps, network namespaces)")
    xdpkv = os.environ.get("XDPKV") or os.path.join(REPO, "build", "cli", "xdpkv")
    if not os.access(xdpkv, os.X_OK):
        sys.exit("xdpkv compare: the xdpkv CLI is not at %s (build it: ninja -C build, "
                 "or set XDPKV)" % xdpkv)
    need = ["nsenter", "taskset", "bpftool", "ip", "ss"]
    if any(b.startswith("memcached") for b in a.baselines):
        need.append("memcached")
    if "redis" in a.baselines:
        need.append("redis-server")
    if "p" in a.experiments:  # bench/clients/clients.sh's servers (its clients: per row)
        need.append("memcached")
    if "bmc" in a.baselines:  # bmc.BmcSystem attaches its TC program
        need += ["tc"]
    if "n" in a.experiments:  # bench/tcpscale.sh's clients and servers
        for s in tcpscale.servers(a.baselines, a.baselines_given):
            need += {"memcached-tcp": ["memcached", "memcaslap"], "redis": [
                "redis-server", "redis-benchmark", "redis-cli"]}.get(s, ["memcaslap"])
    miss = [t for t in need if not shutil.which(t, path=os.environ.get("PATH", "") +
                                                ":/usr/sbin:/sbin")]
    if miss:
        sys.exit("xdpkv compare: missing tools: %s (tests/lib/install-deps.sh installs them)"
                 % ", ".join(miss))
    env_ = dict(os.environ, XDPKV=os.path.abspath(xdpkv), XKV_CMP_START="%.3f" % time.time())
    env_["PATH"] = env_.get("PATH", "") + ":/usr/sbin:/sbin"
    passobj = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(xdpkv))),
                           "tests", "xdp_pass.bpf.o")
    if os.path.exists(passobj) and not env_.get("TB_XDP_PASS_OBJ"):
        env_["TB_XDP_PASS_OBJ"] = passobj
    log("plan before the testbed: %s" % plan_estimate(a))
    prefix = a.prefix or "xcmp%d" % (os.getpid() % 100000)
    sc = scaling_cores(os.cpu_count() or 1, a.gen_cores)
    if "j" in a.experiments and sc:
        # one veth queue per server CPU of (j); the other experiments put
        # every queue's NAPI thread on the one server CPU
        env_["TB_QUEUES"] = str(len(sc[1]))
    cmd = ["bash", os.path.join(HERE, "testbed-run.sh"), prefix, "--", sys.executable,
           os.path.abspath(__file__), "--inner"] + argv
    os.execvpe("bash", cmd, env_)


def plan_estimate(a):
    """The plan's size and estimated time, before anything runs."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        r = Runner(a, settings_for(a), tools(os.environ.get("XDPKV") or os.path.join(
            REPO, "build", "cli", "xdpkv")), d)
        n, est = r.estimate(r.plan(), r.kvexp_subs())
    return "%d measurements, estimated %s (%s with the testbed and the report)" % (
        n, fmt_s(est), fmt_s(est + SETUP_EST))


def public_args(argv):
    """The command as the report prints it: the output and BMC directories
    (paths of this machine) as DIR and BMC_DIR."""
    out, names = [], {"--out": "DIR", "--bmc-dir": "BMC_DIR"}
    for i, x in enumerate(argv):
        k = x.split("=", 1)[0]
        if k in names and "=" in x:
            out.append("%s=%s" % (k, names[k]))
        elif i and argv[i - 1] in names:
            out.append(names[argv[i - 1]])
        else:
            out.append(x)
    return out


def inner(a):
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    s = settings_for(a)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    outdir = os.path.abspath(a.out or os.path.join("results", stamp))
    os.makedirs(outdir, exist_ok=True)
    tl = tools(env("XDPKV"))
    r = Runner(a, s, tl, outdir)
    mode = "smoke" if a.smoke else "quick" if a.quick else "full"
    for l, why in a.skipped_layouts.items():
        log("skipped layout %s: not available on this kernel: %s" % (l, why))
    log("mode %s, layouts %s, baselines %s, experiments %s, output %s" %
        (mode, ",".join(a.layouts), ",".join(a.baselines) or "-", a.experiments, outdir))
    for t, p in tl.items():
        if not p:
            log("note: %s not found" % t)
    status = "complete"
    t0 = time.time()
    date_start, load_start = now_stamp()
    try:
        tb("pin_client_napi")
        r.go()
    except Interrupted as e:
        status = "interrupted (%s)" % e
        log("interrupted: cleaning up")
    except CompareError as e:
        status = "failed: %s" % e
        log("FAILED: %s" % e)
    finally:
        r.bpf_stats.restore()
        try:
            r.stop_system()
        except Exception as e:  # noqa: BLE001 - the testbed's tb_down follows anyway
            log("cleanup: %s" % e)
    # from here on a second signal just stops the report
    import report
    date_end, load_end = now_stamp()
    placement = [
        "server CPU %d: the server veth's NAPI kthread (threaded, pinned; runs the "
        "XDP program), xdpkv serve, memcached -t 1, redis-server (taskset)" % r.server_cpu,
        "client CPU %d: xkv-loadgen (1 thread, pinned), xdpgen, the client veth's NAPI "
        "kthread (threaded, pinned)" % r.client_cpu,
        "baselines get an XDP_PASS program on the server veth so their packets take "
        "the same NAPI path to the server CPU as xdpkv's",
    ]
    if "l" in a.experiments:
        placement.append(
            "(l) bench/microbench in the root namespace, no testbed traffic (its servers "
            "stopped): thread t pinned to CPU t, %s threads; %d entries preloaded per layout, "
            "%d request keys per thread, --benchmark_min_time %g per point" % (
                ", ".join(str(n) for n in r.mb_threads), r.mb["entries"], r.mb["keys"],
                r.mb["min_time"]))
    if "m" in a.experiments:
        placement.append(
            "(m) xkv-kvexp hitratio in the root namespace, pinned to CPU %d, no testbed "
            "traffic (its servers stopped); one request at a time, so hit ratios do not "
            "depend on timing" % r.server_cpu)
    if "n" in a.experiments and r.tcp:
        placement.append(
            "(n) bench/tcpscale.sh, a testbed of its own per point (one veth queue per server "
            "CPU), this one's servers stopped: server CPUs %s (the server veth's NAPI threads "
            "and the server), client CPUs %s (memaslap -T / redis-benchmark --threads "
            "min(N, client CPUs), 32 x N connections); server threads %s" % (
                cpu_list(r.tcp[1]), cpu_list(r.tcp[0]), ", ".join(str(n) for n in r.tcp[2])))
    if "p" in a.experiments:
        placement.append(
            "(p) bench/clients/clients.sh, a testbed of its own per row, this one's servers "
            "stopped: the server (xdpkv serve --threads 1 or memcached -t 1) and its veth's "
            "NAPI thread on CPU 1; the client, its veth's NAPI thread and nutcracker on CPU 0")
    if "j" in a.experiments and r.scaling:
        placement.append(
            "(j) veth queues: %s per end; generator CPUs %s (N xdpgen threads on the first N), "
            "server CPUs %s (server queue i's NAPI kthread on the i-th, the client queue i's "
            "on generator CPU i); core counts %s" % (
                os.environ.get("TB_QUEUES", "1"), cpu_list(r.scaling[0]),
                cpu_list(r.scaling[1]), ", ".join(str(n) for n in r.scaling[2])))
    res = {
        "tool": "xdpkv compare",
        "status": status,
        "mode": mode,
        "date": date_start,
        "date_end": date_end,
        "wall_seconds": round(time.time() - t0, 1),
        # from xdpkv compare's start (testbed set-up included) to the report's
        # start, and what the plan estimated for that at the start
        "seconds_to_report": round(time.time() - float(os.environ.get("XKV_CMP_START", t0)), 1),
        "estimated_seconds": round(r.total_est + SETUP_EST),
        "command": "xdpkv compare " + " ".join(public_args(sys.argv[2:])),
        "baseline_settings": r.settings_seen,
        "config": dict(s, layouts=a.layouts, skipped_layouts=a.skipped_layouts, baselines=a.baselines,
                       experiments=a.experiments, workload=a.workload, base_key_size=BASE_KEY,
                       base_value_size=BASE_VALUE, base_write_ratio=BASE_WRITE,
                       entries="2 x keys (every layout)",
                       reference_max=r.ref_max, reference_system=r.ref_name),
        "testbed": {
            "server_cpu": r.server_cpu, "client_cpu": r.client_cpu,
            "server": "%s in netns %s (%s)" % (os.environ.get("TB_SRV_DEV"),
                                               os.environ.get("TB_SRV_NS"),
                                               os.environ.get("TB_SRV_IP4")),
            "client": "%s in netns %s (%s)" % (os.environ.get("TB_CLI_DEV"),
                                               os.environ.get("TB_CLI_NS"),
                                               os.environ.get("TB_CLI_IP4")),
            "queues": int(os.environ.get("TB_QUEUES", "1")),
            "scaling": ({"gen_cpus": r.scaling[0], "server_cpus": r.scaling[1],
                         "core_counts": r.scaling[2]} if r.scaling else None),
            "microbench": ({"threads": r.mb_threads, "entries": r.mb["entries"],
                            "keys_per_thread": r.mb["keys"], "min_time": r.mb["min_time"],
                            "ops": list(MB_OPS)} if "l" in a.experiments else None),
            "placement": placement,
        },
        "machine": dict(machine_info(), date_start=date_start, date_end=date_end,
                        loadavg_at_start=load_start, loadavg_at_end=load_end),
        # the tools as paths in the source tree, not this machine's
        "tools": {k: v and v.replace(REPO, "<source tree>") for k, v in tl.items()},
        "notes": r.notes,
        "errors": r.errors,
        "preloads": r.preloads,
        "rows": r.rows,
        "hitratio": hitratio.merge(r.hr_sims, (r.hr_sim or (None, None))[1],
                                   (r.hr_sim or (None, None))[0]),
    }
    res = report.write_all(outdir, res)
    log("took %s from the start (estimated %s at the start)" % (
        fmt_s(time.time() - float(os.environ.get("XKV_CMP_START", t0))),
        fmt_s(res["estimated_seconds"])))
    log("wrote %s/{results.json,results.csv,report.md,*.png} (%s)" % (outdir, status))
    if a.json:
        print(json.dumps(res, indent=1))
    if status.startswith("interrupted"):
        sys.exit(130)
    if status != "complete" or r.errors:  # a failed measurement: its error is in the report
        sys.exit(1)


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["_probe"]:
        servers.probe_main(*argv[1:4])
        return
    a = parse_args(argv)
    if a.render:
        import report
        with open(os.path.join(a.render, "results.json")) as f:
            res = json.load(f)
        report.write_all(a.render, res)
        log("rewrote %s/{report.md,results.csv,*.png}" % a.render)
        return
    if a.estimate:
        print("xdpkv compare %s: %s" % (" ".join(public_args(argv)), plan_estimate(a)))
        return
    if a.inner:
        try:
            inner(a)
        except CompareError as e:
            sys.exit("xdpkv compare: %s" % e)
    else:
        outer(argv, a)


if __name__ == "__main__":
    main()
