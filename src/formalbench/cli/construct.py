"""`formalbench construct`: a textbook in, a benchmark of formal exercises out (CAM-Bench).

`--model` may be given several times: a plain `SPEC` is the model of every step, and
`STEP=SPEC` (steps: clean, naturalize, conditions, review, repair, formal) overrides it for
one step, e.g. `--model openai:gpt-4o-mini --model review=anthropic:claude-x`.

Exit codes follow `eval`: 2 for bad input (contradictory options, a selection with no
exercise), 1 for a run that could not finish (exercises left unfinished: the reason is
printed, a rerun resumes) or in which a whole stage failed for every exercise (the
reason is printed), 0 otherwise; a stage in which only some exercises failed is a warning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from formalbench.cli.main import app, user_errors
from formalbench.cli.options import RecordOption, ToolchainOption, at_least, seconds
from formalbench.cli.progress import LongProgress, Stage
from formalbench.core.errors import InputError
from formalbench.pipelines.construct.config import (
    PHASES,
    STEPS,
    ConstructConfig,
    parse_model_options,
)
from formalbench.pipelines.construct.report import ConstructReport
from formalbench.pipelines.construct.runner import ConstructResult, run_construct
from formalbench.pipelines.run_dir import default_run_dir

console = Console(highlight=False)


class PhaseProgress:
    """One stage per phase (extraction, source stages, each formal stage), counted in
    exercises; those an earlier run finished are left out of the rate (`cli.progress`)."""

    def __init__(self, progress: LongProgress) -> None:
        self.progress = progress
        self.stages: dict[str, Stage] = {}

    def __call__(self, phase: str, done: int, total: int, resumed: int = 0, /) -> None:
        stage = self.stages.get(phase)
        if stage is None:
            stage = self.stages[phase] = self.progress.stage(phase, unit="exercise")
        stage.update(done, total, resumed=resumed)


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def print_construct_report(report: ConstructReport, out: Console, *, failures: bool = True) -> None:
    """The funnel as tables: extraction, the source stages per pool, the formal stages;
    then (`failures`) one line per stage in which exercises failed."""
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
    head.add_row("format failures (unusable replies)", str(report.format_failures))
    out.print(head)
    for line in report.warnings() if failures else []:
        out.print(f"[yellow]failed:[/] {escape(line)}", markup=True, soft_wrap=True)
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
    console.print(
        f"{result.exercises} exercise(s), {result.problems} through the source stages, "
        f"{result.usable} usable, in {result.elapsed:.1f}s ({_how_far(result)})",
        soft_wrap=True,
    )


def _how_far(result: ConstructResult) -> str:
    if result.finished:
        return f"stopped after {result.stopped_after}"
    if result.incomplete:
        return f"unfinished: {len(result.incomplete)} exercise(s) of the source stages"
    return f"stopped after {result.stopped_after or 'nothing'}, before {result.asked}"


def _print_failures(result: ConstructResult) -> int:
    """The reasons a run did not do all it was asked, on stderr (shown with --quiet too),
    one line each; returns the exit code (see the module doc)."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)  # a line stays one line
    for why in result.incomplete[:10]:
        err.print(f"[yellow]unfinished:[/] {escape(why)}", markup=True)
    if len(result.incomplete) > 10:
        err.print(f"[yellow]unfinished:[/] ... and {len(result.incomplete) - 10} more")
    if result.incomplete:
        err.print("[yellow]rerun the same command to resume the unfinished exercises[/]")
    for failure in result.failures:
        label = "error" if failure.whole else "warning"
        err.print(f"[yellow]{label}:[/] {escape(failure.line())}", markup=True)
    return 1 if result.incomplete or result.failed_stages else 0


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
    record: RecordOption = None,
    backend: Annotated[str, typer.Option(help="coq | lean (the formal stages).")] = "coq",
    run_dir: Annotated[
        Path | None,
        typer.Option(
            help="Where the store and files go (default: runs/construct-<source>-<hash of "
            "the extraction settings>: later stages of the same source continue there)."
        ),
    ] = None,
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
        str | None,
        typer.Option(help="Stop after a phase: extract | source | formal (default: formal)."),
    ] = None,
    concurrency: Annotated[
        int, typer.Option(callback=at_least(1), help="Exercises in flight.")
    ] = 8,
    temperature: Annotated[float, typer.Option(min=0.0, help="Sampling temperature.")] = 0.0,
    max_tokens: Annotated[
        int | None,
        typer.Option(min=1, help="Output cap of one model call (default: the provider's)."),
    ] = None,
    repair_rounds: Annotated[int, typer.Option(min=0, help="R: compile repairs per block.")] = 8,
    review_rounds: Annotated[int, typer.Option(min=0, help="S: semantic reviews per block.")] = 8,
    timeout: Annotated[
        float, typer.Option(callback=seconds, help="Seconds for one compile.")
    ] = 120.0,
    quiet: Annotated[bool, typer.Option(help="No progress bar or tables.")] = False,
    toolchain: ToolchainOption = None,
) -> None:
    """Build a benchmark from a textbook: extract, clean, naturalize, review, formalize."""
    if stop_after is not None and stop_after not in PHASES:
        raise InputError(f"--stop-after: expected one of {', '.join(PHASES)}, got {stop_after!r}")
    if extract_only and stop_after not in (None, "extract"):
        raise InputError(
            f"--extract-only and --stop-after {stop_after} contradict each other: "
            "--extract-only is --stop-after extract"
        )
    if backend not in ("coq", "lean"):
        raise InputError(f"--backend: expected coq or lean, got {backend!r}")
    phase = "extract" if extract_only else (stop_after or "formal")
    models = parse_model_options(model or [])
    if phase != "extract" and not models:
        raise InputError("--model is needed (or --extract-only)")
    if phase == "extract" and models:
        raise InputError(
            "--model is not used when only extracting (--extract-only / --stop-after extract)"
        )
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
    if run_dir is None:  # one folder per extraction (pipelines/run_dir.py)
        run_dir = default_run_dir("construct", config.source, config.extraction_identity())
    if quiet:
        result = run_construct(config, run_dir)
    else:
        with LongProgress() as progress:  # on stderr: stdout keeps the tables
            result = run_construct(config, run_dir, PhaseProgress(progress))
        _print_outcome(result)
        from formalbench.pipelines.construct.report import construct_report

        # the failed stages follow on stderr, once (with --quiet too)
        print_construct_report(construct_report(run_dir), console, failures=False)
        console.print(f"store: {run_dir / 'construct.sqlite'}")
    code = _print_failures(result)
    if code:
        raise typer.Exit(code)
