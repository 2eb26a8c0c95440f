"""The report's tables, built once as plain rows of text and drawn either with rich (the
terminal, `formalbench report DIR`) or by the HTML template, so both show the same figures.

Every cell that comes from the data (task ids, category values, messages) is a rich
`Text`, never markup: a task id such as `[bold]x` is shown as written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from formalbench.metrics.summary import RunSummary
from formalbench.reporting.fmt import category_title, clip, pct, ratio, seconds, tokens

_EXAMPLE_CHARS = 160
_LIST_IDS = 20


@dataclass
class TableData:
    """One table: a key for the template, a title, column headers and rows of text."""

    key: str
    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str = ""
    numeric: set[int] = field(default_factory=set)  # columns aligned right
    clip: set[int] = field(default_factory=set)  # long text, cut short in a terminal


def report_tables(summary: RunSummary, *, per_task: bool = False) -> list[TableData]:
    """All tables of a report, in reading order (per-task rows only when asked)."""
    tables = [_overview(summary), _pass_table(summary)]
    if summary.pass_at_k_turns:
        tables.append(_turns_table(summary))
    tables += [_category(summary, i) for i in range(len(summary.categories))]
    tables += [_taxonomy(summary)]
    if summary.taxonomy_amber:
        tables.append(_amber_taxonomy(summary))
    tables.append(_cost(summary))
    if summary.gap is not None:
        tables.append(_gap(summary))
    if summary.run_info:
        rows = [
            [k, v if isinstance(v, str) else json.dumps(v)] for k, v in summary.run_info.items()
        ]
        tables.append(TableData("run_info", "Run", ["key", "value"], rows))
    if per_task:
        tables.append(_per_task(summary))
    return tables


def render_tables(summary: RunSummary, *, per_task: bool = False) -> list[RenderableType]:
    """The report as rich tables, ready for `Console.print`."""
    out: list[RenderableType] = []
    for data in report_tables(summary, per_task=per_task):
        table = Table(
            title=Text(data.title, style="bold"),
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
        )
        for i, header in enumerate(data.headers):
            if i in data.clip:
                table.add_column(Text(header), overflow="fold")
            elif i in data.numeric:
                table.add_column(Text(header), justify="right")
            else:  # labels give way first when the terminal is narrow
                table.add_column(Text(header), overflow="fold", ratio=None)
        for row in data.rows:
            table.add_row(*(Text(clip(c, 60) if i in data.clip else c) for i, c in enumerate(row)))
        out.append(table)
        if data.note:  # below the table, not a caption: a caption wraps to the table's width
            out.append(Text(data.note, style="dim"))
        out.append(Text(""))
    return out


def print_report(
    summary: RunSummary, console: Console | None = None, *, per_task: bool = False
) -> None:
    """Print every table of the report to `console` (standard output by default); the
    per-task table (attempts, passes, tokens, time of each task) only when `per_task`."""
    console = console or Console()
    for warning in summary.warnings:
        console.print(f"warning: {warning}", style="yellow", markup=False)
    for renderable in render_tables(summary, per_task=per_task):
        console.print(renderable)


def _pass_headers(summary: RunSummary) -> list[str]:
    return [f"pass@{k}" for k in summary.ks]


def _pass_cells(summary: RunSummary, values: dict[str, float]) -> list[str]:
    return [pct(values.get(str(k))) for k in summary.ks]


def _overview(s: RunSummary) -> TableData:
    rows = [
        ["tasks", str(s.tasks)],
        ["evaluated (>= n attempts)", str(s.evaluated)],
        ["solved (any attempt passed)", ratio(len(s.solved), s.tasks)],
        ["unfinished (< n attempts)", str(len(s.incomplete_tasks))],
        ["cannot compile here (environment)", str(len(s.environment_tasks))],
        ["samples per task (n)", str(s.samples)],
        ["attempts", str(s.attempts)],
        ["failed attempts", ratio(s.failed_attempts, s.attempts)],
    ]
    notes = []
    if s.solved:
        notes.append(f"solved: {_id_list(s.solved)}")
    if s.incomplete_tasks:
        notes.append(f"unfinished, left out of pass@k: {_id_list(s.incomplete_tasks)}")
    if s.environment_tasks:
        notes.append(
            "cannot compile here (the task's original fails on this toolchain), left out of pass@k: "
            + _id_list(s.environment_tasks)
        )
    return TableData("overview", "Overview", ["", "value"], rows, "; ".join(notes), {1})


def _id_list(ids: list[str]) -> str:
    """The first `_LIST_IDS` ids, then how many more (the full list is in --json / per task)."""
    more = len(ids) - _LIST_IDS
    return ", ".join(ids[:_LIST_IDS]) + (f" and {more} more" if more > 0 else "")


def _pass_table(s: RunSummary) -> TableData:
    rows = [_pass_cells(s, s.pass_at_k)] if s.pass_at_k else []
    note = (
        f"unbiased estimator over {s.evaluated} evaluated tasks, "
        f"n = {s.samples} sample{'s' if s.samples != 1 else ''} each"
        if s.pass_at_k
        else "no task has a complete set of samples yet"
    )
    return TableData("pass_at_k", "pass@k", _pass_headers(s), rows, note, set(range(len(s.ks))))


def _turns_table(s: RunSummary) -> TableData:
    ks = [k for k in s.turn_ks if str(k) in s.pass_at_k_turns]
    rows = [[pct(s.pass_at_k_turns[str(k)]) for k in ks]]
    note = (
        "solved within k turns: every hole closed within k model calls (a first try and "
        "k - 1 repairs) and the whole file verified; mean over the evaluated tasks of the "
        "share of their samples that did"
    )
    headers = [f"pass@{k}" for k in ks]
    return TableData(
        "pass_at_k_turns", "pass@k over repair turns", headers, rows, note, set(range(len(ks)))
    )


def _category(s: RunSummary, index: int) -> TableData:
    table = s.categories[index]
    headers = [table.field, "tasks", "evaluated", "solved", *_pass_headers(s)]
    rows = [
        [r.value, str(r.tasks), str(r.evaluated), str(r.solved)] + _pass_cells(s, r.pass_at_k)
        for r in table.rows
    ]
    numeric = set(range(1, len(headers)))
    return TableData(f"category_{table.field}", f"By {table.field}", headers, rows, "", numeric)


def _taxonomy(s: RunSummary) -> TableData:
    rows = []
    for name, count in s.taxonomy.items():
        example = s.taxonomy_examples.get(name)
        text = ""
        if example is not None:
            message = clip(" ".join(example.message.split()), _EXAMPLE_CHARS)
            text = f"{example.task_id} #{example.sample}: {message}"
        share = pct(count / s.failed_attempts) if s.failed_attempts else "–"
        rows.append(
            [category_title(name), str(count), share, str(s.taxonomy_labels.get(name, 0)), text]
        )
    headers = ["category", "failed", "share", "any label", "example"]
    note = (
        "failed: attempts by primary category; any label: attempts showing the category "
        "at all (multi-label)"
    )
    return TableData("taxonomy", "Error taxonomy", headers, rows, note, {1, 2, 3}, {4})


def _amber_taxonomy(s: RunSummary) -> TableData:
    """AMBER's four error classes (metrics/amber_taxonomy.py), as the seed reports them."""
    counted = sum(v for k, v in s.taxonomy_amber.items() if k != "not_attributed")
    rows = [
        [
            name.replace("_", " "),
            str(count),
            ratio(count, counted) if name != "not_attributed" else "",
        ]
        for name, count in s.taxonomy_amber.items()
    ]
    note = (
        "shares of the attributed failures (mapping: docs/decisions.md, AMBER); not "
        "attributed: the assistant, the harness or the environment failed, not the model"
    )
    return TableData(
        "taxonomy_amber",
        "Error taxonomy (AMBER classes)",
        ["class", "failed attempts", "share"],
        rows,
        note,
        {1, 2},
        set(),
    )


def _cost(s: RunSummary) -> TableData:
    total, mean = s.tokens_total, s.tokens_mean_per_task
    rows = [
        ["prompt tokens", tokens(total.prompt), tokens(mean["prompt"])],
        ["completion tokens", tokens(total.completion), tokens(mean["completion"])],
        ["all tokens", tokens(total.total), tokens(mean["total"])],
        ["attempt time (sum)", seconds(s.attempt_time_s), ""],
        ["run wall time", seconds(s.run_wall_time_s), ""],
    ]
    note = "per task: mean over tasks with at least one attempt"
    return TableData("cost", "Tokens and time", ["", "total", "per task"], rows, note, {1, 2})


def _gap(s: RunSummary) -> TableData:
    g = s.gap
    assert g is not None
    rows = [
        ["informal score (mean)", pct(g.informal)],
        ["formal score (mean)", pct(g.formal)],
        ["gap (informal - formal)", f"{100 * g.gap:+.1f} points"],
        ["right in both", str(g.both)],
        ["informal only", str(g.informal_only)],
        ["formal only", str(g.formal_only)],
        ["neither", str(g.neither)],
    ]
    note = (
        f"{g.tasks} tasks with an informal score; the formal score of {g.formal_from_run} "
        f"of them is this run's pass@{s.samples}"
    )
    return TableData("gap", "Informal vs formal", ["", "value"], rows, note, {1})


def _per_task(s: RunSummary) -> TableData:
    rows = [
        [
            o.id,
            str(o.attempts),
            str(o.passed),
            tokens(o.tokens.total),
            seconds(o.wall_time_s),
        ]
        for o in s.per_task
    ]
    headers = ["task", "attempts", "passed", "tokens", "time"]
    return TableData("per_task", "Tasks", headers, rows, "", {1, 2, 3, 4})
