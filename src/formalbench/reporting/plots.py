"""The report's plots as inline SVG text, drawn with matplotlib without a display.

Figures are built with `matplotlib.figure.Figure` directly (no pyplot, so no global
figure state and no GUI backend is touched) and saved as SVG with text drawn as paths:
the page needs no font and no external file. Each plot gets its own `svg.hashsalt` so
that element ids of several plots inlined in one page do not collide, and no date is
written, so the same summary gives the same bytes. Labels from the data are escaped by
matplotlib's SVG writer.

matplotlib (with numpy) takes a second or more to import, so it is imported inside the
drawing functions: `formalbench report` and `check` only pay for it when a plot is drawn.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from formalbench.metrics.summary import CategoryRow, RunSummary
from formalbench.reporting.fmt import category_title, clip

_MAX_BARS = 20
_LABEL_CHARS = 32
_BAR = "#4c72b0"
_FAIL = "#c44e52"

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def passk_curve(summary: RunSummary) -> str | None:
    """pass@k against k (log scale in k), in percent; None when nothing was evaluated."""
    if not summary.pass_at_k:
        return None
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, NullLocator, PercentFormatter

    ks = summary.ks
    values = [100 * summary.pass_at_k[str(k)] for k in ks]
    fig = Figure(figsize=(6.4, 3.8))
    ax = fig.subplots()
    ax.plot(ks, values, marker="o", color=_BAR)
    for k, v in zip(ks, values, strict=True):
        ax.annotate(f"{v:.1f}%", (k, v), textcoords="offset points", xytext=(0, 7), ha="center")
    if len(ks) > 1:
        ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(ks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_xlim(ks[0] / 1.3, ks[-1] * 1.3)
    ax.set_ylim(0, 105)
    ax.yaxis.set_major_formatter(PercentFormatter(100))
    ax.set_xlabel("k (samples drawn per task)")
    ax.set_ylabel("pass@k")
    ax.set_title(f"pass@k over {summary.evaluated} tasks (n = {_samples(summary.samples)} each)")
    ax.grid(True, alpha=0.3)
    return _svg(fig, "passk")


def category_bars(summary: RunSummary) -> str | None:
    """Share of tasks solved per value of each category field, one panel per field."""
    tables = [t for t in summary.categories if t.rows]
    if not tables:
        return None
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, PercentFormatter

    heights = [min(len(t.rows), _MAX_BARS) for t in tables]
    fig = Figure(figsize=(7.2, sum(0.32 * h + 1.1 for h in heights)))
    axes = fig.subplots(len(tables), 1, squeeze=False, height_ratios=[h + 2 for h in heights])
    for ax, table in zip(axes[:, 0], tables, strict=True):
        rows = _chart_rows(table.rows)
        rows.reverse()  # barh draws bottom-up: the table's first row on top
        shares = [100 * r.solved / r.tasks if r.tasks else 0.0 for r in rows]
        ax.barh(range(len(rows)), shares, color=_BAR)
        ax.set_yticks(range(len(rows)), [clip(r.value, _LABEL_CHARS) for r in rows])
        for y, (row, share) in enumerate(zip(rows, shares, strict=True)):
            label = f"{row.solved}/{row.tasks} ({share:.1f}%)"
            if share > 60:  # long bar: write inside it, so the text stays within the axes
                ax.text(share - 1, y, label, va="center", ha="right", color="white")
            else:
                ax.text(share + 1, y, label, va="center")
        ax.set_xlim(0, 100)
        ax.xaxis.set_major_locator(FixedLocator([0, 20, 40, 60, 80, 100]))
        ax.xaxis.set_major_formatter(PercentFormatter(100))
        ax.set_xlabel("tasks solved (at least one attempt passed)")
        shown = (
            "" if len(table.rows) <= _MAX_BARS else f", largest {_MAX_BARS} of {len(table.rows)}"
        )
        ax.set_title(f"Solved by {table.field}{shown}")
    fig.tight_layout()
    return _svg(fig, "categories")


def _chart_rows(rows: list[CategoryRow]) -> list[CategoryRow]:
    """The rows a category chart draws, in the order of the report's table beside it: all of
    them, or the largest _MAX_BARS groups (by tasks) where there are more."""
    if len(rows) <= _MAX_BARS:
        return list(rows)
    largest = set(sorted(range(len(rows)), key=lambda i: -rows[i].tasks)[:_MAX_BARS])
    return [row for i, row in enumerate(rows) if i in largest]


def taxonomy_bars(summary: RunSummary) -> str | None:
    """Failed attempts per primary error category, with their share of all failures."""
    if not summary.taxonomy:
        return None
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    items = sorted(summary.taxonomy.items(), key=lambda kv: kv[1])
    total = summary.failed_attempts
    fig = Figure(figsize=(7.2, 0.4 * len(items) + 1.4))
    ax = fig.subplots()
    counts = [c for _, c in items]
    ax.barh(range(len(items)), counts, color=_FAIL)
    ax.set_yticks(range(len(items)), [category_title(name) for name, _ in items])
    top = max(counts)
    for y, count in enumerate(counts):
        ax.text(count + top * 0.01, y, f"{count} ({100 * count / total:.1f}%)", va="center")
    ax.set_xlim(0, top * 1.3)
    locator = ax.xaxis.get_major_locator()
    if isinstance(locator, MaxNLocator):  # the default AutoLocator is one
        locator.set_params(integer=True)
    ax.set_xlabel("failed attempts (primary category)")
    ax.set_title(f"Why attempts failed ({total} failed attempts)")
    fig.tight_layout()
    return _svg(fig, "taxonomy")


def _samples(n: int) -> str:
    return f"{n} sample" if n == 1 else f"{n} samples"


def _svg(fig: Figure, name: str) -> str:
    """The figure as an `<svg>` element, without the XML prolog (it is inlined in HTML)."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"formalbench-{name}", "svg.fonttype": "path"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = buffer.getvalue()
    start = text.find("<svg")
    return text[start:].strip() if start >= 0 else text


__all__ = ["category_bars", "passk_curve", "taxonomy_bars"]
