# SPDX-License-Identifier: MIT
"""xdpkv compare's steps that run no socket client: (j) the in-kernel
generator at N server cores, (l) the microbenchmark, (n) bench/tcpscale.sh
and (m) the hit ratio.  A mixin of runner.Runner (its self.s, self.tools,
self.record, self.xdpgen, self.stop_system)."""

import json
import os
import re
import subprocess

import hitratio
import servers
import tcpscale
from experiments import MB_LABEL, MB_OPS, cpu_list, microbench_filter
from servers import CompareError, env, tb
from session import log


class KernelSteps:
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
                                 self.logdir)
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
                self.notes.append("m: libCacheSim is not installed (sudo %s puts it in %s): the "
                                  "hit ratios are checked against the own Python models only, "
                                  "and the figure has no libCacheSim curves" % (
                                      hitratio.SETUP,
                                      os.path.dirname(os.path.dirname(hitratio.VENV_PY))))
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

    def hitratio_head_step(self, systems):
        """The headline's hit ratio for every system at one budget and Zipf
        0.99 on a 4 MiB working set (hitratio_head.py): the layouts in one
        xkv-kvexp hitratio run on the server CPU, memcached and Redis replayed
        side by side on both CPUs at the same time (no timing is measured)."""
        import threading

        import hitratio_head as hh
        self.stop_system()  # in-process and loopback, no testbed traffic
        h = self.s["hitratio"]
        layouts = [s.split("/", 1)[1] for s in systems if s.startswith("xdpkv/")]
        base = [s for s in systems if s in hh.BASELINES]
        seeds = [int(x) for x in h["seeds"].split(",")]
        box = {}

        def kv():
            try:
                hp = dict(h, keys=hh.KEYS, budgets=hh.BUDGET, dists=str(hh.ALPHA))
                doc = hitratio.run_layout(self.tools["kvexp"], ",".join(layouts), hp,
                                          "fixed", self.server_cpu, self.logdir, log,
                                          name="headline")
                bad = [b for l in layouts for b in hitratio.check_doc(
                    {"subcommand": doc.get("subcommand"), "results": [
                        r for r in doc.get("results") or [] if r.get("layout") == l]}, l, hp)]
                box["kv"] = CompareError("; ".join(bad[:6])) if bad else doc
            except CompareError as e:
                box["kv"] = e
        th = threading.Thread(target=kv) if layouts and self.tools["kvexp"] else None
        if th:
            th.start()
        # the kvexp run is on the server CPU: the baselines go where it is not first
        kv_s = len(layouts) * (h["warmup"] + h["requests"]) / 3.0 if th else 0
        # with (f): the baselines' bytes per item too, three fresh servers each
        mem = self.s["keys"] if "f" in self.args.experiments else None
        res = hh.run_baselines(base, [self.client_cpu, self.server_cpu], seeds, h["warmup"],
                               h["requests"], log, busy={self.server_cpu: kv_s},
                               mem_keys=mem) if base else {}
        if th:
            th.join()
            res.update({"xdpkv/" + l: box["kv"] if isinstance(box["kv"], Exception) else
                        hh.layouts_result(box["kv"], l) for l in layouts})
        params = {"point": "headline", "budget": hh.BUDGET, "dist": "zipf%g" % hh.ALPHA,
                  "keys": hh.KEYS}
        bad = []
        for s in systems:
            r = res.get(s)
            if isinstance(r, Exception) or r is None:
                bad.append("%s: %s" % (s, r or "no result"))
                continue
            kind = "xdpkv" if s.startswith("xdpkv/") else s.split("-")[0]
            mem = r.pop("memory", None)
            self.record("m", s, params, r, tool="kvexp" if kind == "xdpkv" else "replay",
                        label=hh.LABEL[kind] % hh.KEYS)
            if mem:
                self.record("f", s, {"point": "headline"}, mem, tool="replay",
                            label=hh.MEM_LABEL[kind] % mem["items_loaded"])
            if r.get("wrong"):
                bad.append("%s: %d wrong values" % (s, r["wrong"]))
        mc = res.get("memcached-udp")
        if layouts and self.tools["kvexp"] and isinstance(mc, dict) and not bad:
            bad += self.hitratio_at_real(layouts, mc, h, params)
        if bad:
            raise CompareError("the headline's hit ratio: " + "; ".join(bad[:6]))

    def hitratio_at_real(self, layouts, mc, h, params):
        """The layouts again at the memory memcached-udp really used for its
        budget (its RSS growth over the replay, the seeds' median), so that
        every system of that column has the same bytes.  Returns problems."""
        import hitratio_head as hh
        g = sorted(x for x in mc.get("rss_growth_runs") or [] if x)
        if not g:
            return []
        real = g[len(g) // 2]
        frac = "%.4f" % (real / float(hh.KEYS * (hh.KEY_SIZE + hh.VALUE_SIZE)))
        hp = dict(h, keys=hh.KEYS, budgets=frac, dists=str(hh.ALPHA))
        try:
            doc = hitratio.run_layout(self.tools["kvexp"], ",".join(layouts), hp, "fixed",
                                      self.server_cpu, self.logdir, log, name="headline-real")
        except CompareError as e:
            return ["at memcached-udp's real memory: %s" % e]
        out = []
        for l in layouts:
            r = hh.layouts_result(doc, l)
            if r is None:
                out.append("xdpkv/%s at memcached-udp's real memory: no result" % l)
                continue
            self.record("m", "xdpkv/" + l, dict(params, point="headline-real", budget=frac,
                                                 real_bytes=real), r, tool="kvexp",
                        label="xkv-kvexp hitratio, %d keys, the map sized to the memory "
                              "memcached-udp really used for its 1 MiB budget (%.2f MiB, its RSS "
                              "growth over the replay), Zipf 0.99, cache-aside" % (
                                  hh.KEYS, real / 2**20))
        return out
