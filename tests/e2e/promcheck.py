#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A strict reader of the Prometheus text format (xdpkv status --prometheus).

  promcheck.py FILE   prints NAME{labels}=VALUE per sample after checking that
  every sample's family has one HELP and one TYPE before it, that names and
  labels are valid, values numeric, counters non-negative, and that every
  xdpkv_/memcached_ sample carries iface and layout.  Exit 1 on any violation.
"""
import re
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")
SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def fail(n, msg):
    sys.exit("promcheck: line %d: %s" % (n, msg))


def main(path):
    helps, types, seen = {}, {}, set()
    for n, line in enumerate(open(path).read().split("\n"), 1):
        if line == "":
            continue
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not NAME.match(parts[2]):
                fail(n, "bad %s line" % parts[1])
            d = helps if parts[1] == "HELP" else types
            if parts[2] in d or parts[2] in seen:
                fail(n, "%s for %s repeated or after its samples" % (parts[1], parts[2]))
            if parts[1] == "TYPE" and parts[3] not in ("counter", "gauge"):
                fail(n, "unexpected type %s" % parts[3])
            d[parts[2]] = parts[3]
            continue
        if line.startswith("#"):
            fail(n, "a comment that is neither HELP nor TYPE")
        m = SAMPLE.match(line)
        if not m:
            fail(n, "not a sample: %r" % line)
        name, labels, value = m.group(1), m.group(3) or "", m.group(4)
        if name not in helps or name not in types:
            fail(n, "%s has no HELP or TYPE before it" % name)
        seen.add(name)
        got, pos = {}, 0
        while pos < len(labels):
            lm = LABEL.match(labels, pos)
            if not lm:
                fail(n, "bad labels %r" % labels)
            got[lm.group(1)] = lm.group(2)
            pos = lm.end()
        if "iface" not in got or "layout" not in got:
            fail(n, "%s lacks iface or layout" % name)
        try:
            v = float(value)
        except ValueError:
            fail(n, "value %r is not a number" % value)
        if types[name] == "counter" and (v < 0 or not name.endswith("_total")):
            fail(n, "counter %s: negative or not named *_total" % name)
        key = name + "{" + ",".join("%s=%s" % kv for kv in sorted(got.items())
                                    if kv[0] not in ("iface", "layout")) + "}"
        print("%s=%s" % (key, value))
    if not seen:
        sys.exit("promcheck: no samples")


if __name__ == "__main__":
    main(sys.argv[1])
