#!/usr/bin/env python3
"""The layer rule of docs/architecture.md, checked over every C source.

Each folder is a layer; a file may include headers of its own layer or of a
lower one, never of a higher one:

    common (BPF + userspace) < lib < store < variants < access < engine
           < server < cli < bench, tests

An include is resolved as the compiler does: the file's own folder first,
then the include path of the build (common, variants, lib, store, access,
engine, server).  Prints every include that points up, and every header
found twice on the path; exit 1 if there is any.
  tests/lint/layers.py [--json]
"""
import json
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RANK = {"common": 0, "lib": 1, "store": 2, "variants": 3, "access": 4,
        "engine": 5, "server": 6, "cli": 7, "bench": 8, "tests": 8}
SEARCH = ["common", "variants", "lib", "store", "access", "engine", "server"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer(path):
    return os.path.relpath(path, ROOT).split(os.sep)[0]


def sources():
    skip = {".git", "build", "build-fuzz", ".venv", ".node", "node_modules"}
    for top in RANK:
        for d, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [x for x in dirs if x not in skip and not x.startswith("build")]
            for f in files:
                if f.endswith((".c", ".h", ".cc")):
                    yield os.path.join(d, f)


def resolve(src, name):
    for d in [os.path.dirname(src)] + [os.path.join(ROOT, s) for s in SEARCH]:
        p = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(p):
            return p
    return None


def main():
    up, twice = [], []
    seen = {}
    for s in SEARCH:
        for f in os.listdir(os.path.join(ROOT, s)) if os.path.isdir(os.path.join(ROOT, s)) else []:
            if f.endswith(".h"):
                seen.setdefault(f, []).append(s)
    twice = [{"header": h, "in": d} for h, d in sorted(seen.items()) if len(d) > 1]
    for src in sorted(sources()):
        text = open(src, errors="replace").read()
        for name in INCLUDE.findall(text):
            hdr = resolve(src, name)
            if hdr is None:
                continue  # generated (skeletons) or a system header in quotes
            a, b = layer(src), layer(hdr)
            if RANK[b] > RANK[a]:
                up.append({"file": os.path.relpath(src, ROOT), "includes": os.path.relpath(hdr, ROOT),
                           "from": a, "to": b})
    if "--json" in sys.argv:
        print(json.dumps({"up": up, "twice": twice}, indent=1))
    else:
        for u in up:
            print(f"{u['file']}: includes {u['includes']} ({u['from']} is below {u['to']})")
        for t in twice:
            print(f"{t['header']}: in {', '.join(t['in'])} (one name, two headers)")
        print(f"layers: {len(up)} includes point up, {len(twice)} headers found twice")
    return 1 if up or twice else 0


if __name__ == "__main__":
    sys.exit(main())
