"""`formalbench report DIR`: rebuild a run's report from its store alone."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from formalbench.cli.main import app, user_errors
from formalbench.pipelines.run_files import RunFiles, load_summary
from formalbench.reporting.html import write_html
from formalbench.reporting.tables import print_report


@app.command("report")
@user_errors
def report_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by `formalbench eval`.")],
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the summary object as JSON.")
    ] = False,
    html: Annotated[bool, typer.Option(help="Also rewrite report.html.")] = True,
) -> None:
    """Print pass@k, per-category tables, the error taxonomy, tokens and time of a run."""
    summary = load_summary(run_dir)
    if html:
        write_html(summary, RunFiles(run_dir).report, title=f"formalbench report: {run_dir}")
    if json_out:
        sys.stdout.write(summary.model_dump_json(indent=2) + "\n")
        return
    print_report(summary, Console(highlight=False))
