"""The benchmark's plot: throughput and memory against stream size, for both servers.

`write_plot(figures, path)` draws, from the `jobs.bench.scale.SizeFigures` of one
run, three panels side by side with the stream size (messages, log scale) on the
x axis: read throughput (batch read -> noop, rows/s, at the partition counts read
at every size), the fill rate (msgs/s) and the server's RSS (MB) after restart and
after reading, one line per server and figure. Written as a PNG with matplotlib's Agg canvas (no display, no pyplot
global state).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from jobs.bench.scale import SizeFigures

MB = 1024 * 1024
STYLE = {"bundled": "tab:blue", "nats-server": "tab:orange"}


def _count(value: float, _pos: object = None) -> str:
    for step, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= step:
            return f"{value / step:g}{suffix}"
    return f"{value:g}"


def write_plot(figures: Sequence[SizeFigures], path: str | Path, title: str = "") -> Path:
    kinds = sorted({f.kind for f in figures}, key=lambda k: (k != "bundled", k))
    # the partition counts read at every size (the `partitions` family adds others at one size)
    parts = sorted(set.intersection(*(set(f.read_rates) for f in figures))) if figures else []
    fig = Figure(figsize=(14, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    read, fill, memory = fig.subplots(1, 3)
    for kind in kinds:
        mine = sorted((f for f in figures if f.kind == kind), key=lambda f: f.rows)
        xs = [f.rows for f in mine]
        colour = STYLE.get(kind)
        for p, marker in zip(parts, ("o-", "s--", "^:", "d-."), strict=False):
            read.plot(xs, [f.read_rates[p] for f in mine], marker, color=colour,
                      label=f"{kind}, {p} partition{'s' if p > 1 else ''}")
        fill.plot(xs, [f.fill_rate for f in mine], "o-", color=colour, label=kind)
        memory.plot(xs, [f.rss_after_restart / MB for f in mine], "o-", color=colour,
                    label=f"{kind}, after restart")
        memory.plot(xs, [f.rss_after_read / MB for f in mine], "^:", color=colour,
                    label=f"{kind}, after reading")
    size = figures[0].size if figures else 0
    read.set(ylabel="rows/s", title="batch read -> noop (connector, local Spark)")
    fill.set(ylabel="messages/s", title="fill: pipelined publish (nats-py)")
    memory.set(ylabel="MB", title="server RSS")
    for ax in (read, fill, memory):
        ax.set_xscale("log")
        ax.set_xlabel(f"stream size (messages of {size} B)")
        ax.xaxis.set_major_formatter(FuncFormatter(_count))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda _v, _p: ""))
        ax.yaxis.set_major_formatter(FuncFormatter(_count))
        ax.set_ylim(bottom=0)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    if title:
        fig.suptitle(title, fontsize="medium")
    out = Path(path)
    fig.savefig(out, dpi=100, format="png")
    return out
