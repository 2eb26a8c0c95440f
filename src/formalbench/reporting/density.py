"""The dependency-density page: mean and median of rho_1..rho_k, their distribution as a
plot (inline SVG, as in the run report) and each task's values; one self-contained file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup

from formalbench.core.errors import InputError
from formalbench.reporting.html import template_env
from formalbench.reporting.plots import _svg

if TYPE_CHECKING:
    from formalbench.deps.stats import DensityReport

_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3")


def density_plot(report: DensityReport) -> str | None:
    """Histogram of rho_j over the measured tasks, one series per j; None with no task."""
    measured = report.measured
    if not measured:
        return None
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.2, 3.8))
    ax = fig.subplots()
    for j in range(1, report.k + 1):
        values = [t.rho[j] for t in measured]
        ax.hist(
            values,
            bins=min(30, max(5, len(set(values)))),
            alpha=0.55,
            color=_COLORS[(j - 1) % len(_COLORS)],
            label=f"ρ_{j} (mean {report.summary[str(j)]['mean']})",
        )
    ax.set_xlabel("distinct non-trivial library declarations within j hops")
    ax.set_ylabel("tasks")
    ax.set_title(f"Dependency density of {len(measured)} tasks")
    ax.legend()
    fig.tight_layout()
    return _svg(fig, "density")


def render_density_html(report: DensityReport, *, title: str) -> str:
    plot = density_plot(report)
    return (
        template_env()
        .get_template("density.html.j2")
        .render(
            title=title,
            report=report,
            ks=list(range(1, report.k + 1)),
            plot=Markup(plot) if plot else None,
        )
    )


def write_density_html(report: DensityReport, path: str | Path, *, title: str) -> Path:
    target = Path(path)
    if target.is_dir():
        raise InputError(f"{target}: is a folder, expected an HTML file path")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render_density_html(report, title=title), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{target}: cannot write ({exc.strerror or exc})") from None
    return target
