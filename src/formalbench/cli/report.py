"""`formalbench report DIR`: rebuild a run's report from its store alone.

The kind of run is told by its files: an evaluation run has `run.sqlite` (pass@k, tables,
report.html), a formalize run has `formalize.sqlite` (coverage, per-model compile and
alignment rates; written to metrics.json), a construct run has `construct.sqlite` (the
funnel of extraction, source review and formal stages).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from formalbench.cli.main import app, user_errors
from formalbench.pipelines.run_dir import KIND_MARKERS, is_writable
from formalbench.pipelines.run_files import RunFiles, load_summary
from formalbench.reporting.html import write_html
from formalbench.reporting.tables import print_report


@app.command("report")
@user_errors
def report_command(
    run_dir: Annotated[
        Path,
        typer.Argument(
            help="A run directory of `formalbench eval`, `formalize`, `construct` or `ape`."
        ),
    ],
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the summary object as JSON.")
    ] = False,
    html: Annotated[
        bool, typer.Option(help="Also rewrite report.html (eval and construct runs).")
    ] = True,
    per_task: Annotated[
        bool, typer.Option(help="Also print one row per task: attempts, passes, tokens, time.")
    ] = False,
) -> None:
    """Print pass@k, per-category tables, the error taxonomy, tokens and time of a run."""
    from formalbench.pipelines.ape.metrics import ape_report, is_ape_run

    if (run_dir / "construct.sqlite").is_file() and not RunFiles(run_dir).store.is_file():
        _construct_report(run_dir, json_out, html)
        return
    if is_ape_run(run_dir):  # `formalbench ape` runs: funnel, validation, pass@k
        figures = ape_report(run_dir)
        if json_out:
            import json

            sys.stdout.write(json.dumps(figures, indent=2) + "\n")
            return
        from formalbench.reporting.ape import print_ape_report

        print_ape_report(figures, Console(highlight=False))
        return
    # the formalize package (its store, the judge) is imported for formalize runs only
    formalize_run = (Path(run_dir) / KIND_MARKERS["formalize"]).is_file()
    if formalize_run and not RunFiles(run_dir).store.is_file():
        from formalbench.cli.formalize import print_formalize_report
        from formalbench.pipelines.formalize import load_metrics

        metrics = load_metrics(run_dir)
        if not is_writable(run_dir):
            Console(stderr=True, highlight=False).print(
                f"note: {run_dir} is read-only: metrics.json was not written", markup=False
            )
        if json_out:
            sys.stdout.write(metrics.model_dump_json(indent=2) + "\n")
            return
        print_formalize_report(metrics, Console(highlight=False))
        return
    summary = load_summary(run_dir)
    if not is_writable(run_dir):
        Console(stderr=True, highlight=False).print(
            f"note: {run_dir} is read-only: summary.json and report.html were not written",
            markup=False,
        )
    elif html:
        write_html(summary, RunFiles(run_dir).report, title=f"formalbench report: {run_dir}")
    if json_out:
        sys.stdout.write(summary.model_dump_json(indent=2) + "\n")
        return
    print_report(summary, Console(highlight=False), per_task=per_task)


def _construct_report(run_dir: Path, json_out: bool, html: bool) -> None:
    """A `formalbench construct` run: the funnel (JSON, tables, report.html)."""
    from formalbench.cli.construct import print_construct_report
    from formalbench.pipelines.construct.report import construct_report

    report = construct_report(run_dir)
    if not is_writable(run_dir):
        Console(stderr=True, highlight=False).print(
            f"note: {run_dir} is read-only: report.html was not written", markup=False
        )
    elif html:
        from formalbench.pipelines.construct.html import write_construct_html

        write_construct_html(
            report, RunFiles(run_dir).report, title=f"formalbench construct: {run_dir}"
        )
    if json_out:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
        return
    print_construct_report(report, Console(highlight=False))
