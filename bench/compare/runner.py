# SPDX-License-Identifier: MIT
"""xdpkv compare's measuring runs: the Runner plans the steps of the chosen
experiments, starts each system (servers.py), drives the load generators,
xdpgen, kvexp and the microbenchmark, and records one row per measurement."""

import json
import os
import subprocess
import time

import bmc
import hitratio
import hitratio_head
import losses
import servers
import session
import tcpscale
from experiments import (BASE_KEY, BASE_VALUE, BASE_WRITE, CEILINGS, CLIENT_MODES,
                         HEADLINE_FRACTION, HEADLINE_RATIO, HEADLINE_REPEAT, KVEXP_EST, LOST_FILL,
                         LOW_FRACTION,
                         LOST_MB, LOW_CLIENT, SCALING_LABEL, SCALING_MIXES, SETUP_EST,
                         SOCKET_LABEL, WORKLOAD_MAX_KEY, WORKLOAD_MAX_VALUE, XDPGEN_LABEL,
                         cpu_list, microbench_sizes, microbench_threads, scaling_cores)
from bmc import BmcSteps
from clientmix import ClientSteps
from runner_steps import KernelSteps
from servers import CompareError, env, run, tb
from session import fmt_s, log


# ---- the measuring runs ------------------------------------------------------------

# a repeated socket-client point keeps each run's value of these (FIELD_runs)
RUN_FIELDS = ("lat_p50_us", "lat_p99_us", "server_cpu_us_per_req",
              "server_threads_us_per_req", "timeouts", "lost_at")

class Runner(KernelSteps, BmcSteps, ClientSteps):
    def __init__(self, args, settings, tl, outdir):
        self.args = args
        self.s = settings
        self.tools = tl
        self.outdir = outdir
        self.rows = []
        self.preloads = []
        self.notes = []
        self.errors = []
        self.settings_seen = {}  # baseline -> how it was started
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
        if s.settings:
            self.settings_seen.setdefault(name, s.settings)
        if name in CEILINGS:  # no store to fill
            s.preload = None
            return s
        pid = s.server_pid()
        if pid:
            rss0 = servers.rss_bytes(pid)
        t = time.time()
        pre = self.loadgen(s, dict(write=100, preload=True, duration=0.05, warmup=0,
                                   key_size=cfg["key_size"], value_size=cfg["value_size"],
                                   keys=cfg["keys"]))
        s.preload = {"seconds": round(time.time() - t, 3), "rss_before": rss0,
                     "result": pre.get("preload"), "errors": pre.get("errors")}
        perr = (pre.get("preload") or {}).get("errors")
        if perr:
            self.notes.append("%s (keys %d B, values %d B): the preload had %s errors" %
                              (name, cfg["key_size"], cfg["value_size"], perr))
        if s.kind == "xdpkv":
            st = s.status()
            s.preload["live"] = st.get("live")
        self.done_est += start_est(self.s)
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
               "--keys", p.get("keys", self.s["keys"]), "--dist", p.get("dist", "uniform"),
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
        if s.proto != "mc-udp":  # TCP as UDP: one request in flight per connection
            cmd += ["--conns", p.get("depth", self.s["depth"])]
        if p.get("scan"):
            cmd += ["--scan-ratio", p["scan"], "--scan-len", p.get("scan_len", self.s["scan_len"])]
        if p.get("preload"):
            cmd += ["--preload"]
        if p.get("verify_only"):
            cmd += ["--verify-only"]
        if s.kind == "reflector":  # the request comes back as it was sent
            cmd += ["--echo"]
        if p.get("client"):  # (b): the client mode that measures below the testbed's floor
            cmd += [CLIENT_MODES[p["client"]]]
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
        """measure_once() --repeat times (p["runs"] times where the plan
        says: the headline's points); the run with the median throughput
        is the result, every run's throughput (throughput_runs), latency, CPU
        per request and timeouts are kept (FIELD_runs, in the order of the
        throughputs)."""
        n = p.get("runs") or self.s.get("repeat", 1)
        runs = [self.measure_once(s, p, bpf) for _ in range(n)]
        if n == 1:
            return runs[0]
        runs.sort(key=lambda r: r.get("throughput_ops") or 0)
        med = dict(runs[n // 2])
        med["throughput_runs"] = [r.get("throughput_ops") for r in runs]
        for k in RUN_FIELDS:
            med[k + "_runs"] = [r.get(k) for r in runs]
        med["repeat"] = n
        return med

    def measure_once(self, s, p, bpf=False):
        """One loadgen point with the server CPU's busy share over the
        measured window, status deltas (xdpkv) and, with bpf, XDP time."""
        before = s.status() if s.kind == "xdpkv" else None
        bmc0 = s.stats() if s.kind == "bmc" else None
        # (b): every stage's drops, so that each unanswered request has a place
        drops0 = losses.snapshot(before) if "fraction" in p else None
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
            n0 = servers.proc_ns(pids)
            b0, t0 = servers.cpu_busy_ticks(self.server_cpu)
            c0, ct0 = servers.cpu_busy_ticks(self.client_cpu)
            w0 = time.time()
            p0 = servers.prog_stats(s.prog_id, self.client_cpu) if stats_ctx else None
            time.sleep(0.8 * dur)
            p1 = servers.prog_stats(s.prog_id, self.client_cpu) if stats_ctx else None
            b1, t1 = servers.cpu_busy_ticks(self.server_cpu)
            c1, ct1 = servers.cpu_busy_ticks(self.client_cpu)
            n1 = servers.proc_ns(pids)
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
        # the server's own threads' CPU time from schedstat (ns), not ticks: a
        # 10 ms tick is a tenth of a short point's window at a low rate
        own = (n1 - n0) / 1e9 / (w1 - w0) if w1 > w0 and n1 > n0 else None
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
            own_s = (n1 - n0) / 1e9
            res["xdp_share_of_server_threads"] = round(dn / 1e9 / own_s, 3) if own_s else None
        after = s.status() if before is not None else None
        if after is not None:
            res.update(path_share(before, after))
        if bmc0 is not None:
            res.update(bmc.share(bmc0, s.stats()))
        if drops0 is not None:
            res["lost_at"] = losses.delta(drops0, losses.snapshot(after), r.get("late_replies"))
        return res

    def record(self, exp, s, params, res, tool="loadgen", label=SOCKET_LABEL):
        row = {"experiment": exp, "system": s if isinstance(s, str) else s.name,
               "tool": tool, "label": label}
        row.update(params)
        row.update(res)
        self.rows.append(row)
        return row

    def xdpgen(self, s, dist, write=0, cpus=None, server_cpus=None, keys=None, napi=(),
               runs=None):
        """One xdpgen run against s, its replies checked; --repeat runs, the
        one with the median reply rate is the result (throughput_runs: all).
        cpus: generator CPUs (default the client CPU); server_cpus: the CPUs
        whose busy time is read (default the server CPU); napi: threads whose
        CPU time over the run goes into the result (napi_ticks: pid -> ticks);
        runs: that many runs instead of --repeat's."""
        n = runs or self.s.get("repeat", 1)
        runs = [self.xdpgen_once(s, dist, write, cpus, server_cpus, keys, napi)
                for _ in range(n)]
        runs.sort(key=lambda r: r[0].get("throughput_ops") or 0)
        res, j = runs[n // 2]
        if n > 1:
            res = dict(res, throughput_runs=[r[0].get("throughput_ops") for r in runs],
                       server_cpu_us_per_req_runs=[r[0].get("server_cpu_us_per_req")
                                                   for r in runs],
                       server_busy_runs=[r[0].get("server_busy") for r in runs], repeat=n)
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

    # -- the plan --
    def systems(self):
        names = []
        bl = self.args.baselines
        if "memcached-udp" in bl:
            names.append("memcached-udp")
        names += ["xdpkv/" + l for l in self.args.layouts]
        names += [b for b in bl if b not in ("memcached-udp", "bmc")]  # bmc: (o) only
        return names

    def plan(self):
        """Steps: (system, cfg, exp, params, est_seconds, function)."""
        exps = self.args.experiments
        s = self.s
        # seconds per run, measured (a quick run on the quiet 2-vCPU VM): a
        # socket-client point takes its warm-up and duration and ~0.22 s more (the
        # client's start in the netns, two status reads); an in-kernel generator
        # point ~0.13 s more
        pt = (s["duration"] + s["warmup"] + 0.22) * s.get("repeat", 1)
        xpt = (s["duration"] + 0.13) * s.get("repeat", 1)
        # the headline's points (headline.py) get spreads: HEADLINE_REPEAT runs at least
        hr = max(s.get("repeat", 1), s.get("headline_repeat", HEADLINE_REPEAT))
        hpt, hxpt = pt * hr / s.get("repeat", 1), xpt * hr / s.get("repeat", 1)
        fractions = sorted(set(s["fractions"]) | {HEADLINE_FRACTION})
        steps = []
        need_ref = "b" in exps
        if "a" in exps and s["xdpgen"] and not self.args.no_ceilings:
            for name in CEILINGS:
                for d in s["dists"]:
                    steps.append((name, self.cfg(), "a", {"dist": d}, xpt, "xdpgen"))
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
                    if d == "uniform":
                        add("a", {"dist": d, "runs": hr}, est=hpt)
                    else:
                        add("a", {"dist": d})
                    if is_xdp and s["xdpgen"]:
                        if d == "uniform":
                            add("a", {"dist": d, "runs": hr}, est=hxpt, kind="xdpgen")
                        else:
                            add("a", {"dist": d}, est=xpt, kind="xdpgen")
            elif need_ref and name == self.systems()[0]:
                add("b-ref", {"dist": "uniform"})
            if "h" in exps:
                add("h", {"dist": "uniform"}, kind="cpu")
            if "f" in exps:
                add("f", {}, est=0.1, kind="mem")  # a status read: ~0.1 s
            if "g" in exps and name in ("memcached-udp", "memcached-tcp", "redis"):
                add("g", {}, est=5 + 2 * LOST_FILL / 40000, kind="lost")
            if "k" in exps and ((is_xdp and name != "xdpkv/null") or name == "redis"):
                add("k", {}, est=2.0 + self.s["keys"] / 200000, kind="persist")
            if "b" in exps:
                for fr in fractions:
                    if fr == HEADLINE_FRACTION:
                        add("b", {"fraction": fr, "runs": hr}, est=hpt)
                    else:
                        add("b", {"fraction": fr})
                if name.startswith("xdpkv/") or name == "memcached-udp":
                    # the busy-polling client at the common load (UDP: the
                    # socket client's receive; TCP's client does not spin),
                    # as often as the headline's other points (its spread)
                    add("b", {"fraction": LOW_FRACTION, "client": LOW_CLIENT, "runs": hr},
                        est=hpt)
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
        if "b" in exps:
            # the testbed's own floor: the bare reflector sends each request
            # back, through the same veth, NAPI threads and client socket
            # (the common load's as often as the headline's points)
            # (and the busy-polling client's, at its own load)
            for fr, client in [(f, None) for f in fractions] + [(LOW_FRACTION, LOW_CLIENT)]:
                p = dict({"fraction": fr}, **({"client": client} if client else {}))
                if fr == HEADLINE_FRACTION or client:
                    p["runs"] = hr
                steps.append(("reflector", self.cfg(), "b", p, hpt if "runs" in p else pt,
                              "lg"))
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
        if "o" in exps:
            steps += self.bmc_steps()
        if "p" in exps:  # bench/clients/clients.sh, a testbed of its own
            steps += self.clientmix_steps()
        if "m" in exps:  # in-process too: one step per layout
            for name in ["xdpkv/" + l for l in self.args.layouts]:
                steps.append((name, self.cfg(), "m", {}, hitratio.estimate(self.s["hitratio"]),
                              "hitratio"))
            # the headline's: every system at one budget, a 4 MiB working set
            # (measured on the 2-vCPU VM: ~1 s a layout, the baselines beside them)
            head = ["xdpkv/" + l for l in self.args.layouts] + [
                b for b in self.args.baselines if b in hitratio_head.BASELINES]
            steps.append(("every system", self.cfg(), "m", {"point": "headline"},
                          hitratio_head.estimate(self.s["hitratio"], head, "f" in exps),
                          "hitratio-head"))
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
        if kind == "hitratio-head":
            self.hitratio_head_step(params["systems"] if "systems" in params else
                                    ["xdpkv/" + l for l in self.args.layouts] +
                                    [b for b in self.args.baselines
                                     if b in hitratio_head.BASELINES])
            return
        if kind == "tcpscale":
            self.tcpscale_step(name, params["threads"])
            return
        if kind == "clientmix":
            self.clientmix_step(params["client_row"])
            return
        s = self.ensure(name, cfg)
        p = dict(params)
        if exp == "d":
            p["key_size"], p["value_size"] = cfg["key_size"], cfg["value_size"]
        if kind == "xdpgen":
            res, _ = self.xdpgen(s, p["dist"], runs=p.get("runs"))
            self.record(exp, s, p, res, tool="xdpgen", label=XDPGEN_LABEL)
            return
        if kind == "scaling":
            res = self.scaling_step(s, p)
            self.record(exp, s, p, res, tool="xdpgen", label=SCALING_LABEL)
            return
        if kind == "mem":
            self.memory_row(s)
            return
        if kind == "lost":
            self.lost_row(name, cfg)
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

    def lost_row(self, name, cfg):
        """(g) for memcached and Redis, as xkv-kvexp lost does for the maps:
        under a memory limit of LOST_MB, fill the server to find what it holds
        (C items), then a fresh one with 2 C keys set once, and get every key
        once: the share not readable back."""
        mb = LOST_MB
        s = self.ensure(name, dict(cfg, keys=LOST_FILL, mem_mb=mb))
        cap = s.memory().get("live_items") or 0
        if not cap:
            raise CompareError("%s: no items held under %d MB" % (name, mb))
        keys = int(HEADLINE_RATIO * cap)
        s = self.ensure(name, dict(cfg, keys=keys, mem_mb=mb))
        r = self.loadgen(s, dict(keys=keys, verify_only=True, duration=0.05, warmup=0,
                                 key_size=cfg["key_size"], value_size=cfg["value_size"]))
        got = (r.get("hits") or 0) + (r.get("misses") or 0)
        if got != keys or r.get("wrong_values"):
            raise CompareError("%s: %d of %d keys read back, %s wrong" % (
                name, got, keys, r.get("wrong_values")))
        self.record("g", s, {"ratio": HEADLINE_RATIO}, {
            "capacity": cap, "keys": keys, "readable": r["hits"], "missing": r["misses"],
            "readable_share": round(r["hits"] / keys, 4), "mem_mb": mb},
            label="the server under a %d MB memory limit: filled to find what it holds, then "
                  "%gx that many keys set once and every key read back once (socket client)"
                  % (mb, HEADLINE_RATIO))
        self.stop_system()

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

    def estimate(self, steps, kv):
        """(measurements, seconds) of a plan: its points, a server start per
        system and size (~2 s, then the preload: 100k keys in 0.4-2.2 s), kvexp."""
        starts = len(set((st[0], str(st[1])) for st in steps
                         if st[5] not in ("microbench", "hitratio", "hitratio-head", "tcpscale",
                                           "clientmix")))
        est = sum(st[4] for st in steps) + starts * start_est(self.s)
        est += sum(KVEXP_EST[sub] * self.s["kvexp_scale"] for sub, _ in kv)
        return len(steps) + len(kv), est

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
                                  "libbenchmark-dev), or this package was built without it: "
                                  "not measured")
        if not self.tools["kvexp"]:
            steps = [st for st in steps if st[5] not in ("hitratio", "hitratio-head")]
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
        self.steps_total, self.total_est = self.estimate(steps, kv)
        log("plan: %d measurements, estimated %s, %s with the testbed and the report" % (
            self.steps_total, fmt_s(self.total_est), fmt_s(self.total_est + SETUP_EST)))
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
              "late_replies", "client_cpu_s"):
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
    # (and what the XDP TCP responder answered: tcp_xdp, in the kernel's share)
    tk, tu, tx = (after.get("tcp", {}).get(k, 0) - before.get("tcp", {}).get(k, 0)
                  for k in ("kernel", "userspace", "xdp"))
    if tk or tu or tx:
        out.update({"tcp_kernel": tk, "tcp_userspace": tu, "tcp_xdp": tx,
                    "tcp_kernel_share": round((tk + tx) / (tk + tu + tx), 4)})
    cf, cb = after["counters"]["fast"], before["counters"]["fast"]
    for k in ("pass_room", "pass_cmd", "pass_busy", "pass_malformed"):
        if k in cf:
            out[k] = cf[k] - cb.get(k, 0)
    return out


def start_est(s):
    """Seconds a server start takes with its preload (measured on the quiet
    2-vCPU VM: ~3.3 s with 50k keys, the attach, pinning and waits ~2.5 s)."""
    return 2.5 + s["keys"] / 60000

