# SPDX-License-Identifier: MIT
"""Where the replies a (b) run lost went: the drop counters of every stage a
request and its reply pass, read before and after the run.

  request:  client socket -> client veth (tx) -> server veth (rx, XDP: the
            access rules' refusals) -> server socket (memcached, Redis,
            xdpkv serve's slow path)
  reply:    server veth (tx) -> client veth (rx) -> client socket (its
            receive buffer) -> the client, which counts a reply that came
            after its request's timeout as late

Each stage's counter is the kernel's own: /proc/net/snmp's Udp InErrors and
RcvbufErrors in each namespace, `ip -s link`'s rx and tx drops of each veth
end (a veth drops on transmit when its peer's ring is full; the peer's rx
drop counts the same packet again and is left out), `xdpkv status --json`'s
refused (XDP) and the load generator's late replies.  The counters cover the
whole run, warm-up included."""

import json

from servers import env, run

# in the order a request and its reply meet them
STAGES = ("client_veth_tx", "server_veth_rx", "xdp_refused", "server_socket", "server_veth_tx",
          "client_socket", "late_replies")
NAMES = {"client_veth_tx": "requests dropped entering the server's veth ring (client veth tx)",
         "server_veth_rx": "server veth rx", "xdp_refused": "refused in XDP",
         "server_socket": "server socket (receive buffer or checksum)",
         "server_veth_tx": "replies dropped entering the client's veth ring (server veth tx)",
         "client_socket": "client socket (receive buffer or checksum)",
         "late_replies": "late replies"}


def _udp_errors(ns):
    out = run(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"], check=False)
    lines = [l.split() for l in out.splitlines() if l.startswith("Udp:")]
    if len(lines) < 2:
        return 0
    d = dict(zip(lines[0][1:], lines[1][1:]))
    return int(d.get("InErrors", 0))  # RcvbufErrors and InCsumErrors are counted in it


def _veth(ns, dev):
    out = run(["ip", "-n", ns, "-s", "-j", "link", "show", "dev", dev], check=False)
    try:
        st = json.loads(out)[0]["stats64"]
        return st["rx"]["dropped"] + st["rx"].get("errors", 0), \
            st["tx"]["dropped"] + st["tx"].get("errors", 0)
    except (ValueError, IndexError, KeyError):
        return 0, 0


def snapshot(status=None):
    """The counters now; status: the xdpkv system's status JSON, if any."""
    _, ctx = _veth(env("TB_CLI_NS"), env("TB_CLI_DEV"))
    srx, stx = _veth(env("TB_SRV_NS"), env("TB_SRV_DEV"))
    refused = sum((status or {}).get("refused", {}).values())
    # the client veth's rx drops are the server end's tx drops again: not counted twice
    return {"client_socket": _udp_errors(env("TB_CLI_NS")), "client_veth_tx": ctx,
            "server_veth_rx": srx, "xdp_refused": refused,
            "server_socket": _udp_errors(env("TB_SRV_NS")), "server_veth_tx": stx}


def delta(before, after, late):
    """Drops per stage over the run (late: the client's late replies)."""
    d = {k: after[k] - before[k] for k in before}
    d["late_replies"] = late or 0
    return {k: d.get(k, 0) for k in STAGES}


def describe(lost):
    """'3 server socket, 2 late' for a report cell."""
    return ", ".join("%d %s" % (lost[k], NAMES[k]) for k in STAGES if lost.get(k))


def unattributed(lost, timeouts):
    """Unanswered requests that no stage counted (0 when every one has a place;
    the counters include the warm-up, so they may count more)."""
    return max(0, (timeouts or 0) - sum(lost.get(k, 0) for k in STAGES))
