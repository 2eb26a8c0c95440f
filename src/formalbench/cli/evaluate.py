"""`formalbench eval`: the main job. Parses options, shows progress, writes the report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from formalbench.cli.main import app, say_error, user_errors
from formalbench.cli.options import (
    AllowAxiomOption,
    AllowAxiomsOption,
    RecordOption,
    ToolchainOption,
    at_least,
    axiom_policy,
    existing_file,
    existing_folder,
    seconds,
)
from formalbench.cli.progress import LongProgress, Stage
from formalbench.core.errors import InputError
from formalbench.core.records import Attempt
from formalbench.pipelines.evaluate import EvalResult, run_evaluation
from formalbench.pipelines.run_config import EvalConfig, Selection, default_eval_dir
from formalbench.pipelines.run_files import load_summary
from formalbench.reporting.html import write_html
from formalbench.reporting.tables import print_report

console = Console(highlight=False)


class ProgressBar:
    """Attempts done / total with the pass rate so far; `cli.progress` measures the rate
    and the estimate (the attempts a resume found done are left out of both)."""

    def __init__(self, progress: LongProgress) -> None:
        self.progress = progress
        self.stage: Stage | None = None
        self.done = 0
        self.passed = 0

    def started(self, total: int, done: int, passed: int) -> None:
        self.done, self.passed = done, passed
        self.stage = self.progress.stage(
            "attempts", total=total, done=done, resumed=done, unit="attempt", status=self._status()
        )

    def attempt_done(self, attempt: Attempt) -> None:
        self.done += 1
        self.passed += bool(attempt.verdict and attempt.verdict.passed)
        if self.stage is not None:
            self.stage.advance(status=self._status())

    def _status(self) -> str:
        if not self.done:
            return ""
        return f"{self.passed}/{self.done} passed ({self.passed / self.done:.0%})"


def split_tactics(text: str) -> list[str]:
    """`lia, nia, nlinarith [sq_nonneg (a - b), sq_nonneg a]` -> three tactics: a comma
    separates tactics only outside brackets and parentheses (Lean hint lists hold commas)."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    parts.append("".join(current).strip())
    if not any(parts) or not all(parts):
        raise InputError(f"--tactics {text!r}: an empty tactic (give names separated by commas)")
    return parts


def read_tactics(text: str | None, path: Path | None) -> list[str] | None:
    """The portfolio's tactic list from `--tactics` or `--tactics-file` (None: the default)."""
    if text is not None and path is not None:
        raise InputError("give --tactics or --tactics-file, not both")
    if text is not None:
        return split_tactics(text)
    if path is None:
        return None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--tactics-file {path}: cannot read it ({exc})") from None
    found = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not found:
        raise InputError(f"--tactics-file {path}: no tactic in it (one a line)")
    return found


def _print_outcome(result: EvalResult) -> None:
    for problem in result.problems:
        console.print(f"[yellow]skipped[/] {problem}", markup=True)
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}")
    if result.stopped:
        console.print(f"[yellow]stopped early:[/] {result.stopped}; rerun to resume")
    # what this run did, truly: samples the preflight left out are neither new nor done
    left_out = f"{result.not_attempted} not attempted (environment), " * bool(result.not_attempted)
    console.print(
        f"{result.new_attempts} new attempt(s), {result.skipped_attempts} already done, "
        f"{left_out}{result.tasks} task(s) x {result.samples} sample(s) in {result.elapsed:.1f}s"
    )


@app.command("eval")
@user_errors
def eval_command(
    dataset: Annotated[
        str, typer.Argument(help="Shipped dataset name (example-coq, ...) or path.")
    ],
    solver: Annotated[
        str, typer.Option(help="portfolio | whole | sequential | agent")
    ] = "portfolio",
    model: Annotated[
        str | None, typer.Option(help="openai:MODEL[@URL], anthropic:MODEL, replay:FILE")
    ] = None,
    record: RecordOption = None,
    samples: Annotated[
        int, typer.Option(callback=at_least(1), help="Attempts per task (n of pass@k).")
    ] = 1,
    backend: Annotated[
        str | None, typer.Option(help="coq | lean | kimina (default: the tasks' language)")
    ] = None,
    tactics: Annotated[
        str | None,
        typer.Option(help="Portfolio tactics, comma-separated (commas inside [..] or (..) stay)."),
    ] = None,
    tactics_file: Annotated[
        Path | None,
        typer.Option(
            callback=existing_file, help="Portfolio tactics, one a line (# starts a comment line)."
        ),
    ] = None,
    model_concurrency: Annotated[
        int | None,
        typer.Option(
            callback=at_least(1),
            help="Model calls in flight at once (default: the provider's: openai 8, anthropic 4).",
        ),
    ] = None,
    run_dir: Annotated[
        Path | None,
        typer.Option(
            help="Where the store, log and report go (default: runs/eval-<dataset>-<hash of "
            "the settings>, so the same command resumes its run and another gets its own)."
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(callback=at_least(1), help="Proof-assistant processes (default: the CPUs)."),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            callback=at_least(1),
            help="Attempts in flight (default: 4 per worker with a model, else 2).",
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(callback=seconds, help="Seconds for one check.")] = 60.0,
    executor: Annotated[str, typer.Option(help="local | ray")] = "local",
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster address.")] = None,
    split: Annotated[str | None, typer.Option(help="Only tasks of this split.")] = None,
    pattern: Annotated[str | None, typer.Option(help="Only task ids matching this glob.")] = None,
    label: Annotated[
        list[str] | None, typer.Option(help="Only tasks with label key=value.")
    ] = None,
    sample_tasks: Annotated[
        int | None,
        typer.Option(
            "--sample-tasks", callback=at_least(1), help="A fixed-seed sample of N tasks."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of --sample-tasks.")] = 0,
    temperature: Annotated[
        float | None,
        typer.Option(min=0.0, help="Sampling temperature (default: whole 1.0, others 0.4)."),
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option(min=1, help="Output cap of one model call (default: 16000).")
    ] = None,
    max_turns: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="sequential: repair turns per hole after the first try (32); agent: turns (40).",
        ),
    ] = None,
    show_answer: Annotated[
        bool,
        typer.Option(
            help="Show the model the expected answer of construction tasks (off: fair pass@k)."
        ),
    ] = False,
    token_budget: Annotated[
        int | None, typer.Option(min=1, help="Tokens per task (default: 1000000).")
    ] = None,
    run_token_budget: Annotated[
        int | None, typer.Option(min=1, help="Tokens for the whole run (default: no limit).")
    ] = None,
    skip_bad_lines: Annotated[
        bool, typer.Option(help="Skip malformed dataset lines instead of stopping.")
    ] = False,
    lean_project: Annotated[
        Path | None,
        typer.Option(callback=existing_folder, help="Lake project for the Lean backend."),
    ] = None,
    coq_project: Annotated[
        Path | None,
        typer.Option(
            help="Coq project (folder of a _CoqProject) for the Coq backend, used read-only; "
            "default: the tasks' coq_project field."
        ),
    ] = None,
    kimina_url: Annotated[
        str | None,
        typer.Option(help="Kimina Lean Server URL (--backend kimina; key: $KIMINA_API_KEY)."),
    ] = None,
    retry_errors: Annotated[
        bool, typer.Option(help="Redo attempts that failed on a model or backend error.")
    ] = False,
    preflight: Annotated[
        bool | None,
        typer.Option(
            "--preflight/--no-preflight",
            help="Compile each task's original once first; tasks that cannot compile here "
            "are recorded as environment failures, not attempted (default: on for portfolio).",
        ),
    ] = None,
    allow_version_mismatch: Annotated[
        bool, typer.Option(help="Run Lean tasks made for another toolchain or Mathlib.")
    ] = False,
    allow_axiom: AllowAxiomOption = None,
    allow_axioms: AllowAxiomsOption = None,
    replay: Annotated[
        bool,
        typer.Option(
            "--replay/--no-replay",
            help="Coq: confirm each pass with coqchk of the same Coq (default on; see README).",
        ),
    ] = True,
    per_task: Annotated[bool, typer.Option(help="Also print one row per task.")] = False,
    quiet: Annotated[
        bool, typer.Option(help="No progress bar or tables (skipped lines still on stderr).")
    ] = False,
    toolchain: ToolchainOption = None,
) -> None:
    """Run a prover over a benchmark, verify every attempt strictly, report pass@k."""
    if executor not in ("local", "ray"):
        raise InputError(f"--executor must be local or ray, not {executor!r}")
    axiom_names, presets = axiom_policy(allow_axiom, allow_axioms)
    options: dict[str, object] = {}
    if lean_project is not None:
        options["project_dir"] = str(lean_project)
    if kimina_url is not None:
        options["url"] = kimina_url
    if coq_project is not None:
        options["coq_project"] = str(coq_project.resolve())
    if toolchain is not None:  # over the tasks' own `toolchain` field
        options["toolchain"] = toolchain
    config = EvalConfig(
        dataset=dataset,
        solver=solver,
        model=model,
        samples=samples,
        backend=backend,
        backend_options=options,
        executor=executor,  # type: ignore[arg-type]
        ray_address=ray_address,
        workers=workers,
        concurrency=concurrency,
        timeout=timeout,
        selection=Selection(
            split=split, pattern=pattern, labels=label or [], sample=sample_tasks, seed=seed
        ),
        on_error="skip" if skip_bad_lines else "fail",
        temperature=temperature,
        max_tokens=max_tokens,
        max_turns=max_turns,
        show_answer=show_answer,
        token_budget=token_budget,
        run_token_budget=run_token_budget,
        tactics=read_tactics(tactics, tactics_file),
        model_concurrency=model_concurrency,
        retry_errors=retry_errors,
        preflight=preflight,
        allow_version_mismatch=allow_version_mismatch,
        allowed_axioms=axiom_names,
        axiom_presets=presets,
        replay=replay,
    )
    if run_dir is None:
        run_dir = default_eval_dir(config)
    if quiet:
        result = run_evaluation(config, run_dir)
        # --quiet drops the bar and the tables, never what went wrong (on stderr)
        for problem in result.problems:
            say_error(f"skipped {problem}")
        if result.stopped:
            say_error(f"stopped early: {result.stopped}; rerun to resume")
    else:
        with LongProgress() as progress:  # on stderr: stdout keeps the tables
            result = run_evaluation(config, run_dir, ProgressBar(progress))
    summary = load_summary(run_dir)
    write_html(summary, result.files.report, title=f"formalbench: {dataset} / {solver}")
    if not quiet:
        _print_outcome(result)
        print_report(summary, console, per_task=per_task)
        console.print(f"report: {result.files.report}  summary: {result.files.summary}")
    if result.failed:  # every attempt ended without a verdict: say why (with --quiet too)
        say_error(f"formalbench: error: {result.failed}")
        raise typer.Exit(1)
