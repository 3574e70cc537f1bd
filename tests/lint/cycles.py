#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""No circles between modules (issue 18): fails on a cycle between

  - the C modules of the userspace library and the CLI: a module is a .c
    file; A -> B when A's object file uses a symbol B's object defines (nm
    on BUILD/CMakeFiles/xdpkv_core.dir/**.o and
    BUILD/cli/CMakeFiles/xdpkv.dir/**.o);
  - the Python modules under bench/ and tests/: A -> B when A imports B
    (anywhere in the file, a function's lazy import included), B found
    beside A, else the one module of that name under bench/ or tests/.

Every cycle found is printed with its edges (the symbols or the import
lines that make them), grouped by strongly connected component.

  tests/lint/cycles.py BUILD_DIR [--json] [--root REPO]

Exit 0: no cycle; 1: a cycle; 2: the build directory has no objects.
"""
import argparse
import ast
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# object folders -> the source folder their paths are relative to
OBJ_DIRS = (("CMakeFiles/xdpkv_core.dir", ""), ("cli/CMakeFiles/xdpkv.dir", "cli"))
PY_DIRS = ("bench", "tests")
MAX_CYCLES = 200  # simple cycles listed per component, at most


# ---- graphs ---------------------------------------------------------------------

def sccs(nodes, edges):
    """Tarjan's strongly connected components with more than one node (or a
    node with an edge to itself), each sorted, in sorted order."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def strong(v):
        # iterative: the Python graphs are small, but stay safe
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            u, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[u] = min(low[u], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[u])
                if low[u] == index[u]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == u:
                            break
                    if len(comp) > 1 or u in edges.get(u, ()):
                        out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return sorted(out)


def simple_cycles(comp, edges, limit=MAX_CYCLES):
    """The simple cycles inside one component, each starting at its smallest
    node (so each is listed once), at most limit of them."""
    members = set(comp)
    found = []
    for start in comp:
        path = [start]
        seen = {start}

        def walk(v):
            if len(found) >= limit:
                return
            for w in sorted(edges.get(v, ())):
                if w not in members or w < start:
                    continue
                if w == start:
                    found.append(list(path))
                elif w not in seen:
                    seen.add(w)
                    path.append(w)
                    walk(w)
                    path.pop()
                    seen.discard(w)

        walk(start)
    return found


def report(kind, nodes, edges, why):
    """kind's result: its components, their edges (with why) and cycles."""
    comps = []
    for comp in sccs(nodes, edges):
        inner = [{"from": a, "to": b, "why": sorted(why[(a, b)])}
                 for a in comp for b in sorted(edges.get(a, ())) if b in comp]
        cycles = simple_cycles(comp, edges)
        comps.append({"modules": comp, "edges": inner, "cycles": cycles,
                      "cycles_truncated": len(cycles) >= MAX_CYCLES})
    return {"kind": kind, "modules": len(nodes),
            "edges": sum(len(v) for v in edges.values()), "components": comps}


# ---- C: symbols of the object files -------------------------------------------------

def objects(build):
    out = {}
    for sub, src in OBJ_DIRS:
        top = os.path.join(build, sub)
        for d, dirs, files in os.walk(top):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith(".o"):
                    continue
                rel = os.path.relpath(os.path.join(d, f), top)[:-2]  # foo/bar.c
                rel = "/".join(".." if p == "__" else p for p in rel.split(os.sep))
                mod = os.path.normpath(os.path.join(src, rel))
                # an object whose source is gone (moved, removed) is stale
                if os.path.isfile(os.path.join(ROOT, mod)):
                    out[mod] = os.path.join(d, f)
    return out


def nm(path):
    """(defined globals, undefined) symbols of one object."""
    r = subprocess.run(["nm", "-P", path], capture_output=True, text=True, check=True)
    defined, undefined = set(), set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, t = parts[0], parts[1]
        if t in ("U", "w", "v"):
            if t == "U":
                undefined.add(name)
        elif t.isupper():
            defined.add(name)
    return defined, undefined


def c_graph(build):
    objs = objects(build)
    if not objs:
        return None
    defs, undefs = {}, {}
    for mod, path in objs.items():
        defs[mod], undefs[mod] = nm(path)
    by_sym = {}
    for mod, syms in defs.items():
        for s in syms:
            by_sym.setdefault(s, set()).add(mod)
    edges, why = {}, {}
    for a, syms in undefs.items():
        for s in syms:
            for b in by_sym.get(s, ()):
                if b != a:
                    edges.setdefault(a, set()).add(b)
                    why.setdefault((a, b), set()).add(s)
    return report("c", set(objs), edges, why)


# ---- Python: imports -------------------------------------------------------------------

def py_modules(root):
    mods = []
    for top in PY_DIRS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs
                             if not x.startswith(".") and x not in ("__pycache__", "node_modules"))
            for f in sorted(files):
                if f.endswith(".py"):
                    mods.append(os.path.relpath(os.path.join(d, f), root))
    return mods


def imported_names(tree):
    """(name, line) of every import: `import a.b` gives a, `from a import b`
    gives a and a.b (b may be a module of package a)."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                out.append((a.name, n.lineno))
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out.append((n.module, n.lineno))
            for a in n.names:
                out.append((n.module + "." + a.name, n.lineno))
    return out


def py_graph(root):
    mods = py_modules(root)
    by_name = {}
    for m in mods:
        base = os.path.basename(m)[:-3]
        if base == "__init__":
            base = os.path.basename(os.path.dirname(m))
        by_name.setdefault(base, []).append(m)
    known = set(mods)
    edges, why = {}, {}
    for a in mods:
        try:
            with open(os.path.join(root, a)) as f:
                tree = ast.parse(f.read(), a)
        except (SyntaxError, UnicodeDecodeError, OSError) as e:
            print("cycles.py: %s: not read (%s)" % (a, e), file=sys.stderr)
            continue
        here = os.path.dirname(a)
        for name, line in imported_names(tree):
            parts = name.split(".")
            rel = os.path.join(*parts)
            targets = []
            for cand in (os.path.join(here, rel + ".py"), os.path.join(here, rel, "__init__.py")):
                if cand in known:
                    targets = [cand]
                    break
            if not targets and len(parts) == 1 and len(by_name.get(parts[0], ())) == 1:
                targets = by_name[parts[0]]
            for b in targets:
                if b != a:
                    edges.setdefault(a, set()).add(b)
                    why.setdefault((a, b), set()).add("line %d: %s" % (line, name))
    return report("python", known, edges, why)


# ---- output ------------------------------------------------------------------------------

def print_text(res):
    for r in res:
        comps = r["components"]
        print("%s: %d modules, %d edges, %s" % (r["kind"], r["modules"], r["edges"],
              "%d circle(s)" % len(comps) if comps else "no circle"))
        for i, c in enumerate(comps, 1):
            print("  circle %d: %s" % (i, ", ".join(c["modules"])))
            for e in c["edges"]:
                print("    %s -> %s  (%s)" % (e["from"], e["to"], ", ".join(e["why"])))
            for cyc in c["cycles"]:
                print("    cycle: %s" % " -> ".join(cyc + [cyc[0]]))
            if c["cycles_truncated"]:
                print("    (more cycles: the first %d are listed)" % MAX_CYCLES)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", help="the build directory (objects of xdpkv_core and the CLI)")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    ap.add_argument("--root", default=ROOT, help="the source tree (default: this one)")
    a = ap.parse_args()
    c = c_graph(a.build)
    if c is None:
        print("cycles.py: no object files under %s (%s): build first" %
              (a.build, ", ".join(d for d, _ in OBJ_DIRS)), file=sys.stderr)
        return 2
    res = [c, py_graph(a.root)]
    bad = any(r["components"] for r in res)
    if a.json:
        json.dump({"ok": not bad, "results": res}, sys.stdout, indent=1)
        print()
    else:
        print_text(res)
        print("FAIL: circles between modules" if bad else "PASS: no circle")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
