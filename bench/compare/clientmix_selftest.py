#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""(p)'s report and check, without root or a testbed (ctest compare_clientmix):
bench/compare/clientmix_sample.jsonl holds lines as bench/clients/clients.sh
prints them (two rows measured, one skipped for a missing client); they are
added as (p)'s rows to a copy of a saved compare run (DIR/results.json) the
way compare records them, the copy is rendered (xdpkv compare --render), and
check.py --experiments p must pass it, then fail each tampered copy: a row's
section gone from report.md, a row's lines gone from results.json, a number
changed in a table, the skipped row's reason dropped, the figure not shown.
The copies are removed, also on failure.

  clientmix_selftest.py XDPKV DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import clientmix  # noqa: E402

SAMPLE = os.path.join(HERE, "clientmix_sample.jsonl")


def check(d):
    p = subprocess.run([sys.executable, os.path.join(HERE, "check.py"), d, "--layouts", "",
                        "--baselines", "", "--experiments", "p"], capture_output=True, text=True)
    return p.returncode, [x for x in p.stdout.splitlines() if x.startswith("FAIL")]


def render(xdpkv, d):
    p = subprocess.run([xdpkv, "compare", "--render", d], capture_output=True, text=True)
    if p.returncode:
        print(p.stderr)
        raise SystemExit("FAIL compare --render %s" % d)


def with_p(res, lines):
    """res with (p)'s rows from clients.sh's lines (one sitting), as
    Runner.record() keeps them."""
    res = json.loads(json.dumps(res))
    res["rows"] = [r for r in res["rows"] if r["experiment"] != "p"]
    for j in lines:
        exp, system, params, line = clientmix.result_row(j, 1)
        res["rows"].append(dict({"experiment": exp, "system": system, "tool": "clients.sh",
                                 "label": clientmix.LABEL}, **params, **line))
    res["config"]["experiments"] = "".join(sorted(set(res["config"]["experiments"]) | {"p"}))
    res["config"]["client_rows"] = list(dict.fromkeys(j["row"] for j in lines))
    return res


def main():
    xdpkv, src = sys.argv[1], sys.argv[2]
    with open(SAMPLE) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    rows = list(dict.fromkeys(j["row"] for j in lines))
    measured = [r for r in rows if not any(j.get("skipped") for j in lines if j["row"] == r)]
    skipped = [j for j in lines if j.get("skipped")]
    if len(measured) < 2 or not skipped:
        raise SystemExit("FAIL %s: two measured rows and a skipped one expected" % SAMPLE)
    with tempfile.TemporaryDirectory(prefix="xkv-clientmix.") as tmp:
        return selftest(xdpkv, src, tmp, lines, measured, skipped)


def selftest(xdpkv, src, tmp, lines, measured, skipped):
    """The base copy must pass, each tampered copy fail: 0, else 1."""
    bad = 0
    with open(os.path.join(src, "results.json")) as f:
        res = with_p(json.load(f), lines)

    def copy(name, res_):
        d = os.path.join(tmp, name)
        os.makedirs(d)
        with open(os.path.join(d, "results.json"), "w") as f:
            json.dump(res_, f)
        render(xdpkv, d)
        return d
    base = copy("base", res)
    rc, fails = check(base)
    print("%s the rendered (p) passes%s" % ("PASS" if rc == 0 else "FAIL",
                                           "" if rc == 0 else ": " + "; ".join(fails)))
    if rc:  # the tampered copies would prove nothing
        return 1
    with open(os.path.join(base, "report.md")) as f:
        md = f.read()

    def tampered(what, md_=None, res_=None):
        """A rendered copy of res_, or base with md_ as its report.md."""
        nonlocal bad
        name = "t%d" % len(os.listdir(tmp))
        if res_ is not None:
            d = copy(name, res_)
        else:
            d = os.path.join(tmp, name)
            shutil.copytree(base, d)
            with open(os.path.join(d, "report.md"), "w") as f:
                f.write(md_)
        rc, fails = check(d)
        print("%s the check fails with %s%s" % ("PASS" if rc else "FAIL", what,
                                                 " (%s)" % fails[0] if fails else ""))
        bad += rc == 0
    for r in measured:  # the report omits a row: its heading and table gone
        sec = md.index("### %s\n" % r)
        end = md.index("\n###", sec + 1) if "\n###" in md[sec + 1:] else md.index("\nEach sitting", sec)
        tampered("row %s's section gone from report.md" % r, md[:sec] + md[end + 1:])
    tampered("row %s's lines gone from results.json" % measured[-1],
             res_=dict(res, rows=[x for x in res["rows"] if x.get("client_row") != measured[-1]]))
    x = next(j for j in lines if j["row"] == measured[0] and j["server"] == "xdpkv")
    cell = "| %d |" % x["req_per_s"]
    tampered("xdpkv's req/s of %s changed in its table" % measured[0],
             md.replace(cell, "| %d |" % (x["req_per_s"] + 1), 1))
    tampered("the skipped row's reason dropped",
             md.replace("Not run: %s" % skipped[0]["skipped"], "Not run."))
    tampered("%s not shown" % clientmix.PNG, md.replace("](%s)" % clientmix.PNG, "]()"))
    print("%d self-check(s) failed" % bad if bad else "all self-checks passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
