#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check xdpkv compare's figures by their drawn elements, not by eye:

  check_figures.py DIR        (DIR: a compare output with results.json)

Draws every figure of DIR's results.json again (plots.plot_all into a
temporary folder), keeps each matplotlib figure before it is closed, and
reads back where its texts landed (get_window_extent after a draw).  Fails
when, in one figure:

- two texts overlap (titles, axis names, tick labels, annotations, legend
  entries), or a legend covers a title, an axis name or an annotation;
- a text sticks out of the figure (a cut title or label);
- an annotation lies farther than NEAR_PX from the point it names;
- the headline figure's axis names differ from the headline table's
  headings (results.json "headline": heading (unit)).

Prints PASS/FAIL per figure and check; exit 1 on any failure."""

import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

NEAR_PX = 40      # an annotation's text within this many pixels of its point
SLACK_PX = -2.0   # boxes closer than 2 px count as touching


def texts(fig):
    """(what, Text) for every visible non-empty text of fig."""
    out = []
    for t in fig.texts:
        out.append(("figure text", t))
    if getattr(fig, "_suptitle", None) is not None:
        out.append(("suptitle", fig._suptitle))
    for ai, ax in enumerate(fig.axes):
        p = "panel %d" % ai
        for t in (ax.title, ax._left_title, ax._right_title):
            out.append((p + " title", t))
        out.append((p + " x name", ax.xaxis.label))
        out.append((p + " y name", ax.yaxis.label))
        for axis, w in ((ax.xaxis, " x tick"), (ax.yaxis, " y tick")):
            for tick in axis._update_ticks():  # the ticks drawn: inside the view limits
                for t in (tick.label1, tick.label2):
                    out.append((p + w, t))
        for t in ax.texts:
            out.append((p + " annotation", t))
        lg = ax.get_legend()
        if lg is not None:
            for t in lg.get_texts():
                out.append((p + " legend entry", t))
    for lg in fig.legends:
        for t in lg.get_texts():
            out.append(("figure legend entry", t))
    return [(w, t) for w, t in out if t.get_visible() and t.get_text().strip()]


def legends(fig):
    return [lg for lg in fig.legends] + [ax.get_legend() for ax in fig.axes
                                         if ax.get_legend() is not None]


def overlap(a, b):
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > SLACK_PX and
            min(a.y1, b.y1) - max(a.y0, b.y0) > SLACK_PX)


def check_fig(name, fig, res, need):
    import plots
    fig.set_dpi(plots.DPI)  # where the PNG's texts land
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    W, H = fig.bbox.width, fig.bbox.height
    tx = [(w, t, t.get_window_extent(r)) for w, t in texts(fig)]
    bad = [w + " '" + t.get_text()[:30] + "'" for w, t, b in tx
           if b.x0 < -0.5 or b.y0 < -0.5 or b.x1 > W + 0.5 or b.y1 > H + 0.5]
    need(not bad, "%s: every text inside the figure%s" % (name, (": out: " + "; ".join(bad[:4]))
                                                         if bad else ""))
    clash = []
    for i in range(len(tx)):
        for j in range(i + 1, len(tx)):
            if overlap(tx[i][2], tx[j][2]):
                clash.append("%s '%s' / %s '%s'" % (tx[i][0], tx[i][1].get_text()[:20], tx[j][0],
                                                   tx[j][1].get_text()[:20]))
    need(not clash, "%s: no two texts overlap%s" % (name, (": " + "; ".join(clash[:4]))
                                                    if clash else ""))
    cover = []
    for lg in legends(fig):
        lb = lg.get_window_extent(r)
        own = set(id(t) for t in lg.get_texts())
        for w, t, b in tx:
            if id(t) not in own and "tick" not in w and overlap(lb, b):
                cover.append("%s '%s'" % (w, t.get_text()[:30]))
    need(not cover, "%s: no legend covers a title, a name or an annotation%s" % (
        name, (": " + "; ".join(cover[:4])) if cover else ""))
    far = []
    for ax in fig.axes:
        for t in ax.texts:
            xy = getattr(t, "xy", None)
            if xy is None or not t.get_visible() or not t.get_text().strip():
                continue
            px, py = ax.transData.transform(xy)
            b = t.get_window_extent(r)
            dx = max(b.x0 - px, 0, px - b.x1)
            dy = max(b.y0 - py, 0, py - b.y1)
            if (dx * dx + dy * dy) ** 0.5 > NEAR_PX:
                far.append("'%s' %.0f px from its point" % (t.get_text()[:20],
                                                           (dx * dx + dy * dy) ** 0.5))
    need(not far, "%s: every annotation within %d px of its point%s" % (
        name, NEAR_PX, (": " + "; ".join(far[:4])) if far else ""))
    h = res.get("headline")
    if name == "headline.png" and h:
        heads = {c["key"]: "%s (%s)" % (c["heading"], c["unit"]) for c in h["columns"]}
        ax = fig.axes[0]
        need(ax.get_xlabel() == heads["bytes_per_item"] and
             ax.get_ylabel() == heads["throughput"],
             "%s: axis names are the table's headings (%r, %r)" % (
                 name, ax.get_xlabel(), ax.get_ylabel()))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    import matplotlib
    matplotlib.use("Agg")
    import plots
    import headline
    with open(os.path.join(sys.argv[1], "results.json")) as f:
        res = json.load(f)
    res["headline"] = headline.build(res)  # as the report draws it (report.write_all)
    figs = []
    real = plots.save

    def keep(plt, fig, outdir, name, made, rect=None):
        fig.tight_layout(rect=rect)
        figs.append((name, fig))
        made.append(name)
    plots.save = keep
    with tempfile.TemporaryDirectory() as d:
        made, note = plots.plot_all(res, d)
    plots.save = real
    bad = []

    def need(ok, what):
        print("%s %s" % ("PASS" if ok else "FAIL", what))
        if not ok:
            bad.append(what)
    need(bool(figs), "figures drawn (%s)" % note if note else "figures drawn")
    for name, fig in figs:
        check_fig(name, fig, res, need)
    print("%d check(s) failed" % len(bad) if bad else "all figure checks passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
