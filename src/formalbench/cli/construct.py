"""`formalbench construct`: a textbook in, a benchmark of formal exercises out (CAM-Bench).

`--model` may be given several times: a plain `SPEC` is the model of every step, and
`STEP=SPEC` (steps: clean, naturalize, conditions, review, repair, formal) overrides it for
one step, e.g. `--model openai:gpt-4o-mini --model review=anthropic:claude-x`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress, TaskID
from rich.table import Table

from formalbench.cli.main import app, user_errors
from formalbench.cli.options import at_least, seconds
from formalbench.cli.progress import make_progress
from formalbench.core.errors import InputError
from formalbench.pipelines.construct.config import (
    PHASES,
    STEPS,
    ConstructConfig,
    parse_model_options,
)
from formalbench.pipelines.construct.report import ConstructReport
from formalbench.pipelines.construct.runner import ConstructResult, run_construct

console = Console(highlight=False)


class PhaseProgress:
    """One bar per phase (extraction, source stages, each formal stage)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tasks: dict[str, TaskID] = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        task = self.tasks.get(phase)
        if task is None:
            task = self.progress.add_task(phase, total=total, completed=done, status="")
            self.tasks[phase] = task
        self.progress.update(task, total=total, completed=done)


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def print_construct_report(report: ConstructReport, out: Console) -> None:
    """The funnel as tables: extraction, the source stages per pool, the formal stages."""
    head = Table(title=f"construct run ({report.status})", show_header=False)
    head.add_row("exercises extracted", str(report.exercises))
    head.add_row("references resolved", f"{report.resolved_references} of {report.references}")
    if report.book_exercises is not None and report.book_exercises != report.exercises:
        head.add_row(
            "whole book",
            f"{report.book_exercises} exercises, {report.book_resolved_references} of "
            f"{report.book_references} references resolved",
        )
    head.add_row("reviewed", str(report.reviewed))
    head.add_row(
        "accepted / revised / held", f"{report.accepted} / {report.revised} / {report.held}"
    )
    head.add_row("repaired and re-reviewed", str(report.funnel.repaired))
    head.add_row("holds dropped (piece not in the book)", str(report.funnel.dropped))
    head.add_row("usable", f"{report.usable} ({_rate(report.funnel.usable_fraction)})")
    for step, count in report.funnel.failed.items():
        head.add_row(f"stopped at {step} (format failure)", str(count))
    head.add_row("blocks compiled", f"{report.blocks_compiled} of {report.blocks}")
    head.add_row("instances packaged", str(report.instances))
    head.add_row("tasks file", report.tasks_file or "-")
    out.print(head)
    pools = Table(title="source review per pool (OI original, RI revised, HI held)")
    for col in ("pool", "items", "accept", "revise", "hold", "revise reasons", "hold reasons"):
        pools.add_column(
            col, justify="left" if col in ("pool", "revise reasons", "hold reasons") else "right"
        )
    for name, stats in report.funnel.pools.items():
        pools.add_row(
            name,
            str(stats.items),
            str(stats.accept),
            str(stats.revise),
            str(stats.hold),
            _histogram(stats.revise_reasons),
            _histogram(stats.hold_reasons),
        )
    out.print(pools)


def _histogram(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) or "-"


def _print_outcome(result: ConstructResult) -> None:
    for why in result.incomplete[:10]:
        console.print(f"[yellow]unfinished:[/] {why}", markup=True)
    if result.incomplete:
        console.print("[yellow]rerun the same command to resume the unfinished exercises[/]")
    console.print(
        f"{result.exercises} exercise(s), {result.problems} through the source stages, "
        f"{result.usable} usable, in {result.elapsed:.1f}s (stopped after {result.stopped_after})"
    )


@app.command("construct")
@user_errors
def construct_command(
    source: Annotated[
        str,
        typer.Argument(
            help="Textbook folder or .tar.gz/.tgz/.zip archive; or a JSONL of extracted exercises."
        ),
    ],
    model: Annotated[
        list[str] | None,
        typer.Option(
            help="SPEC for every step, or STEP=SPEC for one step (repeat); steps: "
            + ", ".join(STEPS)
            + "."
        ),
    ] = None,
    backend: Annotated[str, typer.Option(help="coq | lean (the formal stages).")] = "coq",
    run_dir: Annotated[Path, typer.Option(help="Where the store and files go.")] = Path(
        "runs/construct"
    ),
    limit: Annotated[
        int | None, typer.Option(callback=at_least(1), help="The first N exercises.")
    ] = None,
    pattern: Annotated[
        str | None, typer.Option(help="Glob over exercise ids / source files.")
    ] = None,
    depth: Annotated[int, typer.Option(min=0, help="Dependency expansion depth D.")] = 3,
    extract_only: Annotated[
        bool, typer.Option(help="Only the deterministic extraction (same as --stop-after extract).")
    ] = False,
    stop_after: Annotated[
        str, typer.Option(help="Stop after a phase: extract | source | formal.")
    ] = "formal",
    concurrency: Annotated[
        int, typer.Option(callback=at_least(1), help="Exercises in flight.")
    ] = 8,
    temperature: Annotated[float, typer.Option(min=0.0)] = 0.0,
    max_tokens: Annotated[int | None, typer.Option(min=1)] = None,
    repair_rounds: Annotated[int, typer.Option(min=0, help="R: compile repairs per block.")] = 8,
    review_rounds: Annotated[int, typer.Option(min=0, help="S: semantic reviews per block.")] = 8,
    timeout: Annotated[
        float, typer.Option(callback=seconds, help="Seconds for one compile.")
    ] = 120.0,
    quiet: Annotated[bool, typer.Option(help="No progress bar or tables.")] = False,
) -> None:
    """Build a benchmark from a textbook: extract, clean, naturalize, review, formalize."""
    if stop_after not in PHASES:
        raise InputError(f"--stop-after: expected one of {', '.join(PHASES)}, got {stop_after!r}")
    if backend not in ("coq", "lean"):
        raise InputError(f"--backend: expected coq or lean, got {backend!r}")
    phase = "extract" if extract_only else stop_after
    models = parse_model_options(model or [])
    if phase != "extract" and not models:
        raise InputError("--model is needed (or --extract-only)")
    config = ConstructConfig(
        source=str(Path(source).resolve()),
        models=models,
        backend=backend,
        depth=depth,
        pattern=pattern,
        limit=limit,
        stop_after=phase,  # checked against PHASES above
        concurrency=concurrency,
        temperature=temperature,
        max_tokens=max_tokens,
        repair_rounds=repair_rounds,
        review_rounds=review_rounds,
        timeout=timeout,
    )
    if quiet:
        result = run_construct(config, run_dir)
        return
    progress = make_progress(console)
    with progress:
        result = run_construct(config, run_dir, PhaseProgress(progress))
    _print_outcome(result)
    from formalbench.pipelines.construct.report import construct_report

    print_construct_report(construct_report(run_dir), console)
    console.print(f"store: {run_dir / 'construct.sqlite'}")
