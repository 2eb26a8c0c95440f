"""The terminal tables of an APE run's report (`formalbench report RUN` on a folder of
`formalbench ape`): the mining funnel, validation and synthesis counts, and pass@k of the
evaluation overall, per category and per difficulty. They draw the same dictionary that
`report --json` prints (`pipelines.ape.metrics.ape_report`), so the two never disagree."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from formalbench.reporting.fmt import pct, plain


def print_ape_report(report: dict[str, Any], out: Console) -> None:
    """The run's tables, in the order of its stages; a stage not run yet says so."""
    head = Table(title="ape run", show_header=False)
    head.add_column("figure", no_wrap=True)
    head.add_column("value", overflow="fold")
    head.add_row("source", Text(plain(report.get("source"))))
    head.add_row("language", plain(report.get("language")))
    head.add_row("commits", plain(report.get("commits")))
    head.add_row("candidates", plain(report.get("candidates")))
    head.add_row("tasks kept by the filters", plain(report.get("tasks")))
    if report.get("validated") is None:
        head.add_row("validated", "not run (`ape mine --backend coq|lean`)")
    else:
        head.add_row(
            "validated", f"{report['validated']} of {report.get('validation_checked', 0)} checked"
        )
    if "synthesized" in report:
        head.add_row(
            "benchmark tasks (instruction kept)",
            f"{report.get('benchmark_tasks', 0)} of {report['synthesized']} synthesized",
        )
    else:
        head.add_row("benchmark tasks", "not run (`ape synthesize`)")
    if "samples" in report:
        head.add_row("samples per task", plain(report["samples"]))
    else:
        head.add_row("evaluation", "not run (`ape eval`)")
    if report.get("imported_from"):
        head.add_row("tasks imported from", Text(plain(report["imported_from"])))
    out.print(head)
    failures = _failures_table(report)
    if failures is not None:
        out.print(failures)
    funnel = Table(title="mining funnel (left after each filter)")
    funnel.add_column("filter")
    funnel.add_column("left", justify="right")
    for name, left in (report.get("funnel") or {}).items():
        funnel.add_row(Text(name), plain(left))
    out.print(funnel)
    if "pass_at_k" in report:
        groups: list[tuple[str, str, dict[str, Any]]] = [("all", "all", report["pass_at_k"])]
        for by in ("category", "difficulty"):
            for name, figures in (report.get(f"by_{by}") or {}).items():
                groups.append((by, name, figures))
        out.print(_pass_table(groups))


def _pass_table(groups: list[tuple[str, str, dict[str, Any]]]) -> Table:
    """pass@k by compiling and by the judge, and the semantic drop between them."""
    ks = sorted(
        {int(key.split("@")[1]) for _, _, f in groups for key in f if key.startswith("judge_")}
    )
    table = Table(title="pass@k (compiled / judged; drop = 1 - judged / compiled)")
    for col in ("group", "value", "tasks"):
        table.add_column(col, justify="right" if col == "tasks" else "left")
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
        table.add_column(f"drop@{k}", justify="right")
    for by, name, figures in groups:
        cells: list[str | Text] = [by, Text(name), plain(figures.get("tasks"))]
        for k in ks:
            comp, judged = figures.get(f"compile_pass@{k}"), figures.get(f"judge_pass@{k}")
            cells.append(f"{pct(comp)} / {pct(judged)}")
            cells.append(pct(figures.get(f"semantic_drop@{k}")))
        table.add_row(*cells)
    return table


def _failures_table(report: dict[str, Any]) -> Table | None:
    """Why tasks were not kept, by stage and reason, most frequent first (errors, which
    `--retry-errors` redoes, among them), and the evaluation's samples that ended in an
    error; None when nothing failed."""
    rows: list[tuple[str, str, int]] = []
    for stage in ("validation", "synthesis"):
        reasons = (report.get(stage) or {}).get("reasons") or {}
        rows += [(stage, str(r), int(n)) for r, n in reasons.items()]
    errors = (report.get("answer_summary") or {}).get("errors") or {}
    ranked = sorted(errors.items(), key=lambda item: -int(item[1]))
    rows += [("evaluation (samples)", str(r), int(n)) for r, n in ranked]
    if not rows:
        return None
    table = Table(title="not kept, by reason")
    table.add_column("stage")
    table.add_column("reason", overflow="fold")
    table.add_column("count", justify="right")
    for stage, reason, n in rows:
        table.add_row(stage, Text(reason), str(n))
    return table
