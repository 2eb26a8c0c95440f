"""Terminal tables and report.html rendered from summaries with known numbers."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from fractions import Fraction
from html.parser import HTMLParser
from math import comb

import pytest
from rich.console import Console
from rich.table import Table

from formalbench.core.errors import InputError
from formalbench.core.records import (
    Attempt,
    Diagnostic,
    Reason,
    Severity,
    Task,
    TokenUsage,
    Verdict,
)
from formalbench.metrics.summary import summarize
from formalbench.reporting import plots, print_report, render_tables, write_html
from formalbench.reporting.tables import report_tables

EVIL_ID = '<script>alert("pwn")</script>'
EVIL_LABEL = "--><img src=x onerror=alert(1)>"
EVIL_MESSAGE = "unknown constant 'X'</td><script>steal()</script>"
MARKUP_ID = "[bold red]boom[/]"


def pct(value: Fraction | float) -> str:
    return f"{100 * float(value):.1f}%"


def exact(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def make_attempts(tid: str, outcomes: str, message: str = "simp made no progress") -> list[Attempt]:
    return [
        Attempt(
            task_id=tid,
            solver="whole",
            sample=i,
            code="x",
            tokens=TokenUsage(prompt=1000, completion=250),
            wall_time=2.0,
            verdict=Verdict(
                passed=o == "P",
                reasons=[] if o == "P" else [Reason.compile_error],
                diagnostics=[]
                if o == "P"
                else [Diagnostic(severity=Severity.error, message=message)],
            ),
        )
        for i, o in enumerate(outcomes)
    ]


@pytest.fixture
def summary():
    tasks = [
        Task(id=EVIL_ID, language="lean", formal="x", labels={"domain": EVIL_LABEL}),
        Task(id="t2", language="lean", formal="x", labels={"domain": "algebra"}),
        Task(id="t3", language="lean", formal="x", labels={"domain": "algebra"}),
        Task(id=MARKUP_ID, language="lean", formal="x"),  # unfinished
    ]
    attempts = (
        make_attempts(EVIL_ID, "PFFF", EVIL_MESSAGE)
        + make_attempts("t2", "PPFF")
        + make_attempts(
            "t3", "FFFF", "type mismatch\n  h\nhas type\n  P\nbut is expected to have type\n  Q"
        )
        + make_attempts(MARKUP_ID, "F")
    )
    return summarize(tasks, attempts, samples=4, run_info={"wall_time_s": 90.0, "model": "m-1"})


class TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)


def test_html_holds_the_numbers_and_valid_svg(summary, tmp_path):
    path = write_html(summary, tmp_path / "out" / "report.html")
    page = path.read_text(encoding="utf-8")
    counts = [(4, 1), (4, 2), (4, 0)]
    for k in (1, 2, 4):
        want = sum(exact(n, c, k) for n, c in counts) / 3
        assert f">{pct(want)}<" in page, k
    assert "2 / 4" in page  # tasks solved card
    assert "1.5 min" not in page and "1 min 30 s" in page  # run wall time
    svgs = re.findall(r"<svg\b.*?</svg>", page, flags=re.S)
    assert len(svgs) == 3
    for svg in svgs:
        root = ET.fromstring(svg)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert root.find(".//{http://www.w3.org/2000/svg}path") is not None
    # titles and axis labels, which matplotlib records as comments beside the glyph paths
    for text in [
        "pass@k over 3 tasks (n = 4 samples each)",
        "k (samples drawn per task)",
        "Solved by domain",
        "failed attempts (primary category)",
    ]:
        assert f"<!-- {text} -->" in page, text
    pass1 = pct(sum(exact(n, c, 1) for n, c in counts) / 3)
    assert f"<!-- {pass1} -->" in page  # the label of the pass@1 point


def test_html_escapes_task_ids_labels_and_messages(summary, tmp_path):
    page = write_html(summary, tmp_path / "report.html").read_text(encoding="utf-8")
    parser = TagCollector()
    parser.feed(page)
    assert "script" not in parser.tags and "img" not in parser.tags
    assert not [name for name, _ in parser.attrs if name.startswith("on")]
    assert "&lt;script&gt;alert(&#34;pwn&#34;)&lt;/script&gt;" in page
    assert "&lt;/td&gt;&lt;script&gt;steal()" in page
    # no external asset: nothing is loaded from a URL or another file
    fetched = [v for name, v in parser.attrs if name in ("src", "href") or name.endswith(":href")]
    assert all(v is not None and v.startswith("#") for v in fetched), fetched
    assert "<link" not in page


def test_empty_run_renders(tmp_path):
    s = summarize([Task(id="a", language="coq", formal="x")], [], samples=2)
    page = write_html(s, tmp_path / "r.html").read_text()
    assert "no task has a complete set of samples yet" in page
    assert "No attempt failed." in page
    assert page.count("<svg") == 1  # solved-by-kind bars only: no curve, no taxonomy
    assert plots.passk_curve(s) is None and plots.taxonomy_bars(s) is None


def test_write_html_rejects_a_directory(summary, tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        write_html(summary, tmp_path)


def test_plots_are_deterministic(summary):
    assert plots.passk_curve(summary) == plots.passk_curve(summary)
    assert plots.category_bars(summary) == plots.category_bars(summary)


def test_terminal_tables_show_numbers_and_literal_ids(summary):
    console = Console(record=True, width=160, color_system=None)
    print_report(summary, console)
    text = " ".join(console.export_text().split())  # cells may wrap at spaces
    for k in (1, 2, 4):
        want = sum(exact(n, c, k) for n, c in [(4, 1), (4, 2), (4, 0)]) / 3
        assert pct(want) in text
    assert MARKUP_ID in text  # shown as written, not read as rich markup
    assert EVIL_ID in text
    assert "type / coercion error" in text and "hallucinated identifier" in text
    assert "1 min 30 s" in text

    def tables(renderables: list) -> int:
        return sum(isinstance(r, Table) for r in renderables)

    assert tables(render_tables(summary)) == tables(render_tables(summary, per_task=True)) - 1


def test_overview_names_the_solved_tasks_and_cuts_a_long_list():
    ids = [f"t{i:02d}" for i in range(25)]
    tasks = [Task(id=tid, language="coq", formal="x") for tid in [*ids, "hard"]]
    attempts = [a for tid in ids for a in make_attempts(tid, "P")] + make_attempts("hard", "F")
    many = summarize(tasks, attempts, samples=1)
    (overview,) = [t for t in report_tables(many) if t.key == "overview"]
    assert overview.note == f"solved: {', '.join(ids[:20])} and 5 more"
    console = Console(record=True, width=300, color_system=None)
    print_report(many, console)
    text = console.export_text()
    assert "solved: t00, t01" in text and "t19 and 5 more" in text and "t20" not in text


def test_per_task_rows_show_tokens_of_each_task(summary):
    console = Console(record=True, width=160, color_system=None)
    print_report(summary, console, per_task=True)
    text = console.export_text()
    rows = text[text.index("Tasks") :]
    t2 = next(line for line in rows.splitlines() if line.strip().startswith("t2"))
    assert t2.split()[1:4] == ["4", "2", "5,000"]  # attempts, passed, tokens (4 x 1,250)
    plain = Console(record=True, width=160, color_system=None)
    print_report(summary, plain)
    assert "Tasks" not in plain.export_text()


def test_an_up_to_date_page_is_not_redrawn(summary, tmp_path):
    """`formalbench report` on a finished run keeps report.html when the summary is the same
    (drawing it needs matplotlib, seconds of import); a changed summary redraws it."""
    path = write_html(summary, tmp_path / "report.html", title="t")
    first = path.read_text(encoding="utf-8")
    assert first.rstrip().endswith("-->") and "formalbench-report" in first.splitlines()[-1]
    path.write_text(first.replace("<title>", "<title>KEPT "), encoding="utf-8")
    write_html(summary, path, title="t")
    assert "KEPT " in path.read_text(encoding="utf-8")  # same stamp: not rendered again
    write_html(summary, path, title="another title")
    assert "KEPT " not in path.read_text(encoding="utf-8")
    changed = summary.model_copy(update={"evaluated": summary.evaluated + 1})
    path.write_text(first.replace("<title>", "<title>KEPT "), encoding="utf-8")
    write_html(changed, path, title="t")
    assert "KEPT " not in path.read_text(encoding="utf-8")
