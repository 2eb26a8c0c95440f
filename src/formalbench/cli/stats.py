"""`formalbench stats DATASET`: dependency density rho_1..rho_k of each task, read from the
proof assistant, with the dataset's mean, median and distribution (a table, `--json`, and
an HTML page with its plot). The walk and the plotting are imported inside the command so
that `formalbench --help` loads neither."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from formalbench.cli.main import app, say_error, user_errors
from formalbench.cli.options import (
    ToolchainOption,
    at_least,
    existing_folder,
    seconds,
)
from formalbench.core.config import cache_path
from formalbench.core.errors import InputError

BACKENDS = ("coq", "lean")


def default_cache() -> Path:
    """$FORMALBENCH_CACHE/deps.sqlite, else $XDG_CACHE_HOME (or ~/.cache)/formalbench/."""
    return cache_path("deps.sqlite")


@app.command("stats")
@user_errors
def stats_command(
    dataset: Annotated[
        str, typer.Argument(help="A JSONL task file, a folder of .v files, or a shipped name.")
    ],
    k: Annotated[
        int,
        typer.Option("--k", callback=at_least(1), help="Largest distance counted (rho_1..rho_k)."),
    ] = 3,
    backend: Annotated[
        str | None,
        typer.Option(help="Proof assistant: coq or lean (default: the tasks' language)."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    html: Annotated[
        Path | None, typer.Option(help="Write an HTML page with the distribution plot.")
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option(help="SQLite file of the library walk (default: the user cache)."),
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Keep the walk in memory only.")
    ] = False,
    trivial: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated qualified names (`*_rect`: a suffix) that replace the "
            "default trivial set."
        ),
    ] = None,
    workers: Annotated[
        int, typer.Option(callback=at_least(1), help="Assistant processes at once.")
    ] = 2,
    lean_project: Annotated[
        Path | None,
        typer.Option(
            callback=existing_folder, help="Lean: the Lake project whose Mathlib the tasks use."
        ),
    ] = None,
    coq_project: Annotated[
        Path | None,
        typer.Option(
            help="Coq: the project (folder of a _CoqProject) whose compiled libraries the "
            "tasks Require, used read-only; default: the tasks' coq_project field."
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option(callback=seconds, help="Seconds per assistant run.")
    ] = 120.0,
    toolchain: ToolchainOption = None,
) -> None:
    """Dependency density (AMBER's rho_k): distinct non-trivial library declarations within
    1..k hops of each statement's type, as the proof assistant elaborates it."""
    if backend is not None and backend not in BACKENDS:
        raise InputError(f"--backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    from formalbench.cli.progress import LongProgress
    from formalbench.datasets.loader import load_tasks
    from formalbench.deps.stats import dependency_density
    from formalbench.metrics.density import trivial_default
    from formalbench.store.deps_cache import DepsCache

    loaded = load_tasks(dataset, on_error="skip", project_given=coq_project is not None)
    if backend is None:  # the one rule of every command (docs/decisions.md)
        languages = sorted({t.language.value for t in loaded.tasks})
        if len(languages) > 1:
            raise InputError(f"{dataset}: holds {' and '.join(languages)} tasks; give --backend")
        backend = languages[0] if languages else "coq"
    tasks = [t for t in loaded.tasks if t.language.value == backend]
    if not tasks:
        raise InputError(f"{dataset}: no {backend} task")
    if coq_project is not None and backend != "coq":
        raise InputError("--coq-project is for --backend coq")
    names = (
        [n.strip() for n in trivial.split(",") if n.strip()]
        if trivial is not None
        else list(trivial_default(backend))
    )
    store = DepsCache(None if no_cache else (cache or default_cache()))
    shown = LongProgress()
    statements = shown.stage("statements", total=len(tasks), unit="task", skipped_word="cached")

    def progress(n: int, cached: bool) -> None:
        statements.advance(n, resumed=cached)

    if backend == "coq":
        from formalbench.backends.coq import CoqBackend
        from formalbench.backends.coq_project import tasks_project
        from formalbench.deps.coq_walk import CoqDependencyWalker

        # `--coq-project` over the tasks' field, as `check` and `eval` (issue 30 item 8)
        project = str(coq_project.resolve()) if coq_project else tasks_project(tasks)
        coq = CoqBackend(workers=workers, timeout=timeout, project_dir=project)
        with coq, store, shown:
            walker = CoqDependencyWalker(coq, store, workers=workers, timeout=timeout)
            report = dependency_density(tasks, walker, k=k, trivial=names, progress=progress)
    else:
        from formalbench.backends.registry import make_backend
        from formalbench.deps.lean_walk import LeanDependencyWalker

        options: dict[str, object] = {"workers": workers, "timeout": timeout}
        if lean_project is not None:
            options["project_dir"] = lean_project
        lean = make_backend("lean", **options)
        with lean, store, shown:
            lean_walker = LeanDependencyWalker(lean, store, workers=workers, timeout=timeout)
            report = dependency_density(tasks, lean_walker, k=k, trivial=names, progress=progress)
    if html is not None:
        from formalbench.reporting.density import write_density_html

        write_density_html(report, html, title=f"Dependency density: {dataset}")
    if json_out:
        sys.stdout.write(json.dumps(report.to_json(), ensure_ascii=False) + "\n")
    else:
        _print_table(report, dataset)
    if not report.measured:  # mean and median of nothing: say why, and exit 1 (as `eval`)
        say_error(f"formalbench: error: {_nothing_measured(report)}")
        raise typer.Exit(1)


def _nothing_measured(report: object) -> str:
    """One line: no task was measured, and the commonest reasons why."""
    from collections import Counter

    from formalbench.deps.stats import DensityReport

    assert isinstance(report, DensityReport)
    reasons = Counter(" ".join(str(t.skipped).split()) for t in report.skipped)
    shown = "; ".join(f"{why} ({n})" for why, n in reasons.most_common(2))
    more = f"; {len(reasons) - 2} other reason(s)" if len(reasons) > 2 else ""
    return f"no task measured ({len(report.skipped)} skipped): {shown}{more}"


def _print_table(report: object, dataset: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from formalbench.deps.stats import DensityReport

    assert isinstance(report, DensityReport)
    table = Table(title=f"Dependency density: {dataset}")
    table.add_column("task")
    for j in range(1, report.k + 1):
        table.add_column(f"rho_{j}", justify="right")
    for t in report.measured:
        table.add_row(t.id, *(str(t.rho[j]) for j in range(1, report.k + 1)))
    for stat in ("mean", "median"):
        table.add_row(
            f"[bold]{stat}[/bold]",
            *(str(report.summary[str(j)][stat]) for j in range(1, report.k + 1)),
        )
    console = Console(highlight=False)
    console.print(table)
    console.print(
        f"{len(report.measured)} tasks measured, {len(report.skipped)} skipped; "
        f"{report.walk.coqc_runs} assistant runs, {report.elapsed:.1f}s"
    )
    for t in report.skipped:
        console.print(f"skipped {t.id}: {t.skipped}", markup=False)
