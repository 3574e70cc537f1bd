# SPDX-License-Identifier: MIT
"""xdpkv compare's session: the progress log line and its durations, the
stop flag a signal sets (the measurements end, the cleanup runs)."""

import signal
import sys


def log(msg):
    print("[compare] " + msg, file=sys.stderr, flush=True)


def fmt_s(s):
    """Seconds as the progress line prints them: 1m05s."""
    s = int(max(0, s))
    return "%dm%02ds" % (s // 60, s % 60)


class Interrupted(Exception):
    pass


STOPPING = False


def on_signal(signum, frame):
    global STOPPING
    STOPPING = True
    # the first signal stops the measurements; the cleanup that follows must
    # not be cut short by the next one (the testbed wrapper sends SIGTERM
    # right after a Ctrl-C, and SIGKILL 2 s later: it cleans up too)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    raise Interrupted(signal.Signals(signum).name)
