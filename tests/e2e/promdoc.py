#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""docs/cli.md's metric table against status --prometheus.

  promdoc.py CLI_MD METRICS   every family in METRICS is a row of the table
  (name, type, label names beside iface and layout), or matches its
  xdpkv_stat_NAME_total row; every row is a family in METRICS.  Exit 1 with
  the differences.
"""
import re
import sys

doc = open(sys.argv[1]).read()
table = doc[doc.index("| metric | type | meaning |"):]
rows = {}
for line in table.split("\n")[2:]:
    if not line.startswith("| `"):
        break
    m = re.match(r"\| `([a-zA-Z_]+)(?:\{([a-z_,]+)\})?` \| (\w+) \|", line)
    if not m:
        sys.exit("promdoc: a row it cannot read: %r" % line)
    rows[m.group(1)] = (m.group(3), set((m.group(2) or "").split(",")) - {""})

types, labels = {}, {}
for line in open(sys.argv[2]):
    if line.startswith("# TYPE "):
        _, _, name, typ = line.split()
        types[name] = typ
        labels.setdefault(name, set())
    elif line and not line.startswith("#"):
        name = line.split("{")[0].split(" ")[0]
        got = set(re.findall(r'([a-z_]+)="', line)) - {"iface", "layout"}
        labels.setdefault(name, set()).update(got)

bad = []
for name, typ in types.items():
    key = "xdpkv_stat_NAME_total" if re.match(r"xdpkv_stat_\w+_total$", name) else name
    if key not in rows:
        bad.append("%s (%s) is not in the table" % (name, typ))
    elif rows[key] != (typ, labels[name]):
        bad.append("%s: the table says %s %s, the output %s %s" %
                   (name, rows[key][0], sorted(rows[key][1]), typ, sorted(labels[name])))
for name in rows:
    if name == "xdpkv_stat_NAME_total":
        if not any(re.match(r"xdpkv_stat_\w+_total$", n) for n in types):
            bad.append("no xdpkv_stat_NAME_total family in the output")
    elif name not in types:
        bad.append("%s is in the table but not in the output" % name)
for b in bad:
    print("promdoc:", b)
print("promdoc: %d families, %d rows: %s" % (len(types), len(rows), "differ" if bad else "agree"))
sys.exit(1 if bad else 0)
