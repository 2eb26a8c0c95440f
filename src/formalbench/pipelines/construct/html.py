"""report.html of a construct run: the funnel drawn (exercises -> reviewed -> usable ->
packaged) and the per-pool review outcomes, with the same numbers as the terminal tables.

One self-contained page (inline CSS and SVG), rendered by jinja2 with autoescaping from the
template beside the evaluation report's; the SVG comes from matplotlib the way
`reporting.plots` draws it (no pyplot, no date, text as paths), imported only here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup

from formalbench import __version__
from formalbench.pipelines.construct.report import ConstructReport
from formalbench.pipelines.run_dir import write_text_atomic
from formalbench.reporting.html import template_env
from formalbench.reporting.plots import _svg

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_COLORS = {"accept": "#55a868", "revise": "#dd8452", "hold": "#c44e52"}


def funnel_stages(report: ConstructReport) -> list[tuple[str, int]]:
    """The funnel's stages, widest first."""
    return [
        ("exercises extracted", report.exercises),
        ("reviewed", report.reviewed),
        ("accepted at first review", report.accepted),
        ("usable (after repair)", report.usable),
        ("instances packaged", report.instances),
    ]


def funnel_figure(report: ConstructReport) -> str:
    """The funnel as centred horizontal bars, and the review labels per pool beside it."""
    from matplotlib.figure import Figure

    fig: Figure = Figure(figsize=(9.6, 3.6))
    left, right = fig.subplots(1, 2, width_ratios=[3, 2])
    stages = funnel_stages(report)
    top = max([count for _, count in stages] + [1])
    for y, (name, count) in enumerate(reversed(stages)):
        left.barh(y, count, left=(top - count) / 2, color="#4c72b0")
        left.text(top / 2, y, f"{name}: {count}", ha="center", va="center", color="black")
    left.set_xlim(0, top)
    left.set_axis_off()
    left.set_title("construct funnel")
    pools = list(report.funnel.pools.items())
    bottoms = [0] * len(pools)
    for label, color in _COLORS.items():
        values = [getattr(stats, label) for _, stats in pools]
        right.bar([p for p, _ in pools], values, bottom=bottoms, color=color, label=label)
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    right.yaxis.get_major_locator().set_params(integer=True)
    right.set_title("source review per pool")
    right.set_ylabel("items")
    right.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    return _svg(fig, "construct-funnel")


def write_construct_html(report: ConstructReport, path: Path, *, title: str) -> Path:
    page = (
        template_env()
        .get_template("construct.html.j2")
        .render(
            title=title,
            report=report,
            stages=funnel_stages(report),
            figure=Markup(funnel_figure(report)),
            generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            version=__version__,
        )
    )
    write_text_atomic(path, page)
    return path
