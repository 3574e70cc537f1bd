#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The kernel matrix's summary (tests/kernels/run.sh).

    summary.py OUTROOT KERNEL...
    summary.py --markdown OUTROOT KERNEL...   the table of docs/kernels.md

OUTROOT/KERNEL/ holds what tests/kernels/guest.sh wrote for one kernel
(verifier.jsonl, steps.tsv).  Prints, per verify pass (key size, value size,
binary keys), a table layout x program -> processed instructions per kernel,
"over: N" past the budget, "refused: REASON" where the kernel refused it,
"unavailable: REASON" for a layout whose map the kernel cannot create
(arena before 6.9, or where BPF arenas are not permitted: a skip, counted);
then each kernel's steps; then every failure, one line each.  Exit status 1
when anything failed (a refusal, a program over budget, a failed, missing or
timed-out step), else 0."""
import json
import os
import sys

def load(root, kernel):
    d = os.path.join(root, kernel)
    recs = []
    try:
        with open(os.path.join(d, "verifier.jsonl")) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        recs.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
    except FileNotFoundError:
        pass
    steps = []
    try:
        with open(os.path.join(d, "steps.tsv")) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 3:
                    steps.append(parts)
    except FileNotFoundError:
        pass
    return recs, steps


def cell(r):
    if r.get("available") is False:
        return "unavailable: " + (r.get("reason") or "?")
    if not r.get("loaded"):
        return "refused: " + (r.get("reason") or "?")
    if r.get("insns", 0) > r.get("budget", 250000):
        return "over: %d" % r["insns"]
    return str(r.get("insns", "?"))


def markdown(data, kernels):
    """Per program and kernel: the largest processed-instruction count over
    every layout and verify pass, with the layout and settings that gave it."""
    best = {}  # program -> kernel -> (insns, layout, settings)
    for k in kernels:
        for r in data[k][0]:
            if not r.get("loaded"):
                continue
            cur = best.setdefault(r["program"], {}).get(k)
            if not cur or r["insns"] > cur[0]:
                sets = "k%s v%s%s" % (r["key_size"], r["value_size"], "" if r["binary_keys"] else " strict")
                best[r["program"]][k] = (r["insns"], r["layout"], sets)
    print("| program | " + " | ".join(kernels) + " |")
    print("|---|" + "---:|" * len(kernels))
    for p in sorted(best):
        cells = []
        for k in kernels:
            b = best[p].get(k)
            cells.append("%s (%s, %s)" % (format(b[0], ","), b[1], b[2]) if b else "-")
        print("| `%s` | %s |" % (p, " | ".join(cells)))
    return 0


def main():
    md = len(sys.argv) > 1 and sys.argv[1] == "--markdown"
    args = sys.argv[2:] if md else sys.argv[1:]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root, kernels = args[0], args[1:]
    data = {k: load(root, k) for k in kernels}
    if md:
        return markdown(data, kernels)
    failures = []
    skips = set()
    passes = []  # (key_size, value_size, binary_keys) in first-seen order
    table = {}  # pass -> (layout, program) -> kernel -> record
    for k in kernels:
        for r in data[k][0]:
            p = (r.get("key_size"), r.get("value_size"), r.get("binary_keys"))
            if p not in table:
                passes.append(p)
                table[p] = {}
            table[p].setdefault((r.get("layout"), r.get("program")), {})[k] = r
    for p in passes:
        ks, vs, bk = p
        name = "-k %s -s %s%s" % (ks, vs, "" if bk else " --strict-keys")
        print("\n== verify %s: processed instructions" % name)
        rows = [["layout", "program"] + kernels]
        bad = {}  # (kernel, verdict) -> [layout/program]
        for lp in sorted(table[p]):
            row = list(lp)
            for k in kernels:
                r = table[p][lp].get(k)
                c = cell(r) if r else "-"
                if r and r.get("available") is False:
                    skips.add("%s: %s %s" % (k, lp[0], c))
                elif r and c != str(r.get("insns")):
                    bad.setdefault((k, c), []).append("%s/%s" % lp)
                row.append(c)
            rows.append(row)
        w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip())
        for (k, c), progs in bad.items():
            failures.append("%s: verify %s: %s: %s" % (k, name, c, " ".join(progs)))
    print("\n== steps (seconds)")
    for k in kernels:
        steps = data[k][1]
        if not steps:
            failures.append("%s: no step ran (the VM did not boot or was killed: see %s)" %
                            (k, os.path.join(root, k + ".console.log")))
        elif not os.path.exists(os.path.join(root, k, "done")):
            failures.append("%s: stopped after %s, before its last step (the VM's time limit, "
                            "--timeout?)" % (k, steps[-1][0]))
        print("%s: %s" % (k, ", ".join("%s %s (%s)" % (n, s, t) for n, s, t in steps) or "none"))
        for n, s, t in steps:
            # a verify pass that ran to its end is judged by its lines above
            if s == "ok" or (n.startswith("verify") and s in ("fail rc 1", "fail rc 3")):
                continue
            failures.append("%s: %s %s (log: %s)" % (k, n, s, os.path.join(root, k, n + ".log")))
    if skips:
        print("\n== skipped (%d): layouts these kernels cannot hold" % len(skips))
        for sk in sorted(skips):
            print("SKIP " + sk)
    if failures:
        print("\n== FAILED (%d)" % len(failures))
        for f in failures:
            print("FAIL " + f)
        return 1
    print("\n== all passed on %s" % ", ".join(kernels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
