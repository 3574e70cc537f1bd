#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The headline check must fail when the headline is wrong (ctest
compare_headline).  DIR is a saved compare output (results.json): a copy is
rendered again (xdpkv compare --render, no root), check_headline.py must
pass it, then fail each tampered copy: a cell removed, a value changed, a
label dropped, an estimate unmarked, a source row of another load, a system
missing, a number changed in report.md only.  The copies are removed, also
on failure.

  headline_selftest.py XDPKV DIR"""
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def check(d):
    p = subprocess.run([sys.executable, os.path.join(HERE, "check_headline.py"), d],
                       capture_output=True, text=True)
    return p.returncode, [x for x in p.stdout.splitlines() if x.startswith("FAIL")]


def first_valued(h, key):
    for r in h["rows"]:
        if r[key].get("value") is not None:
            return r
    raise SystemExit("FAIL the saved run has no %s value to tamper with" % key)


def main():
    xdpkv, src = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="xkv-headline.")
    bad = 0
    try:
        base = os.path.join(tmp, "base")
        os.makedirs(base)
        shutil.copy(os.path.join(src, "results.json"), base)
        p = subprocess.run([xdpkv, "compare", "--render", base], capture_output=True, text=True)
        if p.returncode:
            print(p.stderr)
            print("FAIL compare --render %s" % base)
            return 1
        rc, fails = check(base)
        print("%s the rendered headline passes%s" % ("PASS" if rc == 0 else "FAIL",
                                                    "" if rc == 0 else ": " + "; ".join(fails)))
        bad += rc != 0
        with open(os.path.join(base, "results.json")) as f:
            res = json.load(f)
        with open(os.path.join(base, "report.md")) as f:
            md = f.read()

        def cell_removed(r):
            del first_valued(r["headline"], "p50_us")["p50_us"]

        def value_changed(r):
            c = first_valued(r["headline"], "cpu_us")["cpu_us"]
            c["value"] *= 1.5

        def label_dropped(r):
            first_valued(r["headline"], "bytes_per_item")["bytes_per_item"]["label"] = ""

        def estimate_unmarked(r):
            first_valued(r["headline"], "capacity_cpu")["capacity_cpu"]["estimated"] = False

        def other_load(r):
            row = first_valued(r["headline"], "p99_us")
            i = row["p99_us"]["source"]["row"]
            r["rows"][i]["fraction"] = 0.9

        def cell_emptied(r):
            row = first_valued(r["headline"], "capacity")
            row["capacity"] = {"value": None, "why": "left out"}

        def system_missing(r):
            r["headline"]["rows"].pop()

        cases = [cell_removed, value_changed, label_dropped, estimate_unmarked, other_load,
                 cell_emptied, system_missing]
        for case in cases:
            d = os.path.join(tmp, case.__name__)
            os.makedirs(d)
            r = copy.deepcopy(res)
            case(r)
            with open(os.path.join(d, "results.json"), "w") as f:
                json.dump(r, f)
            with open(os.path.join(d, "report.md"), "w") as f:
                f.write(md)
            rc, fails = check(d)
            print("%s %s: the check fails (%s)" % ("PASS" if rc else "FAIL", case.__name__,
                                                   fails[0] if fails else "it passed"))
            bad += rc == 0
        # the report printing another number than results.json holds
        d = os.path.join(tmp, "report_differs")
        os.makedirs(d)
        shutil.copy(os.path.join(base, "results.json"), d)
        row = first_valued(res["headline"], "cpu_us")
        lines = md.split("\n")
        for k, line in enumerate(lines):
            if line.startswith("| %s |" % row["system"]):
                cells = line.split("|")
                j = 1 + 1 + [c["key"] for c in res["headline"]["columns"]].index("cpu_us")
                cells[j] = " 999.99 "
                lines[k] = "|".join(cells)
                break
        with open(os.path.join(d, "report.md"), "w") as f:
            f.write("\n".join(lines))
        rc, fails = check(d)
        print("%s report_differs: the check fails (%s)" % ("PASS" if rc else "FAIL",
                                                           fails[0] if fails else "it passed"))
        bad += rc == 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d check(s) failed" % bad if bad else "all checks passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
