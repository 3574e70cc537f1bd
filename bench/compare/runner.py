# SPDX-License-Identifier: MIT
"""xdpkv compare's measuring runs: the Runner plans the steps of the chosen
experiments, starts each system (servers.py), drives the load generators,
xdpgen, kvexp and the microbenchmark, and records one row per measurement."""

import json
import os
import re
import subprocess
import time

import hitratio
import servers
import session
import tcpscale
from experiments import (BASE_KEY, BASE_VALUE, BASE_WRITE, CEILINGS, KVEXP_EST, MB_LABEL, MB_OPS,
                         SCALING_LABEL, SCALING_MIXES, SOCKET_LABEL, WORKLOAD_MAX_KEY,
                         WORKLOAD_MAX_VALUE, XDPGEN_LABEL, cpu_list, microbench_filter,
                         microbench_sizes, microbench_threads, scaling_cores)
from servers import CompareError, env, run, tb
from session import log


# ---- the measuring runs ------------------------------------------------------------

class Runner:
    def __init__(self, args, settings, tl, outdir):
        self.args = args
        self.s = settings
        self.tools = tl
        self.outdir = outdir
        self.rows = []
        self.preloads = []
        self.notes = []
        self.errors = []
        self.client_cpu = int(os.environ.get("TB_CLIENT_CPU", "0"))
        self.server_cpu = int(os.environ.get("TB_SERVER_CPU", "1"))
        # (j): generator CPUs, server CPUs, core counts
        self.scaling = scaling_cores(os.cpu_count() or 1, args.gen_cores)
        # (l): thread counts, and the microbenchmark's sizes on this machine
        self.mb_threads = microbench_threads(os.cpu_count() or 1)
        self.mb = microbench_sizes(settings["mb"], self.mb_threads[-1])
        # (n): client CPUs, server CPUs, server thread counts
        self.tcp = tcpscale.cpus(os.cpu_count() or 1, args.gen_cores)
        self.hr_sims = []        # (m): each layout's simulated run
        self.hr_sim = None       # (m): (python, libCacheSim version)
        self.sys = None          # running System
        self.sys_key = None      # (name, cfg tuple)
        self.bpf_stats = servers.BpfStats()
        self.ref_max = None
        self.ref_name = None
        self.t0 = time.time()
        self.done_est = 0.0
        self.total_est = 0.0
        self.steps_done = 0
        self.steps_total = 0
        self.logdir = os.path.join(outdir, "logs")
        os.makedirs(self.logdir, exist_ok=True)

    # -- progress --
    def progress(self, what):
        el = time.time() - self.t0
        if self.done_est > 0:
            eta = (self.total_est - self.done_est) * el / self.done_est
        else:
            eta = self.total_est
        log("%3d/%d %-60s elapsed %s, ETA %s" % (self.steps_done + 1, self.steps_total,
                                                  what[:60], fmt_s(el), fmt_s(eta)))

    # -- servers --
    def cfg(self, key_size=BASE_KEY, value_size=BASE_VALUE):
        keys = self.s["keys"]
        if self.args.workload != "fixed":  # the store holds the largest item
            key_size, value_size = WORKLOAD_MAX_KEY, WORKLOAD_MAX_VALUE
        return {"keys": keys, "key_size": key_size, "value_size": value_size,
                "entries": 2 * keys}

    def ensure(self, name, cfg):
        key = (name, tuple(sorted(cfg.items())))
        if self.sys_key == key:
            return self.sys
        self.stop_system()
        s = servers.make_system(name, self.tools["xdpkv"],
                                os.path.join(self.logdir, name.replace("/", "_") + ".log"))
        self.sys = s
        self.sys_key = key
        rss0 = None
        s.start(cfg)
        if name in CEILINGS:  # no store to fill
            s.preload = None
            return s
        pid = s.server_pid()
        if pid:
            rss0 = servers.rss_bytes(pid)
        t = time.time()
        pre = self.loadgen(s, dict(write=100, preload=True, duration=0.05, warmup=0,
                                   key_size=cfg["key_size"], value_size=cfg["value_size"]))
        s.preload = {"seconds": round(time.time() - t, 3), "rss_before": rss0,
                     "result": pre.get("preload"), "errors": pre.get("errors")}
        perr = (pre.get("preload") or {}).get("errors")
        if perr:
            self.notes.append("%s (keys %d B, values %d B): the preload had %s errors" %
                              (name, cfg["key_size"], cfg["value_size"], perr))
        if s.kind == "xdpkv":
            st = s.status()
            s.preload["live"] = st.get("live")
        self.done_est += 2 + self.s["keys"] / 80000
        self.preloads.append(dict(system=name, key_size=cfg["key_size"],
                                  value_size=cfg["value_size"], keys=cfg["keys"],
                                  seconds=s.preload["seconds"], live=s.preload.get("live")))
        return s

    def stop_system(self):
        if self.sys is not None:
            s, self.sys, self.sys_key = self.sys, None, None
            s.stop()

    # -- loadgen --
    def loadgen(self, s, p):
        lg = self.tools["loadgen"]
        cmd = [lg, "--server", s.host(), "--port", s.port, "--proto", s.proto,
               "--threads", 1, "--cpus", self.client_cpu,
               "--keys", self.s["keys"], "--dist", p.get("dist", "uniform"),
               "--write-ratio", p.get("write", BASE_WRITE),
               "--duration", p.get("duration", self.s["duration"]),
               "--warmup", p.get("warmup", self.s["warmup"]), "--json", "--quiet"]
        if self.s.get("timeout_ms"):
            cmd += ["--timeout-ms", self.s["timeout_ms"]]
        if self.args.workload != "fixed":
            cmd += ["--workload", self.args.workload]
        else:
            cmd += ["--key-size", p.get("key_size", BASE_KEY),
                    "--value-size", p.get("value_size", BASE_VALUE)]
        if p.get("rate"):
            cmd += ["--rate", "%.0f" % p["rate"]]
        else:
            cmd += ["--depth", p.get("depth", self.s["depth"])]
        if p.get("scan"):
            cmd += ["--scan-ratio", p["scan"], "--scan-len", p.get("scan_len", self.s["scan_len"])]
        if p.get("preload"):
            cmd += ["--preload"]
        timeout = 60 + 3 * (p.get("duration", self.s["duration"]) + self.s["warmup"])
        for attempt in (1, 2):
            try:
                p_ = subprocess.run([servers.TB_CALL, "tb_cli"] + [str(c) for c in cmd],
                                    capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                raise CompareError("%s: xkv-loadgen did not finish within %d s" %
                                   (s.name, timeout))
            try:
                return json.loads(p_.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                why = "xkv-loadgen exited with %d and printed no JSON: %s" % (
                    p_.returncode, p_.stderr.strip()[-400:])
                if attempt == 1 and p_.returncode >= 0 and not session.STOPPING:
                    self.notes.append("%s: %s; ran it again" % (s.name, why))
                    log("%s: %s; once more" % (s.name, why))
                    continue
                raise CompareError("%s: %s" % (s.name, why))

    def measure(self, s, p, bpf=False):
        """measure_once() --repeat times; the run with the median throughput
        is the result, every run's throughput is kept (throughput_runs)."""
        n = self.s.get("repeat", 1)
        runs = [self.measure_once(s, p, bpf) for _ in range(n)]
        if n == 1:
            return runs[0]
        runs.sort(key=lambda r: r.get("throughput_ops") or 0)
        med = dict(runs[n // 2])
        med["throughput_runs"] = [r.get("throughput_ops") for r in runs]
        med["repeat"] = n
        return med

    def measure_once(self, s, p, bpf=False):
        """One loadgen point with the server CPU's busy share over the
        measured window, status deltas (xdpkv) and, with bpf, XDP time."""
        before = s.status() if s.kind == "xdpkv" else None
        dur = p.get("duration", self.s["duration"])
        warm = p.get("warmup", self.s["warmup"])
        lg_args = dict(p)
        res = {}
        stats_ctx = self.bpf_stats if bpf and s.prog_id else None
        if stats_ctx:
            stats_ctx.__enter__()
        try:
            import threading
            box = {}

            def go():
                try:
                    box["r"] = self.loadgen(s, lg_args)
                except Exception as e:  # noqa: BLE001 - reported below
                    box["e"] = e
            th = threading.Thread(target=go, daemon=True)
            th.start()
            # the window: inside the measured part of the run
            time.sleep(warm + 0.1 * dur + 0.15)
            pids = s.cpu_pids()
            q0 = servers.proc_ticks(pids)
            b0, t0 = servers.cpu_busy_ticks(self.server_cpu)
            c0, ct0 = servers.cpu_busy_ticks(self.client_cpu)
            w0 = time.time()
            p0 = servers.prog_stats(s.prog_id, self.client_cpu) if stats_ctx else None
            time.sleep(0.8 * dur)
            p1 = servers.prog_stats(s.prog_id, self.client_cpu) if stats_ctx else None
            b1, t1 = servers.cpu_busy_ticks(self.server_cpu)
            c1, ct1 = servers.cpu_busy_ticks(self.client_cpu)
            q1 = servers.proc_ticks(pids)
            w1 = time.time()
            th.join(timeout=60 + dur + warm)
            if "e" in box:
                raise box["e"]
            if "r" not in box:
                raise CompareError("%s: xkv-loadgen did not finish" % s.name)
        finally:
            if stats_ctx:
                stats_ctx.restore()
        r = box["r"]
        res.update(loadgen_fields(r))
        busy = (b1 - b0) / (t1 - t0) if t1 > t0 else None
        res["server_busy"] = round(busy, 4) if busy is not None else None
        # is the client core the bottleneck, and is it ours?  (a shared machine)
        res["client_core_busy"] = round((c1 - c0) / (ct1 - ct0), 4) if ct1 > ct0 else None
        if r.get("client_cpu_s") is not None and r.get("duration_s"):
            res["loadgen_cpu_share"] = round(r["client_cpu_s"] / r["duration_s"], 4)
        res["loadavg_1m"] = round(os.getloadavg()[0], 2)
        res["window_s"] = round(w1 - w0, 3)
        if busy is not None and res["throughput_ops"]:
            res["server_cpu_us_per_req"] = round(busy * 1e6 / res["throughput_ops"], 3)
        # the server's own threads only: other work on the server CPU (a shared
        # machine) is not in it
        hz = os.sysconf("SC_CLK_TCK")
        own = (q1 - q0) / hz / (w1 - w0) if w1 > w0 else None
        res["server_threads_busy"] = round(own, 4) if own is not None else None
        res["server_threads"] = len(pids)
        if own is not None and res["throughput_ops"]:
            res["server_threads_us_per_req"] = round(own * 1e6 / res["throughput_ops"], 3)
        if p0 and p1:
            dn, dc = p1[0] - p0[0], p1[1] - p0[1]
            res["xdp_runs"] = dc
            res["xdp_ns_per_run"] = round(dn / dc, 1) if dc else None
            ops_window = res["throughput_ops"] * (w1 - w0)
            res["xdp_runs_per_req"] = round(dc / ops_window, 3) if ops_window else None
            own_s = (q1 - q0) / os.sysconf("SC_CLK_TCK")
            res["xdp_share_of_server_threads"] = round(dn / 1e9 / own_s, 3) if own_s else None
        if before is not None:
            after = s.status()
            res.update(path_share(before, after))
        return res

    def record(self, exp, s, params, res, tool="loadgen", label=SOCKET_LABEL):
        row = {"experiment": exp, "system": s if isinstance(s, str) else s.name,
               "tool": tool, "label": label}
        row.update(params)
        row.update(res)
        self.rows.append(row)
        return row

    def xdpgen(self, s, dist, write=0, cpus=None, server_cpus=None, keys=None, napi=()):
        """One xdpgen run against s, its replies checked; --repeat runs, the
        one with the median reply rate is the result (throughput_runs: all).
        cpus: generator CPUs (default the client CPU); server_cpus: the CPUs
        whose busy time is read (default the server CPU); napi: threads whose
        CPU time over the run goes into the result (napi_ticks: pid -> ticks)."""
        n = self.s.get("repeat", 1)
        runs = [self.xdpgen_once(s, dist, write, cpus, server_cpus, keys, napi)
                for _ in range(n)]
        runs.sort(key=lambda r: r[0].get("throughput_ops") or 0)
        res, j = runs[n // 2]
        if n > 1:
            res = dict(res, throughput_runs=[r[0].get("throughput_ops") for r in runs],
                       repeat=n)
        return res, j

    def xdpgen_once(self, s, dist, write, cpus, server_cpus, keys, napi):
        xg = self.tools["xdpgen"]
        theta = None
        d = "uniform"
        if dist.startswith("zipf:"):
            d, theta = "zipf", dist[5:]
        cmd = [xg, env("TB_CLI_DEV"), "--dst-ip", s.host(), "--port", servers.MC_PORT,
               "--keys", keys or self.s["keys"], "--key-size", s.cfg["key_size"],
               "--value-size", s.cfg["value_size"], "--dist", d,
               "--write-ratio", write / 100.0, "--duration", self.s["duration"],
               "--cpus", cpu_list(cpus or [self.client_cpu]),
               "--server-cpu", cpu_list(server_cpus or [self.server_cpu]), "--json"]
        if theta:
            cmd += ["--theta", theta]
        before = s.status()
        t0 = {pid: servers.proc_ticks([pid]) for pid in napi}
        out = tb("tb_cli", *cmd, timeout=60 + 3 * self.s["duration"])
        t1 = {pid: servers.proc_ticks([pid]) for pid in napi}
        j = json.loads(out.strip().splitlines()[-1])
        j["napi_ticks"] = {pid: t1[pid] - t0[pid] for pid in napi}
        after = s.status()
        # the replies are checked before the rate is believed
        rep = j.get("replies") or 0
        bad = [w for ok, w in (
            (rep > 0, "no replies"),
            (not j.get("errors") and not j.get("other"), "%s error replies, %s of no known kind"
             % (j.get("errors"), j.get("other"))),
            ((j.get("echoes") == rep) if s.kind == "reflector" else not j.get("echoes"),
             "%s echoes of %d replies" % (j.get("echoes"), rep)),
            (s.name != "xdpkv/null" or not j.get("misses"), "%s misses from the null store"
             % j.get("misses"))) if not ok]
        if bad:
            raise CompareError("%s, xdpgen: %s" % (s.name, "; ".join(bad)))
        res = {"throughput_ops": j.get("reply_pps"), "sent_pps": j.get("sent_pps"),
               "reply_ratio": j.get("reply_ratio"), "hits": j.get("hits"),
               "misses": j.get("misses"), "stored": j.get("stored"), "errors": j.get("errors"),
               "echoes": j.get("echoes"),
               "server_busy": (j["server_busy_pct"] / 100.0
                               if j.get("server_busy_pct", -1) >= 0 else None),
               "server_cpu_us_per_req": (j["server_ns_per_reply"] / 1000.0
                                         if j.get("server_ns_per_reply", -1) > 0 else None),
               "loadavg_1m": round(os.getloadavg()[0], 2)}
        if before is not None:
            res.update(path_share(before, after))
        return res, j

    def scaling_step(self, s, p):
        """(j) N server cores: the server veth's queue i NAPI thread on server
        CPU i, the client's on generator CPU i, N generator threads on
        generator CPUs 0..N-1 (so queues 0..N-1 get the frames).  The server
        CPUs that did the work are found from the NAPI threads' own CPU time,
        and the CPU per reply is theirs."""
        gen, server, _ = self.scaling
        ncores = p["cores"]
        tb("pin_spread", cpu_list(server), cpu_list(gen))
        try:
            napi = servers.napi_pids(env("TB_SRV_DEV"))
            # the CPUs each queue's thread runs on in this step: read now,
            # the finally below pins them all back to the one server CPU
            aff = {pid: servers.affinity(pid) for pid in napi}
            res, j = self.xdpgen(s, p["dist"], p["write"], cpus=gen[:ncores],
                                 server_cpus=server, keys=p.get("keys"), napi=napi)
        finally:
            tb("pin_client_napi")
            tb("tb_pin_napi")
        hz = os.sysconf("SC_CLK_TCK")
        el = j.get("duration_s") or self.s["duration"]
        ticks = j["napi_ticks"]
        # a queue that had work: its thread ran >= 2 % of the run (an idle
        # queue's thread gets no tick; on a busy machine a working one may
        # get well under half the run)
        busy_q = [pid for pid in napi if ticks[pid] >= max(1, 0.02 * hz * el)]
        used = sorted({c for pid in busy_q for c in aff.get(pid, [])})
        per_cpu = dict(zip(j.get("server_cpus") or [], j.get("server_busy_pct_per_cpu") or []))
        busy_s = sum(per_cpu.get(c, 0) for c in used) / 100.0 * el
        # the NAPI threads' own CPU time: on a shared machine the cores' busy
        # time also holds other people's work
        own_s = sum(ticks.values()) / hz
        res.update({"server_threads_busy": round(own_s / el / len(used), 4) if used else None,
                    "server_threads_us_per_req": (round(own_s * 1e6 / j["replies"], 4)
                                                  if j.get("replies") else None)})
        res.update({"queues_busy": len(busy_q), "server_cpus_used": used,
                    "gen_cpus": gen[:ncores],
                    "server_busy_pct_per_cpu": j.get("server_busy_pct_per_cpu"),
                    "server_busy": round(busy_s / el / len(used), 4) if used else None,
                    "server_cpu_us_per_req": (round(busy_s * 1e6 / (j["replies"]), 4)
                                              if used and j.get("replies") else None)})
        if len(busy_q) != ncores:
            self.notes.append("j: %s, %s, %d cores: %d server queues had work, not %d" %
                              (s.name, p["mix"], ncores, len(busy_q), ncores))
        return res

    def microbench_step(self, name):
        """(l) bench/microbench for one layout (or the null store): GET hit
        and SET at every thread count, disjoint and shared keys, --repeat
        repetitions.  The microbenchmark validates every reply before it
        times (and exits 1 on a wrong one); a point with an error, or one
        missing, fails the step.  One row per (op, keys, threads): the
        repetition with the median ns/op, every repetition's in ns_per_op_runs."""
        self.stop_system()  # no testbed traffic while it runs
        layout = name.split("/", 1)[1]
        mb, n = self.mb, self.s.get("repeat", 1)
        cmd = [self.tools["microbench"], "--xkv_entries=%d" % mb["entries"],
               "--xkv_keys=%d" % mb["keys"], "--xkv_max_threads=%d" % self.mb_threads[-1],
               "--benchmark_filter=" + microbench_filter(layout, self.mb_threads),
               "--benchmark_min_time=%g" % mb["min_time"],
               "--benchmark_repetitions=%d" % n, "--benchmark_format=json"]
        est = self.microbench_est()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300 + 5 * est)
        except subprocess.TimeoutExpired:
            raise CompareError("microbench did not finish within %d s" % (300 + 5 * est))
        with open(os.path.join(self.logdir, "microbench-%s.json" % layout), "w") as f:
            f.write(p.stdout)
        with open(os.path.join(self.logdir, "microbench-%s.log" % layout), "w") as f:
            f.write(" ".join(cmd) + "\n" + p.stderr)
        m = re.search(r"# (\d+) benchmarks, (\d+) replies validated", p.stderr)
        try:
            j = json.loads(p.stdout)
        except ValueError:
            raise CompareError("microbench exited with %d and printed no JSON: %s" %
                               (p.returncode, p.stderr.strip()[-600:]))
        runs, errs = {}, []
        for b in j.get("benchmarks", []):
            if b.get("run_type", "iteration") != "iteration":
                continue
            mm = re.match(r"^(get_hit|set)(_shared)?/%s/" % re.escape(layout),
                          b.get("run_name") or b["name"])
            if not mm:
                continue
            if b.get("error_occurred"):
                errs.append("%s: %s" % (b["name"], b.get("error_message")))
                continue
            threads = int(b.get("threads", 1))
            key = (mm.group(1), "shared" if mm.group(2) else "disjoint", threads)
            runs.setdefault(key, []).append(b)
        for (op, keys, threads), bs in sorted(runs.items()):
            bs.sort(key=lambda b: b.get("ns_per_op") or 0)
            med = bs[(len(bs) - 1) // 2]  # of two: the faster (throughput: the higher)
            res = {"ns_per_op": round(med["ns_per_op"], 2),
                   "p50_ns": round(med.get("p50_ns", 0), 2),
                   "null_ns": round(med.get("null_ns", 0), 2),
                   "x_null": round(med.get("x_null", 0), 4),
                   "busy_share": round(med.get("busy_share", 0), 5),
                   "live_items": int(med.get("live_items", 0)),
                   "iterations": med.get("iterations"),
                   "validated_replies": int(m.group(2)) if m else None,
                   "loadavg_1m": round(os.getloadavg()[0], 2)}
            if n > 1:
                res.update(ns_per_op_runs=[round(b["ns_per_op"], 2) for b in bs], repeat=n)
            self.record("l", name, {"op": op, "keys": keys, "threads": threads}, res,
                        tool="microbench", label=MB_LABEL)
        want = [(op, k, t) for op in MB_OPS for t in self.mb_threads
                for k in (("disjoint",) if t == 1 else ("disjoint", "shared"))]
        missing = ["%s%s/%d" % (op, "_shared" if k == "shared" else "", t)
                   for op, k, t in want if len(runs.get((op, k, t), [])) != n]
        bad = errs + (["no result (or not %d repetitions) for %s" % (n, ", ".join(missing))]
                      if missing else [])
        if p.returncode != 0 and not bad:
            bad.append("exited with %d: %s" % (p.returncode, p.stderr.strip()[-600:]))
        if not m:
            bad.append("no count of validated replies on its stderr")
        if bad:
            raise CompareError("microbench %s: %s" % (layout, "; ".join(bad)))

    def microbench_est(self):
        """Seconds one layout's (l) step takes: per point and repetition
        about 6x the manual min time in wall time (docs/results.md: 217 of
        them at 0.1 s in 126 s; each timed run is a syscall, the null store's
        runs are interleaved) plus validation; per step ~14 s to load the
        layout's and the null store's programs (5-11 s each, measured on the
        loaded 2-CPU machine) and the preload."""
        pts = len(MB_OPS) * (2 * len(self.mb_threads) - 1)
        return (pts * (0.1 + 6 * self.mb["min_time"]) * self.s.get("repeat", 1) +
                14 + self.mb["entries"] / 200000)

    def tcpscale_step(self, name, threads):
        """(n) one server at N threads through bench/tcpscale.sh, with this
        testbed's servers stopped (its CPUs are the script's).  A run that
        failed its checks is recorded, then fails the step."""
        self.stop_system()
        res = tcpscale.run_point(name, threads, self.s, self.tcp, self.tools["xdpkv"],
                                 self.logdir, log)
        res.update(loadavg_1m=round(os.getloadavg()[0], 2))
        self.record("n", name, {"threads": threads}, res, tool=res.get("client") or "?",
                    label=tcpscale.LABEL)
        if not res["ok"]:
            raise CompareError("bench/tcpscale.sh %s, %d threads: a run failed its checks (ok "
                               "false; the row is in results.json)" % (name, threads))

    def hitratio_step(self, name):
        """(m) one layout: xkv-kvexp hitratio, its run checked, then the
        simulators on the same request sequences; one row per budget x
        distribution."""
        self.stop_system()  # in-process, no testbed traffic
        layout = name.split("/", 1)[1]
        h = self.s["hitratio"]
        if self.hr_sim is None:
            self.hr_sim = hitratio.simulator()
            if not self.hr_sim[1]:
                self.notes.append("m: libCacheSim is not installed (bench/kvexp/setup-cachesim.sh "
                                  "puts it in bench/.venv): the hit ratios are checked against "
                                  "the own Python models only, and the figure has no "
                                  "libCacheSim curves")
        doc = hitratio.run_layout(self.tools["kvexp"], layout, h, self.args.workload,
                                  self.server_cpu, self.logdir, log)
        bad = hitratio.check_doc(doc, layout, h)
        if bad:
            raise CompareError("hitratio %s: %s" % (layout, "; ".join(bad[:6])))
        sim = hitratio.simulate(os.path.join(self.logdir, "hitratio-%s.json" % layout),
                                os.path.join(self.logdir, "hitratio-%s-sim.json" % layout),
                                self.hr_sim[0], not self.hr_sim[1])
        self.hr_sims.append(sim)
        for sysname, params, res in hitratio.rows(sim, self.args.workload):
            self.record("m", sysname, params, res, tool="kvexp", label=hitratio.LABEL)

    # -- the plan --
    def systems(self):
        names = []
        bl = self.args.baselines
        if "memcached-udp" in bl:
            names.append("memcached-udp")
        names += ["xdpkv/" + l for l in self.args.layouts]
        names += [b for b in bl if b != "memcached-udp"]
        return names

    def plan(self):
        """Steps: (system, cfg, exp, params, est_seconds, function)."""
        exps = self.args.experiments
        s = self.s
        pt = (s["duration"] + s["warmup"] + 1.0) * s.get("repeat", 1)
        steps = []
        need_ref = "b" in exps
        if "a" in exps and s["xdpgen"] and not self.args.no_ceilings:
            for name in CEILINGS:
                for d in s["dists"]:
                    steps.append((name, self.cfg(), "a", {"dist": d}, pt, "xdpgen"))
        scaling = "j" in exps and s["xdpgen"] and self.scaling
        if scaling:
            # the reflector is the ceiling every layout is a ratio to
            ceilings = CEILINGS if not self.args.no_ceilings else ("reflector",)
            for name in ceilings:
                steps += self.scaling_steps(name)
        for name in self.systems():
            base = self.cfg()
            is_xdp = name.startswith("xdpkv/")
            add = lambda exp, params, est=pt, cfg=base, kind="lg": steps.append(  # noqa: E731
                (name, cfg, exp, params, est, kind))
            if "a" in exps:
                for d in s["dists"]:
                    add("a", {"dist": d})
                    if is_xdp and s["xdpgen"]:
                        add("a", {"dist": d}, kind="xdpgen")
            elif need_ref and name == self.systems()[0]:
                add("b-ref", {"dist": "uniform"})
            if "h" in exps:
                add("h", {"dist": "uniform"}, kind="cpu")
            if "f" in exps:
                add("f", {}, est=1.0, kind="mem")
            if "k" in exps and ((is_xdp and name != "xdpkv/null") or name == "redis"):
                add("k", {}, est=2.0 + self.s["keys"] / 200000, kind="persist")
            if "b" in exps:
                for fr in s["fractions"]:
                    add("b", {"fraction": fr})
            if "c" in exps:
                for w in s["writes"]:
                    add("c", {"write": w})
            if "e" in exps:
                for sr in s["scan_ratios"]:
                    add("e", {"scan": sr, "scan_len": s["scan_len"]})
            if scaling and is_xdp:  # on the base config, before (d) changes it
                steps += self.scaling_steps(name)
            if "d" in exps:
                for k in s["key_sizes"]:
                    add("d", {"key_size": k, "value_size": BASE_VALUE},
                        cfg=self.cfg(k, BASE_VALUE), est=pt + 3)
                for v in s["value_sizes"]:
                    if v == BASE_VALUE and BASE_KEY in s["key_sizes"]:
                        continue
                    add("d", {"key_size": BASE_KEY, "value_size": v},
                        cfg=self.cfg(BASE_KEY, v), est=pt + 3)
        if "l" in exps:
            # last: it needs no server (the testbed's stay stopped), the null
            # store first (the floor), then every layout
            for name in ["xdpkv/null"] + ["xdpkv/" + l for l in self.args.layouts]:
                steps.append((name, self.cfg(), "l", {}, self.microbench_est(), "microbench"))
        if "n" in exps and self.tcp:  # bench/tcpscale.sh, a testbed of its own
            for n in self.tcp[2]:
                for name in tcpscale.servers(self.args.baselines, self.args.baselines_given):
                    steps.append((name, self.cfg(), "n", {"threads": n}, tcpscale.estimate(s),
                                  "tcpscale"))
        if "m" in exps:  # in-process too: one step per layout
            for name in ["xdpkv/" + l for l in self.args.layouts]:
                steps.append((name, self.cfg(), "m", {}, hitratio.estimate(self.s["hitratio"]),
                              "hitratio"))
        return steps

    def scaling_steps(self, name):
        """(j) every core count x mix for one system, on the base config."""
        s = self.s
        pt = (s["duration"] + 1.5) * s.get("repeat", 1)
        out = []
        for n in self.scaling[2]:
            for mix, write, dist, keys in SCALING_MIXES:
                p = {"cores": n, "mix": mix, "write": write, "dist": dist}
                if keys:
                    p["keys"] = keys
                out.append((name, self.cfg(), "j", p, pt, "scaling"))
        return out

    def run_step(self, step):
        name, cfg, exp, params, est, kind = step
        if kind == "microbench":  # no server: BPF_PROG_TEST_RUN in-process
            self.microbench_step(name)
            return
        if kind == "hitratio":
            self.hitratio_step(name)
            return
        if kind == "tcpscale":
            self.tcpscale_step(name, params["threads"])
            return
        s = self.ensure(name, cfg)
        p = dict(params)
        if exp == "d":
            p["key_size"], p["value_size"] = cfg["key_size"], cfg["value_size"]
        if kind == "xdpgen":
            res, _ = self.xdpgen(s, p["dist"])
            self.record(exp, s, p, res, tool="xdpgen", label=XDPGEN_LABEL)
            return
        if kind == "scaling":
            res = self.scaling_step(s, p)
            self.record(exp, s, p, res, tool="xdpgen", label=SCALING_LABEL)
            return
        if kind == "mem":
            self.memory_row(s)
            return
        if kind == "persist":
            label = {"xdpkv": "xdpkv snapshot / restore --json (lz4, the CLI's own timing), "
                              "the preloaded store, no traffic",
                     "redis": "BGSAVE until done / DEBUG RELOAD NOSAVE, wall clock, no traffic"}
            self.record("k", s, {}, s.persistence(), tool="server", label=label[s.kind])
            return
        if kind == "cpu":
            res = self.measure(s, p, bpf=True)
            self.record("h", s, p, res)
            return
        if exp == "b":
            if self.ref_max is None:
                raise CompareError("no reference max throughput for the latency sweep")
            p["rate"] = round(p["fraction"] * self.ref_max)
            p["offered"] = p["rate"]
        res = self.measure(s, p)
        row = self.record(exp if exp != "b-ref" else "a", s, p, res)
        if (exp in ("a", "b-ref") and p.get("dist") == "uniform" and self.ref_max is None
                and res.get("throughput_ops")):
            self.ref_max = res["throughput_ops"]
            self.ref_name = s.name
            if s.name != "memcached-udp":
                self.notes.append("b: memcached-udp was not measured; the offered loads are "
                                  "fractions of %s's max (%.0f ops/s)" % (s.name, self.ref_max))
            row["is_reference"] = True

    def memory_row(self, s):
        m = s.memory()
        n = m.get("live_items") or 0
        res = dict(m)
        res["items_loaded"] = self.s["keys"]
        res["key_size"], res["value_size"] = s.cfg["key_size"], s.cfg["value_size"]
        rss0 = s.preload.get("rss_before") if s.preload else None
        if s.kind == "memcached" and n:
            res["bytes_per_item"] = round(m["mc_bytes"] / n, 1)
        elif s.kind == "redis" and n:
            res["bytes_per_item"] = round(m["used_memory"] / n, 1)
        if m.get("rss") and rss0 and n:
            res["rss_growth_per_item"] = round((m["rss"] - rss0) / n, 1)
            res["rss_before"] = rss0
        label = {"xdpkv": "BPF map memory as the kernel accounts it (memlock), after preload",
                 "memcached": "memcached 'stats bytes' and process RSS, after preload",
                 "redis": "Redis INFO used_memory and process RSS, after preload"}[s.kind]
        self.record("f", s, {}, res, tool="server", label=label)

    def kvexp(self):
        kx = self.tools["kvexp"]
        if not kx:
            self.notes.append("f/g: xkv-kvexp was not built: its in-process memory, lost and "
                              "stale experiments are missing from this report")
            return
        for sub, exp in self.kvexp_subs():
            self.progress("(%s) kvexp %s" % (exp, sub))
            self.steps_done += 1
            cmd = [kx, sub, "--json"] + kvexp_args(sub, self.s)
            try:
                out = run(cmd, timeout=1800)
                j = json.loads(out)
            except (CompareError, ValueError) as e:
                self.errors.append("kvexp %s: %s" % (sub, e))
                log("kvexp %s failed: %s" % (sub, e))
                continue
            for r in kvexp_rows(j):
                sysname = r.pop("layout", r.pop("system", "?"))
                if not str(sysname).startswith("xdpkv/") and sysname in self.args.known_layouts:
                    sysname = "xdpkv/" + sysname
                self.record(exp, sysname, {"kvexp": sub}, r, tool="kvexp",
                            label="in-process (BPF_PROG_TEST_RUN / map accessors), kvexp " + sub)
            self.done_est += KVEXP_EST[sub] * self.s["kvexp_scale"]

    def kvexp_subs(self):
        return [(sub, exp) for sub, exp in (("memory", "f"), ("lost", "g"), ("stale", "g"))
                if exp in self.args.experiments]

    def go(self):
        steps = self.plan()
        missing = []
        if not self.tools["loadgen"]:
            missing.append("xkv-loadgen")
        if not self.tools["xdpgen"] or not self.s["xdpgen"]:
            steps = [st for st in steps if st[5] not in ("xdpgen", "scaling")]
            if not self.tools["xdpgen"] and ("a" in self.args.experiments or
                                             "j" in self.args.experiments):
                self.notes.append("a/j: the in-kernel generator (xdpgen) was not built: server "
                                  "capacity is not measured")
        if not self.tools["microbench"]:
            steps = [st for st in steps if st[5] != "microbench"]
            if "l" in self.args.experiments:
                self.notes.append("l: bench/microbench was not built (it needs Google Benchmark, "
                                  "libbenchmark-dev): not measured")
        if not self.tools["kvexp"]:
            steps = [st for st in steps if st[5] != "hitratio"]
            if "m" in self.args.experiments:
                self.notes.append("m: xkv-kvexp was not built: the hit ratio is not measured")
        if self.args.workload != "fixed":
            drop = [st for st in steps if st[5] in ("xdpgen", "scaling") or st[2] == "d"]
            steps = [st for st in steps if st not in drop]
            if drop:
                self.notes.append("workload %s: the in-kernel generator's (a, j) and the "
                                  "size sweep's (d) points are not measured (they set fixed "
                                  "sizes); (f, g) kvexp use their own fixed sizes" %
                                  self.args.workload)
        if "n" in self.args.experiments and not self.tcp:
            self.notes.append("n: needs 2 or more CPUs and --gen-cores below them (%d CPUs): "
                              "not measured" % (os.cpu_count() or 1))
        if "j" in self.args.experiments and not self.scaling:
            self.notes.append("j: needs 2 or more CPUs and --gen-cores below them (%d CPUs): "
                              "not measured" % (os.cpu_count() or 1))
        if missing:
            raise CompareError("%s not found (build it: ninja -C build)" % ", ".join(missing))
        kv = self.kvexp_subs() if self.tools["kvexp"] else []
        self.steps_total = len(steps) + len(kv)
        # a server start: ~2 s, then the preload (measured: 100k keys in 0.4-2.2 s)
        starts = len(set((st[0], str(st[1])) for st in steps
                         if st[5] not in ("microbench", "hitratio", "tcpscale")))
        self.total_est = sum(st[4] for st in steps) + starts * (2 + self.s["keys"] / 80000)
        self.total_est += sum(KVEXP_EST[sub] * self.s["kvexp_scale"] for sub, _ in kv)
        log("plan: %d measurements, estimated %s" % (self.steps_total, fmt_s(self.total_est)))
        for st in steps:
            name, cfg, exp, params, est, kind = st
            what = "(%s) %s %s %s" % (exp, name, kind if kind != "lg" else "",
                                      " ".join("%s=%s" % kv for kv in params.items()))
            self.progress(what)
            try:
                self.run_step(st)
            except CompareError as e:
                self.errors.append("%s: %s" % (what.strip(), e))
                log("FAILED %s: %s" % (what, e))
                # a failed start leaves the system half up: start it anew next time
                try:
                    self.stop_system()
                except CompareError:
                    pass
            self.done_est += est
            self.steps_done += 1
        self.stop_system()
        self.kvexp()


def kvexp_args(sub, s):
    """Arguments of xkv-kvexp SUB for a setting (bench/kvexp: --help)."""
    kx = s["kvexp"]
    if sub == "memory":
        return ["--items", str(s["kvexp_items"]), "--key-sizes", kx["key_sizes"],
                "--value-sizes", kx["value_sizes"], "--fills", kx["fills"]]
    if sub == "lost":
        return ["--capacity", str(kx["capacity"]), "--ratios", kx["ratios"],
                "--key-size", str(BASE_KEY), "--value-size", str(BASE_VALUE)]
    return ["--keys", str(kx["stale_keys"]), "--rounds", str(kx["rounds"]),
            "--key-size", str(BASE_KEY), "--value-size", str(BASE_VALUE)]


def kvexp_rows(j):
    """kvexp's JSON: a list of rows, or {"rows"|"layouts"|"results": [...]}, or one object."""
    if isinstance(j, list):
        return [dict(r) for r in j if isinstance(r, dict)]
    for k in ("results", "rows", "layouts"):
        if isinstance(j.get(k), list):
            common = {}
            out = []
            for r in j[k]:
                d = dict(common)
                d.update(r)
                out.append(d)
            return out
    return [dict(j)]


def loadgen_fields(r):
    lat = r.get("latency_us") or {}
    out = {"throughput_ops": r.get("throughput_ops"), "ops": r.get("ops"),
           "duration_s": r.get("duration_s"), "offered_rate": r.get("offered_rate")}
    for k in ("p50", "p90", "p99", "p999", "max", "mean"):
        out["lat_" + k + "_us"] = lat.get(k)
    for k in ("gets", "sets", "scans", "hits", "misses", "wrong_values", "timeouts", "errors",
              "client_cpu_s"):
        if k in r:
            out[k] = r[k]
    if "wrong" in r and "wrong_values" not in r:
        out["wrong_values"] = r["wrong"]
    return out


def path_share(before, after):
    f = after["requests"]["fast"] - before["requests"]["fast"]
    sl = after["requests"]["slow"] - before["requests"]["slow"]
    out = {"fast_served": f, "slow_served": sl,
           "fast_share": round(f / (f + sl), 4) if f + sl else None}
    # TCP: requests the sk_skb verdict answered in the kernel and serve's
    tk = after.get("tcp", {}).get("kernel", 0) - before.get("tcp", {}).get("kernel", 0)
    tu = after.get("tcp", {}).get("userspace", 0) - before.get("tcp", {}).get("userspace", 0)
    if tk or tu:
        out.update({"tcp_kernel": tk, "tcp_userspace": tu, "tcp_kernel_share": round(tk / (tk + tu), 4)})
    cf, cb = after["counters"]["fast"], before["counters"]["fast"]
    for k in ("pass_room", "pass_cmd", "pass_busy", "pass_malformed"):
        if k in cf:
            out[k] = cf[k] - cb.get(k, 0)
    return out


def fmt_s(s):
    s = int(max(0, s))
    return "%dm%02ds" % (s // 60, s % 60)
