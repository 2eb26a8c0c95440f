"""report.html: one self-contained page (inline CSS and SVG, no script, no external file)
holding the same tables as the terminal report plus the plots.

The page is rendered by jinja2 with autoescaping on, so every task id, category value and
message is escaped; the only markup inserted as-is is the SVG that `plots` produced
(matplotlib escapes the labels it writes into it).

Drawing the plots costs matplotlib's import (a second or more), so `write_html` skips the
work when the page on disk was rendered from the same summary, title and formalbench
version: the page ends with a comment holding a hash of those (`_stamp`). `formalbench
report` on a finished run then rewrites nothing and starts in a fraction of a second.
"""

from __future__ import annotations

import functools
import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup

from formalbench import __version__
from formalbench.core.errors import InputError
from formalbench.metrics.summary import RunSummary
from formalbench.reporting import plots
from formalbench.reporting.tables import report_tables

if TYPE_CHECKING:
    import jinja2


@functools.cache
def template_env() -> jinja2.Environment:
    """The template environment, made on the first page rendered: jinja2 takes ~0.1 s to
    import, which `formalbench report` skips when report.html is already up to date."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("formalbench.reporting", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(summary: RunSummary, *, title: str = "formalbench report") -> str:
    """The report page as text."""
    tables = {t.key: t for t in report_tables(summary, per_task=True)}
    figures = {
        "passk": plots.passk_curve(summary),
        "categories": plots.category_bars(summary),
        "taxonomy": plots.taxonomy_bars(summary),
    }
    template = template_env().get_template("report.html.j2")
    return template.render(
        title=title,
        summary=summary,
        tables=tables,
        category_keys=[k for k in tables if k.startswith("category_")],
        plots={k: Markup(v) if v else None for k, v in figures.items()},
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
    )


def write_html(summary: RunSummary, path: str | Path, *, title: str = "formalbench report") -> Path:
    """Write the report page to `path` (its folder is created) and return the path."""
    target = Path(path)
    if target.is_dir():
        raise InputError(f"{target}: is a directory; give the path of the report file to write")
    stamp = _stamp(summary, title)
    if _has_stamp(target, stamp):
        return target
    page = render_html(summary, title=title) + stamp
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{target}: cannot write the report ({exc.strerror or exc})") from None
    return target


def _stamp(summary: RunSummary, title: str) -> str:
    """The closing comment naming what the page was rendered from (see the module doc)."""
    material = "\n".join([__version__, title, summary.model_dump_json()])
    digest = hashlib.sha256(material.encode("utf-8")).hexdigest()
    return f"<!-- formalbench-report {digest} -->\n"


def _has_stamp(target: Path, stamp: str) -> bool:
    """Whether the page at `target` ends with `stamp` (False when it cannot be read)."""
    size = len(stamp.encode("utf-8"))
    try:
        with target.open("rb") as handle:
            handle.seek(0, 2)
            if handle.tell() < size:
                return False
            handle.seek(-size, 2)
            return handle.read() == stamp.encode("utf-8")
    except OSError:
        return False
